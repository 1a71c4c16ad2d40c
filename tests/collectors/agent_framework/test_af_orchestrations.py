"""Each orchestration: the same events with and without aer1, exactly what happened in the receipt."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from agent_framework import Agent, WorkflowRunResult
from agent_framework.orchestrations import GroupChatBuilder, SequentialBuilder

from aer1.collectors.agent_framework import AER1AgentFrameworkCollector

from .conftest import Check
from .scripted import ScriptedChatClient
from .workflows import ORCHESTRATIONS, agent, signature

WF = "workflow"


def rows(receipt: dict[str, Any]) -> list[tuple[str, str, str, str | None]]:
    """(kind, tool, agent, target or call id) of every step; workflow actors read as ``workflow``."""
    out = []
    for s in receipt["steps"]:
        agent = WF if s["agent"].startswith("workflow:") else s["agent"]
        out.append((s["kind"], s["tool"], agent, s.get("target") or s.get("call_id")))
    return out


#: Steps recorded from workflow events, when the event reaches the caller; every other step
#: is recorded by a middleware inside the agent's task when it happens. The two streams
#: interleave as the event loop schedules those tasks, so each is compared in order and
#: the whole as a multiset.
EVENT_TOOLS = frozenset({"task", "speaker_selection", "group_chat_response", "handoff", "workflow_output",
                         "magentic_plan_created", "magentic_progress_ledger_updated", "workflow_end",
                         "executor_failed", "workflow_failed", "request_info", "request_info_response"})


def assert_same_steps(got: list[Any], want: list[Any]) -> None:
    """The same steps; in the same order among workflow-event steps and among agent steps."""
    assert sorted(got, key=repr) == sorted(want, key=repr), f"got {got}, want {want}"
    for from_events in (True, False):
        assert [r for r in got if (r[1] in EVENT_TOOLS) is from_events] == \
            [r for r in want if (r[1] in EVENT_TOOLS) is from_events], f"got {got}, want {want}"


TASK = ("task", "task", WF, None)
END = ("termination", "workflow_end", WF, None)
CLOSE = ("close", "close", "aer1", None)
LEDGER = ("message", "magentic_progress_ledger_updated", WF, None)


def selection(name: str) -> list[tuple[str, str, str, str | None]]:
    return [("speaker_selection", "speaker_selection", WF, name), ("message", "agent_run", name, None),
            ("message", "group_chat_response", WF, None)]


EXPECTED = {
    "sequential": [TASK, ("message", "function_call_proposed", "alice", "c1"), ("tool_call", "add", "alice", "c1"),
                   ("message", "agent_run", "alice", None), ("message", "agent_run", "bob", None),
                   ("message", "workflow_output", "bob", None), END, CLOSE],
    "concurrent": [TASK, ("message", "agent_run", "alice", None), ("message", "agent_run", "bob", None),
                   ("message", "workflow_output", "aggregator", None), END, CLOSE],
    "group_chat": [TASK, *selection("alice"), *selection("bob"), *selection("alice"),
                   ("message", "workflow_output", "group_chat_orchestrator", None), END, CLOSE],
    "handoff": [TASK, ("message", "function_call_proposed", "alice", "h1"), ("message", "agent_run", "alice", None),
                ("message", "workflow_output", "alice", None), ("message", "workflow_output", "alice", None),
                ("handoff", "handoff", "alice", "bob"), ("message", "function_call_proposed", "bob", "c2"),
                ("tool_call", "add", "bob", "c2"), ("message", "agent_run", "bob", None),
                ("message", "workflow_output", "bob", None), ("message", "workflow_output", "bob", None),
                ("message", "workflow_output", "bob", None), END, CLOSE],
    "magentic": [TASK, *[("message", "agent_run", "manager", None)] * 3,
                 ("message", "magentic_plan_created", WF, None), LEDGER,
                 ("speaker_selection", "speaker_selection", WF, "alice"), ("message", "agent_run", "alice", None),
                 ("message", "agent_run", "manager", None), ("message", "group_chat_response", WF, None),
                 LEDGER,
                 ("speaker_selection", "speaker_selection", WF, "bob"), ("message", "agent_run", "bob", None),
                 ("message", "agent_run", "manager", None), ("message", "agent_run", "manager", None),
                 ("message", "group_chat_response", WF, None), LEDGER,
                 ("message", "workflow_output", "magentic_orchestrator", None), END, CLOSE],
}


async def events_of(name: str, collector: AER1AgentFrameworkCollector | None) -> list[tuple[Any, ...]]:
    workflow, agents = ORCHESTRATIONS[name]()
    if collector is None:
        return [signature(e) async for e in workflow.run("plan the launch", stream=True)]
    for member in agents:  # the Magentic manager is no executor: observed by hand
        collector.observe(member)
    return [signature(e) async for e in collector.run_stream(workflow, "plan the launch")]


@pytest.mark.parametrize("name", sorted(ORCHESTRATIONS))
async def test_same_events_with_and_without_aer1(name: str, collector: AER1AgentFrameworkCollector,
                                                 check: Check) -> None:
    plain = await events_of(name, None)
    observed = await events_of(name, collector)
    assert observed == plain
    receipt, contents = check(collector)
    got = rows(receipt)
    assert got[0] == TASK and got[-2:] == [END, CLOSE]
    assert_same_steps(got, EXPECTED[name])
    end = contents[len(got) - 1]
    assert end["agent_framework"]["final_state"] == "IDLE"
    assert contents[1] == {"input": "plan the launch"}


async def test_group_chat_end_says_max_rounds(collector: AER1AgentFrameworkCollector, check: Check) -> None:
    await events_of("group_chat", collector)
    receipt, contents = check(collector)
    end = contents[len(receipt["steps"]) - 1]
    assert (
        end["agent_framework"]["rounds"],
        end["agent_framework"]["max_rounds"],
        end["agent_framework"]["max_rounds_reached"],
    ) == (3, 3, True)
    assert end["agent_framework"]["closing_output_from"] == "group_chat_orchestrator"
    assert end["reason"] is None and "no structured stop reason" in end["agent_framework"]["note"]
    selections = [contents[s["seq"]] for s in receipt["steps"] if s["kind"] == "speaker_selection"]
    assert selections == [{"round": i, "participant": p} for i, p in enumerate(["alice", "bob", "alice"])]


async def test_tool_call_recorded_with_arguments_result_and_call_id(collector: AER1AgentFrameworkCollector,
                                                                    check: Check) -> None:
    await events_of("sequential", collector)
    receipt, contents = check(collector)
    call = next(s for s in receipt["steps"] if s["kind"] == "tool_call")
    assert (call["tool"], call["agent"], call["call_id"]) == ("add", "alice", "c1")
    got = contents[call["seq"]]
    assert got["arguments"] == {"a": 1, "b": 2} and got["agent_framework"]["executed"] is True
    assert got["result"] == "3", got  # one text content reads as its text (spec/agent-framework.md)


def outputs(result: WorkflowRunResult) -> list[Any]:
    return [signature(e) for e in result] + [result.get_final_state()]


@pytest.mark.parametrize("name", sorted(ORCHESTRATIONS))
async def test_run_returns_the_frameworks_own_result(name: str, collector: AER1AgentFrameworkCollector,
                                                     check: Check) -> None:
    plain_workflow, _ = ORCHESTRATIONS[name]()
    plain = await plain_workflow.run("plan the launch", include_status_events=True)
    workflow, agents = ORCHESTRATIONS[name]()
    for member in agents:
        collector.observe(member)
    observed = await collector.run(workflow, "plan the launch", include_status_events=True)
    assert type(observed) is type(plain)
    assert outputs(observed) == outputs(plain)
    assert [signature(e) for e in observed.status_timeline()] == [signature(e) for e in plain.status_timeline()]
    receipt, _ = check(collector)
    streamed = [r for r in EXPECTED[name] if r[1] != "workflow_output"]
    got = rows(receipt)
    assert_same_steps([r for r in got if r[1] != "workflow_output"], streamed)
    assert [r[2] for r in got if r[1] == "workflow_output"] == [e.executor_id for e in plain if e.type == "output"]


async def test_executor_failure_recorded_and_raised(collector: AER1AgentFrameworkCollector, check: Check) -> None:
    workflow = SequentialBuilder(participants=[Agent(client=ScriptedChatClient([]), name="mute")]).build()
    with pytest.raises(AssertionError, match="script exhausted") as raised:
        async for _ in collector.run_stream(workflow, "speak"):
            pass
    receipt, contents = check(collector)
    assert receipt["status"] == "error"
    assert_same_steps(rows(receipt), [TASK, ("error", "agent_run", "mute", None),
                                      ("error", "executor_failed", "mute", None),
                                      ("error", "workflow_failed", WF, None), END, CLOSE])
    by_tool = {s["tool"]: contents[s["seq"]] for s in receipt["steps"]}
    assert by_tool["agent_run"]["error"]["message"] == str(raised.value)  # the streamed run's own failure
    assert by_tool["executor_failed"]["error"]["type"] == "AssertionError"
    end = receipt["steps"][-2]
    assert end["status"] == "error" and by_tool["workflow_end"]["error"]["message"] == str(raised.value)


async def test_two_workflows_share_a_collector_with_their_own_actors(collector: AER1AgentFrameworkCollector,
                                                                     check: Check) -> None:
    first, _ = ORCHESTRATIONS["concurrent"]()
    second, _ = ORCHESTRATIONS["concurrent"]()
    await collector.run(first, "one")
    await collector.run(second, "two")
    receipt, contents = check(collector)
    tasks = [(s["agent"], contents[s["seq"]]["input"]) for s in receipt["steps"] if s["kind"] == "task"]
    assert tasks == [(f"workflow:Concurrent/{first.id}", "one"), (f"workflow:Concurrent/{second.id}", "two")]
    ends = [s["agent"] for s in receipt["steps"] if s["kind"] == "termination"]
    assert ends == [tasks[0][0], tasks[1][0]]
    listed = {a["name"]: a["type"] for a in receipt["agents"]}
    assert listed[tasks[0][0]] == listed[tasks[1][0]] == "Workflow"


def decision(terminate: bool, reason: str, speaker: str | None, final: str | None) -> str:
    return json.dumps({"terminate": terminate, "reason": reason, "next_speaker": speaker, "final_message": final})


async def test_group_chat_orchestrator_agent_decisions_recorded(collector: AER1AgentFrameworkCollector,
                                                                check: Check) -> None:
    boss = collector.observe(agent("boss", [decision(False, "alice first", "alice", None),
                                            decision(False, "bob next", "bob", None),
                                            decision(True, "both spoke", None, "all settled")]))
    workflow = GroupChatBuilder(participants=[agent("alice", ["a1"]), agent("bob", ["b1"])],
                                orchestrator_agent=boss).build()
    await collector.run(workflow, "settle it")
    receipt, contents = check(collector)
    got = rows(receipt)
    boss_turn = ("message", "agent_run", "boss", None)
    assert_same_steps(got, [TASK, boss_turn, *selection("alice")[:2], boss_turn, selection("alice")[2],
                            *selection("bob")[:2], boss_turn, selection("bob")[2],
                            ("message", "workflow_output", "boss", None), END, CLOSE])
    reasons = [
        contents[s["seq"]]["agent_framework"]["response"]["messages"][0]["contents"][0]["text"]
        for s in receipt["steps"]
        if s["agent"] == "boss" and s["tool"] == "agent_run"
    ]
    assert [json.loads(r)["reason"] for r in reasons] == ["alice first", "bob next", "both spoke"]
    end = contents[len(got) - 1]
    af = end["agent_framework"]
    assert (af["final_state"], af["rounds"], af["closing_output_from"]) == ("IDLE", 2, "boss")


async def test_caller_who_stops_reading_gets_a_cancelled_end(collector: AER1AgentFrameworkCollector,
                                                             check: Check) -> None:
    workflow, _ = ORCHESTRATIONS["sequential"]()
    async with contextlib.aclosing(collector.run_stream(workflow, "plan the launch")) as events:
        async for event in events:
            if event.type == "executor_invoked":
                break
    receipt, contents = check(collector)
    end = receipt["steps"][-2]
    assert (end["kind"], end["status"]) == ("termination", "cancelled")
    assert contents[end["seq"]]["error"]["type"] == "GeneratorExit"
