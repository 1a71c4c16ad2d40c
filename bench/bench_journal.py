"""Journal overhead per fsync policy, and how long recording stalls an asyncio event loop.

Overhead: record cost with a journal minus without, per step, 200-byte messages.
Loop stall: tasks record from a running event loop, yielding after every step; each
record() call is timed, since that is how long the loop can run nothing else (the
median of the per-run maxima is reported, with the p99).
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from functools import partial
from typing import Any

from _common import best_us_per_step, message
from _table import make_row

from aer1 import Collector
from aer1._journal import FSYNC_POLICIES

#: Steps per timed run: fsync=step costs a disk flush per step, so it gets fewer.
STEPS = {"none": 20_000, "never": 20_000, "interval": 20_000, "step": 400}
QUICK_DIVISOR = 4
REPEAT = {False: 7, True: 3}
LAG_STEPS = {"none": 5_000, "never": 5_000, "interval": 5_000, "step": 300}
_P99 = 99


def _record(policy: str, steps: int, content: dict[str, Any], directory: str) -> float:
    journal = None if policy == "none" else os.path.join(directory, f"{policy}-{time.perf_counter_ns()}.journal")
    c = Collector("bench", session_id="bench", journal=journal, fsync=policy if journal else "never")
    record = c.record
    t0 = time.perf_counter()
    for _ in range(steps):
        record("message", content, agent="alice", kind="message")
    elapsed = time.perf_counter() - t0
    c.finalize()
    if journal:
        os.unlink(journal)
    return elapsed


async def _stall(policy: str, steps: int, content: dict[str, Any], directory: str) -> tuple[float, float]:
    """(max, p99) in ms of how long one record() call holds the event loop under ``policy``.

    Tasks record from the loop and yield after every step, as framework hooks do; a
    probe task runs between them. Each record() call is timed: that is the time the
    loop could run nothing else.
    """
    journal = None if policy == "none" else os.path.join(directory, f"lag-{policy}-{time.perf_counter_ns()}.journal")
    c = Collector("bench", session_id="bench", journal=journal, fsync=policy if journal else "never")
    stalls: list[float] = []
    probes = 0

    async def probe() -> None:
        nonlocal probes
        while len(stalls) < steps:
            probes += 1
            await asyncio.sleep(0)

    async def recorder() -> None:
        for _ in range(steps):
            t0 = time.perf_counter()
            c.record("message", content, agent="alice", kind="message")
            stalls.append(time.perf_counter() - t0)
            await asyncio.sleep(0)

    await asyncio.gather(probe(), recorder())
    assert probes >= steps  # the loop ran the probe between every two steps
    c.finalize()
    if journal:
        os.unlink(journal)
    stalls.sort()
    return stalls[-1] * 1e3, stalls[min(len(stalls) - 1, len(stalls) * _P99 // 100)] * 1e3


def run(quick: bool) -> list[dict[str, Any]]:
    """Rows: journal overhead per policy (µs/step) and event-loop lag per policy (ms)."""
    content = message(200)
    repeat = REPEAT[quick]
    rows = []
    with tempfile.TemporaryDirectory(prefix="aer1-bench-", dir=os.getcwd()) as d:
        base = {policy: float("inf") for policy in ("none", *FSYNC_POLICIES)}
        for _ in range(repeat):  # interleaved, so a slow spell of the disk or CPU hits every policy alike
            for policy in base:
                steps = STEPS[policy] // (QUICK_DIVISOR if quick and policy != "step" else 1)
                base[policy] = min(base[policy], best_us_per_step(partial(_record, policy, steps, content, d),
                                                                  steps, 1))
        for policy in FSYNC_POLICIES:
            rows.append(make_row(f"journal overhead, fsync={policy} (record with journal − without)",
                                 base[policy] - base["none"], None, "µs/step"))
        for policy in ("none", *FSYNC_POLICIES):
            gc.collect()
            lags = [asyncio.run(_stall(policy, LAG_STEPS[policy], content, d)) for _ in range(repeat)]
            worst = statistics.median(m for m, _ in lags)
            p99 = statistics.median(p for _, p in lags)
            what = "no journal" if policy == "none" else f"fsync={policy}"
            rows.append(make_row(f"event loop blocked by one record(), {what}: max (p99 {p99 * 1e3:.0f} µs)",
                                 worst, None, "ms"))
    return rows


if __name__ == "__main__":
    from _table import run_standalone

    sys.exit(run_standalone(run, __doc__))
