"""One run shape, every collector, one vocabulary (spec/steps.md).

The same tool calls (one that succeeds, one that raises, one with malformed arguments)
run through AgentChat (``AER1AgentWrapper`` on a replay client), the autogen-core hooks
(``observe_tools``) and the built-in manager; each receipt verifies with its evidence, and
each records the same members and statuses. A cancellation mid-tool, finalized at once,
records the unfinished call as cancelled and the receipt as incomplete.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import TextMessage
from autogen_core import CancellationToken, FunctionCall
from autogen_core.tools import FunctionTool

from aer1 import Collector, verify_receipt
from aer1 import _steps_vocab as vocab
from aer1._vocabulary import VOCABULARY, status_counts
from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector
from aer1.collectors.autogen_core import observe_tools
from aer1.groupchat import GroupChat, ScriptedAgent, ToolExecutor

from ..scripted_models import function_calls, scripted_client

#: (call id, arguments text) of the three calls every collector runs.
SHAPE = [("c1", "add", '{"a": 2, "b": 3}'), ("c2", "explode", '{"reason": "boom"}'), ("c3", "add", '{"a": 1, ')]
#: What every collector records of them: status, arguments, whether a result, whether an error.
WANT = [
    ("ok", {"a": 2, "b": 3}, False, True, False),
    ("error", {"reason": "boom"}, False, False, True),
    ("error", '{"a": 1, ', True, False, True),
]


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def explode(reason: str) -> str:
    """Always raises."""
    raise ValueError(reason)


def saved_contents(collector: Collector, receipt: dict[str, Any], folder: Path) -> dict[int, Any]:
    """Save, verify with the evidence, and return the contents by seq."""
    path = collector.save(folder / "receipt.json", workflow=receipt)
    report = verify_receipt(path, evidence=str(folder / "receipt.evidence.jsonl"))
    assert report.valid, [f.reason for f in report.failures]
    lines = (folder / "receipt.evidence.jsonl").read_text().splitlines()
    return {json.loads(line)["seq"]: json.loads(line)["content"] for line in lines[1:]}


def shape_of(receipt: dict[str, Any], contents: dict[int, Any]) -> list[tuple[Any, ...]]:
    calls = sorted((s for s in receipt["steps"] if s["kind"] == "tool_call"), key=lambda s: s.get("call_id", ""))
    out = []
    for step in calls:
        c = contents[step["seq"]]
        assert c["vocabulary"] == VOCABULARY and c["name"] == step["tool"]
        out.append((step["status"], c["arguments"], c.get("arguments_malformed", False), c["result"] is not None,
                    "error" in c))
    return out


async def agentchat_run(folder: Path) -> tuple[dict[str, Any], dict[int, Any]]:
    collector = AER1AutoGenCollector(goal="tools")
    client = scripted_client([function_calls(*(FunctionCall(id=i, name=n, arguments=a) for i, n, a in SHAPE)),
                              "done"])
    agent = AER1AgentWrapper(AssistantAgent("alice", model_client=client, tools=[add, explode]), collector)
    result = await agent.run(task="use the tools")
    receipt = collector.finalize(result)
    return receipt, saved_contents(collector, receipt, folder)


async def core_run(folder: Path) -> tuple[dict[str, Any], dict[int, Any]]:
    collector = Collector(goal="tools")
    tools = {t.name: t for t in observe_tools([FunctionTool(add, description="Add."),
                                               FunctionTool(explode, description="Raise.")], collector, agent="alice")}
    for call_id, name, text in SHAPE:
        try:
            await tools[name].run_json(json.loads(text), CancellationToken(), call_id=call_id)
        except (ValueError, json.JSONDecodeError):
            if name == "add":  # malformed text never reaches the tool: what the framework records itself
                refused = vocab.tool_call("autogen_core", name=name, call_id=call_id, arguments=text, result=None,
                                          error=vocab.error_code("arguments_invalid", "not JSON"))
                collector.record(name, refused, agent="alice", kind="tool_call", status="error", call_id=call_id)
    receipt = collector.finalize("done")
    return receipt, saved_contents(collector, receipt, folder)


async def builtin_run(folder: Path) -> tuple[dict[str, Any], dict[int, Any]]:
    calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in SHAPE]
    planner = ScriptedAgent("planner", [{"role": "assistant", "content": None, "tool_calls": calls}, "TERMINATE"])
    chat = GroupChat([planner, ToolExecutor("tools", {"add": add, "explode": explode})],
                     is_termination_msg=lambda m: "TERMINATE" in (m.get("content") or ""), initiator="user")
    result = await chat.arun("use the tools")
    assert result.collector is not None
    return result.receipt, saved_contents(result.collector, result.receipt, folder)


@pytest.mark.parametrize("collector", ["agentchat", "autogen_core", "groupchat"])
async def test_the_same_tool_calls_read_the_same_in_every_collector(collector: str, tmp_path: Path) -> None:
    if collector == "agentchat":
        receipt, contents = await agentchat_run(tmp_path)
    elif collector == "autogen_core":
        receipt, contents = await core_run(tmp_path)
    else:
        receipt, contents = await builtin_run(tmp_path)
    assert shape_of(receipt, contents) == WANT
    # handled tool errors are their steps' errors; the run ended by itself: ok
    assert receipt["status"] == "ok"
    assert status_counts(receipt)["error"] == 2


async def test_cancelled_mid_tool_and_finalized_at_once_is_recorded_not_ok(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def wait_forever(seconds: int) -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    collector = AER1AutoGenCollector(goal="wait")
    client = scripted_client([function_calls(FunctionCall(id="w1", name="wait_forever", arguments='{"seconds": 5}'))])
    agent = AER1AgentWrapper(AssistantAgent("alice", model_client=client, tools=[wait_forever]), collector)
    token = CancellationToken()
    turn = asyncio.ensure_future(agent.on_messages([TextMessage(content="wait", source="user")], token))
    await started.wait()
    receipt = collector.finalize()  # before the cancelled turn has unwound
    token.cancel()
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    kinds = [(s["kind"], s["status"]) for s in receipt["steps"]]
    assert ("tool_call", "cancelled") in kinds and ("error", "cancelled") in kinds
    assert receipt["status"] == "incomplete"
    contents = saved_contents(collector, receipt, tmp_path)
    [call] = [contents[s["seq"]] for s in receipt["steps"] if s["kind"] == "tool_call"]
    assert (call["call_id"], call["result"], call["error"]["type"]) == ("w1", None, "cancelled")
    assert collector.late_records == 0
