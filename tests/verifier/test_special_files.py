"""Only regular files are read; reads are capped; a folder run counts what it cannot verify.

A FIFO would block a reader forever and a device feeds bytes without end: each is refused
at once, given directly, through a symlink, beside a receipt or inside a scanned folder.
The runs that could block go through a subprocess with a timeout, so a regression fails
the test instead of hanging the suite.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aer1 import _limits as limits
from aer1._cli import main as aer1_main
from aer1.verifier._cli import main as verify_main

from ..helpers import make_collector

BIN = Path(sys.executable).parent
_HANG_GUARD_S = 60


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    return Path(make_collector().save(tmp_path / "r.json"))


def _verify(*args: str) -> tuple[int, str, str]:
    done = subprocess.run([str(BIN / "aer1-verify"), *args], capture_output=True, text=True, timeout=_HANG_GUARD_S)
    assert "Traceback" not in done.stderr
    return done.returncode, done.stdout, done.stderr


def _in_process(*args: str) -> tuple[int, dict[str, object]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = verify_main([*args, "--json"])
    return code, json.loads(out.getvalue())


@contextlib.contextmanager
def _unix_socket(path: Path) -> Iterator[Path]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(path))
        yield path
    finally:
        s.close()


def test_fifo_given_as_the_receipt_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "r.json")
    code, _, err = _verify(str(tmp_path / "r.json"))
    assert code == 2 and "is a FIFO, not a receipt file" in err


def test_fifo_beside_the_receipt_as_its_evidence_fails_the_evidence_check(saved: Path) -> None:
    evidence = saved.with_name("r.evidence.jsonl")
    evidence.unlink()
    os.mkfifo(evidence)
    code, out, _ = _verify(str(saved), "--json")
    doc = json.loads(out)
    assert code == 1 and "is a FIFO, not an evidence file" in doc["failures"][0]["message"]


def test_fifo_or_device_given_as_evidence_or_key_is_a_usage_error(saved: Path, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    for option in ("--evidence", "--key"):
        for special in (str(tmp_path / "fifo"), "/dev/zero"):
            code, _, err = _verify(str(saved), option, special)
            assert code == 2 and "not a regular file" in err, f"{option} {special}: got {code} {err!r}"


def test_fifo_journal_is_refused_by_recover(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "run.journal")
    done = subprocess.run([str(BIN / "aer1"), "recover", str(tmp_path / "run.journal"), "-o", str(tmp_path / "o.json")],
                          capture_output=True, text=True, timeout=_HANG_GUARD_S)
    assert done.returncode == 2 and "is a FIFO, not a journal" in done.stderr


def test_device_directly_and_through_a_symlink(saved: Path, tmp_path: Path) -> None:
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    for path in ("/dev/zero", str(tmp_path / "zero.json")):
        code, doc = _in_process(path)
        assert code == 2 and "is a device" in str(doc["failures"]), doc
    evidence = saved.with_name("r.evidence.jsonl")
    evidence.unlink()
    evidence.symlink_to("/dev/zero")
    code, doc = _in_process(str(saved))
    assert code == 1 and "is a device, not an evidence file" in str(doc["failures"])
    with _unix_socket(tmp_path / "sock.json") as sock:
        code, doc = _in_process(str(sock))
        assert code == 2 and "is a socket" in str(doc["failures"])


def test_commands_of_aer1_refuse_special_files() -> None:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert aer1_main(["show", "/dev/zero"]) == 2
        assert aer1_main(["prove", "/dev/zero", "--step", "1"]) == 2
    assert err.getvalue().count("is a device") == 2


def test_sparse_evidence_without_a_newline_is_refused_after_one_capped_line(saved: Path) -> None:
    evidence = saved.with_name("r.evidence.jsonl")
    with open(evidence, "wb") as f:
        f.truncate(7 * 1024**3)  # sparse: no disk used, and no newline in 7 GiB
    code, doc = _in_process(str(saved))
    assert code == 1
    assert f"line 1 is over {limits.MAX_EVIDENCE_LINE_BYTES} bytes" in str(doc["failures"]), doc["failures"]


def test_files_read_whole_are_capped_at_the_parse_budget(saved: Path, tmp_path: Path) -> None:
    proof = tmp_path / "big.proof.json"
    with open(proof, "wb") as f:
        f.truncate(limits.MAX_PARSE_COST_BYTES + 1)  # sparse: a proof is read whole, so this is refused unread
    code, doc = _in_process(str(proof))
    assert code == 2 and f"over the {limits.MAX_PARSE_COST_BYTES}-byte limit" in str(doc["failures"])
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert aer1_main(["show", str(proof)]) == 2
    assert f"over the {limits.MAX_PARSE_COST_BYTES}-byte limit" in err.getvalue()


def test_evidence_and_receipt_over_their_size_limits_are_refused_before_reading(saved: Path) -> None:
    evidence = saved.with_name("r.evidence.jsonl")
    with open(evidence, "wb") as f:
        f.truncate(limits.MAX_EVIDENCE_BYTES + 1)
    code, doc = _in_process(str(saved))
    assert code == 1 and f"over the {limits.MAX_EVIDENCE_BYTES}-byte evidence limit" in str(doc["failures"])
    with open(saved, "r+b") as f:
        f.truncate(limits.MAX_INPUT_BYTES + 1)
    code, doc = _in_process(str(saved))
    assert code == 2 and f"over the {limits.MAX_INPUT_BYTES}-byte limit" in str(doc["failures"])


# ------------------------------------------------------------------ folder runs


def test_folder_run_counts_every_file_it_cannot_verify(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "runs").mkdir(parents=True)
    make_collector().save(store / "runs" / "good.json")
    (store / "runs" / "dangling.json").symlink_to(tmp_path / "missing.json")
    os.mkfifo(store / "runs" / "fifo.json")
    (tmp_path / "elsewhere").mkdir()
    make_collector().save(tmp_path / "elsewhere" / "outside.json")
    (store / "linked").symlink_to(tmp_path / "elsewhere")
    code, out, _ = _verify(str(store))
    assert code == 2
    assert out.splitlines()[-1] == "1 valid, 0 invalid, 3 unreadable (of 4)", out
    assert "a symlinked folder: not followed" in out and "not a regular file" in out and "cannot read" in out
    code, out, _ = _verify(str(store), "--json")
    doc = json.loads(out)
    assert (code, doc["exit_code"], doc["summary"]) == (2, 2, {"VALID": 1, "INVALID": 0, "MALFORMED": 3})


def _unprivileged() -> list[str]:
    """A command prefix that runs without the power to read every file (root reads mode 000 too)."""
    if os.geteuid() != 0:
        return []
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.skip("running as root and bubblewrap is missing: no way to drop the power to read everything")
    return [bwrap, "--unshare-user", "--uid", "1000", "--gid", "1000", "--dev-bind", "/", "/"]


def test_unreadable_subfolder_and_file_count_as_unreadable(tmp_path: Path) -> None:
    make_collector().save(tmp_path / "good.json")
    (tmp_path / "locked").mkdir()
    make_collector().save(tmp_path / "locked" / "hidden.json")
    make_collector().save(tmp_path / "secret.json")
    os.chmod(tmp_path / "secret.json", 0)
    os.chmod(tmp_path / "locked", 0)
    try:
        done = subprocess.run([*_unprivileged(), str(BIN / "aer1-verify"), str(tmp_path)], capture_output=True,
                              text=True, timeout=_HANG_GUARD_S)
    finally:
        os.chmod(tmp_path / "locked", 0o755)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.splitlines()[-1] == "1 valid, 0 invalid, 2 unreadable (of 3)", done.stdout
    assert "folder unreadable: Permission denied" in done.stdout and "Permission denied" in done.stdout


def test_unreadable_trusted_keys_folder_is_one_line(saved: Path, tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    os.chmod(keys, 0)
    try:
        done = subprocess.run([*_unprivileged(), str(BIN / "aer1-verify"), str(saved), "--trusted-keys", str(keys)],
                              capture_output=True, text=True, timeout=_HANG_GUARD_S)
    finally:
        os.chmod(keys, 0o755)
    assert done.returncode == 2 and done.stderr == f"aer1-verify: error: --trusted-keys {keys}: Permission denied\n"


def test_outputs_never_block_on_a_fifo(saved: Path, tmp_path: Path) -> None:
    """keygen --force replaces a FIFO; prove refuses one (it never replaces a special file: tests/trial)."""
    os.mkfifo(tmp_path / "k.pub")
    os.mkfifo(tmp_path / "step.proof.json")
    for args, code in ((["keygen", "-o", str(tmp_path / "k"), "--force"], 0),
                       (["prove", str(saved), "--step", "1", "-o", str(tmp_path / "step.proof.json")], 2)):
        done = subprocess.run([str(BIN / "aer1"), *args], capture_output=True, text=True, timeout=_HANG_GUARD_S)
        assert done.returncode == code, done.stderr
    assert (tmp_path / "k.pub").is_file() and stat.S_ISFIFO(os.lstat(tmp_path / "step.proof.json").st_mode)


def test_dangling_evidence_symlink_beside_the_receipt_fails_instead_of_being_skipped(saved: Path,
                                                                                     tmp_path: Path) -> None:
    evidence = saved.with_name("r.evidence.jsonl")
    evidence.unlink()
    evidence.symlink_to(tmp_path / "gone.jsonl")
    code, doc = _in_process(str(saved))
    assert code == 1 and "cannot read" in str(doc["failures"]), doc["failures"]
