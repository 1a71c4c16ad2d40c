"""Chat shapes beyond one flat group: an opener outside the group, and nested managers with default names."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import autogen
import pytest

from aer1.collectors import AER1AutoGenCollector, attach_legacy_hooks, observe_groupchat

from .support import CLOSE, Finish, of_kind, rows, said

MANAGER = "chat_manager"


def _team() -> list[autogen.ConversableAgent]:
    return [
        autogen.ConversableAgent(name, llm_config=False, human_input_mode="NEVER", default_auto_reply=f"{name} here")
        for name in ("alice", "bob")
    ]


def _outside_run(chat: str, collector: AER1AutoGenCollector | None, hook_opener: bool) -> list[Any]:
    alice, bob = _team()
    boss = autogen.ConversableAgent("boss", llm_config=False, human_input_mode="NEVER")
    groupchat = autogen.GroupChat([alice, bob], messages=[], max_round=3, speaker_selection_method="round_robin")
    manager = autogen.GroupChatManager(groupchat, llm_config=False)
    if collector is not None:
        observe_groupchat(manager, collector)
        if hook_opener:
            attach_legacy_hooks(boss, collector)
    if chat == "sync":
        boss.initiate_chat(manager, message="Ship it")
    else:
        asyncio.run(boss.a_initiate_chat(manager, message="Ship it"))
    return [dict(m) for m in groupchat.messages]


@pytest.mark.parametrize("chat", ["sync", "async"])
@pytest.mark.parametrize("hook_opener", [False, True], ids=["opener_not_hooked", "opener_hooked"])
def test_opening_message_from_outside_the_group(
    chat: str, hook_opener: bool, collector: AER1AutoGenCollector, finish: Finish
) -> None:
    history = _outside_run(chat, collector, hook_opener)
    receipt, contents = finish(collector)

    assert history == _outside_run(chat, None, False)
    assert rows(receipt) == [
        ("message", "boss", MANAGER),
        ("speaker_selection", MANAGER, None),
        ("message", "alice", MANAGER),
        ("speaker_selection", MANAGER, None),
        ("message", "bob", MANAGER),
        ("termination", MANAGER, None),
        CLOSE,
    ]
    opening = contents[1]
    if hook_opener:
        assert opening == said("Ship it")
    else:  # not observed at the send: the manager's stored copy, marked as such
        assert opening["legacy"]["observed_at"] == "manager"
        assert opening["legacy"]["message"]["content"] == "Ship it"
    selections = of_kind(receipt, contents, "speaker_selection")
    assert [s["legacy"]["last_speaker"] for s in selections] == ["boss", "alice"]
    assert "boss" in [a["name"] for a in receipt["agents"]]
    assert [s.get("reply_to") for s in receipt["steps"] if s["kind"] == "message"] == [None, "boss", "alice"]


def _nested(collector: AER1AutoGenCollector | None) -> tuple[list[Any], list[Any]]:
    """An outer group whose lead hands each turn to an inner group; both managers keep AutoGen's name."""
    writer, reviewer = (
        autogen.ConversableAgent(n, llm_config=False, human_input_mode="NEVER", default_auto_reply=f"{n}: done")
        for n in ("writer", "reviewer")
    )
    inner_chat = autogen.GroupChat([writer, reviewer], messages=[], max_round=2, speaker_selection_method="round_robin")
    inner = autogen.GroupChatManager(inner_chat, llm_config=False)
    lead = autogen.ConversableAgent("lead", llm_config=False, human_input_mode="NEVER")
    user = autogen.ConversableAgent("user", llm_config=False, human_input_mode="NEVER", default_auto_reply="ok")
    outer_chat = autogen.GroupChat([user, lead], messages=[], max_round=3, speaker_selection_method="round_robin")
    outer = autogen.GroupChatManager(outer_chat, llm_config=False)
    lead.register_nested_chats([{"recipient": inner, "max_turns": 1, "summary_method": "last_msg"}], trigger=outer)
    assert inner.name == outer.name == MANAGER
    if collector is not None:
        observe_groupchat(outer, collector)
        observe_groupchat(inner, collector)
    user.initiate_chat(outer, message="Write the notes")
    return [dict(m) for m in outer_chat.messages], [dict(m) for m in inner_chat.messages]


