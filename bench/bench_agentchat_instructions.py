"""Instructions, not time: what the AgentChat wrappers add to a team run, counted by cachegrind.

    python bench/bench_agentchat_instructions.py [--messages 200] [--runs 4] [--jobs 2]

On a shared machine the wall and CPU times of ``bench_agentchat_wrapper.py`` move by more
than the few per cent being measured. Instruction counts do not: each variant runs in its
own process under ``valgrind --tool=cachegrind --cache-sim=no`` (Debian package
``valgrind``), warms every variant up once and then runs its own ``--runs`` times; a process
that only warms up is subtracted, so what is left is ``--runs`` team runs. Printed: millions
of instructions per run of 200 messages and the ratio to the unwrapped run. The variants are
those of ``bench_agentchat_wrapper.py``: unwrapped, an empty wrapper that only forwards the
agent's stream (the floor of any wrapper), our wrappers recording into a collector that keeps
no step (the hooks alone), and our wrappers recording into ``AER1AutoGenCollector`` (with
``finalize()``).

Instructions are not time: our hooks run with the caches full of AutoGen's work, so they
cost more time per instruction than the run around them, and valgrind's CPU has no SHA
extensions, so each SHA-256 counts several times what it costs on a CPU that has them.
Numbers, not assertions: nothing here fails on a count.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import shutil
import subprocess
import sys
from collections.abc import AsyncGenerator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

VARIANTS = ("unwrapped", "forwarding only", "hooks alone", "wrappers + AER1AutoGenCollector")
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def _child(variant: str, messages: int, runs: int) -> None:
    """In the measured process: warm every variant up, then run ``variant`` ``runs`` times."""
    import bench_agentchat_wrapper as bench
    from autogen_agentchat.agents import BaseChatAgent
    from autogen_agentchat.base import ChatAgent
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_core import CancellationToken

    from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector

    class Forwarding(BaseChatAgent):
        """A wrapper that only forwards the agent's stream: what any wrapper costs at least."""

        def __init__(self, inner: ChatAgent) -> None:
            super().__init__(inner.name, inner.description)
            self._inner = inner

        @property
        def produced_message_types(self) -> Any:
            return self._inner.produced_message_types

        async def on_messages(self, messages: Sequence[Any], cancellation_token: CancellationToken) -> Any:
            raise NotImplementedError

        async def on_messages_stream(
            self, messages: Sequence[Any], cancellation_token: CancellationToken
        ) -> AsyncGenerator[Any, None]:
            async for item in self._inner.on_messages_stream(messages, cancellation_token):
                yield item

        async def on_reset(self, cancellation_token: CancellationToken) -> None:
            await self._inner.on_reset(cancellation_token)

    def team(members: list[Any]) -> Any:
        return RoundRobinGroupChat(members, max_turns=messages)

    async def unwrapped() -> None:
        await team([*bench.agents("replay", messages)]).run(task="go")

    async def forwarding() -> None:
        await team([Forwarding(a) for a in bench.agents("replay", messages)]).run(task="go")

    async def hooks() -> None:
        collector = bench.DiscardingCollector(goal="bench")
        await team([AER1AgentWrapper(a, collector) for a in bench.agents("replay", messages)]).run(task="go")

    async def recorded() -> None:
        collector = AER1AutoGenCollector(goal="bench")
        result = await team([AER1AgentWrapper(a, collector) for a in bench.agents("replay", messages)]).run(task="go")
        collector.finalize(result)

    table = dict(zip(VARIANTS, (unwrapped, forwarding, hooks, recorded), strict=True))

    async def main() -> None:
        for run in table.values():
            await run()
        for _ in range(runs):
            await table[variant]()

    logging.getLogger("autogen_core.events").setLevel(logging.ERROR)
    asyncio.run(main())


def _count(variant: str, messages: int, runs: int) -> int:
    """Instructions of a process warming up and running ``variant`` ``runs`` times."""
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", sys.executable,
               __file__, "--child", variant, "--messages", str(messages), "--runs", str(runs)]  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    found = _REFS.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{variant}: valgrind gave no count (exit {done.returncode}): {done.stderr[-400:]}")
    return int(found.group(1).replace(",", ""))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=2, help="processes under valgrind at once")
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        _child(args.child, args.messages, args.runs)
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 1
    jobs = [("warm-up only", VARIANTS[0], 0), *((name, name, args.runs) for name in VARIANTS)]
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        counts = dict(zip([j[0] for j in jobs], pool.map(lambda j: _count(j[1], args.messages, j[2]), jobs),
                          strict=True))  # fmt: skip
    per_run = {name: (counts[name] - counts["warm-up only"]) / args.runs for name in VARIANTS}
    base = per_run[VARIANTS[0]]
    print(f"RoundRobinGroupChat, 2 AssistantAgents, {args.messages} messages, replay client: instructions per run "
          f"({args.runs} runs a process, less a process that only warms up)")  # fmt: skip
    print()
    print("| variant | instructions per run (millions) | over unwrapped (millions) | ratio |")
    print("|---|---:|---:|---:|")
    for name, count in per_run.items():
        print(f"| {name} | {count / 1e6:.1f} | {(count - base) / 1e6:+.1f} | {count / base:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
