"""Group commit: appenders in several processes that meet a busy sequencer are integrated together.

An appender that finds ``DIR/lock`` held queues its batch in ``DIR/pending/`` and waits;
the next holder of the lock integrates every queued batch in one signed checkpoint. The
tests hold the lock themselves so that the batches queue up for certain, then check that
every entry is in the log exactly once, that one checkpoint took them all, and that a
sequencer SIGKILLed between its steps leaves a log the next append finishes or undoes.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aer1._logdir import LOCK, PENDING, SEQUENCING, LogDir
from aer1._tlog import parse_checkpoint, parse_note, verify_tlog_proof

from .test_log_faults import ROOT, _check_whole, _entries, _log, entry

#: A child that appends one batch of ``count`` entries and prints its indexes and checkpoint size.
ONE_BATCH = """
import sys
from aer1._logdir import LogDir
from aer1._tlog import format_tlog_proof
from tests.tlog.test_log_faults import entry
log, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = LogDir(log)
done = d.append([entry(name, 0, k) for k in range(count)])
proof = d.proofs(done, [done.first])[0]
print("acked", name, done.first, done.size, flush=True)
sys.stdout.buffer.write(format_tlog_proof(proof))
"""

#: A child that appends one entry and SIGKILLs itself just before it writes a file whose name ends in ``target``.
KILLED_AT = """
import os, signal, sys
from pathlib import Path
import aer1._logdir as logdir
from tests.tlog.test_log_faults import entry
log, target = sys.argv[1], sys.argv[2]
real = logdir.write_durable
def write_durable(path, data, *, sync_dir=True):
    if Path(path).name.endswith(target):
        os.kill(os.getpid(), signal.SIGKILL)
    real(path, data, sync_dir=sync_dir)
logdir.write_durable = write_durable
real_replace = logdir.replace_file
def replace_file(path, write, **kw):
    if Path(path).name.endswith(target):
        os.kill(os.getpid(), signal.SIGKILL)
    real_replace(path, write, **kw)
