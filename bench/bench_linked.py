"""Linked receipts: N workers x M steps, linking, and bundle verification on every core.

* Recording: N worker processes (simulated on this machine) each record M steps with
  200-byte messages into their own collector, side by side. Each reports its CPU time
  per step (``time.process_time``): it must stay flat as N grows, since workers share no
  chain and no lock. Wall time per step is not reported: with more workers than cores it
  measures the machine, not the collector.
* Linking: the parent's cost per child is one link step, the same for a 10-step child as
  for a large one (a child given as a parsed receipt); linking with the child's
  verification (the default) costs that verification, linear in the child's steps, and
  a child given as bytes is parsed first, also linear.
* Bundle verification: a parent and K children of M steps each, verified in one process
  and with one process per core, as a ratio; beside it a control ratio (the same split of
  a plain CPU loop), since on a machine whose cores are busy no split can gain.
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

from _common import message
from _table import make_row

from aer1 import Collector
from aer1.verifier import verify_bundle

CONTENT_BYTES = 200
#: Worker counts for the recording rows.
WORKERS = (1, 2, 4)


def _record(steps: int) -> float:
    """One worker: record ``steps`` steps and finalize; CPU seconds per step."""
    msg = message(CONTENT_BYTES)
    c = Collector(goal="worker")
    t0 = time.process_time()
    for i in range(steps):
        c.record("message", msg, agent="worker", call_id=str(i))
    c.finalize()
    return (time.process_time() - t0) / steps


def recording_rows(steps: int) -> list[dict[str, Any]]:
    """CPU µs per step for 1, 2 and 4 simultaneous workers (the slowest worker of each run)."""
    rows = []
    base = 0.0
    for n in WORKERS:
        with ProcessPoolExecutor(max_workers=n, mp_context=get_context("spawn")) as pool:
            per_step = max(pool.map(_record, [steps] * n))
        us = per_step * 1e6
        base = base or us
        rows.append(make_row(f"{n} worker processes x {steps:,} steps each: record, CPU per step (slowest worker)",
                             us, None, "µs/step"))
    rows.append(make_row(f"recording CPU per step, {WORKERS[-1]} workers / 1 worker", us / base, None, "×"))
    return rows


def _child(steps: int) -> dict[str, Any]:
    c = Collector(goal="child", evidence=False)
    msg = message(CONTENT_BYTES)
    for i in range(steps):
        c.record("message", msg, agent="worker", call_id=str(i))
    return c.finalize()


def linking_rows(small: int, large: int, repeat: int) -> list[dict[str, Any]]:
    """µs per link for a small and a large child (no re-verification), and ms with verification."""
    rows = []
    for steps in (small, large):
        children = [_child(steps) for _ in range(repeat)]
        parent = Collector(goal="parent", evidence=False)
        parent.link(_child(1), verify=False)  # warm up: first imports and compiled patterns
        gc.collect()
        gc.disable()  # the benchmark holds every child: collections over them are not the link's cost
        try:
            t0 = time.perf_counter()
            for child in children:
                parent.link(child, verify=False)
            elapsed = time.perf_counter() - t0
        finally:
            gc.enable()
        rows.append(make_row(f"link one child of {steps:,} steps (the link step only)",
                             elapsed / repeat * 1e6, None, "µs/child"))
    child = _child(large)
    t0 = time.perf_counter()
    Collector(goal="parent", evidence=False).link(child)
    rows.append(make_row(f"link one child of {large:,} steps, verifying the child first",
                         (time.perf_counter() - t0) * 1e3, None, "ms"))
    return rows


def _burn(n: int) -> int:
    """Pure CPU work for the control row."""
    x = 0
    for i in range(n):
        x += i * i
    return x


def _control_ratio(cores: int, n: int = 5_000_000) -> float:
    """Wall time of ``cores`` copies of a CPU loop in ``cores`` processes / of one copy in this one.

    About 1.0 when the machine has ``cores`` free cores; ``cores`` when it has none to spare:
    the bundle ratio is read against it.
    """
    t0 = time.perf_counter()
    _burn(n)
    one = time.perf_counter() - t0
    with ProcessPoolExecutor(max_workers=cores, mp_context=get_context("spawn")) as pool:
        list(pool.map(_burn, [1] * cores))  # the processes started before the clock does
        t0 = time.perf_counter()
        list(pool.map(_burn, [n] * cores))
        return (time.perf_counter() - t0) / one


def bundle_rows(children: int, steps: int) -> list[dict[str, Any]]:
    """Seconds to verify a bundle in one process and with one process per core."""
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="aer1-bundle-bench-") as d:
        parent = Collector(goal="parent")
        msg = message(CONTENT_BYTES)
        for _ in range(children):
            c = Collector(goal="child")
            for i in range(steps):
                c.record("message", msg, agent="worker", call_id=str(i))
            parent.link(c, verify=False)
        parent.save_bundle(d, parent.finalize())
        times = {}
        for jobs in (1, cores):
            t0 = time.perf_counter()
            report = verify_bundle(d, jobs=jobs)
            times[jobs] = time.perf_counter() - t0
            if not report.valid:
                raise RuntimeError(f"the benchmark bundle does not verify: {report.failures}")
    what = f"verify a bundle of {children} children x {steps:,} steps (evidence checked)"
    return [make_row(f"{what}: one process", times[1], None, "s"),
            make_row(f"{what}: {cores} processes (one per core)", times[cores], None, "s"),
            make_row(f"{what}: {cores} processes / one", times[cores] / times[1], None, "×"),
            make_row(f"control: {cores} copies of a CPU loop in {cores} processes / one copy in one "
                     "(1.0 when the cores are free)", _control_ratio(cores), None, "×")]


def run(quick: bool) -> list[dict[str, Any]]:
    """Every row of this benchmark."""
    steps = 5_000 if quick else 20_000
    return [
        *recording_rows(steps),
        *linking_rows(10, steps, 20 if quick else 100),
        *bundle_rows(4 if quick else 8, steps),
    ]


if __name__ == "__main__":
    from _table import run_standalone

    sys.exit(run_standalone(run, __doc__))
