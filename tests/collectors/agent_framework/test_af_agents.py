"""One agent with the three recorders: approvals, denials, tool failures, blocked calls, agent failures."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agent_framework import Agent, FunctionInvocationContext, FunctionMiddleware, Message, tool
from agent_framework.orchestrations import HandoffAgentUserRequest, HandoffBuilder, SequentialBuilder

from aer1.collectors.agent_framework import AER1AgentFrameworkCollector

from .conftest import Check
from .scripted import Call, ScriptedChatClient


@tool(approval_mode="always_require")
def transfer(amount: int) -> str:
    """Move money (needs a human's approval)."""
    return f"moved {amount}"


@tool
def broken(x: int) -> int:
    """A tool that fails."""
    raise RuntimeError(f"broken tool got {x}")


def steps(receipt: dict[str, Any]) -> list[tuple[str, str, str, str | None, str]]:
    return [(s["kind"], s["tool"], s["agent"], s.get("call_id"), s["status"]) for s in receipt["steps"]]


@pytest.mark.parametrize("approved", [True, False])
async def test_approval_request_response_and_call_match_by_call_id(
    approved: bool, collector: AER1AgentFrameworkCollector, check: Check
) -> None:
    client = ScriptedChatClient([Call("transfer", {"amount": 5}, "t1"), "all done"])
    agent = collector.observe(Agent(client=client, name="teller", tools=[transfer]))
    session = agent.create_session()
    first = await agent.run("move 5", session=session)
    assert len(first.user_input_requests) == 1
    answer = first.user_input_requests[0].to_function_approval_response(approved)
    await agent.run(Message(role="user", contents=[answer]), session=session)
    receipt, contents = check(collector)
    decision = "approved" if approved else "denied"
    call = ("tool_call", "transfer", "teller", "t1", "ok") if approved else \
        ("tool_call", "transfer", "teller", "t1", "cancelled")
    assert steps(receipt) == [
        ("message", "function_call_proposed", "teller", "t1", "ok"),
        ("approval", "approve:transfer", "teller", "t1", "ok"),
        ("message", "agent_run", "teller", None, "ok"),
        ("approval", "approve:transfer", "user", "t1", "ok"),
        call,
        ("message", "agent_run", "teller", None, "ok"),
        ("close", "close", "aer1", None, "ok"),
    ]
    assert contents[2]["decision"] == "requested" and contents[2]["arguments"] == {"amount": 5}
    assert contents[4]["decision"] == decision and contents[4]["responder"] == "user"
    assert contents[5]["agent_framework"]["executed"] is approved


async def test_tool_exception_recorded_as_error(collector: AER1AgentFrameworkCollector, check: Check) -> None:
    client = ScriptedChatClient([Call("broken", {"x": 7}, "b1"), "it failed"])
    agent = collector.observe(Agent(client=client, name="worker", tools=[broken]))
    await agent.run("try it")
    receipt, contents = check(collector)
    call = next(s for s in receipt["steps"] if s["kind"] == "tool_call")
    assert (call["call_id"], call["status"]) == ("b1", "error")
    error = contents[call["seq"]]["error"]
    assert error["type"] == "RuntimeError" and "broken tool got 7" in error["message"]


class Blocker(FunctionMiddleware):
    """A user's policy middleware that refuses every call without running it."""

    async def process(self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]) -> None:
        context.result = "refused by policy"


async def test_call_blocked_by_outer_middleware_is_proposed_not_executed(
    collector: AER1AgentFrameworkCollector, check: Check
) -> None:
    client = ScriptedChatClient([Call("broken", {"x": 1}, "p1"), "ok"])
    agent = collector.observe(Agent(client=client, name="worker", tools=[broken], middleware=[Blocker()]))
    await agent.run("try it")
    receipt, _ = check(collector)
    kinds = [(s["kind"], s["tool"], s.get("call_id")) for s in receipt["steps"]]
    assert ("message", "function_call_proposed", "p1") in kinds
    assert not any(k == "tool_call" for k, _, _ in kinds), kinds


