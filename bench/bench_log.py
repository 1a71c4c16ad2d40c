"""The transparency log: append rate, a log of 10^6 entries built and checked, completeness's share.

Usage: ``python bench/bench_log.py [--entries N] [--receipts N] [--batch N]``
(defaults 1,000,000 entries, 10,000 receipts, batches of 1,000; ``--quick``: 100,000 and 1,000)

Measured in one run, side by side:

* append rate into a local log (``LogDir.append``: tiles, bundles, fsync, a signed
  checkpoint per batch), batched, in entries/s, and one entry per append (a collector's
  finalize) in appends/s; target: at least 10,000 entries/s batched;
* group commit: 4 producer processes appending one entry at a time to one log folder:
  entries/s and how many checkpoints took them (each appender that finds the sequencer
  busy queues its entry for the next checkpoint);
* building a log of N entries (batches of 100,000) and checking it whole as the verifier
  does (``walk_log``: checkpoint, every tile and bundle, every entry parsed): time, disk;
* the completeness walk of an archive of R receipts (real collector runs of 10 steps,
  signed, logged in one batch): ``aer1-verify ARCHIVE`` against ``aer1-verify --log DIR
  --log-key VKEY --complete ARCHIVE`` (each receipt's proof checked too), both ``-j 1`` in
  fresh processes (bytecode cached, as installed), interleaved, the fastest of three each,
  in CPU time (user + system: what another load on the machine disturbs least) and in wall
  time; target: at most 10% more;
* the size of one ``.tlog-proof`` in the N-entry log.

Not part of ``run_all.py``: the default run takes several minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO
from _table import machine

sys.path.insert(0, str(REPO))

from aer1 import Collector
from aer1._logdir import LogDir, append_receipts, init_log
from aer1._signing import generate_key_pair
from aer1._tlog import TlogProof, consistency_proof, format_tlog_proof, inclusion_proof
from aer1._tlog._entry import LogEntry
from aer1.verifier._tlog import LogTrust, walk_log

_TIMEOUT_S = 3600
#: Runs of each command in the completeness comparison (the fastest of each is compared).
_ROUNDS = 3


def _entries(start: int, n: int) -> list[bytes]:
    """Closed entries as a real receipt's (about 420 bytes), with distinct ids."""
    out = []
    for i in range(start, start + n):
        u = f"{i:032x}"
        wf = f"{u[:8]}-{u[8:12]}-4{u[13:16]}-8{u[17:20]}-{u[20:]}"
        out.append(LogEntry("closed", wf, wf, "2026-01-01T00:00:00.000000Z", "ok", u * 2, u * 2, u * 2,
                            "2026-01-01T00:00:01.000000Z").encode())
    return out


def _new_log(folder: Path) -> LogDir:
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / "log.key"
    key.write_bytes(generate_key_pair()[0])
    init_log(folder / "log", "bench.example/log", str(key))
    return LogDir(folder / "log")


