"""Benchmark: a RoundRobinGroupChat wrapped for receipts versus unwrapped.

    python bench/bench_agentchat_wrapper.py [--messages 200] [--runs 15] [--client replay|constant]
                                            [--peer-path tests/.peers] [--breakdown]

Two ``AssistantAgent``s on scripted models take ``--messages`` turns. Each paired run
times, in rotating order: the unwrapped team; the team of ``AER1AgentWrapper``s run with
``team.run`` (agent steps only); the same wrappers recording into a plain ``aer1.Collector``
(each step chained at once, not in batches); the same run through ``collector.run`` (task,
speaker selections, termination too); and, when the aer1-autogen peer is importable from
``--peer-path``, the team of the peer's wrappers. Wrapped timings include ``finalize()``.

``--breakdown`` adds the wrappers recording into a collector that keeps no step (the hooks
alone) to the variants, and prints what one message costs, in µs (best of several rounds of a
wrapper around an agent answering at once): the hooks alone, the hooks with the step
chained in batches, the hooks with the step chained at once, and one bare
``Collector.record`` of the same step in a loop; then, inside real team runs, the time
chaining takes per step in batches and at once.
The table gives the median time of each variant and the median of the per-pair ratios to
the unwrapped run of the same pair. Numbers, not assertions: nothing here fails on time.

``run(quick)`` gives the same measurement as rows for ``run_all.py`` (CPU-time ratios).

``--client replay`` (default) uses AutoGen's ``ReplayChatCompletionClient``;
``--client constant`` a client answering instantly, which shows the overhead against an
almost free model.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import statistics
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from autogen_agentchat.agents import AssistantAgent, BaseChatAgent
from autogen_agentchat.base import ChatAgent, Response, Team
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage, TextMessage
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import CancellationToken
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelFamily,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import Tool, ToolSchema
from autogen_ext.models.replay import ReplayChatCompletionClient

from aer1 import Collector
from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector

DEFAULT_MESSAGES = 200
DEFAULT_RUNS = 15
QUICK_RUNS = 5
#: Index of the CPU time in a (wall, CPU) sample.
CPU = 1
WRAPPER = "aer1 AER1AgentWrapper + team.run"
COLLECTOR_RUN = "aer1 collector.run"
AT_ONCE = "aer1 AER1AgentWrapper, plain Collector (no batches)"
HOOKS_ONLY = "aer1 AER1AgentWrapper, collector keeping no step (hooks alone)"
PEER = "aer1-autogen 0.1.15 AER1AgentWrapper"
DEFAULT_PEER_PATH = Path(__file__).resolve().parent.parent / "tests" / ".peers"
AGENTS = ("alice", "bob")
INFO = ModelInfo(vision=False, function_calling=False, json_output=False, family=ModelFamily.UNKNOWN,
                 structured_output=False)  # fmt: skip
_USAGE = RequestUsage(prompt_tokens=1, completion_tokens=1)

Variant = Callable[[], Awaitable[None]]


class ConstantClient(ChatCompletionClient):
    """A scripted model that answers at once with the same short text."""

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        return CreateResult(finish_reason="stop", content="noted", usage=_USAGE, cached=False)

    async def create_stream(
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> AsyncGenerator[str | CreateResult, None]:
        """The same answer as one chunk, then the result (as a streaming model ends)."""
        result = await self.create(messages, **kwargs)
        assert isinstance(result.content, str)
        yield result.content
        yield result

    async def close(self) -> None:
        return None

    def actual_usage(self) -> RequestUsage:
        return _USAGE

    def total_usage(self) -> RequestUsage:
        return _USAGE

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        return 1

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = ()) -> int:
        return 1_000_000

    @property
    def capabilities(self) -> ModelCapabilities:
        return {"vision": False, "function_calling": False, "json_output": False}

    @property
    def model_info(self) -> ModelInfo:
        return INFO


def make_client(kind: str, messages: int) -> ChatCompletionClient:
    if kind == "constant":
        return ConstantClient()
    return ReplayChatCompletionClient([f"reply {i}" for i in range(messages)], model_info=INFO)


def agents(kind: str, messages: int) -> list[AssistantAgent]:
    per_agent = messages // len(AGENTS) + 1
    return [AssistantAgent(name, model_client=make_client(kind, per_agent)) for name in AGENTS]


def variants(kind: str, messages: int, peer: Any, *, plain: bool = True, hooks: bool = False) -> dict[str, Variant]:
    """The variants to time; ``plain``: include the wrappers recording into a plain Collector;
    ``hooks``: and into a collector that keeps no step (what the hooks alone cost)."""

    async def unwrapped() -> None:
        members: list[ChatAgent | Team] = [*agents(kind, messages)]
        await RoundRobinGroupChat(members, max_turns=messages).run(task="go")

    async def wrapper_only() -> None:
        collector = AER1AutoGenCollector(goal="bench")
        team = RoundRobinGroupChat([AER1AgentWrapper(a, collector) for a in agents(kind, messages)], max_turns=messages)
        result = await team.run(task="go")
        collector.finalize(result)

    async def at_once() -> None:
        collector = Collector(goal="bench")
        team = RoundRobinGroupChat([AER1AgentWrapper(a, collector) for a in agents(kind, messages)], max_turns=messages)
        result = await team.run(task="go")
        collector.finalize(result.messages[-1].to_text())

    async def collector_run() -> None:
        collector = AER1AutoGenCollector(goal="bench")
        team = RoundRobinGroupChat([AER1AgentWrapper(a, collector) for a in agents(kind, messages)], max_turns=messages)
        result = await collector.run(team, task="go")
        collector.finalize(result)

    table: dict[str, Variant] = {"unwrapped": unwrapped, WRAPPER: wrapper_only}
    if plain:
        table[AT_ONCE] = at_once
    if hooks:

        async def hooks_only() -> None:
            collector = DiscardingCollector(goal="bench")
            members = [AER1AgentWrapper(a, collector) for a in agents(kind, messages)]
            await RoundRobinGroupChat(members, max_turns=messages).run(task="go")

        table[HOOKS_ONLY] = hooks_only
    table[COLLECTOR_RUN] = collector_run
    if peer is not None:

        async def peer_wrapper() -> None:
            collector = peer.AER1AutoGenCollector(goal="bench")
            members = [peer.AER1AgentWrapper(a, collector) for a in agents(kind, messages)]
            result = await RoundRobinGroupChat(members, max_turns=messages).run(task="go")
            collector.finalize(final_answer=result.messages[-1].to_text())

        table[PEER] = peer_wrapper
    return table


def load_peer(path: Path) -> Any:
    if not (path / "aer1_autogen").is_dir():
        return None
    sys.path.append(str(path))
    import aer1_autogen

    return aer1_autogen


async def time_once(variant: Variant) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) for one run."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    await variant()
    return time.perf_counter() - wall, time.process_time() - cpu


Samples = dict[str, list[tuple[float, float]]]


async def measure(table: Mapping[str, Variant], runs: int) -> Samples:
    """Paired runs: every variant once per pair, in an order rotated from pair to pair."""
    names = list(table)
    for name in names:  # warm-up
        await time_once(table[name])
    times: Samples = {name: [] for name in names}
    for i in range(runs):
        order = names[i % len(names) :] + names[: i % len(names)]
        for name in order:
            times[name].append(await time_once(table[name]))
    return times


def _median_ratio(samples: list[tuple[float, float]], base: list[tuple[float, float]], clock: int) -> float:
    return statistics.median(s[clock] / b[clock] for s, b in zip(samples, base, strict=True))


def report(times: Samples, messages: int, runs: int, client: str) -> str:
    base = times["unwrapped"]
    lines = [
        f"RoundRobinGroupChat, {len(AGENTS)} AssistantAgents, {messages} messages, {client} client, "
        f"{runs} paired runs (ratio: median over the pairs of variant / unwrapped)",
        "",
        "| variant | median wall (ms) | wall ratio | median CPU (ms) | CPU ratio | CPU slower by |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, samples in times.items():
        wall, cpu = _median_ratio(samples, base, 0), _median_ratio(samples, base, CPU)
        lines.append(
            f"| {name} | {statistics.median(s[0] for s in samples) * 1000:.1f} | {wall:.3f} "
            f"| {statistics.median(s[1] for s in samples) * 1000:.1f} | {cpu:.3f} | {(cpu - 1) * 100:+.1f}% |"
        )
    return "\n".join(lines)


def run(quick: bool) -> list[dict[str, Any]]:
    """Rows for ``run_all.py``: run time relative to the unwrapped team (CPU, median of pairs)."""
    from _common import peer as install_peer
    from _table import make_row

    runs = QUICK_RUNS if quick else DEFAULT_RUNS
    times = asyncio.run(measure(variants("replay", DEFAULT_MESSAGES, install_peer(), plain=False), runs))
    base = times["unwrapped"]
    ours = _median_ratio(times[WRAPPER], base, CPU)
    theirs = _median_ratio(times[PEER], base, CPU)
    label = f"AgentChat RoundRobinGroupChat, {DEFAULT_MESSAGES} messages, run time / unwrapped ({runs} paired runs)"
    return [
        make_row(f"{label}: agent wrappers", ours, theirs, "× unwrapped"),
        make_row(
            f"{label}: collector.run (+ task, selections, stop reason)",
            _median_ratio(times[COLLECTOR_RUN], base, CPU),
            None,
            "× unwrapped",
        ),
    ]


# ------------------------------------------------------------------ --breakdown

BREAKDOWN_TURNS = 400
BREAKDOWN_ROUNDS = 9


class StubAgent(BaseChatAgent):
    """Answers every turn at once with the same ready-made message: what is left is the wrapper's work."""

    def __init__(self, name: str) -> None:
        super().__init__(name, "answers at once")
        self._response = Response(chat_message=TextMessage(content="reply", source=name))

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        return self._response

    async def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        yield self._response

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        return None


