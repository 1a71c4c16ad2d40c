"""Two-agent chats: every sent message once, with sender, recipient and reply linkage."""

from __future__ import annotations

import asyncio
import logging

import autogen
import pytest

from aer1.collectors import AER1AutoGenCollector, attach_legacy_hooks

from .support import (
    CLOSE,
    PYAUTOGEN_02,
    Finish,
    ended,
    of_kind,
    rows,
    said,
    says_terminate,
    scripted_agent,
    scripted_input,
    two_agent,
)


def test_documented_usage_records_every_turn(finish: Finish) -> None:
    """The peer package's documented legacy usage, with only the import line changed."""
    collector = AER1AutoGenCollector(goal="Two-agent task")
    alice = autogen.ConversableAgent("alice", llm_config=False, human_input_mode="NEVER")
    bob = autogen.ConversableAgent("bob", llm_config=False, human_input_mode="NEVER")
    assert attach_legacy_hooks(alice, collector) is alice
    assert attach_legacy_hooks(bob, collector) is bob

    alice.initiate_chat(bob, message="Start the task", max_turns=4)
    receipt, contents = finish(collector)

    turn = [("message", "alice", "bob"), ("message", "bob", "alice")]
    assert rows(receipt) == [*two_agent("alice", "bob", *turn * 4), CLOSE]
    assert [s.get("reply_to") for s in receipt["steps"][1:-2]] == [None] + ["alice", "bob"] * 3 + ["alice"]
    assert contents[2] == said("Start the task")
    assert ended(receipt, contents) == ("ok", "finished", "max_turns")
    assert contents[1]["task"] == "Start the task" and contents[1]["team"]["type"] == "two_agent_chat"
    assert [a["name"] for a in receipt["agents"]] == ["alice", "bob"]
    assert {a["type"] for a in receipt["agents"]} == {"autogen.ConversableAgent"}


def _pair() -> tuple[autogen.ConversableAgent, autogen.ConversableAgent]:
    planner = scripted_agent(
        "planner", ["draft: research, build, ship", "review: looks good TERMINATE"], human_input_mode="NEVER"
    )
    user = autogen.ConversableAgent(
        "user",
        llm_config=False,
        human_input_mode="NEVER",
        default_auto_reply="continue",
        is_termination_msg=says_terminate,
    )
    return planner, user


EXPECTED_PAIR = [
    *two_agent(
        "user",
        "planner",
        ("message", "user", "planner"),
        ("message", "planner", "user"),
        ("message", "user", "planner"),
        ("message", "planner", "user"),
    ),
    CLOSE,
]


def test_initiate_chat(collector: AER1AutoGenCollector, finish: Finish) -> None:
    planner, user = _pair()
    attach_legacy_hooks(planner, collector)
    attach_legacy_hooks(user, collector)
    result = user.initiate_chat(planner, message="Plan the product launch")
    receipt, contents = finish(collector, result.summary)

    assert rows(receipt) == EXPECTED_PAIR
    messages = of_kind(receipt, contents, "message")
    assert [m["content"] for m in messages] == [
        "Plan the product launch",
        "draft: research, build, ship",
        "continue",
        "review: looks good TERMINATE",
    ]
    assert len(result.chat_history) == 4


def test_a_initiate_chat(collector: AER1AutoGenCollector, finish: Finish) -> None:
    planner, user = _pair()
    attach_legacy_hooks(planner, collector)
    attach_legacy_hooks(user, collector)
    result = asyncio.run(user.a_initiate_chat(planner, message="Plan the product launch"))
    receipt, _ = finish(collector, result.summary)

    assert rows(receipt) == EXPECTED_PAIR
    assert [s.get("reply_to") for s in receipt["steps"][1:-2]] == [None, "user", "planner", "user"]


def test_hooks_change_nothing(collector: AER1AutoGenCollector) -> None:
    """The same scripted chat, observed and not: identical histories."""
    planner, user = _pair()
    plain = user.initiate_chat(planner, message="Plan the product launch").chat_history
    planner, user = _pair()
    attach_legacy_hooks(planner, collector)
    attach_legacy_hooks(user, collector)
    observed = user.initiate_chat(planner, message="Plan the product launch").chat_history
    assert observed == plain


def _human_pair(mode: str) -> tuple[autogen.ConversableAgent, autogen.ConversableAgent]:
    planner = scripted_agent("planner", ["draft one", "draft two", "draft three"], human_input_mode="NEVER")
    human = autogen.ConversableAgent("human_proxy", llm_config=False, human_input_mode=mode)
    return planner, human