def _du(path: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


def append_rate(folder: Path, total: int, batch: int) -> dict[str, float]:
    log = _new_log(folder / "rate")
    entries = _entries(0, total)
    t = time.perf_counter()
    for k in range(0, total, batch):
        log.append(entries[k:k + batch])
    batched = total / (time.perf_counter() - t)
    singles = 200
    t = time.perf_counter()
    for e in _entries(total, singles):
        log.append([e])
    return {"batched_entries_per_s": batched, "single_appends_per_s": singles / (time.perf_counter() - t)}


#: A producer process: ``count`` appends of one entry each, printing the checkpoint size that took each.
_PRODUCER = """
import sys
sys.path.insert(0, sys.argv[4])
from aer1._logdir import LogDir
from bench_log import _entries
log, start, count = LogDir(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for e in _entries(start, count):
    print(log.append([e]).size, flush=True)
"""


def concurrent_rate(folder: Path, procs: int, each: int) -> dict[str, float]:
    """``procs`` processes appending one entry at a time to one log: entries/s, and checkpoints written."""
    log = _new_log(folder / "concurrent")
    here = str(Path(__file__).parent)
    t = time.perf_counter()
    children = [subprocess.Popen([sys.executable, "-c", _PRODUCER, str(log.root), str(10**7 + k * each), str(each),
                                  here], stdout=subprocess.PIPE, text=True) for k in range(procs)]
    sizes: set[int] = set()
    for c in children:
        out, _ = c.communicate(timeout=_TIMEOUT_S)
        if c.returncode != 0:
            raise SystemExit(f"a producer exited {c.returncode}")
        sizes.update(int(line) for line in out.split())
    wall = time.perf_counter() - t
    total = procs * each
    if log.checkpoint()[0].size != total:
        raise SystemExit(f"log size {log.checkpoint()[0].size}, want {total}")
    return {"processes": procs, "entries": total, "entries_per_s": total / wall, "checkpoints": len(sizes)}


def build_and_check(folder: Path, n: int) -> dict[str, float]:
    log = _new_log(folder / "big")
    t = time.perf_counter()
    step = 100_000
    for k in range(0, n, step):
        log.append(_entries(k, min(step, n - k)))
    build = time.perf_counter() - t
    t = time.perf_counter()
    walk = walk_log(str(log.root), LogTrust((log.verifier.vkey,)))
    check = time.perf_counter() - t
    assert walk.problems == [] and walk.entries == n, walk.problems[:3]
    cp, note = log.checkpoint()
    hashes = log.hash_reader(cp)
    proof = format_tlog_proof(TlogProof(n // 3, tuple(inclusion_proof(n // 3, n, hashes.hash_at)), note))
    consistency = consistency_proof(n // 2 + 1, n, hashes.hash_at)
    return {"entries": n, "build_s": build, "check_s": check, "disk_mib": _du(log.root) / 2**20,
            "proof_bytes": len(proof), "consistency_hashes": len(consistency)}


def _run(argv: list[str], cache: Path) -> tuple[float, float]:
    """Wall and CPU time (user + system) of one fresh ``argv`` process, its modules' bytecode cached
    (as an installed package has it)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=_TIMEOUT_S,
                          env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[:3]} exited {done.returncode}: {done.stderr[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def completeness_share(folder: Path, receipts: int) -> dict[str, float]:
    archive = folder / "archive"
    archive.mkdir()
    key = folder / "signing.key"
    key.write_bytes(generate_key_pair()[0])
    made = []
    for i in range(receipts):
        c = Collector(goal="bench", signing_key=str(key))
        for s in range(9):
            c.record("message", {"content": f"step {s} of run {i}"}, agent="alice" if s % 2 else "bob")
        r = c.finalize(final_answer="done")
        made.append((c.save(archive / f"r{i:06d}.json", workflow=r), r))
    log = _new_log(folder / "completeness")
    append_receipts(log.root, made)
    verify = str(Path(sys.executable).with_name("aer1-verify"))
    plain = [verify, str(archive), "-j", "1"]
    complete = [verify, "--log", str(log.root), "--log-key", log.verifier.vkey, "--complete", str(archive), "-j", "1"]
    cache = folder / "pycache"
    _run(complete, cache)  # a warm-up: compiles every module either command loads
    alone, walked = [], []
    for _ in range(_ROUNDS):  # interleaved, so a load that comes and goes weighs on both alike
        alone.append(_run(plain, cache))
        walked.append(_run(complete, cache))
    wall_a, wall_w = min(w for w, _ in alone), min(w for w, _ in walked)
    cpu_a, cpu_w = min(c for _, c in alone), min(c for _, c in walked)
    return {"receipts": receipts, "verify_s": wall_a, "verify_complete_s": wall_w, "share": wall_w / wall_a - 1,
            "verify_cpu_s": cpu_a, "verify_complete_cpu_s": cpu_w, "cpu_share": cpu_w / cpu_a - 1}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--entries", type=int, default=1_000_000)
    p.add_argument("--receipts", type=int, default=10_000)
    p.add_argument("--batch", type=int, default=1_000)
    p.add_argument("--quick", action="store_true", help="100,000 entries, 1,000 receipts")
    p.add_argument("--only", choices=("append", "log", "completeness"), help="run one part only")
    args = p.parse_args()
    if args.quick:
        args.entries, args.receipts = 100_000, 1_000
    print(f"# bench_log on {machine()}")
    with tempfile.TemporaryDirectory(prefix="aer1-bench-log-") as tmp:
        folder = Path(tmp)
        rate: dict[str, float] = {}
        big: dict[str, float] = {}
        share: dict[str, float] = {}
        if args.only in (None, "append"):
            rate = append_rate(folder, min(args.entries, 100_000), args.batch)
            print(f"append, batches of {args.batch}: {rate['batched_entries_per_s']:,.0f} entries/s "
                  f"(target >= 10,000); one entry per append: {rate['single_appends_per_s']:,.0f} appends/s")
            shutil.rmtree(folder / "rate")
            many = concurrent_rate(folder, 4, 100)
            rate.update({f"concurrent_{k}": v for k, v in many.items()})
            print(f"{many['processes']:.0f} processes appending one entry at a time: {many['entries_per_s']:,.0f} "
                  f"entries/s, {many['entries']:.0f} entries in {many['checkpoints']:.0f} checkpoints (group commit)")
            shutil.rmtree(folder / "concurrent")
        if args.only in (None, "log"):
            big = build_and_check(folder, args.entries)
            n = int(big["entries"])
            print(f"log of {n:,} entries: built in {big['build_s']:.1f} s, checked whole in "
                  f"{big['check_s']:.1f} s ({n / big['check_s']:,.0f} entries/s), "
                  f"{big['disk_mib']:.0f} MiB on disk; a .tlog-proof is {big['proof_bytes']:.0f} bytes, a consistency "
                  f"proof from size {n // 2 + 1:,} {big['consistency_hashes']:.0f} hashes "
                  f"({big['consistency_hashes'] * 32:.0f} bytes)")
            shutil.rmtree(folder / "big")
        if args.only in (None, "completeness"):
            share = completeness_share(folder, args.receipts)
            print(f"archive of {share['receipts']:,.0f} receipts, CPU time: verify {share['verify_cpu_s']:.2f} s, "
                  f"with --log --complete {share['verify_complete_cpu_s']:.2f} s: {share['cpu_share'] * 100:+.1f}% "
                  f"(target <= +10%); wall time: {share['verify_s']:.2f} s and {share['verify_complete_s']:.2f} s: "
                  f"{share['share'] * 100:+.1f}%")
        print(json.dumps({"append": rate, "log": big, "completeness": share, "cpus": os.cpu_count()}))


if __name__ == "__main__":
    main()
