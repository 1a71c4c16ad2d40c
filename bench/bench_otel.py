"""Benchmark: what aer1's span processors add to a traced AgentChat run.

    python bench/bench_otel.py [--messages 200] [--runs 15] [--quick] [--inside]

A RoundRobinGroupChat of two ``AssistantAgent``s on ``ReplayChatCompletionClient``s takes
``--messages`` turns with tracing on: an OpenTelemetry SDK tracer provider (global, and the
runtime's) exporting every span to memory, AutoGen's own spans (runtime messages,
``invoke_agent``, ...), and the agents wrapped by ``AER1AgentWrapper`` recording into an
``AER1AutoGenCollector``. Each paired run times, in rotating order: that run without an aer1
span processor; with ``ReceiptSpanProcessor`` (spans name their steps, steps their spans);
and with ``SpanReceiptCollector`` beside it (a second receipt built from the spans). The one
provider is kept for every run; a slot processor hands the spans to the variant's aer1
processor, or to none, so every variant pays the same tracing cost.

The table gives each variant's median CPU and wall time, the median over the pairs of its
ratio to the run without a processor (target for ``ReceiptSpanProcessor``: at most 1.03)
with the interquartile range of those ratios, and the ratio of the fastest runs (other
processes only ever add time; with few pairs the fastest runs still differ by chance). What the
warm-up left alive is frozen out of the garbage collector's scans (``gc.freeze``), so a
collection during a run costs what that run allocated, whichever variant it is. Numbers,
not assertions: nothing here fails on time.

``--inside`` times the parts instead, in the same paired runs without and with
``ReceiptSpanProcessor``: the processor's ``on_start`` and ``on_end`` (beside an empty
processor's, which is what the calls and the timing cost), its naming of steps on spans, and
``Collector.record`` (batched off the turn without the processor, at once inside it with it).
Process-wide sums a run, fastest and median over the runs; the timers add their own cost.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import SingleThreadedAgentRuntime
from autogen_ext.models.replay import ReplayChatCompletionClient
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

sys.path.insert(0, str(Path(__file__).resolve().parent))

from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector
from aer1.collectors.otel import ReceiptSpanProcessor, SpanReceiptCollector

DEFAULT_MESSAGES = 200
DEFAULT_RUNS = 25
QUICK_RUNS = 5
AGENTS = ("alice", "bob")
BASE = "tracing on, aer1 collector, no aer1 span processor"
JOINED = "+ ReceiptSpanProcessor"
BOTH = "+ ReceiptSpanProcessor + SpanReceiptCollector"


class Slot(SpanProcessor):
    """Hands spans to the processor of the run being timed (or to none)."""

    def __init__(self) -> None:
        self.processors: list[SpanProcessor] = []

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        for p in self.processors:
            p.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        for p in self.processors:
            p.on_end(span)


class Traced:
    """The one tracer provider of every run, exporting to memory (emptied after each run)."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.slot = Slot()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.provider.add_span_processor(self.slot)
        trace.set_tracer_provider(self.provider)

    async def run(self, messages: int, processors: Callable[[AER1AutoGenCollector], list[SpanProcessor]]) -> int:
        """One traced team run; returns the spans exported."""
        collector = AER1AutoGenCollector(goal="bench")
        self.slot.processors = processors(collector)
        per_agent = messages // len(AGENTS) + 1
        members = [AER1AgentWrapper(AssistantAgent(name, model_client=ReplayChatCompletionClient(
            [f"reply {i}" for i in range(per_agent)])), collector) for name in AGENTS]
        runtime = SingleThreadedAgentRuntime(tracer_provider=self.provider)
        runtime.start()
        with self.provider.get_tracer("bench").start_as_current_span("bench run"):
            result = await RoundRobinGroupChat(members, max_turns=messages, runtime=runtime).run(task="go")
        await runtime.stop_when_idle()
        collector.finalize(result)
        for p in self.slot.processors:
            if isinstance(p, SpanReceiptCollector):
                p.finalize()
        self.slot.processors = []
        spans = len(self.exporter.get_finished_spans())
        self.exporter.clear()
        return spans


VARIANTS: dict[str, Callable[[AER1AutoGenCollector], list[SpanProcessor]]] = {
    BASE: lambda c: [],
    JOINED: lambda c: [ReceiptSpanProcessor(c)],
    BOTH: lambda c: [ReceiptSpanProcessor(c), SpanReceiptCollector("bench, from spans", root="bench run")],
}


async def measure(messages: int, runs: int) -> tuple[dict[str, list[tuple[float, float]]], int]:
    """Paired runs, every variant once per pair in an order rotated from pair to pair; (samples, spans a run)."""
    traced = Traced()
    names = list(VARIANTS)
    spans = 0
    for name in names:  # warm-up
        spans = await traced.run(messages, VARIANTS[name])
    gc.collect()
    gc.freeze()  # imports and warm-up out of every later scan: a collection in a run scans that run's objects
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    try:
        for i in range(runs):
            for name in names[i % len(names):] + names[:i % len(names)]:
                gc.collect()
                wall, cpu = time.perf_counter(), time.process_time()
                await traced.run(messages, VARIANTS[name])
                times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    finally:
        gc.unfreeze()
    return times, spans


def _ratios(samples: list[tuple[float, float]], base: list[tuple[float, float]], clock: int) -> list[float]:
    return [s[clock] / b[clock] for s, b in zip(samples, base, strict=True)]


def _ratio(samples: list[tuple[float, float]], base: list[tuple[float, float]], clock: int) -> float:
    return statistics.median(_ratios(samples, base, clock))


