"""``aer1 report --frame eu-ai-act --log DIR --log-key VKEY``: the retention item rests on the archive's span and on
the log walked over it (the verifier's completeness walk), never on the archive alone.

The logs are made by ``aer1 log init`` and ``aer1 log append``, over receipts whose steps have chosen times.
"""

from __future__ import annotations

import html as html_lib
import re
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aer1._signing import generate_key_pair
from aer1._tlog import CosignatureSigner, parse_note, sign_note
from tests.report.conftest import save
from tests.report.test_frame import DAY, TRUSTED, items, signed_run
from tests.report.test_page import report, run

ORIGIN = "example.com/retention-log"
START = 1.77e9
RETENTION = "art-19-1-26-6"
WITNESS = CosignatureSigner("witness.example/w1", Ed25519PrivateKey.from_private_bytes(b"\x07" * 32))


def logged_archive(root: Path, days: list[float], name: str = "log") -> tuple[Path, Path, list[Path]]:
    """An archive of signed receipts started ``days`` after START, each logged: (archive, log, receipts)."""
    archive = root / "archive"
    paths = [save(signed_run(START + d * DAY, goal=f"run {n}"), archive / f"r{n}") for n, d in enumerate(days)]
    key = root / f"{name}.key"
    key.write_bytes(generate_key_pair()[0])
    log = root / name
    for argv in (["log", "init", str(log), "--origin", ORIGIN, "--key", str(key)],
                 ["log", "append", str(log), *map(str, paths)]):
        code, _out, err = run(argv)
        assert code == 0, err
    return archive, log, paths


