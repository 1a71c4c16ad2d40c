"""Faults of the log writer: appenders in several processes at once, and SIGKILL at random points.

After every fault the log must verify as a whole (checkpoint, every tile and bundle) and
hold every entry whose append was acknowledged; the next append must go on from there.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from aer1._logdir import LogDir, init_log
from aer1._signing import generate_key_pair
from aer1._tlog import decode_bundle, dir_bundle_reader
from aer1.verifier._tlog import LogTrust, walk_log

#: A child that appends batches forever (or ``count`` of them), printing each acknowledged batch.
APPENDER = """
import sys
from aer1._logdir import LogDir
from tests.tlog.test_log_faults import entry
log, name, count, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
d = LogDir(log)
i = 0
while count < 0 or i < count:
    entries = [entry(name, i, k) for k in range(batch)]
    done = d.append(entries)
    print("acked", name, i, done.first, flush=True)
    i += 1
"""


ROOT = Path(__file__).parents[2]


def entry(name: str, i: int, k: int) -> bytes:
    """An "opened" entry whose ids say which process, batch and place wrote it."""
    import hashlib
    import uuid

    from aer1._tlog._entry import opened_entry

    ids = hashlib.sha256(f"{name} {i} {k}".encode()).digest()
    return opened_entry(str(uuid.UUID(bytes=ids[:16])), str(uuid.UUID(bytes=ids[16:])),
                        "2026-01-01T00:00:00.000000Z").encode()


def _log(tmp: Path) -> Path:
    key = tmp / "log.key"
    key.write_bytes(generate_key_pair()[0])
    init_log(tmp / "log", "example.com/faults", str(key))
    return tmp / "log"


def _entries(log: Path) -> list[bytes]:
    size = LogDir(log).checkpoint()[0].size
    out: list[bytes] = []
    for t in range(-(-size // 256)):
        out.extend(decode_bundle(dir_bundle_reader(log)(t, min(256, size - t * 256))))
    return out


def _check_whole(log: Path) -> None:
    walk = walk_log(str(log), LogTrust((LogDir(log).verifier.vkey,)))
    assert walk.problems == [] and walk.checkpoint is not None
    assert walk.entries == walk.checkpoint.size


def _spawn(log: Path, name: str, count: int, batch: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", APPENDER, str(log), name, str(count), str(batch)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_concurrent_appenders_in_processes(tmp_path: Path) -> None:
    log = _log(tmp_path)
    children = [_spawn(log, f"p{n}", 25, 7) for n in range(4)]
    for c in children:
        out, err = c.communicate(timeout=120)
        assert c.returncode == 0, err
        assert out.count("acked") == 25
    entries = _entries(log)
    assert len(entries) == 4 * 25 * 7 == len(set(entries))
    for n in range(4):  # each process's batches are whole and in its own order
        want = [entry(f"p{n}", i, k) for i in range(25) for k in range(7)]
        assert [e for e in entries if e in set(want)] == want
    _check_whole(log)


def test_sigkill_at_random_points_loses_nothing_acknowledged(tmp_path: Path) -> None:
    log = _log(tmp_path)
    rng = random.Random(28)
    acked: list[tuple[str, int]] = []
    for round_ in range(6):
        child = _spawn(log, f"k{round_}", -1, rng.choice([1, 3, 200, 300]))
        assert child.stdout is not None
        first = child.stdout.readline()  # the first acknowledged batch: start-up time varies with the load
        time.sleep(rng.uniform(0.0, 0.6))  # then a kill at a random point of the appends that follow
        os.kill(child.pid, signal.SIGKILL)
        out, _ = child.communicate(timeout=60)
        assert child.returncode == -signal.SIGKILL
        lines = [first, *out.splitlines()]
        acked += [(p[1], int(p[2])) for p in (line.split() for line in lines) if p[:1] == ["acked"]]
        _check_whole(log)  # the checkpoint describes only what is on disk
        have = set(_entries(log))
        for name, i in acked:
            assert entry(name, i, 0) in have, f"acknowledged batch {name} {i} lost"
    before = LogDir(log).checkpoint()[0].size
    done = LogDir(log).append([entry("after", 0, 0)])  # the next append resumes
    assert done.old_size == before and done.size == before + 1
    _check_whole(log)
    assert any(acked), "no append was acknowledged before a kill: the test proved nothing"


def test_full_tiles_are_never_rewritten_and_the_checkpoint_never_shrinks(tmp_path: Path) -> None:
    log = _log(tmp_path)
    d = LogDir(log)
    d.append([entry("a", 0, k) for k in range(600)])
    full = {p: (p.stat().st_mtime_ns, p.stat().st_ino) for p in (log / "tile").rglob("*")
            if p.is_file() and not any(part.endswith(".p") for part in p.relative_to(log).parts)}
    assert len(full) == 4, sorted(full)  # tile/0/000, tile/0/001, tile/entries/000, tile/entries/001
    sizes = []
    for n in (1, 255, 256, 1):
        sizes.append(d.append([entry("b", n, k) for k in range(n)]).size)
    assert sizes == sorted(sizes)
    for p, v in full.items():
        assert (p.stat().st_mtime_ns, p.stat().st_ino) == v, f"{p} was written again"
    _check_whole(log)
