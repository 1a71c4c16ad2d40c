"""Trial: command-line variants the hardening missed: output files that are not files, standard output that fails."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from aer1 import Collector
from aer1._cli import main as aer1_main
from aer1.verifier import verify_proof
from aer1.verifier._cli import main as verify_main

BIN = Path(sys.executable).parent
DEV_FULL = "/dev/full"


def _saved(folder: Path, name: str = "receipt.json", text: str = "hello") -> Path:
    c = Collector(goal="trial")
    c.record("message", {"content": text}, agent="alice")
    return Path(c.save(folder / name, workflow=c.finalize()))


def _journal(folder: Path) -> Path:
    path = folder / "run.journal"
    c = Collector(goal="trial", journal=path, fsync="never")
    c.record("message", {"content": "hello"}, agent="alice")
    return path


def _special_files(folder: Path) -> list[Path]:
    """A FIFO, a link to it, and (as root) a character device (/dev/null's numbers): none is a file."""
    fifo = folder / "out.fifo"
    os.mkfifo(fifo)
    link = folder / "out.link"
    link.symlink_to(fifo.name)
    found = [fifo, link]
    if os.geteuid() == 0:
        device = folder / "out.device"
        os.mknod(device, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        found.append(device)
    return found


def _kind(path: Path) -> int:
    return stat.S_IFMT(os.lstat(path).st_mode)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*args], capture_output=True, text=True, timeout=60)