@pytest.mark.parametrize("stream", [False, True])
async def test_agent_failure_recorded_and_raised(stream: bool, collector: AER1AgentFrameworkCollector,
                                                 check: Check) -> None:
    agent = collector.observe(Agent(client=ScriptedChatClient([]), name="empty"))
    with pytest.raises(AssertionError, match="script exhausted"):
        if stream:
            async for _ in agent.run("hello", stream=True):
                pass
        else:
            await agent.run("hello")
    receipt, contents = check(collector)
    failure = receipt["steps"][0]
    assert (failure["kind"], failure["agent"], failure["status"]) == ("error", "empty", "error")
    assert "script exhausted" in contents[1]["error"]["message"]


def test_agent_named_like_a_workflow_is_refused(collector: AER1AgentFrameworkCollector) -> None:
    with pytest.raises(ValueError, match="starts with 'workflow:'"):
        collector.observe(Agent(client=ScriptedChatClient([]), name="workflow:Sequential"))


def test_observe_is_idempotent(collector: AER1AgentFrameworkCollector) -> None:
    agent = Agent(client=ScriptedChatClient([]), name="once")
    collector.observe(agent)
    collector.observe(agent)
    assert len(agent.middleware or []) == 3


@pytest.mark.parametrize("approved", [True, False])
async def test_workflow_request_info_approval_resumed(approved: bool, collector: AER1AgentFrameworkCollector,
                                                      check: Check) -> None:
    teller = Agent(client=ScriptedChatClient([Call("transfer", {"amount": 9}, "w1"), "sent"]), name="teller",
                   tools=[transfer])
    workflow = SequentialBuilder(participants=[teller]).build()
    first = await collector.run(workflow, "move 9")
    requests = first.get_request_info_events()
    assert len(requests) == 1
    reply = {requests[0].request_id: requests[0].data.to_function_approval_response(approved)}
    await collector.run(workflow, responses=reply, responder="ops-lead")
    receipt, contents = check(collector)
    actor = f"workflow:Sequential/{workflow.id}"
    got = [(s["kind"], s["tool"], s["agent"], s.get("call_id"), s["status"]) for s in receipt["steps"]]
    assert [g for g in got if g[0] in ("approval", "tool_call", "termination")] == [
        ("approval", "approve:transfer", "teller", "w1", "ok"),
        ("approval", "approve:transfer", "ops-lead", "w1", "ok"),
        ("tool_call", "transfer", "teller", "w1", "ok" if approved else "cancelled"),
        ("termination", "workflow_end", actor, None, "ok"),
    ], got
    response = next(s for s in receipt["steps"] if s["agent"] == "ops-lead")
    assert contents[response["seq"]]["decision"] == ("approved" if approved else "denied")
    call = next(s for s in receipt["steps"] if s["kind"] == "tool_call")
    assert contents[call["seq"]]["agent_framework"]["executed"] is approved


async def test_human_input_request_and_response(collector: AER1AgentFrameworkCollector, check: Check) -> None:
    flag = {"require_per_service_call_history_persistence": True}
    alice = Agent(client=ScriptedChatClient(["what city?", "booked Paris"]), name="alice", **flag)
    bob = Agent(client=ScriptedChatClient([]), name="bob", **flag)
    workflow = HandoffBuilder(participants=[alice, bob], termination_condition=lambda c: len(c) >= 4) \
        .with_start_agent(alice).build()
    first = await collector.run(workflow, "book a trip")
    requests = first.get_request_info_events()
    assert len(requests) == 1
    await collector.run(workflow, responses={requests[0].request_id: HandoffAgentUserRequest.create_response("Paris")},
                        responder="traveller")
    receipt, contents = check(collector)
    asked = next(s for s in receipt["steps"] if s["tool"] == "request_info")
    answered = next(s for s in receipt["steps"] if s["tool"] == "request_info_response")
    assert (asked["kind"], answered["kind"], answered["agent"]) == ("human_input", "human_input", "traveller")
    assert contents[answered["seq"]]["request_id"] == contents[asked["seq"]]["request_id"] == requests[0].request_id
    assert sum(s["kind"] == "termination" for s in receipt["steps"]) == 1
