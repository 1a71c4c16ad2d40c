"""``aer1 show --follow``: a run's steps printed while another process journals them; the end of a finalized
run and of one killed with SIGKILL (its journal stops growing and its writer lock is gone)."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from aer1 import Collector
from aer1._follow import follow
from tests.report.test_page import run

#: A writer: journals STEPS steps, waits for the go file, journals as many again with a pause longer than the
#: follower's idle time between them, then finalizes (or waits to be killed).
WRITER = """
import os, sys, time
from aer1 import Collector
journal, go, steps, pause, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
c = Collector(goal="followed run", journal=journal, fsync="never")
for i in range(steps):
    c.record("lookup", {"name": "lookup", "arguments": {"i": i}, "result": f"first {i}", "is_error": False},
             agent="alice", kind="tool_call")
while not os.path.exists(go):
    time.sleep(0.01)
if end == "finalize":
    for i in range(steps):
        time.sleep(pause)
        c.record("message", {"content": f"second {i}"}, agent="bob")
    c.finalize(final_answer="done")
else:
    time.sleep(600)
"""
STEPS = 3
IDLE_S = 0.2


class Lines(io.StringIO):
    """What the follower printed, readable while it runs."""

    def rows(self) -> list[str]:
        return [line for line in self.getvalue().splitlines() if line[:6].strip().isdigit()]


def start(tmp_path: Path, end: str, pause: float = 0.0) -> tuple[subprocess.Popen[bytes], Path, Path]:
    journal, go = tmp_path / "run.journal", tmp_path / "go"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(journal), str(go), str(STEPS), str(pause), end])
    deadline = time.monotonic() + 30
    while not journal.exists() or journal.stat().st_size == 0:
        assert writer.poll() is None and time.monotonic() < deadline, "the writer did not start its journal"
        time.sleep(0.01)
    return writer, journal, go


def following(journal: Path) -> tuple[threading.Thread, Lines, list[int]]:
    out, code = Lines(), []
    thread = threading.Thread(target=lambda: code.append(follow(str(journal), out, idle_s=IDLE_S)), daemon=True)
    thread.start()
    return thread, out, code


def wait_rows(out: Lines, n: int) -> None:
    deadline = time.monotonic() + 30
    while len(out.rows()) < n:
        assert time.monotonic() < deadline, f"got {out.getvalue()!r}, want {n} rows"
        time.sleep(0.01)


def test_follow_prints_steps_as_another_process_journals_them(tmp_path: Path) -> None:
    writer, journal, go = start(tmp_path, "finalize", pause=3 * IDLE_S)  # quiet longer than the idle time
    thread, out, code = following(journal)
    wait_rows(out, STEPS)  # printed while the writer waits: the rest is not journaled yet
    assert thread.is_alive() and out.getvalue().count("first") == STEPS and "second" not in out.getvalue()
    go.touch()
    thread.join(60)
    assert writer.wait(30) == 0 and code == [0], out.getvalue()
    rows = out.rows()
    assert [int(r.split()[0]) for r in rows] == list(range(1, 2 * STEPS + 2))  # and the close step
    assert "tool_call" in rows[0] and "[lookup]" in rows[0] and "first 0" in rows[0]
    assert "second 2" in rows[-2] and "close" in rows[-1]
    assert out.getvalue().splitlines()[-1].startswith("finalized: status ok, 7 steps, merkle_root ")


def test_follow_ends_when_the_writer_is_killed(tmp_path: Path) -> None:
    writer, journal, _go = start(tmp_path, "hang")
    thread, out, code = following(journal)
    wait_rows(out, STEPS)
    time.sleep(3 * IDLE_S)
    assert thread.is_alive(), "want following to go on while the writer lives, however quiet"
    writer.kill()  # SIGKILL: no finalize, no cleanup; the OS drops the writer's lock
    writer.wait(30)
    thread.join(30)
    assert code == [1], out.getvalue()
    last = out.getvalue().splitlines()[-1]
    assert last.startswith(f"interrupted: the journal stopped growing and its writer is gone, after {STEPS} steps")
    assert "aer1 recover" in last


def test_a_torn_last_line_is_reported_not_printed(tmp_path: Path) -> None:
    journal = tmp_path / "run.journal"
    c = Collector(goal="torn", journal=str(journal))
    c.record("message", {"content": "whole"}, agent="alice")
    c.journal.close()  # type: ignore[union-attr]  # the writer is gone (its lock with it)
    with journal.open("ab") as f:
        f.write(b'{"type":"step","step":{"seq":2')
    out = Lines()
    assert follow(str(journal), out, idle_s=0.05) == 1
    assert len(out.rows()) == 1 and "and a torn last line of 30 bytes" in out.getvalue()


def test_a_finished_journal_prints_everything_and_exits_0(tmp_path: Path) -> None:
    journal = tmp_path / "done.journal"
    c = Collector(goal="done", journal=str(journal))
    c.record("message", {"content": "<script>x</script>\n  2 forged row"}, agent="alice")
    c.finalize()
    code, out, err = run(["show", "--follow", str(journal)])
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 4 and lines[-1].startswith("finalized: status ok, 2 steps"), out  # header, 2 steps, final


@pytest.mark.parametrize("content", [b"not json\n", b'{"type": "aer1-journal"}\n', b""])
def test_what_is_not_a_journal_exits_2(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "bad.journal"
    path.write_bytes(content)
    if not content:  # an empty file with no writer: told once the idle time has passed
        with pytest.raises(Exception, match="no whole header line"):
            follow(str(path), Lines(), idle_s=0.05)
        return
    code, _out, err = run(["show", "--follow", str(path)])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_a_long_step_line_read_in_many_chunks_is_followed_in_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New user: ``--follow`` on a run whose one step holds megabytes (a tool's big result) took minutes: each
    chunk read appended to the torn line by copying it, and searched the whole torn line for a newline again, so
    a line read in N chunks cost N times its length. Now only the new chunk is searched and the torn rest grows in
    place; the line is printed whole, and the split keeps every line across chunk ends."""
    import aer1._follow as followed

    pending = bytearray()
    got = [followed._whole_lines(pending, c) for c in (b"ab", b"c\nde", b"\n", b"f\ng\nh", b"")]
    assert got == [[], [b"abc"], [b"de"], [b"f", b"g"], []] and pending == b"h"
    journal = tmp_path / "big.journal"
    c = Collector(goal="big", journal=str(journal))
    c.record("lookup", {"arguments": {}, "result": "x" * 3_000_000}, agent="alice", kind="tool_call")
    c.finalize()
    monkeypatch.setattr(followed, "_READ_BYTES", 1024)  # about 3000 reads of the one long line
    out = Lines()
    assert follow(str(journal), out, idle_s=5) == 0
    assert len(out.rows()) == 2 and "xxxx" in out.rows()[0], out.getvalue()[:300]
