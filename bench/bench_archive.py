"""Archive runs: ``aer1-verify DIR`` over 10,000 signed receipts of 50 steps, beside the peer's CLI.

Usage: ``python bench/bench_archive.py [--receipts N] [--steps N]``

Makes a folder of N receipts (each a real ``Collector`` run of N - 1 recorded steps and
the close step, signed, with its evidence file), then measures, each in a fresh process:

* ours: ``aer1-verify DIR --jobs 1`` and ``--jobs 2`` (every check: members, sequence,
  Merkle root, chain, signature, evidence; one line per receipt and the summary), then
  the same receipts without their evidence files (every check but evidence);
* the peer: the aer1-verify 0.2.19 CLI (``main`` of its module, called once per file in one
  process, since it takes one receipt per call and starting 10,000 processes would measure
  Python's start-up). It checks less: members and the Merkle root, no chain, no signature,
  no evidence.

Wall time and peak RSS (the largest process: with ``--jobs 2``, the parent or a worker;
the operating system reports it for waited-for descendants). Not part of ``run_all.py``:
one run takes a few minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import MEASURE_CHILD, PEER_DIR, REPO
from _table import machine

RECEIPTS = 10_000
STEPS = 50
_TIMEOUT_S = 3600
_KIB_PER_MIB = 1024


def generate(folder: Path, receipts: int, steps: int) -> None:
    """``receipts`` signed receipts of ``steps`` steps (close step included), with evidence."""
    from aer1 import Collector
    from aer1._signing import generate_key_pair

    private, public = generate_key_pair()
    (folder.parent / "archive.pub").write_bytes(public)
    for i in range(receipts):
        sub = folder / f"{i // 1000:02d}"
        sub.mkdir(exist_ok=True)
        c = Collector(goal=f"archived run {i}", signing_key=private)
        for s in range(steps - 1):
            c.record("message", {"source": "alice", "content": f"turn {s} of run {i}: " + "x" * 120},
                     agent="alice" if s % 2 else "bob")
        c.save(sub / f"run{i:05d}.json")


def peer_run(folder: Path) -> int:
    """The peer CLI's ``main`` on every receipt under ``folder``; exit 0 only if all verified."""
    import aer1_verify

    worst = 0
    for path in sorted(folder.rglob("*.json")):
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                code = aer1_verify.main(["aer1-verify", str(path), "--json"])
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 2
        worst = max(worst, int(code or 0))
    return worst


def _measure(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", MEASURE_CHILD, *argv], capture_output=True, text=True,
                          timeout=_TIMEOUT_S, env=env, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    if result["code"] != 0:
        raise RuntimeError(f"{argv[:4]}... exited {result['code']}: not every receipt verified")
    return result


def run(receipts: int = RECEIPTS, steps: int = STEPS) -> list[dict[str, Any]]:
    """Rows: name, wall time (s), receipts per second, peak RSS (MiB)."""
    work = Path(tempfile.mkdtemp(prefix="aer1-bench-archive-"))
    try:
        folder = work / "archive"
        folder.mkdir()
        subprocess.run([sys.executable, __file__, "--generate", str(folder), str(receipts), str(steps)],
                       check=True, timeout=_TIMEOUT_S)
        bare = work / "no-evidence"  # the same receipts without their evidence files
        shutil.copytree(folder, bare, ignore=shutil.ignore_patterns("*.evidence.jsonl"))
        rows = []
        for jobs in (1, 2):
            m = _measure([sys.executable, "-m", "aer1.verifier._cli", str(folder), "--jobs", str(jobs)])
            rows.append({"name": f"ours, --jobs {jobs} (all checks: members, sequence, root, chain, signature, "
                                 "evidence)", **m})
        for jobs in (1, 2):
            m = _measure([sys.executable, "-m", "aer1.verifier._cli", str(bare), "--jobs", str(jobs)])
            rows.append({"name": f"ours, --jobs {jobs}, no evidence files (all checks but evidence)", **m})
        env = {**os.environ, "PYTHONPATH": f"{PEER_DIR}{os.pathsep}{Path(__file__).parent}"}
        m = _measure([sys.executable, __file__, "--peer-run", str(folder)], env=env)
        rows.append({"name": "peer aer1-verify 0.2.19 CLI, one process (checks less: members and root only)", **m})
        for r in rows:
            r["receipts_per_s"] = receipts / r["wall_s"]
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


def table(rows: list[dict[str, Any]], receipts: int, steps: int) -> str:
    """The markdown table, with ours / peer ratios."""
    peer = rows[-1]
    out = [f"{receipts:,} receipts of {steps} steps, signed, with evidence. {machine()}", "",
           "| run | wall time (s) | receipts/s | peak RSS (MiB) | wall / peer | RSS / peer |",
           "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['name']} | {r['wall_s']:.1f} | {r['receipts_per_s']:,.0f} | "
                   f"{r['rss_kib'] / _KIB_PER_MIB:.1f} | {r['wall_s'] / peer['wall_s']:.2f}× | "
                   f"{r['rss_kib'] / peer['rss_kib']:.2f}× |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Generate, measure, print the table."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--receipts", type=int, default=RECEIPTS)
    p.add_argument("--steps", type=int, default=STEPS)
    p.add_argument("--generate", nargs=3, metavar=("DIR", "N", "STEPS"), help=argparse.SUPPRESS)
    p.add_argument("--peer-run", metavar="DIR", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.generate:
        generate(Path(args.generate[0]), int(args.generate[1]), int(args.generate[2]))
        return 0
    if args.peer_run:
        return peer_run(Path(args.peer_run))
    if not (PEER_DIR / "aer1_verify.py").exists():
        print(f"the peer verifier is not installed in {PEER_DIR.relative_to(REPO)}: run the tests once",
              file=sys.stderr)
        return 2
    print(table(run(args.receipts, args.steps), args.receipts, args.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
