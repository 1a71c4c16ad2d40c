"""Scaling and memory: 10^3 to 10^6 steps, each size measured in fresh processes.

For each size, ours and the peer each record N steps with 200-byte messages, finalize
and save (one process), then verify the saved file (another process). Cost per step
must stay flat as N grows; peak RSS (ru_maxrss above the process's state after its
imports) is reported per 1,000 steps, and for verification as a multiple of the file size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _table import make_row

SIZES = (1_000, 10_000, 100_000)
MILLION = 1_000_000
#: Alternating runs per size (the best time of each phase is kept; memory is the same every run).
REPEAT = {1_000: 3, 10_000: 3, 100_000: 2, MILLION: 1}
CONTENT_BYTES = 200
_CHILD = Path(__file__).with_name("_child.py")
_TIMEOUT_S = 1800
_PER_1K = 1000


def _child(*args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(_CHILD), *args], capture_output=True, text=True,
                          timeout=_TIMEOUT_S, cwd=_CHILD.parent)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark child {args} failed: {done.stderr.strip()[-2000:]}")
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def measure(steps: int, directory: str) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Every record/finalize/save and verify run for ours and the peer at ``steps`` steps, alternated."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {
        who: {"record": [], "verify": [], "verify_cores": []} for who in ("ours", "peer")}
    for _ in range(REPEAT[steps]):
        for who in ("ours", "peer"):  # alternating: a burst of other work on the machine falls on both
            rec = _child("record", who, str(steps), str(CONTENT_BYTES), directory)
            ver = _child("verify", who, rec["path"])
            if ver["failures"]:
                raise RuntimeError(f"{who} receipt of {steps} steps does not verify: {ver['failures']}")
            out[who]["record"].append(rec)
            out[who]["verify"].append(ver)
            if who == "ours":
                cores = _child("verify-cores", rec["path"])
                if cores["failures"]:
                    raise RuntimeError(f"ours in {os.cpu_count()} processes, {steps} steps: {cores['failures']}")
                out[who]["verify_cores"].append(cores)
            os.unlink(rec["path"])
    return out


def rows_for(steps: int, m: dict[str, dict[str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    """Table rows for one size: the best time of each phase over the runs; memory and sizes from the first."""
    o, p = m["ours"], m["peer"]
    n = f"{steps:,}"

    def per_step(who: dict[str, list[dict[str, Any]]], phase: str, key: str) -> float:
        return min(float(r[key]) for r in who[phase]) / steps * 1e6

    def rss_per_1k(who: dict[str, list[dict[str, Any]]], key: str) -> float:
        r = who["record"][0]
        return float(r[key] - r["rss_base_kib"]) / steps * _PER_1K

    def verify_rss_ratio(who: dict[str, list[dict[str, Any]]]) -> float:
        v = who["verify"][0]
        return float(v["rss_peak_kib"] - v["rss_base_kib"]) * 1024 / float(v["file_bytes"])

    def size(who: dict[str, list[dict[str, Any]]], key: str) -> float:
        return float(who["record"][0][key]) / steps

    return [
        make_row(f"{n} steps: record", per_step(o, "record", "record_s"), per_step(p, "record", "record_s"),
                 "µs/step"),
        make_row(f"{n} steps: finalize", per_step(o, "record", "finalize_s"), per_step(p, "record", "finalize_s"),
                 "µs/step"),
        make_row(f"{n} steps: verify the saved file (ours: all checks but evidence; one process)",
                 per_step(o, "verify", "verify_s"), per_step(p, "verify", "verify_s"), "µs/step"),
        make_row(f"{n} steps: the same, ours in {os.cpu_count()} processes (the CLI's default; files from 1 MiB "
                 "are cut into runs of steps)", per_step(o, "verify_cores", "verify_s"),
                 per_step(p, "verify", "verify_s"), "µs/step"),
        make_row(f"{n} steps: peak RSS while recording", rss_per_1k(o, "rss_record_kib"),
                 rss_per_1k(p, "rss_record_kib"), "KiB/1k steps"),
        make_row(f"{n} steps: peak RSS after finalize", rss_per_1k(o, "rss_finalize_kib"),
                 rss_per_1k(p, "rss_finalize_kib"), "KiB/1k steps"),
        make_row(f"{n} steps: save (ours: a step per line, + the evidence file; peer: indent=2)",
                 per_step(o, "record", "save_s"), per_step(p, "record", "save_s"), "µs/step"),
        make_row(f"{n} steps: receipt file size (ours: a step per line; peer: indent=2)",
                 size(o, "file_bytes"), size(p, "file_bytes"), "bytes/step"),
        make_row(f"{n} steps: receipt file size, both laid out a step per line",
                 size(o, "bytes_step_lines"), size(p, "bytes_step_lines"), "bytes/step"),
        make_row(f"{n} steps: receipt file size, both indent=2",
                 size(o, "bytes_indented"), size(p, "bytes_indented"), "bytes/step"),
        make_row(f"{n} steps: verify peak RSS / file size (ours streams files from 32 MiB)", verify_rss_ratio(o),
                 verify_rss_ratio(p), "×"),
    ]


def run(quick: bool, million: bool = False) -> list[dict[str, Any]]:
    """Rows for 10^3, 10^4, 10^5 steps (10^5 left out when quick), and 10^6 when ``million``."""
    sizes = [s for s in SIZES if not (quick and s > 10_000)] + ([MILLION] if million else [])
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="aer1-scaling-") as d:
        for steps in sizes:
            rows.extend(rows_for(steps, measure(steps, d)))
    return rows


if __name__ == "__main__":
    from _table import run_standalone

    sys.exit(run_standalone(run, __doc__))
