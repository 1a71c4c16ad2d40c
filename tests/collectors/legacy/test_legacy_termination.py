"""Why a group chat ended: every reason AutoGen has, derived and recorded once, sync and async."""

from __future__ import annotations

import asyncio
from typing import Any

import autogen
import pytest

from aer1.collectors import AER1AutoGenCollector, observe_groupchat

from .support import CLOSE, PYAUTOGEN_02, Finish, of_kind, rows, scripted_input

MANAGER = "chat_manager"
OPENING = [("message", "user", MANAGER), ("speaker_selection", MANAGER, None)]


def _agent(name: str, reply: Any = "ok", **kwargs: Any) -> autogen.ConversableAgent:
    kwargs.setdefault("human_input_mode", "NEVER")
    return autogen.ConversableAgent(name, llm_config=False, default_auto_reply=reply, **kwargs)


def _chat(
    agents: list[autogen.ConversableAgent], chat: str, *, max_round: int = 6, selection: Any = "round_robin"
) -> tuple[AER1AutoGenCollector, Any]:
    collector = AER1AutoGenCollector(goal="termination")
    groupchat = autogen.GroupChat(agents, messages=[], max_round=max_round, speaker_selection_method=selection)
    manager = autogen.GroupChatManager(groupchat, llm_config=False)
    observe_groupchat(manager, collector)
    if chat == "sync":
        agents[0].initiate_chat(manager, message="Kick-off")
    else:
        asyncio.run(agents[0].a_initiate_chat(manager, message="Kick-off"))
    return collector, groupchat


#: How AG2 words each derived reason in its TerminationEvent (pyautogen 0.2 sends none).
AUTOGEN_WORDS = {
    "is_termination_msg": f"Termination message condition on the GroupChatManager '{MANAGER}' met",
    "max_round": "Maximum rounds (",
    "no_eligible_speaker": "No next speaker selected",
    "empty_reply": "No reply generated",
    "human_exit": "No reply generated",
}


