"""``aer1 report --frame eu-ai-act``: each obligation verified, not verified or not applicable, with the checks it
rests on, and never more than was checked."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from aer1 import Collector
from aer1._report._frame import FRAMES_DIR, load_frame
from tests.helpers import KEYS
from tests.report.conftest import save
from tests.report.test_page import report, run

TRUSTED = str(KEYS / "trusted.pub")
DAY = 86400.0


def signed_run(start: float, goal: str = "weekly report") -> Collector:
    c = Collector(goal=goal, signing_key=(KEYS / "trusted.key").read_bytes())
    c.record("task", {"task": goal}, agent="user", started_at=start, ended_at=start + 1)
    c.record("lookup", {"name": "lookup", "arguments": {"q": "x"}, "result": "y", "is_error": False}, agent="alice",
             kind="tool_call", started_at=start + 1, ended_at=start + 2)
    return c


def items(html: str) -> dict[str, str]:
    return dict(re.findall(r'<tr data-item="([^"]+)" data-status="([^"]+)">', html))


def test_an_unsigned_receipt_verifies_no_item_that_rests_on_a_signature(tmp_path: Path) -> None:
    c = Collector(goal="unsigned")
    c.record("message", {"content": "hi"}, agent="alice")
    code, html = report(save(c, tmp_path), tmp_path / "r.html", "--frame", "eu-ai-act")
    assert code == 0
    assert items(html) == {"art-12-1": "not verified", "art-12-2-a": "not verified", "art-12-2-b": "not verified",
                           "art-12-2-c": "not verified", "art-19-1-26-6": "not applicable",
                           "iso-42001-a-6-2-8": "not verified"}
    assert "check 6 signature is NOT CHECKED" in html and "check policy did not run (no --policy given)" in html


def test_a_signed_receipt_with_a_trusted_key_and_a_policy(tmp_path: Path) -> None:
    policy = tmp_path / "p.toml"
    policy.write_text('format = "aer1-policy-v1"\nname = "open"\n[allow]\nagents = ["user", "alice"]\n')
    path = save(signed_run(1.78e9), tmp_path)
    code, html = report(path, tmp_path / "r.html", "--frame", "eu-ai-act", "--key", TRUSTED, "--policy", str(policy))
    assert code == 0
    got = items(html)
    assert got["art-12-1"] == got["art-12-2-a"] == got["art-12-2-b"] == got["iso-42001-a-6-2-8"] == "verified", got
    assert got["art-12-2-c"] == "not verified", "want no timestamp, no claim on the time of signing"
    # the same receipt without its key being trusted: nothing that rests on the signer holds
    _, html = report(path, tmp_path / "r2.html", "--frame", "eu-ai-act", "--policy", str(policy))
    assert items(html)["art-12-1"] == "not verified" and "signer is unknown key, want trusted key" in html


@pytest.mark.unverified_receipts
def test_a_failed_check_makes_its_items_not_verified(tmp_path: Path) -> None:
    path = save(signed_run(1.78e9), tmp_path)
    text = path.read_text().replace('"agent":"alice"', '"agent":"mallory"')
    path.write_text(text)
    code, html = report(path, tmp_path / "r.html", "--frame", "eu-ai-act", "--key", TRUSTED)
    assert code == 1 and "verified" not in set(items(html).values()) - {"not verified", "not applicable"}
    assert set(items(html).values()) <= {"not verified", "not applicable"}


def test_retention_over_an_archive_rests_on_its_span(tmp_path: Path) -> None:
    folder = tmp_path / "archive"
    save(signed_run(1.77e9), folder / "jan")
    save(signed_run(1.77e9 + 90 * DAY), folder / "apr")
    (tmp_path / "site").mkdir()
    code, html = report(folder, tmp_path / "site" / "index.html", "--frame", "eu-ai-act", "--key", TRUSTED)
    assert code == 0 and items(html)["art-19-1-26-6"] == "not verified"
    assert "the 2 receipts that pass span 90.0 days, want at least 183" in html
    save(signed_run(1.77e9 + 200 * DAY), folder / "aug")
    _, html = report(folder, tmp_path / "site" / "index.html", "--frame", "eu-ai-act", "--key", TRUSTED)
    got = items(html)
    # the receipts span 200 days, but no log was walked: nothing shows that none was deleted
    assert got["art-19-1-26-6"] == "not verified" and got["art-12-1"] == "verified", got
    assert "no transparency log was checked (give --log DIR with --log-key VKEY)" in html
    assert "span of the receipts that pass: 200.0 days" in html and "want at least 183" not in html
    # an unsigned receipt in the archive: the items resting on the signer hold for 3 of 4 receipts only
    c = Collector(goal="unsigned")
    c.record("message", {"content": "hi"}, agent="alice")
    save(c, folder / "unsigned")
    _, html = report(folder, tmp_path / "site" / "index.html", "--frame", "eu-ai-act", "--key", TRUSTED)
    assert items(html)["art-12-1"] == "not verified" and "verified for 3 of 4 receipts" in html


def test_another_frame_can_be_given_as_a_file(tmp_path: Path) -> None:
    frame = tmp_path / "mine.toml"
    shutil.copy(Path(FRAMES_DIR) / "eu-ai-act.toml", frame)
    assert load_frame(str(frame)).name == "eu-ai-act"
    frame.write_text('format = "aer1-frame-v1"\nname = "x"\ntitle = "t"\n[[item]]\nid = "a"\nref = "r"\n'
                     'obligation = "o"\nshows = "s"\nchecks = ["chain"]\n')
    c = Collector(goal="g")
    c.record("message", {"content": "hi"}, agent="alice")
    _, html = report(save(c, tmp_path), tmp_path / "r.html", "--frame", str(frame))
    assert items(html) == {"a": "verified"}


@pytest.mark.parametrize("text", ["not toml [", 'format = "other"', 'format = "aer1-frame-v1"\nname="x"\ntitle="t"',
                                  'format = "aer1-frame-v1"\nname="x"\ntitle="t"\n[[item]]\nid="a"\nref="r"\n'
                                  'obligation="o"\nshows="s"\nchecks=[]',
                                  'format = "aer1-frame-v1"\nname="x"\ntitle="t"\nextra=1'])
def test_a_bad_frame_is_one_line_and_exit_2(text: str, tmp_path: Path) -> None:
    frame = tmp_path / "bad.toml"
    frame.write_text(text)
    c = Collector(goal="g")
    c.record("message", {"content": "hi"}, agent="alice")
    for name in (str(frame), "no-such-frame"):
        code, _out, err = run(["report", str(save(c, tmp_path)), "-o", str(tmp_path / "r.html"), "--frame", name])
        assert code == 2 and err.startswith("aer1: error: --frame: ") and len(err.splitlines()) == 1, err