class DiscardingCollector(AER1AutoGenCollector):
    """Keeps no step: a wrapper recording into it costs its hooks alone."""

    def defer(self, tool: str, content: Any, **kwargs: Any) -> None:
        return None

    def safe_record(self, tool: str, content: Any, **kwargs: Any) -> dict[str, Any] | None:
        return None


class TimedBatches(AER1AutoGenCollector):
    """Adds up the time its batches of steps take to chain."""

    seconds = 0.0

    def _chain_batch(self) -> None:
        start = time.perf_counter()
        super()._chain_batch()
        TimedBatches.seconds += time.perf_counter() - start


class TimedRecords(Collector):
    """Adds up the time each step takes to chain when it is recorded at once."""

    seconds = 0.0

    def safe_record(self, tool: str, content: Any, **kwargs: Any) -> dict[str, Any] | None:
        start = time.perf_counter()
        try:
            return super().safe_record(tool, content, **kwargs)
        finally:
            TimedRecords.seconds += time.perf_counter() - start


async def _turns_us(collector: Collector | None) -> float:
    """µs per turn of ``alice`` (a stub, wrapped for ``collector`` unless None) answering ``bob``."""
    alice: ChatAgent = StubAgent("alice")
    if collector is not None:
        alice = AER1AgentWrapper(alice, collector)
        AER1AgentWrapper(StubAgent("bob"), collector)  # bob is wrapped too, as in a team: his message is no step
    incoming = [TextMessage(content="hi", source="bob")]
    token = CancellationToken()
    gc.collect()
    start = time.perf_counter()
    for _ in range(BREAKDOWN_TURNS):
        async for _item in alice.on_messages_stream(incoming, token):
            pass
    if isinstance(collector, AER1AutoGenCollector):
        collector.flush_steps()
    return (time.perf_counter() - start) / BREAKDOWN_TURNS * 1e6