logdir.replace_file = replace_file
logdir.LogDir(log).append([entry("killer", 0, 0)])
"""

#: Seconds a test waits for its children to queue their batches (a bound on a hang, not a timing).
_QUEUE_WAIT_S = 120.0


def _queued(log: Path) -> list[Path]:
    folder = log / PENDING
    return sorted(folder.glob("*.entries")) if folder.is_dir() else []


def _hold_lock(log: Path) -> int:
    fd = os.open(log / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _wait_for_queued(log: Path, n: int, children: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + _QUEUE_WAIT_S
    while len(_queued(log)) < n:
        for c in children:
            assert c.poll() is None, c.stderr.read().decode() if c.stderr else c.returncode
        assert time.monotonic() < deadline, f"only {len(_queued(log))} of {n} batches were queued"
        time.sleep(0.05)


def test_appenders_queued_behind_a_busy_sequencer_share_one_checkpoint(tmp_path: Path) -> None:
    log = _log(tmp_path)
    LogDir(log).append([entry("before", 0, 0)])
    fd = _hold_lock(log)  # the busy sequencer
    counts = {"p0": 1, "p1": 5, "p2": 300, "p3": 2}
    children = [subprocess.Popen([sys.executable, "-c", ONE_BATCH, str(log), name, str(n)], cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE) for name, n in counts.items()]
    try:
        _wait_for_queued(log, len(children), children)
    finally:
        os.close(fd)
    results = {}
    for c in children:
        out, err = c.communicate(timeout=120)
        assert c.returncode == 0, err.decode()
        head, _, proof = out.partition(b"\n")
        _, name, first, size = head.decode().split()
        results[name] = (int(first), int(size), proof)
    total = 1 + sum(counts.values())
    assert {size for _, size, _ in results.values()} == {total}, results  # one checkpoint took every batch
    entries = _entries(log)
    assert len(entries) == total == len(set(entries))  # nothing lost, nothing twice
    verifier = LogDir(log).verifier
    for name, (first, _, proof_text) in results.items():
        assert entries[first:first + counts[name]] == [entry(name, 0, k) for k in range(counts[name])]
        from aer1._tlog import parse_tlog_proof

        proof = parse_tlog_proof(proof_text)
        assert parse_checkpoint(parse_note(proof.checkpoint).text).size == total
        verify_tlog_proof(proof, entry(name, 0, 0), [verifier])
    assert _queued(log) == [] and not (log / SEQUENCING).exists()
    assert list((log / PENDING).iterdir()) == []  # every answer taken by its appender
    _check_whole(log)


def test_many_appending_processes_at_once_lose_and_repeat_nothing(tmp_path: Path) -> None:
    """Without a held lock: contention comes and goes; whatever batches form, every entry is there once."""
    log = _log(tmp_path)
    from .test_log_faults import _spawn

    children = [_spawn(log, f"c{n}", 30, 1) for n in range(5)]
    for c in children:
        out, err = c.communicate(timeout=300)
        assert c.returncode == 0, err
        assert out.count("acked") == 30
    entries = _entries(log)
    assert len(entries) == 150 == len(set(entries))
    for n in range(5):
        want = [entry(f"c{n}", i, 0) for i in range(30)]
        assert [e for e in entries if e in set(want)] == want  # each process's appends in its own order
    _check_whole(log)


def _queue_batches(log: Path, n: int) -> list[tuple[str, list[bytes]]]:
    """``n`` batches queued as waiting appenders queue them (the appenders' side of the protocol)."""
    d = LogDir(log)
    out = []
    for b in range(n):
        batch = [entry(f"q{b}", 0, k) for k in range(b + 1)]
        out.append((d._queue(batch), batch))
    return out


@pytest.mark.parametrize("target", [SEQUENCING, "checkpoint", ".done"])
def test_a_sequencer_killed_mid_batch_is_finished_or_undone_by_the_next(tmp_path: Path, target: str) -> None:
    """SIGKILL before the record, between the record and the checkpoint, and between the checkpoint and the answers."""
    log = _log(tmp_path)
    LogDir(log).append([entry("before", 0, 0)])
    queued = _queue_batches(log, 3)
    child = subprocess.run([sys.executable, "-c", KILLED_AT, str(log), target], cwd=ROOT, capture_output=True,
                           timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    size_after_kill = LogDir(log).checkpoint()[0].size
    assert size_after_kill == (1 if target != ".done" else 1 + 1 + 6)
    _check_whole(log)
    d = LogDir(log)
    d.append([entry("next", 0, 0)])  # the next sequencer finishes or undoes the killed one's batch
    entries = _entries(log)
    assert len(entries) == len(set(entries)), "an entry was logged twice"
    for name, batch in queued:  # each waiting appender finds its batch, in the log exactly once
        done = d._take_done(name)
        assert done is not None, f"queued batch {name} was not integrated"
        assert entries[done.first:done.first + len(batch)] == batch
        assert done.size <= len(entries)
    assert entry("next", 0, 0) in entries and entry("before", 0, 0) in entries
    assert not (log / SEQUENCING).exists() and _queued(log) == []
    _check_whole(log)


def test_a_queue_file_that_is_not_a_batch_is_set_aside_and_blocks_nobody(tmp_path: Path) -> None:
    """Defect guarded: a cut or foreign file in ``pending/`` must not stop every later append."""
    log = _log(tmp_path)
    (log / PENDING).mkdir()
    (log / PENDING / "00000000000000000001-1-00000000.entries").write_bytes(b"\x00\x09cut")
    queued = _queue_batches(log, 1)
    d = LogDir(log)
    done = d.append([entry("after", 0, 0)])
    assert done.size == 2 and _entries(log)[1:] == queued[0][1]
    assert (log / PENDING / "00000000000000000001-1-00000000.refused").exists()
    _check_whole(log)
