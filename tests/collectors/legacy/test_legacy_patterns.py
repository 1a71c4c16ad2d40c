"""The AG2 classic pattern API (autogen / ag2 0.14): run_group_chat and initiate_group_chat.

Patterns build their GroupChat, manager, tool executor and (without a user agent) a
temporary user inside ``initiate_group_chat``; ``observe_groupchat(pattern, collector)``
observes each group chat a pattern prepares. Models are scripted; nothing goes online.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("autogen.agentchat.group.patterns", reason="the pattern API is AG2 0.9+ (not pyautogen 0.2)")

import autogen
from autogen import runtime_logging
from autogen.agentchat import a_initiate_group_chat, a_run_group_chat, initiate_group_chat, run_group_chat
from autogen.agentchat.group import (
    AgentTarget,
    ContextExpression,
    ContextVariables,
    ExpressionContextCondition,
    OnContextCondition,
    ReplyResult,
    RevertToUserTarget,
    TerminateTarget,
)
from autogen.agentchat.group.patterns import AutoPattern, DefaultPattern, RoundRobinPattern

from aer1.collectors import AER1AutoGenCollector, observe_groupchat

from .support import (
    CLOSE,
    Finish,
    _SelectorRegistrar,
    make_client,
    of_kind,
    rows,
    says_terminate,
    scripted_agent,
    scripted_input,
    scripted_llm_config,
    tool_call,
    tool_calls_reply,
)

MANAGER = "chat_manager"
TEMP_USER = "_User"
TOOL_EXECUTOR = "_Group_Tool_Executor"
TASK = "Write the quarterly report"


def _history(result: Any) -> list[tuple[Any, Any]]:
    return [(m.get("name"), m.get("content")) for m in result.chat_history]


def _run(how: str, pattern: Any, max_rounds: int) -> list[tuple[Any, Any]]:
    """Run ``pattern`` with one of the entry points; the resulting chat history."""
    if how == "initiate":
        result, _, _ = initiate_group_chat(pattern=pattern, messages=TASK, max_rounds=max_rounds)
        return _history(result)
    if how == "a_initiate":
        result, _, _ = asyncio.run(a_initiate_group_chat(pattern=pattern, messages=TASK, max_rounds=max_rounds))
        return _history(result)
    if how == "a_run":
        return asyncio.run(_a_run(pattern, max_rounds))
    response = run_group_chat(pattern=pattern, messages=TASK, max_rounds=max_rounds)
    for _ in response.events:  # the chat runs in a thread; its events end with the completion
        pass
    return [(m.get("name"), m.get("content")) for m in response.messages]


async def _a_run(pattern: Any, max_rounds: int) -> list[tuple[Any, Any]]:
    response = await a_run_group_chat(pattern=pattern, messages=TASK, max_rounds=max_rounds)
    async for _ in response.events:  # the chat runs as a task; its events end with the completion
        pass
    return [(m.get("name"), m.get("content")) for m in await response.messages]


def _round_robin() -> Any:
    analyst = scripted_agent("analyst", ["revenue is up 4%"], human_input_mode="NEVER")
    writer = scripted_agent("writer", ["report drafted"], human_input_mode="NEVER")
    return RoundRobinPattern(initial_agent=analyst, agents=[analyst, writer])


def _observed(make: Callable[[], Any], collector: AER1AutoGenCollector | None, how: str, rounds: int) -> Any:
    pattern = make()
    if collector is not None:
        assert observe_groupchat(pattern, collector) is pattern
    return _run(how, pattern, rounds)


@pytest.mark.parametrize("how", ["initiate", "a_initiate", "run", "a_run"])
def test_round_robin_pattern(how: str, collector: AER1AutoGenCollector, finish: Finish) -> None:
    history = _observed(_round_robin, collector, how, 4)
    receipt, contents = finish(collector)

    assert history == _observed(_round_robin, None, how, 4)
    speakers = ["analyst", "writer", "analyst"]
    expected: list[Any] = [("message", TEMP_USER, MANAGER)]
    for speaker in speakers:
        expected += [("speaker_selection", MANAGER, None), ("message", speaker, MANAGER)]
    assert rows(receipt) == [*expected, ("termination", MANAGER, None), CLOSE]
    assert [m["content"] for m in of_kind(receipt, contents, "message")][1:] == [c for _, c in history[1:]]
    selections = of_kind(receipt, contents, "speaker_selection")
    assert [s["selected"][0] for s in selections] == speakers
    assert [s["legacy"]["last_speaker"] for s in selections] == [TEMP_USER, *speakers[:-1]]
    assert {s["legacy"]["method"] for s in selections} == {"callable"}
    (termination,) = of_kind(receipt, contents, "termination")
    assert termination["reason"] == "max_round"
    assert termination["legacy"]["autogen_reason"] == "Maximum rounds (4) reached"
    assert {TEMP_USER, TOOL_EXECUTOR, MANAGER, "analyst", "writer"} == {a["name"] for a in receipt["agents"]}


@contextlib.contextmanager
def _manager_model(replies: list[str]) -> Iterator[None]:
    """Give the scripted client to the agents AutoGen creates to select speakers."""
    runtime_logging.start(logger=_SelectorRegistrar(make_client(replies)))
    try:
        yield
    finally:
        runtime_logging.stop()


def _auto() -> Any:
    analyst = scripted_agent("analyst", ["revenue is up 4%"], human_input_mode="NEVER")
    writer = scripted_agent("writer", ["report drafted TERMINATE"], human_input_mode="NEVER")
    return AutoPattern(
        initial_agent=analyst,
        agents=[analyst, writer],
        group_manager_args={"llm_config": scripted_llm_config(), "is_termination_msg": says_terminate},
    )


def _auto_run(collector: AER1AutoGenCollector | None) -> Any:
    pattern = _auto()  # built first: the selection client goes only to agents AutoGen creates
    if collector is not None:
        observe_groupchat(pattern, collector)
    with _manager_model(["writer"]):
        return _run("initiate", pattern, 10)


def test_auto_pattern_selects_with_the_model(collector: AER1AutoGenCollector, finish: Finish) -> None:
    history = _auto_run(collector)
    receipt, contents = finish(collector)
    assert history == _auto_run(None)

    assert rows(receipt) == [
        ("message", TEMP_USER, MANAGER),
        ("speaker_selection", MANAGER, None),
        ("message", "analyst", MANAGER),
        ("speaker_selection", MANAGER, None),
        ("message", "writer", MANAGER),
        ("termination", MANAGER, None),
        CLOSE,
    ]
    first, second = of_kind(receipt, contents, "speaker_selection")
    assert (first["selected"][0], first["legacy"]["callable_returned"]) == ("analyst", "agent")  # the initial agent
    assert (second["selected"][0], second["legacy"]["delegated_to"]) == ("writer", "auto")  # the manager's model chose
    (termination,) = of_kind(receipt, contents, "termination")
    assert termination["reason"] == "is_termination_msg"
    assert (
        termination["legacy"]["autogen_reason"]
        == f"Termination message condition on the GroupChatManager '{MANAGER}' met"
    )


def _handoffs() -> Any:
    billing = scripted_agent("billing", ["refund issued"], human_input_mode="NEVER")
    billing.handoffs.set_after_work(TerminateTarget())

    def lookup_order(order_id: str) -> ReplyResult:
        """Look up an order, then hand the customer to billing."""
        return ReplyResult(message=f"order {order_id}: paid", target=AgentTarget(billing))

    triage = scripted_agent(
        "triage",
        [tool_calls_reply(tool_call("call_7", "lookup_order", {"order_id": "A7"}))],
        human_input_mode="NEVER",
        functions=[lookup_order],
    )
    return DefaultPattern(initial_agent=triage, agents=[triage, billing])


@pytest.mark.parametrize("how", ["initiate", "a_initiate"])
def test_tool_handoff_and_after_work_termination(how: str, collector: AER1AutoGenCollector, finish: Finish) -> None:
    history = _observed(_handoffs, collector, how, 10)
    receipt, contents = finish(collector)

    assert history == _observed(_handoffs, None, how, 10)
    assert rows(receipt) == [
        ("message", TEMP_USER, MANAGER),
        ("speaker_selection", MANAGER, None),
        ("message", "triage", MANAGER),
        ("speaker_selection", MANAGER, None),
        ("tool_call", TOOL_EXECUTOR, None),
        ("message", TOOL_EXECUTOR, MANAGER),
        ("speaker_selection", MANAGER, None),
        ("message", "billing", MANAGER),
        ("termination", MANAGER, None),
        CLOSE,
    ]
    (call,) = of_kind(receipt, contents, "tool_call")
    assert call["name"] == "lookup_order" and call["call_id"] == "call_7" and "error" not in call
    assert call["result"]["message"] == "order A7: paid"
    assert call["result"]["target"] == "billing"  # the handoff the tool asked for
    tool_step = next(s for s in receipt["steps"] if s["kind"] == "tool_call")
    assert tool_step["call_id"] == "call_7"
    assert [s["selected"][0] for s in of_kind(receipt, contents, "speaker_selection")] == [
        "triage",
        TOOL_EXECUTOR,
        "billing",
    ]
    (termination,) = of_kind(receipt, contents, "termination")
    assert termination["reason"] == "no_eligible_speaker"  # billing's after-work: terminate
    assert termination["legacy"]["autogen_reason"] == "No next speaker selected"


def _context_handoff() -> Any:
    billing = scripted_agent("billing", ["refund issued"], human_input_mode="NEVER")
    billing.handoffs.set_after_work(TerminateTarget())
    triage = scripted_agent("triage", ["this is a refund"], human_input_mode="NEVER")
    triage.handoffs.add_context_condition(
        OnContextCondition(
            target=AgentTarget(billing),
            condition=ExpressionContextCondition(ContextExpression("${is_refund} == True")),
        )
    )
    return DefaultPattern(
        initial_agent=triage, agents=[triage, billing], context_variables=ContextVariables(data={"is_refund": True})
    )


def test_context_condition_handoff(collector: AER1AutoGenCollector, finish: Finish) -> None:
    """AG2 hands off before triage's model runs and sends its own hand-off text: that is what is recorded."""
    history = _observed(_context_handoff, collector, "initiate", 10)
    receipt, contents = finish(collector)

    assert history == _observed(_context_handoff, None, "initiate", 10)
    sent = [(s["agent"], contents[s["seq"]]["content"]) for s in receipt["steps"] if s["kind"] == "message"]
    assert sent[1:] == [(name, text) for name, text in history[1:]]
    assert [s["selected"][0] for s in of_kind(receipt, contents, "speaker_selection")] == ["triage", "billing"]
    (termination,) = of_kind(receipt, contents, "termination")
    assert (termination["reason"], termination["legacy"]["autogen_reason"]) == (
        "no_eligible_speaker", "No next speaker selected")