def framed(archive: Path, out: Path, *options: str) -> tuple[int, str, dict[str, str]]:
    """The report of ``archive`` with the frame and the trusted signer: (exit code, page as text, items)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    code, page = report(archive, out, "--frame", "eu-ai-act", "--key", TRUSTED, *options)
    return code, html_lib.unescape(page), items(page)


def why(page: str, item: str) -> str:
    """The reason shown for ``item``."""
    row = re.search(rf'<tr data-item="{item}".*?</tr>', page, re.S)
    assert row is not None
    return row.group(0)


def test_a_complete_log_over_six_months_verifies_retention(tmp_path: Path) -> None:
    archive, log, _ = logged_archive(tmp_path, [0, 100, 200])
    code, page, got = framed(archive, tmp_path / "site" / "index.html", "--log", str(log), "--log-key",
                             str(log / "log.vkey"))
    assert code == 0 and got[RETENTION] == "verified", why(page, RETENTION)
    assert "the log lists exactly the archive's receipts, spanning 200.0 days" in why(page, RETENTION)
    # the log check is shown: the checkpoint's origin and size, its signer, what was recomputed, the witnesses
    assert f"checkpoint {ORIGIN} size 3 root " in page and "tree recomputed from the tiles: 3 entries checked" in page
    assert "witnesses: none verified" in page and "completeness over 3 receipts" in page
    assert f"log_complete: log {log}: VALID (checkpoint {ORIGIN} size 3" in page
    # each receipt's page: its log check answered from the walked log, the log itself on the index page
    one = html_lib.unescape((tmp_path / "site" / "index-0001.html").read_text(encoding="utf-8"))
    assert "in the log's checkpoint of size 3" in one and 'data-verdict="on-index"' in one


def test_a_quorum_of_witnesses_is_shown_and_held(tmp_path: Path) -> None:
    archive, log, _ = logged_archive(tmp_path, [0, 100, 200])
    witness = ["--log", str(log), "--log-key", str(log / "log.vkey"), "--witness", WITNESS.verifier().vkey,
               "--min-witnesses", "1"]
    code, page, got = framed(archive, tmp_path / "site" / "index.html", *witness)
    assert code == 1 and got[RETENTION] == "not verified"
    assert "the log did not verify: checkpoint: got 0 cosignatures by trusted witnesses, want at least 1" in page
    note = parse_note((log / "checkpoint").read_bytes())
    (log / "checkpoint").write_bytes(sign_note(note.text, [WITNESS], existing=note.signatures))
    code, page, got = framed(archive, tmp_path / "site" / "index.html", *witness)
    assert code == 0 and got[RETENTION] == "verified", why(page, RETENTION)
    assert "witnesses: witness.example/w1" in page


def test_a_complete_log_over_less_than_six_months_says_its_span(tmp_path: Path) -> None:
    archive, log, _ = logged_archive(tmp_path, [0, 30, 90])
    code, page, got = framed(archive, tmp_path / "site" / "index.html", "--log", str(log), "--log-key",
                             str(log / "log.vkey"))
    assert code == 0 and got[RETENTION] == "not verified"
    assert "the log's receipts span 90.0 days, want at least 183" in why(page, RETENTION)


def test_a_receipt_deleted_from_the_archive_is_named_missing(tmp_path: Path) -> None:
    archive, log, paths = logged_archive(tmp_path, [0, 100, 150, 200])
    for p in paths[1].parent.iterdir():  # the receipt, its evidence and its proof
        p.unlink()
    code, page, got = framed(archive, tmp_path / "site" / "index.html", "--log", str(log), "--log-key",
                             str(log / "log.vkey"))
    assert code == 1 and got[RETENTION] == "not verified"
    reason = why(page, RETENTION)
    assert "1 listed in the log, missing from the archive, first " in reason, reason
    # the three receipts left still span 200 days: the span alone would have passed
    assert "span of the receipts that pass: 200.0 days" in reason and "want at least" not in reason
    assert "1 listed in the log, missing from the archive" in page.split('id="frame-log"')[1]


def test_a_receipt_the_log_does_not_list_is_named(tmp_path: Path) -> None:
    archive, log, _ = logged_archive(tmp_path, [0, 200])
    save(signed_run(START + 50 * DAY, goal="never logged"), archive / "late")
    code, page, got = framed(archive, tmp_path / "site" / "index.html", "--log", str(log), "--log-key",
                             str(log / "log.vkey"))
    assert code == 1 and got[RETENTION] == "not verified"
    assert "1 in the archive, not listed in the log" in why(page, RETENTION)


def test_a_log_signed_by_another_key_verifies_nothing(tmp_path: Path) -> None:
    archive, log, _ = logged_archive(tmp_path, [0, 100, 200])
    _, other, _ = logged_archive(tmp_path / "other", [0], name="other-log")
    code, page, got = framed(archive, tmp_path / "site" / "index.html", "--log", str(log), "--log-key",
                             str(other / "log.vkey"))
    assert code == 1 and got[RETENTION] == "not verified"
    assert "the log did not verify: checkpoint: " in why(page, RETENTION)
    assert 'data-verdict="INVALID"' in page.split('id="frame-log"')[1][:40]


def test_without_a_log_retention_is_not_verified(tmp_path: Path) -> None:
    archive, log, _ = logged_archive(tmp_path, [0, 100, 200])
    code, page, got = framed(archive, tmp_path / "site" / "index.html")
    assert code == 0 and got[RETENTION] == "not verified"
    assert "no transparency log was checked (give --log DIR with --log-key VKEY)" in why(page, RETENTION)
    assert "log_complete: not run (no --log)" in why(page, RETENTION) and "No transparency log was checked" in page
    # the log key alone checks each receipt's own proof (the log check), never the log's coverage
    code, page, got = framed(archive, tmp_path / "site2" / "index.html", "--log-key", str(log / "log.vkey"))
    assert code == 0 and got[RETENTION] == "not verified" and "no transparency log was checked" in page


def test_one_receipt_against_the_log_shows_the_log_and_retention_is_not_applicable(tmp_path: Path) -> None:
    _, log, paths = logged_archive(tmp_path, [0, 100, 200])
    code, page, got = framed(paths[0], tmp_path / "one.html", "--log", str(log), "--log-key", str(log / "log.vkey"))
    assert got[RETENTION] == "not applicable" and got["art-12-1"] == "verified"
    # as aer1-verify --log DIR --complete RECEIPT: the log's other receipts are not in what was given
    assert code == 1 and "2 listed in the log, missing from the archive" in page
    assert f"entry 0 of {ORIGIN} in the log's checkpoint of size 3" in page


@pytest.mark.parametrize("case", ["missing log", "bad key", "log without key", "key file missing"])
def test_wrong_log_options_are_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    archive, log, _ = logged_archive(tmp_path, [0, 200])
    vkey = str(log / "log.vkey")
    options = {"missing log": ["--log", str(tmp_path / "nowhere"), "--log-key", vkey],
               "bad key": ["--log", str(log), "--log-key", "not-a-key"],
               "log without key": ["--log", str(log)],
               "key file missing": ["--log", str(log), "--log-key", str(tmp_path / "none.vkey")]}[case]
    out = tmp_path / "site" / "index.html"
    code, stdout, err = run(["report", str(archive), "-o", str(out), "--frame", "eu-ai-act", *options])
    assert code == 2 and stdout == "" and len(err.splitlines()) == 1 and err.startswith("aer1: error: --log"), err
    assert "Traceback" not in err and not out.parent.exists(), "want nothing written"


@pytest.mark.parametrize(("extra", "want"), [('log_complete = "yes"\nscope = "archive"', "is not true or false"),
                                             ("log_complete = true", 'goes with scope = "archive"')])
def test_a_bad_log_complete_in_a_frame_file_is_refused(extra: str, want: str, tmp_path: Path) -> None:
    frame = tmp_path / "bad.toml"
    frame.write_text('format = "aer1-frame-v1"\nname = "x"\ntitle = "t"\n[[item]]\nid = "a"\nref = "r"\n'
                     f'obligation = "o"\nshows = "s"\nchecks = ["chain"]\n{extra}\n')
    path = save(signed_run(START), tmp_path / "one")
    code, _out, err = run(["report", str(path), "-o", str(tmp_path / "r.html"), "--frame", str(frame)])
    assert code == 2 and want in err and len(err.splitlines()) == 1, err
