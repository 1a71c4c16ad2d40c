"""Agents that run other agents: each action recorded once, by the agent that performed it.

SocietyOfMindAgent (an inner team) and AgentTool (an inner agent as a tool) forward the
inner agents' events in their own stream. The outer wrapper must not record those again
under its own name: an inner agent wrapped for the same collector records its own turns,
an unwrapped one is recorded under its own name with ``nested_in``, and the outer step
names the inner run (``nested``). The team behaves exactly as without the wrappers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent, SocietyOfMindAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_agentchat.tools import AgentTool

from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector

from ...scripted_models import scripted_client
from .conftest import Check, calls, pairs


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def transcript(result: TaskResult) -> list[tuple[str, str, str]]:
    return [(type(m).__name__, m.source, m.to_text()) for m in result.messages]


Wrap = Callable[[Any], Any]


async def _recorded(
    build: Callable[[Wrap], Any], collector: AER1AutoGenCollector, check: Check, inner_wrapped: bool, task: str
) -> tuple[TaskResult, dict[str, Any], list[Any]]:
    """Run the outer agent unwrapped, then wrapped (inner agents wrapped too or not): same
    transcript both times; the wrapped run's checked receipt and contents."""
    plain = await build(lambda a: a).run(task=task)

    def wrap_inner(agent: Any) -> Any:
        return AER1AgentWrapper(agent, collector) if inner_wrapped else agent

    result = await AER1AgentWrapper(build(wrap_inner), collector).run(task=task)
    assert transcript(result) == transcript(plain)
    receipt, contents = check(collector, result)
    return result, receipt, contents


def _society(wrap_inner: Wrap) -> SocietyOfMindAgent:
    worker = AssistantAgent(
        "worker", model_client=scripted_client([calls(("w1", "add", '{"a": 2, "b": 3}')), "the sum is 5"]),
        tools=[add], reflect_on_tool_use=True,
    )  # fmt: skip
    inner = RoundRobinGroupChat([wrap_inner(worker)], max_turns=1)
    return SocietyOfMindAgent("society", team=inner, model_client=scripted_client(["society says 5"]))


@pytest.mark.parametrize("inner_wrapped", [False, True], ids=["inner-unwrapped", "inner-wrapped"])
async def test_society_of_mind_records_inner_actions_once(
    collector: AER1AutoGenCollector, check: Check, inner_wrapped: bool
) -> None:
    _, receipt, contents = await _recorded(_society, collector, check, inner_wrapped, "add 2 and 3")
    steps = pairs(receipt)
    # The worker's tool call and message: once each, under the worker's name.
    assert steps.count(("tool_call", "worker")) == 1 and steps.count(("message", "worker")) == 1
    assert ("tool_call", "society") not in steps
    call = contents[steps.index(("tool_call", "worker"))]
    assert (call["arguments"], call["result"]) == ({"a": 2, "b": 3}, "5")
    # Wrapped or not, the inner agent's steps say which agent's turn they ran in.
    assert call["nested_in"] == "society"
    assert contents[steps.index(("message", "worker"))]["nested_in"] == "society"
    # The outer step names the inner run.
    outer = contents[steps.index(("message", "society"))]
    assert outer["content"] == "society says 5"
    assert outer["agentchat"]["nested"]["agents"] == ["worker"]
    worker_message = contents[steps.index(("message", "worker"))]
    assert worker_message["content"] == "the sum is 5"
    assert worker_message["message_id"] in outer["agentchat"]["nested"]["message_ids"]


def _boss(wrap_inner: Wrap) -> AssistantAgent:
    worker = AssistantAgent(
        "worker", description="adds numbers",
        model_client=scripted_client([calls(("w1", "add", '{"a": 4, "b": 5}')), "nine"]),
        tools=[add], reflect_on_tool_use=True,
    )  # fmt: skip
    return AssistantAgent(
        "boss", model_client=scripted_client([calls(("b1", "worker", '{"task": "add 4 and 5"}')), "boss: nine"]),
        tools=[AgentTool(wrap_inner(worker))], reflect_on_tool_use=True,
    )  # fmt: skip


@pytest.mark.parametrize("inner_wrapped", [False, True], ids=["inner-unwrapped", "inner-wrapped"])
async def test_agent_tool_records_inner_actions_once(
    collector: AER1AutoGenCollector, check: Check, inner_wrapped: bool
) -> None:
    _, receipt, contents = await _recorded(_boss, collector, check, inner_wrapped, "what is 4 + 5")
    steps = pairs(receipt)
    tool_calls = [(s["agent"], c["name"], c["result"]) for s, c in zip(receipt["steps"], contents, strict=True)
                  if s["kind"] == "tool_call"]  # fmt: skip
    # The worker's add, once, as the worker's; the boss's call of the worker tool, as the boss's.
    assert tool_calls == [("worker", "add", "9"), ("boss", "worker", "worker: nine")]
    assert contents[steps.index(("tool_call", "worker"))]["nested_in"] == "boss"
    assert "nested_in" not in contents[steps.index(("tool_call", "boss"))]
    boss_call = contents[steps.index(("tool_call", "boss"))]
    assert boss_call["agentchat"]["nested"]["agents"][-1] == "worker"
    assert steps.count(("message", "worker")) == 1
    assert contents[steps.index(("message", "boss"))]["content"] == "boss: nine"
