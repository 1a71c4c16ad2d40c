"""Untrusted content is data, bounded in size; a failure to record never breaks the run."""

from __future__ import annotations

from typing import Any

from agent_framework import Agent, tool

from aer1.collectors.agent_framework import (
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_TEXT_CHARS,
    OMITTED_KEY,
    AER1AgentFrameworkCollector,
)

from .conftest import Check
from .scripted import Call, ScriptedChatClient
from .workflows import ORCHESTRATIONS, signature


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": True}
    for _ in range(depth):
        value = {"down": value}
    return value


@tool
def flood(n: int) -> dict[str, Any]:
    """Returns oversized, deep and wide data."""
    return {"text": "x" * (MAX_TEXT_CHARS + n), "wide": {str(i): i for i in range(MAX_ITEMS + n)},
            "long": list(range(MAX_ITEMS + n)), "deep": nested(MAX_DEPTH * 2)}


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


async def test_oversized_tool_result_is_bounded_and_says_so(collector: AER1AgentFrameworkCollector,
                                                            check: Check) -> None:
    client = ScriptedChatClient([Call("flood", {"n": 5}, "f1"), "done"])
    agent = collector.observe(Agent(client=client, name="reader", tools=[flood]))
    await agent.run("read it")
    receipt, contents = check(collector)
    call = next(s for s in receipt["steps"] if s["kind"] == "tool_call")
    recorded = contents[call["seq"]]
    text = recorded["result"]  # the framework hands the result on as one text content: its text, cut, the cut said
    assert isinstance(text, str) and text.endswith(" more characters]"), text[-80:]
    size = len(text)
    assert size < MAX_TEXT_CHARS + 64, f"got {size} characters, want at most about {MAX_TEXT_CHARS}"


async def test_oversized_arguments_the_model_proposes_are_bounded(collector: AER1AgentFrameworkCollector,
                                                                   check: Check) -> None:
    arguments = {"n": 1, "wide": {str(i): i for i in range(MAX_ITEMS + 3)}, "long": list(range(MAX_ITEMS + 2)),
                 "deep": nested(MAX_DEPTH * 2)}
    client = ScriptedChatClient([Call("flood", arguments, "f2"), "done"])
    agent = collector.observe(Agent(client=client, name="reader", tools=[flood]))
    await agent.run("read it")
    receipt, contents = check(collector)
    proposed = next(s for s in receipt["steps"] if s["tool"] == "function_call_proposed")
    recorded = contents[proposed["seq"]]["arguments"]
    assert recorded["wide"][OMITTED_KEY] == 3 and len(recorded["wide"]) == MAX_ITEMS + 1
    assert recorded["long"][-1] == "... [2 more items]" and len(recorded["long"]) == MAX_ITEMS + 1
    assert depth_of(recorded) <= MAX_DEPTH + 1, f"got depth {depth_of(recorded)}, want at most {MAX_DEPTH + 1}"


def failing_redactor(content: Any) -> Any:
    raise RuntimeError("redactor down")


async def test_recording_failure_never_breaks_the_run() -> None:
    plain_workflow, _ = ORCHESTRATIONS["sequential"]()
    plain = [signature(e) async for e in plain_workflow.run("plan the launch", stream=True)]
    collector = AER1AgentFrameworkCollector(goal="a collector that cannot record", redact=failing_redactor)
    workflow, _ = ORCHESTRATIONS["sequential"]()
    observed = [signature(e) async for e in collector.run_stream(workflow, "plan the launch")]
    assert observed == plain
    assert collector.recording_failures > 0
    receipt = collector.finalize("done")
    assert receipt["status"] == "incomplete"
    assert receipt["recording_failures"] == collector.recording_failures
