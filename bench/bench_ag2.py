"""Benchmark: an AG2 1.x agent recorded by aer1 versus not.

    python bench/bench_ag2.py [--turns 20] [--runs 15]

One agent on AG2's scripted model (``ag2.testing.TestConfig``) takes ``--turns`` turns on
one stream, each a tool call and a reply. Each paired run times, in rotating order, the
plain agent and the same agent after ``collector.observe`` plus ``finalize()`` (evidence
on). An almost free model shows the collector's cost at its largest. Numbers, not assertions.

``run(quick)`` gives the same measurement as a row for ``run_all.py`` (CPU-time ratio).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from collections.abc import Sequence
from typing import Any

from ag2 import Agent
from ag2.events import ToolCallEvent
from ag2.testing import TestConfig
from bench_agentchat_wrapper import CPU, Samples, Variant, measure

from aer1.collectors.ag2 import AER1AG2Collector

DEFAULT_TURNS = 20
DEFAULT_RUNS = 15
QUICK_RUNS = 5
PLAIN = "agent.ask"
OBSERVED = "aer1 collector.observe + finalize"


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def agent(turns: int) -> Agent:
    script: list[Any] = []
    for i in range(turns):
        script += [ToolCallEvent(name="add", arguments=json.dumps({"a": i, "b": 1}), id=f"c{i}"), f"sum {i + 1}"]
    return Agent("bench", config=TestConfig(*script), tools=[add])


async def _converse(subject: Agent, turns: int) -> None:
    reply = await subject.ask("turn 0")
    for i in range(1, turns):
        reply = await reply.ask(f"turn {i}")


def variants(turns: int) -> dict[str, Variant]:
    async def plain() -> None:
        await _converse(agent(turns), turns)

    async def observed() -> None:
        collector = AER1AG2Collector(goal="bench")
        await _converse(collector.observe(agent(turns)), turns)
        collector.finalize("done")

    return {PLAIN: plain, OBSERVED: observed}


def ratio(times: Samples, clock: int) -> float:
    """Median over the pairs of observed / plain."""
    return statistics.median(o[clock] / p[clock] for o, p in zip(times[OBSERVED], times[PLAIN], strict=True))


def run(quick: bool) -> list[dict[str, Any]]:
    """The row for ``run_all.py``: run time relative to the unrecorded agent (CPU, median of pairs)."""
    from _table import make_row

    runs = QUICK_RUNS if quick else DEFAULT_RUNS
    times = asyncio.run(measure(variants(DEFAULT_TURNS), runs))
    label = (f"AG2 1.x agent, {DEFAULT_TURNS} turns of a tool call and a reply, constant model, run time / "
             f"unrecorded ({runs} paired runs): collector.observe")
    return [make_row(label, ratio(times, CPU), None, "× unrecorded")]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=DEFAULT_TURNS)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    args = parser.parse_args(argv)
    times = asyncio.run(measure(variants(args.turns), args.runs))
    for name, samples in times.items():
        print(f"{name}: median wall {statistics.median(s[0] for s in samples) * 1000:.1f} ms, "
              f"median CPU {statistics.median(s[CPU] for s in samples) * 1000:.1f} ms")
    print(f"observed / plain, median of {args.runs} pairs: wall {ratio(times, 0):.3f}, CPU {ratio(times, CPU):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