def _quartiles(values: list[float]) -> tuple[float, float]:
    """First and third quartile (both the value itself for a single pair)."""
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def report(times: dict[str, list[tuple[float, float]]], messages: int, runs: int, spans: int) -> str:
    base = times[BASE]
    lines = [f"RoundRobinGroupChat, {len(AGENTS)} AssistantAgents, {messages} messages, {spans} spans a run, "
             f"{runs} paired runs (ratio: median over the pairs of variant / {BASE!r})", "",
             "| variant | median wall (ms) | wall ratio | median CPU (ms) | CPU ratio | CPU ratio IQR | CPU more by "
             "| min CPU (ms) | min CPU ratio |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    base_min = min(b[1] for b in base)
    for name, samples in times.items():
        cpu = _ratio(samples, base, 1)
        low, high = _quartiles(_ratios(samples, base, 1))
        fastest = min(s[1] for s in samples)
        lines.append(f"| {name} | {statistics.median(s[0] for s in samples) * 1000:.1f} | "
                     f"{_ratio(samples, base, 0):.3f} | {statistics.median(s[1] for s in samples) * 1000:.1f} | "
                     f"{cpu:.3f} | {low:.3f}-{high:.3f} | {(cpu - 1) * 100:+.1f}% | {fastest * 1000:.1f} | "
                     f"{fastest / base_min:.3f} |")
    return "\n".join(lines)


class _Timed(SpanProcessor):
    """Hands each call on to ``inner``, adding the time it took to ``sums``."""

    def __init__(self, inner: SpanProcessor, sums: dict[str, int], prefix: str) -> None:
        self.inner, self.sums, self.start, self.end = inner, sums, f"{prefix}on_start", f"{prefix}on_end"

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        t = time.perf_counter_ns()
        self.inner.on_start(span, parent_context)
        self.sums[self.start] += time.perf_counter_ns() - t

    def on_end(self, span: ReadableSpan) -> None:
        t = time.perf_counter_ns()
        self.inner.on_end(span)
        self.sums[self.end] += time.perf_counter_ns() - t


def _timed_method(owner: Any, name: str, sums: dict[str, int], key: str) -> Callable[[], None]:
    """Wrap ``owner.name`` to add its time to ``sums[key]``; returns the undo."""
    original = owner.__dict__[name]

    def timed(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter_ns()
        try:
            return original(*args, **kwargs)
        finally:
            sums[key] += time.perf_counter_ns() - t

    setattr(owner, name, timed)
    return lambda: setattr(owner, name, original)


INSIDE_PARTS = ("empty on_start", "empty on_end", "on_start", "on_end", "naming steps", "record")


async def measure_inside(messages: int, runs: int) -> dict[str, dict[str, list[float]]]:
    """``--inside``: ms a run spent in each part, per variant (without / with the processor)."""
    from aer1 import Collector

    sums = dict.fromkeys(INSIDE_PARTS, 0)
    undo = [_timed_method(Collector, "record", sums, "record"),
            _timed_method(ReceiptSpanProcessor, "step_recorded", sums, "naming steps")]
    variants: dict[str, Callable[[AER1AutoGenCollector], list[SpanProcessor]]] = {
        BASE: lambda c: [_Timed(SpanProcessor(), sums, "empty ")],
        JOINED: lambda c: [_Timed(ReceiptSpanProcessor(c), sums, "")],
    }
    traced = Traced()
    out: dict[str, dict[str, list[float]]] = {name: {part: [] for part in INSIDE_PARTS} for name in variants}
    try:
        for name in variants:  # warm-up
            await traced.run(messages, variants[name])
        gc.collect()
        gc.freeze()
        for i in range(runs):
            for name in (list(variants) if i % 2 else list(variants)[::-1]):
                gc.collect()
                for part in sums:
                    sums[part] = 0
                await traced.run(messages, variants[name])
                for part in INSIDE_PARTS:
                    out[name][part].append(sums[part] / 1e6)
    finally:
        gc.unfreeze()
        for u in undo:
            u()
    return out


def report_inside(parts: dict[str, dict[str, list[float]]], messages: int, runs: int) -> str:
    lines = [f"Inside a {messages}-message run, ms a run (fastest / median of {runs} runs a variant; "
             "record includes naming its step)", "",
             "| part | " + " | ".join(parts) + " |", "|---|" + "---:|" * len(parts)]
    for part in INSIDE_PARTS:
        cells = [f"{min(v[part]):.2f} / {statistics.median(v[part]):.2f}" if any(v[part]) else "-"
                 for v in parts.values()]
        lines.append(f"| {part} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(quick: bool) -> list[dict[str, Any]]:
    """Rows for ``run_all.py``: CPU time with each processor relative to the run without one."""
    from _table import make_row

    runs = QUICK_RUNS if quick else DEFAULT_RUNS
    times, _ = asyncio.run(measure(DEFAULT_MESSAGES, runs))
    label = f"AgentChat, {DEFAULT_MESSAGES} messages, tracing on, run time / without an aer1 span processor"
    return [make_row(f"{label}: {name[2:]}", _ratio(times[name], times[BASE], 1), None, "× without")
            for name in (JOINED, BOTH)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--messages", type=int, default=DEFAULT_MESSAGES)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_RUNS} paired runs")
    parser.add_argument("--inside", action="store_true", help="time the processor's parts instead")
    args = parser.parse_args(argv)
    if args.messages < 2 or args.runs < 1:
        parser.error("--messages must be at least 2 and --runs at least 1")
    runs = QUICK_RUNS if args.quick else args.runs
    if args.inside:
        print(report_inside(asyncio.run(measure_inside(args.messages, runs)), args.messages, runs))
        return 0
    times, spans = asyncio.run(measure(args.messages, runs))
    print(report(times, args.messages, runs, spans))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