def test_prove_and_recover_output_to_special_file_is_refused_not_replaced(tmp_path: Path) -> None:
    """``-o /dev/stdout`` (a link to a device) once replaced the device node with a regular file."""
    receipt, journal = _saved(tmp_path), _journal(tmp_path)
    for target in _special_files(tmp_path):
        before = _kind(target)
        for args in (("prove", str(receipt), "--step", "1", "-o", str(target)),
                     ("recover", str(journal), "-o", str(target))):
            done = _run(str(BIN / "aer1"), *args)
            assert done.returncode == 2, f"got exit {done.returncode}, want 2 ({args}): {done.stderr}"
            assert "not a regular file" in done.stderr and "Traceback" not in done.stderr, done.stderr
            assert _kind(target) == before, f"{target} was replaced by {args[0]}"
    assert not [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_save_beside_special_evidence_file_is_refused_before_writing(tmp_path: Path) -> None:
    c = Collector(goal="trial")
    c.record("message", {"content": "hello"}, agent="alice")
    receipt = c.finalize()
    for target in _special_files(tmp_path):
        with pytest.raises(OSError, match="not a regular file"):
            c.save(target, workflow=receipt)
        assert _kind(target) != stat.S_IFREG
    (tmp_path / "beside.evidence.jsonl").symlink_to("out.fifo")
    with pytest.raises(OSError, match="not a regular file"):
        c.save(tmp_path / "beside.json", workflow=receipt)
    assert not (tmp_path / "beside.json").exists()


@pytest.mark.skipif(not os.path.exists(DEV_FULL), reason="needs /dev/full")
@pytest.mark.parametrize("command", [("aer1-verify", "--json"), ("aer1-verify",), ("aer1", "show")])
def test_standard_output_that_fails_is_one_line_not_a_traceback(tmp_path: Path, command: tuple[str, ...]) -> None:
    """``--json > /dev/full``: writing the error object failed again and ended in a traceback."""
    receipt = _saved(tmp_path)
    with open(DEV_FULL, "w") as full:
        done = subprocess.run([str(BIN / command[0]), *command[1:], str(receipt)], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    assert done.returncode == 2, f"got exit {done.returncode}, want 2: {done.stderr}"
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "No space left on device" in lines[0], f"got {done.stderr!r}, want one line"


def test_closed_standard_output_keeps_the_exit_code(tmp_path: Path) -> None:
    receipt = _saved(tmp_path)
    for args, want in (([str(receipt)], 0), ([str(tmp_path / "missing.json")], 2)):
        done = _run("sh", "-c", 'exec "$0" --json "$@" >&-', str(BIN / "aer1-verify"), *args)
        assert done.returncode == want, f"got exit {done.returncode}, want {want}: {done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr


def test_prove_refuses_evidence_of_another_receipt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``aer1 prove --evidence`` embedded another run's content and said the proof was written (it then failed)."""
    receipt, other = _saved(tmp_path, "one.json"), _saved(tmp_path, "two.json", "goodbye")
    out = tmp_path / "step1.proof.json"
    code = aer1_main(["prove", str(receipt), "--step", "1", "--evidence", str(other.with_suffix(".evidence.jsonl")),
                      "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "does not match this receipt" in err, f"got exit {code}, {err!r}"
    assert not out.exists()
    assert aer1_main(["prove", str(receipt), "--step", "1", "-o", str(out)]) == 0
    report = verify_proof(out, expected_root=json.loads(receipt.read_text())["merkle_root"])
    assert (report.verdict, report.basis()["content"]) == ("VALID", "checked"), report.to_text()


def _lift_chain(top: Path) -> None:
    """Remove the chain ``top/a/a/...`` one level at a time (pytest's cleanup recurses once per level)."""
    while (top / "a").is_dir():
        inner = top / "a"
        for name in os.listdir(inner):
            os.rename(inner / name, top / f"{name}.up")
        os.rmdir(inner)
        for name in os.listdir(top):
            os.rename(top / name, top / name.removesuffix(".up"))


def test_folder_nested_deeper_than_the_stack_is_walked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A folder 1 500 levels deep ended in "internal error: RecursionError" (os.walk recursed per level)."""
    deep = tmp_path / "deep"
    deep.mkdir()
    fd = os.open(deep, os.O_RDONLY)
    try:
        for _ in range(1500):  # relative to a descriptor: no path grows past the kernel's limit here
            os.mkdir("a", dir_fd=fd)
            child = os.open("a", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(os.open("r.json", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    try:
        code = verify_main(["--json", str(deep)])
    finally:
        _lift_chain(deep)
    doc = json.loads(capsys.readouterr().out)
    assert code == 2 and "error" not in doc, f"got exit {code}, {doc.get('error')!r}, want one result"
    assert doc["summary"]["MALFORMED"] == 1 and doc["results"][0]["source"].endswith("/a/r.json"), doc["summary"]


FORGED_LINE = "\x1b[2J\rverdict: VALID (forged)\n"


def test_text_reports_never_print_a_members_line_breaks_or_escapes(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A close step's tool (re-chained) and a file name printed raw: a forged verdict line, a cleared screen."""
    c = Collector(goal="trial" + FORGED_LINE)
    c.record("message", {"content": "hello"}, agent="alice" + FORGED_LINE)
    receipt = c.finalize()
    named = Path(c.save(tmp_path / f"r{FORGED_LINE.strip()}.json", workflow=receipt))
    forged = _rechained_close_tool(receipt, "close" + FORGED_LINE)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(forged))
    for argv, run in (([str(named)], verify_main), ([str(bad)], verify_main), (["show", str(named)], aer1_main)):
        run(argv)
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\r" not in out, f"{argv}: escape printed raw: {out!r}"
        forged_lines = [line for line in out.splitlines() if line.startswith("verdict: VALID (forged")]
        assert not forged_lines, f"{argv}: a member forged a line: {out!r}"


def _rechained_close_tool(receipt: dict, tool: str) -> dict:
    """``receipt`` with its close step's tool changed and every digest, id and root recomputed."""
    from tests.fixtures.generate_adversarial import _rechain

    forged = json.loads(json.dumps(receipt))
    forged["steps"][-1]["tool"] = tool
    return _rechain(forged, None)


_HANG_GUARD_S = 60


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_signing_key_that_is_not_a_file_is_refused_not_read(tmp_path: Path, special: str) -> None:
    """``recover --key FIFO`` blocked for ever; ``--key /dev/zero`` (or $AER1_SIGNING_KEY) read without end."""
    key = special
    if special == "fifo":
        key = str(tmp_path / "ops.key")
        os.mkfifo(key)
    journal = _journal(tmp_path)
    runs = {
        "--key": ([str(BIN / "aer1"), "recover", str(journal), "-o", str(tmp_path / "r.json"), "--key", key], {}),
        "$AER1_SIGNING_KEY": ([str(BIN / "aer1"), "recover", str(journal), "-o", str(tmp_path / "r.json")],
                              {"AER1_SIGNING_KEY": key}),
        "Collector": ([sys.executable, "-c", "from aer1 import Collector; Collector(goal='g')"],
                      {"AER1_SIGNING_KEY": key}),
    }
    for how, (argv, env) in runs.items():
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_HANG_GUARD_S, env={**os.environ, **env})
        assert done.returncode != 0 and "not a regular file" in done.stderr, f"{how}: got {done.returncode}, " \
            f"{done.stderr[-300:]!r}"
        assert how == "Collector" or done.returncode == 2, f"{how}: got exit {done.returncode}, want 2"
