"""Tool calls whose ids say nothing: empty (OpenAI streaming) or shared by a response (Ollama).

Pairing is by position within the response when ids are empty or repeat; the receipt
verifies (no empty ``call_id`` member); each call is recorded once, with or without
``observe_tools``; the team behaves exactly as without the wrapper.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.teams import Swarm
from autogen_core.models import CreateResult

from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector, observe_tools

from ...scripted_models import ollama_calls, openai_streamed_calls, scripted_client
from .conftest import Check, pairs


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def subtract(a: int, b: int) -> int:
    """Subtract b from a."""
    return a - b


def transcript(result: TaskResult) -> list[tuple[str, str, str]]:
    """What the team did, without message ids: (type, source, text) of every message."""
    return [(type(m).__name__, m.source, m.to_text()) for m in result.messages]


Script = Callable[[], list[str | CreateResult]]

OPENAI_EMPTY_IDS: Script = lambda: [  # noqa: E731
    openai_streamed_calls(("add", '{"a": 1, "b": 2}'), ("add", '{"a": 30, "b": 4}'), ("subtract", '{"a": 9, "b": 1}')),
    "all done",
]
OLLAMA_SHARED_IDS: Script = lambda: [  # noqa: E731
    ollama_calls(0, ("add", '{"a": 1, "b": 2}'), ("add", '{"a": 30, "b": 4}'), ("subtract", '{"a": 9, "b": 1}')),
    "all done",
]
#: (arguments, result) of the three calls, in the order the model asked for them.
EXPECTED = [({"a": 1, "b": 2}, "3"), ({"a": 30, "b": 4}, "34"), ({"a": 9, "b": 1}, "8")]


async def _run(script: Script, *, stream: bool, wrap_with: AER1AutoGenCollector | None, observed: bool) -> TaskResult:
    tools: Sequence[Any] = [add, subtract]
    if wrap_with is not None and observed:
        tools = observe_tools(list(tools), wrap_with, agent="alice")
    agent = AssistantAgent(
        "alice", model_client=scripted_client(script()), tools=list(tools), reflect_on_tool_use=True,
        model_client_stream=stream,
    )  # fmt: skip
    if wrap_with is None:
        return await agent.run(task="compute")
    return await AER1AgentWrapper(agent, wrap_with).run(task="compute")


@pytest.mark.parametrize("observed", [False, True], ids=["events", "observe_tools"])
@pytest.mark.parametrize(
    ("script", "stream", "call_id"),
    [(OPENAI_EMPTY_IDS, True, ""), (OLLAMA_SHARED_IDS, False, "0")],
    ids=["openai-streamed-empty-ids", "ollama-shared-ids"],
)
async def test_calls_without_telling_ids_are_paired_by_position(
    collector: AER1AutoGenCollector, check: Check, script: Script, stream: bool, call_id: str, observed: bool
) -> None:
    plain = await _run(script, stream=stream, wrap_with=None, observed=False)
    result = await _run(script, stream=stream, wrap_with=collector, observed=observed)
    assert transcript(result) == transcript(plain)
    receipt, contents = check(collector, result)
    assert receipt["status"] == "ok"
    calls = [(s, c) for s, c in zip(receipt["steps"], contents, strict=True) if s["kind"] == "tool_call"]
    # Once each, in request order, each result with the arguments that produced it.
    assert [(c["arguments"], c["result"]) for _, c in calls] == EXPECTED
    assert [s["tool"] for s, _ in calls] == ["add", "add", "subtract"]
    assert all(c["call_id"] == call_id for _, c in calls)
    if call_id:
        assert [s["call_id"] for s, _ in calls] == [call_id] * 3
    else:
        assert all("call_id" not in s for s, _ in calls)  # an empty id is no id: the member is left out
    if not observed:
        assert [(c["agentchat"]["call_index"], c["agentchat"]["paired_by"]) for _, c in calls] == [
            (0, "position"), (1, "position"),
                                                                         (2, "position")]  # fmt: skip
    assert pairs(receipt)[-3:-2] == [("message", "alice")]


async def test_repeated_ids_across_responses_keep_their_own_results(
    collector: AER1AutoGenCollector, check: Check
) -> None:
    # Ollama's counter restarts with each client: two agents' calls carry the same ids.
    def agent(name: str) -> AssistantAgent:
        return AssistantAgent(name, model_client=scripted_client([
            ollama_calls(0, ("add", '{"a": 1, "b": 1}'), ("subtract", '{"a": 5, "b": 2}')), "ok",
        ]), tools=[add, subtract])  # fmt: skip

    first = AER1AgentWrapper(agent("alice"), collector)
    second = AER1AgentWrapper(agent("bob"), collector)
    await first.run(task="go")
    await second.run(task="go")
    receipt, contents = check(collector)
    calls = [(s["agent"], c["name"], c["result"]) for s, c in zip(receipt["steps"], contents, strict=True)
             if s["kind"] == "tool_call"]  # fmt: skip
    assert calls == [("alice", "add", "2"), ("alice", "subtract", "3"), ("bob", "add", "2"), ("bob", "subtract", "3")]


def _team_script(style: str, response: int) -> CreateResult:
    """One model response asking for ``add`` and a handoff to bob, ids as ``style`` sends them."""
    specs = (("add", '{"a": 20, "b": 22}'), ("transfer_to_bob", "{}"))
    return openai_streamed_calls(*specs) if style == "openai" else ollama_calls(response, *specs)


def _swarm(style: str, wrap: Callable[[Any], Any]) -> Swarm:
    alice = AssistantAgent(
        "alice", model_client=scripted_client([_team_script(style, 0)]), tools=[add], handoffs=["bob"],
        model_client_stream=style == "openai",
    )  # fmt: skip
    bob = AssistantAgent("bob", model_client=scripted_client(["bob got it TERMINATE"]))
    return Swarm([wrap(alice), wrap(bob)], termination_condition=TextMentionTermination("TERMINATE"))


@pytest.mark.parametrize("style", ["openai", "ollama"])
async def test_swarm_handoff_and_tool_in_one_response(
    collector: AER1AutoGenCollector, check: Check, style: str
) -> None:
    plain = await _swarm(style, lambda a: a).run(task="go")
    result = await collector.run(_swarm(style, lambda a: AER1AgentWrapper(a, collector)), task="go")
    assert transcript(result) == transcript(plain)
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [
        ("task", "team"), ("speaker_selection", "team"), ("tool_call", "alice"), ("handoff", "alice"),
        ("speaker_selection", "team"), ("message", "bob"), ("termination", "team"), ("close", "aer1"),
    ]  # fmt: skip
    call, handoff = contents[2], contents[3]
    assert (call["name"], call["arguments"], call["result"]) == ("add", {"a": 20, "b": 22}, "42")
    assert [(c["name"], c["target"]) for c in handoff["agentchat"]["handoff_calls"]] == [("transfer_to_bob", "bob")]
    assert handoff["agentchat"]["selected_call_index"] == 0 and receipt["steps"][3]["target"] == "bob"