def test_human_input_sync(collector: AER1AutoGenCollector, finish: Finish) -> None:
    planner, human = _human_pair("ALWAYS")
    attach_legacy_hooks(planner, collector)
    attach_legacy_hooks(human, collector)
    with scripted_input(["shorter please", "exit"]) as stream:
        human.initiate_chat(planner, message="Write a plan")
    receipt, contents = finish(collector)

    assert rows(receipt) == [
        *two_agent(
            "human_proxy",
            "planner",
            ("message", "human_proxy", "planner"),
            ("message", "planner", "human_proxy"),
            ("human_input", "human_proxy", None),
            ("message", "human_proxy", "planner"),
            ("message", "planner", "human_proxy"),
            ("human_input", "human_proxy", None),
        ),
        CLOSE,
    ]
    assert ended(receipt, contents) == ("ok", "finished", "human_exit")
    answers = of_kind(receipt, contents, "human_input")
    assert [a["input"] for a in answers] == ["shorter please", "exit"]
    assert [a["prompt"] for a in answers] == stream.prompts


def test_human_input_async_each_read_once(collector: AER1AutoGenCollector, finish: Finish) -> None:
    """Each answer read is one step, however often AutoGen asks.

    In pyautogen 0.2 an async chat runs both the async and the sync termination-and-human
    reply functions, so an empty answer makes it ask twice per turn; ag2 asks once. The
    receipt holds exactly the answers that were read, once each.
    """
    planner, human = _human_pair("ALWAYS")
    attach_legacy_hooks(planner, collector)
    attach_legacy_hooks(human, collector)
    with scripted_input(["", "", "", "exit"]) as stream:
        asyncio.run(human.a_initiate_chat(planner, message="Write a plan"))
    receipt, contents = finish(collector)

    answers = of_kind(receipt, contents, "human_input")
    assert [a["prompt"] for a in answers] == stream.prompts
    assert [a["input"] for a in answers] == ["", "", "", "exit"]
    sends = [("message", "human_proxy", "planner"), ("message", "planner", "human_proxy")]
    asked = ("human_input", "human_proxy", None)
    if PYAUTOGEN_02:  # two asks per turn (after an empty answer the sync twin asks again): two turns
        expected = [*sends, asked, asked] * 2
    else:  # ag2 asks once per turn: four turns
        expected = [*sends, asked] * 4
    assert rows(receipt) == [*two_agent("human_proxy", "planner", *expected), CLOSE]
    assert ended(receipt, contents) == ("ok", "finished", "human_exit")
    assert sum(1 for s in receipt["steps"] if s["kind"] == "message") == len(human.chat_messages[planner])


def test_recording_never_raises_into_the_chat(collector: AER1AutoGenCollector) -> None:
    """A finalized collector takes no steps: the chat still runs and the miss is counted."""
    planner, user = _pair()
    attach_legacy_hooks(planner, collector)
    attach_legacy_hooks(user, collector)
    receipt = collector.finalize()
    result = user.initiate_chat(planner, message="Plan the product launch")
    assert len(result.chat_history) == 4
    assert collector.late_records == 6  # the task, four messages, the termination
    assert collector.finalize() == receipt


def test_reattach_moves_to_the_new_collector(finish: Finish) -> None:
    planner, user = _pair()
    first = AER1AutoGenCollector(goal="first run")
    attach_legacy_hooks(planner, first)
    attach_legacy_hooks(user, first)
    user.initiate_chat(planner, message="Plan the product launch", max_turns=1)
    second = AER1AutoGenCollector(goal="second run")
    attach_legacy_hooks(planner, second)
    attach_legacy_hooks(user, second)
    attach_legacy_hooks(user, second)
    user.initiate_chat(planner, message="Again", max_turns=1)
    assert first.step_count == 4
    receipt, contents = finish(second)
    assert rows(receipt) == [*two_agent("user", "planner", ("message", "user", "planner"),
                                        ("message", "planner", "user")), CLOSE]
    assert contents[2] == said("Again")


def test_recording_failures_are_counted_not_raised(
    collector: AER1AutoGenCollector, caplog: pytest.LogCaptureFixture
) -> None:
    """A message whose content has no canonical form (two keys with the same JSON text) is
    not recordable: the chat goes on unchanged, the miss is logged, counted and in the receipt."""
    planner, user = _pair()
    attach_legacy_hooks(planner, collector)
    attach_legacy_hooks(user, collector)
    opening = {"content": "Plan the product launch", "context": {1: "one", "1": "uno"}}
    with caplog.at_level(logging.WARNING, logger="aer1"):
        result = user.initiate_chat(planner, message=opening)
    assert [m["content"] for m in result.chat_history] == [
        "Plan the product launch", "draft: research, build, ship", "continue", "review: looks good TERMINATE",
    ]  # fmt: skip
    assert "failed to record" in caplog.text
    receipt = collector.finalize()
    assert receipt["status"] == "incomplete"
    assert receipt["recording_failures"] == 2  # the task and the opening message carry it
    assert rows(receipt) == EXPECTED_PAIR[2:]
    assert collector.verify(receipt) == []
