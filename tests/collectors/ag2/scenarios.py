"""The cross-collector run shapes (``tests/collectors/test_scenarios.py``) on AG2 1.x, on its scripted model.

Each run returns ``(receipt, contents by seq)`` after the receipt was saved and verified with
its evidence, like the other collectors' runs there, so a suite over every collector can
call these as its AG2 case: :func:`tool_calls_run` (a call that succeeds, one that raises,
one with malformed arguments), :func:`cancelled_mid_tool_run` (the turn cancelled while a
tool runs, the receipt finalized before it unwinds) and :func:`timeout_run` (the turn
bounded by ``asyncio.wait_for``, a tool still running when the time is up).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from ag2 import Agent
from ag2.events import ToolCallEvent
from ag2.testing import TestConfig

from aer1 import verify_receipt
from aer1.collectors.ag2 import AER1AG2Collector

#: (call id, tool, arguments text) of the three calls every collector runs.
SHAPE = [("c1", "add", '{"a": 2, "b": 3}'), ("c2", "explode", '{"reason": "boom"}'), ("c3", "add", '{"a": 1, ')]


async def add(a: int, b: int) -> int:
    """Add two numbers (async: the calls of one batch then settle in a fixed order)."""
    return a + b


async def explode(reason: str) -> str:
    """Always raises."""
    raise ValueError(reason)


def saved_contents(collector: AER1AG2Collector, receipt: dict[str, Any], folder: Path) -> dict[int, Any]:
    """Save, verify with the evidence, and return the contents by seq."""
    path = collector.save(folder / "receipt.json", workflow=receipt)
    report = verify_receipt(path, evidence=str(folder / "receipt.evidence.jsonl"))
    assert report.valid, [f.reason for f in report.failures]
    lines = (folder / "receipt.evidence.jsonl").read_text().splitlines()
    return {json.loads(line)["seq"]: json.loads(line)["content"] for line in lines[1:]}


async def tool_calls_run(folder: Path) -> tuple[dict[str, Any], dict[int, Any]]:
    """One agent, one model reply asking for the three calls of :data:`SHAPE`, then a text reply."""
    collector = AER1AG2Collector(goal="tools")
    config = TestConfig([ToolCallEvent(name=n, arguments=a, id=i) for i, n, a in SHAPE], "done",
                        raise_tool_errors=False)
    agent = collector.observe(Agent("alice", config=config, tools=[add, explode]))
    reply = await agent.ask("use the tools")
    receipt = collector.finalize(reply.body)
    return receipt, saved_contents(collector, receipt, folder)


def _waiting_agent(collector: AER1AG2Collector, started: asyncio.Event) -> Agent:
    async def wait_forever(seconds: int) -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    config = TestConfig(ToolCallEvent(name="wait_forever", arguments='{"seconds": 5}', id="w1"), "done")
    return collector.observe(Agent("alice", config=config, tools=[wait_forever]))


async def cancelled_mid_tool_run(folder: Path) -> tuple[AER1AG2Collector, dict[str, Any], dict[int, Any]]:
    """The turn is cancelled while its tool runs; the receipt is finalized before the turn unwinds."""
    collector = AER1AG2Collector(goal="wait")
    started = asyncio.Event()
    agent = _waiting_agent(collector, started)
    turn = asyncio.ensure_future(agent.ask("wait"))
    await started.wait()
    receipt = collector.finalize()  # before the cancelled turn has unwound
    turn.cancel()
    try:
        await turn
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the cancelled turn returned")
    return collector, receipt, saved_contents(collector, receipt, folder)


async def timeout_run(folder: Path) -> tuple[AER1AG2Collector, dict[str, Any], dict[int, Any]]:
    """The turn is bounded by ``asyncio.wait_for``; its tool is still running when the time is up."""
    collector = AER1AG2Collector(goal="wait")
    started = asyncio.Event()
    agent = _waiting_agent(collector, started)

    async def ask_when_started() -> Any:
        turn = asyncio.ensure_future(agent.ask("wait"))
        await started.wait()
        return await asyncio.wait_for(turn, timeout=0)  # the tool is running: the time is up at once

    try:
        await ask_when_started()
    except TimeoutError:
        pass
    else:
        raise AssertionError("the bounded turn returned")
    receipt = collector.finalize()
    return collector, receipt, saved_contents(collector, receipt, folder)