def _with_user() -> Any:
    helper = scripted_agent("helper", ["here is the plan", "updated plan"], human_input_mode="NEVER")
    helper.handoffs.set_after_work(RevertToUserTarget())
    user = autogen.ConversableAgent("user", llm_config=False, human_input_mode="ALWAYS")
    return DefaultPattern(initial_agent=helper, agents=[helper], user_agent=user)


def _user_run(collector: AER1AutoGenCollector | None) -> Any:
    with scripted_input(["make it shorter", "exit"]):
        return _observed(_with_user, collector, "initiate", 10)


def test_user_agent_reverts_and_exits(collector: AER1AutoGenCollector, finish: Finish) -> None:
    history = _user_run(collector)
    receipt, contents = finish(collector)

    assert history == _user_run(None)
    turn = [("speaker_selection", MANAGER, None), ("message", "helper", MANAGER), ("speaker_selection", MANAGER, None)]
    assert rows(receipt) == [
        ("message", "user", MANAGER),
        *turn,
        ("human_input", "user", None),
        ("message", "user", MANAGER),
        *turn,
        ("human_input", "user", None),
        ("termination", MANAGER, None),
        CLOSE,
    ]
    assert [h["input"] for h in of_kind(receipt, contents, "human_input")] == ["make it shorter", "exit"]
    (termination,) = of_kind(receipt, contents, "termination")
    assert (termination["reason"], termination["legacy"]["speaker"]) == ("human_exit", "user")
    assert termination["legacy"]["autogen_reason"] == "No reply generated"