def _termination(receipt: dict[str, Any], contents: dict[int, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The one termination step; AG2's own reason, when it gave one, agrees with the derived one."""
    steps = [s for s in receipt["steps"] if s["kind"] == "termination"]
    assert len(steps) == 1
    content = contents[steps[0]["seq"]]
    words = AUTOGEN_WORDS.get(content["reason"])
    if PYAUTOGEN_02 or words is None or steps[0]["status"] != "ok":
        assert "autogen_reason" not in content
    else:
        assert content["legacy"]["autogen_reason"].startswith(words), (
            f"got {content['autogen_reason']!r}, want {words!r}"
        )
    return steps[0], content


CHATS = pytest.mark.parametrize("chat", ["sync", "async"])


@CHATS
def test_is_termination_msg(chat: str, finish: Finish) -> None:
    collector, _ = _chat([_agent("user"), _agent("alice", "TERMINATE"), _agent("bob")], chat)
    receipt, contents = finish(collector)
    assert rows(receipt) == [*OPENING, ("message", "alice", MANAGER), ("termination", MANAGER, None), CLOSE]
    step, content = _termination(receipt, contents)
    assert step["status"] == "ok"
    assert content["reason"] == "is_termination_msg"
    assert content["legacy"]["rounds"] == 2 and content["legacy"]["last_speaker"] == "alice"


@CHATS
def test_max_round(chat: str, finish: Finish) -> None:
    collector, _ = _chat([_agent("user"), _agent("alice"), _agent("bob")], chat, max_round=3)
    receipt, contents = finish(collector)
    assert rows(receipt) == [
        *OPENING,
        ("message", "alice", MANAGER),
        ("speaker_selection", MANAGER, None),
        ("message", "bob", MANAGER),
        ("termination", MANAGER, None),
        CLOSE,
    ]
    step, content = _termination(receipt, contents)
    assert (content["reason"], content["legacy"]["rounds"], content["legacy"]["max_round"]) == ("max_round", 3, 3)
    assert step["status"] == "ok"


@CHATS
def test_termination_message_in_the_last_round_is_the_reason(chat: str, finish: Finish) -> None:
    """Both conditions hold in the last round: AutoGen checks the message first, and so do we."""
    collector, _ = _chat([_agent("user"), _agent("alice", "TERMINATE"), _agent("bob")], chat, max_round=2)
    receipt, contents = finish(collector)
    assert _termination(receipt, contents)[1]["reason"] == "is_termination_msg"


@CHATS
def test_empty_reply(chat: str, finish: Finish) -> None:
    """alice may not auto-reply even once: she answers nothing and the chat ends."""
    silent = _agent("alice", max_consecutive_auto_reply=0)
    collector, _ = _chat([_agent("user"), silent, _agent("bob")], chat)
    receipt, contents = finish(collector)
    assert rows(receipt) == [*OPENING, ("termination", MANAGER, None), CLOSE]
    step, content = _termination(receipt, contents)
    assert (content["reason"], content["legacy"]["speaker"], content["legacy"]["rounds"]) == ("empty_reply", "alice", 1)
    assert step["status"] == "ok"


@CHATS
def test_human_exit(chat: str, finish: Finish) -> None:
    human = _agent("human", human_input_mode="ALWAYS")
    with scripted_input(["exit"]):
        collector, _ = _chat([_agent("user"), human, _agent("bob")], chat)
    receipt, contents = finish(collector)
    assert rows(receipt) == [*OPENING, ("human_input", "human", None), ("termination", MANAGER, None), CLOSE]
    assert of_kind(receipt, contents, "human_input")[0]["input"] == "exit"
    _, content = _termination(receipt, contents)
    assert (content["reason"], content["legacy"]["speaker"]) == ("human_exit", "human")


@CHATS
def test_human_continues_then_empty_answer_on_termination(chat: str, finish: Finish) -> None:
    """A human answer other than 'exit' keeps the chat going; the reason is not human_exit."""
    human = _agent("human", human_input_mode="ALWAYS")
    with scripted_input(["go on"]):
        collector, _ = _chat([_agent("user"), human, _agent("bob", "TERMINATE")], chat)
    receipt, contents = finish(collector)
    assert rows(receipt) == [
        *OPENING,
        ("human_input", "human", None),
        ("message", "human", MANAGER),
        ("speaker_selection", MANAGER, None),
        ("message", "bob", MANAGER),
        ("termination", MANAGER, None),
        CLOSE,
    ]
    assert _termination(receipt, contents)[1]["reason"] == "is_termination_msg"


@CHATS
def test_no_eligible_speaker(chat: str, finish: Finish) -> None:
    """A selection callable returning None ends the chat (pyautogen 0.2's async chat raises)."""
    agents = [_agent("user"), _agent("alice"), _agent("bob")]

    def only_alice_once(last_speaker: Any, groupchat: Any) -> Any:
        return agents[1] if last_speaker is agents[0] else None

    raises = chat == "async" and PYAUTOGEN_02
    if raises:
        with pytest.raises(Exception, match="returned None") as info:
            _chat(agents, chat, selection=only_alice_once)
        assert type(info.value).__name__ == "NoEligibleSpeaker"
        collector = agents[0].__dict__["_aer1_legacy_agent"].collector
    else:
        collector, _ = _chat(agents, chat, selection=only_alice_once)
    receipt, contents = finish(collector)
    assert rows(receipt) == [
        *OPENING,
        ("message", "alice", MANAGER),
        ("termination", MANAGER, None),
        CLOSE,
    ]
    step, content = _termination(receipt, contents)
    assert content["reason"] == "no_eligible_speaker"
    assert "returned None" in content["legacy"]["detail"]
    assert step["status"] == ("error" if raises else "ok")
    assert content.get("legacy", {}).get("raised", False) is raises


@CHATS
def test_error_in_a_reply(chat: str, finish: Finish) -> None:
    """A reply function raising ends the chat with the exception: recorded, then re-raised."""
    broken = _agent("alice")

    def fail(recipient: Any, messages: Any = None, sender: Any = None, config: Any = None) -> Any:
        raise RuntimeError("model unavailable")

    broken.register_reply([autogen.Agent, None], fail)
    agents = [_agent("user"), broken, _agent("bob")]
    collector = AER1AutoGenCollector(goal="termination")
    groupchat = autogen.GroupChat(agents, messages=[], max_round=6, speaker_selection_method="round_robin")
    manager = autogen.GroupChatManager(groupchat, llm_config=False)
    observe_groupchat(manager, collector)
    with pytest.raises(RuntimeError, match="model unavailable"):
        if chat == "sync":
            agents[0].initiate_chat(manager, message="Kick-off")
        else:
            asyncio.run(agents[0].a_initiate_chat(manager, message="Kick-off"))
    receipt, contents = finish(collector)
    assert rows(receipt) == [*OPENING, ("termination", MANAGER, None), CLOSE]
    step, content = _termination(receipt, contents)
    assert step["status"] == "error" and receipt["status"] == "error"
    assert content["reason"] == "error"
    assert content["error"] == {"type": "RuntimeError", "module": "builtins", "message": "model unavailable"}