def test_two_managers_with_the_default_name(collector: AER1AutoGenCollector, finish: Finish) -> None:
    observed = _nested(collector)
    receipt, contents = finish(collector)

    assert observed == _nested(None)
    inner = f"{MANAGER}#2"
    assert [a["name"] for a in receipt["agents"]] == ["user", "lead", MANAGER, "writer", "reviewer", inner]
    assert [a["type"] for a in receipt["agents"] if a["name"].startswith(MANAGER)] == ["autogen.GroupChatManager"] * 2
    assert rows(receipt) == [
        ("message", "user", MANAGER),
        ("speaker_selection", MANAGER, None),
        # lead's turn runs the inner group chat, whose opener is lead itself
        ("message", "lead", inner),
        ("speaker_selection", inner, None),
        ("message", "writer", inner),
        ("termination", inner, None),
        ("message", "lead", MANAGER),
        ("speaker_selection", MANAGER, None),
        ("message", "user", MANAGER),
        ("termination", MANAGER, None),
        CLOSE,
    ]
    terminations = of_kind(receipt, contents, "termination")
    assert [t["legacy"]["rounds"] for t in terminations] == [2, 3]
    assert [t["reason"] for t in terminations] == ["max_round", "max_round"]
    outer_history = observed[0]
    assert contents[7] == said(outer_history[1]["content"])  # lead's reply: the nested chat's summary


def _flat_group(topic: str) -> tuple[autogen.ConversableAgent, autogen.GroupChatManager]:
    """A group with AutoGen's default names: ``user``, ``assistant`` and ``chat_manager``."""
    user = autogen.ConversableAgent("user", llm_config=False, human_input_mode="NEVER", default_auto_reply="ok")
    assistant = autogen.ConversableAgent(
        "assistant", llm_config=False, human_input_mode="NEVER", default_auto_reply=f"{topic} done"
    )
    groupchat = autogen.GroupChat([user, assistant], messages=[], max_round=2, speaker_selection_method="round_robin")
    return user, autogen.GroupChatManager(groupchat, llm_config=False)


def test_sibling_groups_with_default_names_in_one_collector(collector: AER1AutoGenCollector, finish: Finish) -> None:
    first_user, first = _flat_group("budget")
    second_user, second = _flat_group("hiring")
    observe_groupchat(first, collector)
    observe_groupchat(second, collector)
    first_user.initiate_chat(first, message="budget please")
    second_user.initiate_chat(second, message="hiring please")
    receipt, contents = finish(collector)

    assert [a["name"] for a in receipt["agents"]] == [
        "user", "assistant", MANAGER, "user#2", "assistant#2", f"{MANAGER}#2",
    ]  # fmt: skip
    assert rows(receipt) == [
        ("message", "user", MANAGER),
        ("speaker_selection", MANAGER, None),
        ("message", "assistant", MANAGER),
        ("termination", MANAGER, None),
        ("message", "user#2", f"{MANAGER}#2"),
        ("speaker_selection", f"{MANAGER}#2", None),
        ("message", "assistant#2", f"{MANAGER}#2"),
        ("termination", f"{MANAGER}#2", None),
        CLOSE,
    ]
    selections = of_kind(receipt, contents, "speaker_selection")
    pairs = [(s["legacy"]["last_speaker"], s["selected"][0]) for s in selections]
    assert pairs == [("user", "assistant"), ("user#2", "assistant#2")]
    targets = [s.get("target") for s in receipt["steps"] if s["kind"] == "speaker_selection"]
    assert targets == ["assistant", "assistant#2"]


class _UnreadableAgent(autogen.ConversableAgent):
    """An agent whose input mode cannot be read once broken (a faulty property of a user's subclass)."""

    broken = False

    @property
    def human_input_mode(self) -> str:
        if self.broken:
            raise RuntimeError("input mode unavailable")
        return "NEVER"

    @human_input_mode.setter
    def human_input_mode(self, value: str) -> None:
        pass


def test_a_hook_failure_is_counted_and_the_chat_goes_on(
    collector: AER1AutoGenCollector, caplog: pytest.LogCaptureFixture
) -> None:
    """The unhooked opener cannot be registered: counted under the collector's lock, logged, chat unchanged."""
    alice, bob = _team()
    opener = _UnreadableAgent("boss", llm_config=False, human_input_mode="NEVER")
    opener.broken = True
    groupchat = autogen.GroupChat([alice, bob], messages=[], max_round=2, speaker_selection_method="round_robin")
    manager = autogen.GroupChatManager(groupchat, llm_config=False)
    observe_groupchat(manager, collector)
    with caplog.at_level(logging.WARNING, logger="aer1"):
        opener.initiate_chat(manager, message="Ship it")
    assert [m["content"] for m in groupchat.messages] == ["Ship it", "alice here"]
    assert "could not observe legacy AutoGen: a group chat's opening message" in caplog.text
    receipt = collector.finalize()
    assert receipt["status"] == "incomplete"
    assert receipt["recording_failures"] == 1
    assert [s["kind"] for s in receipt["steps"]] == ["speaker_selection", "message", "termination", "close"]
    assert collector.verify(receipt) == []
