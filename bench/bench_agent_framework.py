"""Benchmark: a Microsoft Agent Framework Sequential workflow recorded by aer1 versus not.

    python bench/bench_agent_framework.py [--agents 20] [--runs 15]

``--agents`` agents, each answering at once from the scripted chat client of
``examples/agent_framework_handoff.py`` (the framework's base client with its
function-invocation and middleware layers), run as one Sequential
workflow. Each paired run times, in rotating order, ``workflow.run(stream=True)`` read to
the end, and the same through ``collector.run_stream`` plus ``finalize()`` (evidence on).
An almost free model shows the collector's cost at its largest. Numbers, not assertions.

``run(quick)`` gives the same measurement as a row for ``run_all.py`` (CPU-time ratio).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_framework import Agent, Workflow
from agent_framework.orchestrations import SequentialBuilder
from bench_agentchat_wrapper import CPU, Samples, Variant, measure

from aer1.collectors.agent_framework import AER1AgentFrameworkCollector

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from agent_framework_handoff import ScriptClient

DEFAULT_AGENTS = 20
DEFAULT_RUNS = 15
QUICK_RUNS = 5
PLAIN = "workflow.run(stream=True)"
OBSERVED = "aer1 collector.run_stream + finalize"


def workflow(agents: int) -> Workflow:
    members = [Agent(client=ScriptClient(["noted"]), name=f"agent{i}") for i in range(agents)]
    return SequentialBuilder(participants=members).build()


def variants(agents: int) -> dict[str, Variant]:
    async def plain() -> None:
        async for _ in workflow(agents).run("go", stream=True):
            pass

    async def observed() -> None:
        collector = AER1AgentFrameworkCollector(goal="bench")
        async for _ in collector.run_stream(workflow(agents), "go"):
            pass
        collector.finalize("done")

    return {PLAIN: plain, OBSERVED: observed}


def ratio(times: Samples, clock: int) -> float:
    """Median over the pairs of observed / plain."""
    return statistics.median(o[clock] / p[clock] for o, p in zip(times[OBSERVED], times[PLAIN], strict=True))


def run(quick: bool) -> list[dict[str, Any]]:
    """The row for ``run_all.py``: run time relative to the unrecorded workflow (CPU, median of pairs)."""
    from _table import make_row

    runs = QUICK_RUNS if quick else DEFAULT_RUNS
    times = asyncio.run(measure(variants(DEFAULT_AGENTS), runs))
    label = (f"Agent Framework Sequential, {DEFAULT_AGENTS} agents, constant model, run time / unrecorded "
             f"({runs} paired runs): collector.run_stream")
    return [make_row(label, ratio(times, CPU), None, "× unrecorded")]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--agents", type=int, default=DEFAULT_AGENTS)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    args = parser.parse_args(argv)
    times = asyncio.run(measure(variants(args.agents), args.runs))
    for name, samples in times.items():
        print(f"{name}: median wall {statistics.median(s[0] for s in samples) * 1000:.1f} ms, "
              f"median CPU {statistics.median(s[CPU] for s in samples) * 1000:.1f} ms")
    print(f"observed / plain, median of {args.runs} pairs: wall {ratio(times, 0):.3f}, CPU {ratio(times, CPU):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