def _record_us() -> float:
    """µs per bare ``Collector.record`` of the step a turn records, in a loop."""
    collector = Collector(goal="bench")
    steps = [{"message_type": "TextMessage", "message_id": str(i), "content": "reply"} for i in range(BREAKDOWN_TURNS)]
    gc.collect()
    start = time.perf_counter()
    for step in steps:
        collector.record("message", step, agent="alice", kind="message", started_at=time.time(), reply_to="bob")
    return (time.perf_counter() - start) / BREAKDOWN_TURNS * 1e6


async def breakdown(kind: str, messages: int, runs: int) -> str:
    """Per-message costs (best of rounds) and the chaining time inside real team runs."""
    best: dict[str, float] = {}
    for _ in range(BREAKDOWN_ROUNDS):
        rounds = {
            "bare agent (no wrapper)": await _turns_us(None),
            "wrapper hooks, no step kept": await _turns_us(DiscardingCollector(goal="bench")),
            "wrapper hooks + step chained in batches": await _turns_us(AER1AutoGenCollector(goal="bench")),
            "wrapper hooks + step chained at once": await _turns_us(Collector(goal="bench")),
            "bare Collector.record of that step, in a loop": _record_us(),
        }
        for name, us in rounds.items():
            best[name] = min(best.get(name, float("inf")), us)
    lines = ["| per message, best of rounds | µs |", "|---|---:|"]
    lines += [f"| {name} | {us:.1f} |" for name, us in best.items()]
    steps = {"in batches": 0, "at once": 0}
    TimedBatches.seconds = TimedRecords.seconds = 0.0
    for _ in range(runs):
        batched = TimedBatches(goal="bench")
        team = RoundRobinGroupChat([AER1AgentWrapper(a, batched) for a in agents(kind, messages)], max_turns=messages)
        batched.finalize(await team.run(task="go"))
        steps["in batches"] += batched.step_count - 2  # neither the termination nor the close step is batched
        at_once = TimedRecords(goal="bench")
        team = RoundRobinGroupChat([AER1AgentWrapper(a, at_once) for a in agents(kind, messages)], max_turns=messages)
        await team.run(task="go")
        steps["at once"] += at_once.step_count
        at_once.finalize()
    lines += [
        f"| inside {runs} team runs of {messages} messages: chaining a step in batches | "
        f"{TimedBatches.seconds / steps['in batches'] * 1e6:.1f} |",
        f"| inside {runs} team runs of {messages} messages: chaining a step at once | "
        f"{TimedRecords.seconds / steps['at once'] * 1e6:.1f} |",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=DEFAULT_MESSAGES)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--client", choices=("replay", "constant"), default="replay")
    parser.add_argument("--peer-path", type=Path, default=DEFAULT_PEER_PATH)
    parser.add_argument("--breakdown", action="store_true", help="also print what one message costs, part by part")
    args = parser.parse_args(argv)
    logging.getLogger("autogen_core.events").setLevel(logging.ERROR)
    peer = load_peer(args.peer_path)
    if peer is None:
        print(f"(aer1-autogen peer not found under {args.peer_path}: its column is left out)", file=sys.stderr)
    table = variants(args.client, args.messages, peer, hooks=args.breakdown)
    times = asyncio.run(measure(table, args.runs))
    print(report(times, args.messages, args.runs, args.client))
    if args.breakdown:
        print()
        print(asyncio.run(breakdown(args.client, args.messages, max(1, args.runs // 3))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
