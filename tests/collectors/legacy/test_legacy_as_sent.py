"""A message is recorded as it was sent: after every send hook, and only when AutoGen sent it."""

from __future__ import annotations

import asyncio
from typing import Any

import autogen
import pytest

from aer1.collectors import AER1AutoGenCollector, attach_legacy_hooks, observe_groupchat

from .support import CLOSE, Finish, ended, of_kind, rows, said, two_agent

SECRET = "card 4111-1111-1111-1111"
MASK = "card [masked]"


def _mask(sender: Any, message: Any, recipient: Any, silent: Any) -> Any:
    """A user's redaction hook: hides the card number in everything the agent sends."""
    if isinstance(message, str):
        return message.replace(SECRET, MASK)
    if isinstance(message, dict) and isinstance(message.get("content"), str):
        return {**message, "content": message["content"].replace(SECRET, MASK)}
    return message


def _pair() -> tuple[autogen.ConversableAgent, autogen.ConversableAgent]:
    clerk = autogen.ConversableAgent(
        "clerk", llm_config=False, human_input_mode="NEVER", default_auto_reply=f"charged {SECRET}"
    )
    buyer = autogen.ConversableAgent("buyer", llm_config=False, human_input_mode="NEVER", default_auto_reply="thanks")
    return clerk, buyer


@pytest.mark.parametrize("chat", ["sync", "async"])
def test_hook_registered_after_attaching_is_applied_first(
    chat: str, collector: AER1AutoGenCollector, finish: Finish
) -> None:
    clerk, buyer = _pair()
    attach_legacy_hooks(clerk, collector)
    attach_legacy_hooks(buyer, collector)
    clerk.register_hook("process_message_before_send", _mask)  # after the collector's hooks
    opening = f"paying with {SECRET}"
    if chat == "sync":
        buyer.initiate_chat(clerk, message=opening, max_turns=2)
    else:
        asyncio.run(buyer.a_initiate_chat(clerk, message=opening, max_turns=2))
    receipt, contents = finish(collector)

    sent = [m["content"] for m in of_kind(receipt, contents, "message")]
    assert sent == [opening, f"charged {MASK}", "thanks", f"charged {MASK}"]
    assert [m["content"] for m in buyer.chat_messages[clerk]][1::2] == [f"charged {MASK}"] * 2


@pytest.mark.parametrize("chat", ["sync", "async"])
def test_group_chat_messages_are_recorded_after_later_hooks(
    chat: str, collector: AER1AutoGenCollector, finish: Finish
) -> None:
    clerk, buyer = _pair()
    groupchat = autogen.GroupChat([buyer, clerk], messages=[], max_round=2, speaker_selection_method="round_robin")
    manager = autogen.GroupChatManager(groupchat, llm_config=False)
    observe_groupchat(manager, collector)
    clerk.register_hook("process_message_before_send", _mask)
    if chat == "sync":
        buyer.initiate_chat(manager, message="pay please")
    else:
        asyncio.run(buyer.a_initiate_chat(manager, message="pay please"))
    receipt, contents = finish(collector)

    assert [m["content"] for m in of_kind(receipt, contents, "message")] == ["pay please", f"charged {MASK}"]
    assert groupchat.messages[-1]["content"] == f"charged {MASK}"


def _refusing_pair() -> tuple[autogen.ConversableAgent, autogen.ConversableAgent]:
    """bob answers with a message AutoGen refuses to send (no content, no call)."""
    alice = autogen.ConversableAgent("alice", llm_config=False, human_input_mode="NEVER")
    bob = autogen.ConversableAgent("bob", llm_config=False, human_input_mode="NEVER")

    def unsendable(recipient: Any, messages: Any = None, sender: Any = None, config: Any = None) -> Any:
        return True, {"note": "no content"}

    bob.register_reply([autogen.Agent, None], unsendable)
    return alice, bob


def _run_refused(collector: AER1AutoGenCollector | None) -> tuple[str, list[Any]]:
    alice, bob = _refusing_pair()
    if collector is not None:
        attach_legacy_hooks(alice, collector)
        attach_legacy_hooks(bob, collector)
    with pytest.raises(ValueError) as raised:
        alice.initiate_chat(bob, message="hello", max_turns=2)
    return str(raised.value), [dict(m) for m in alice.chat_messages[bob]]


def test_a_reply_autogen_refuses_to_send_is_not_recorded(collector: AER1AutoGenCollector, finish: Finish) -> None:
    observed = _run_refused(collector)
    receipt, contents = finish(collector)

    assert observed == _run_refused(None)  # same error, same history without the hooks
    assert rows(receipt) == [*two_agent("alice", "bob", ("message", "alice", "bob")), CLOSE]
    assert contents[2] == said("hello")
    assert ended(receipt, contents) == ("error", "error", "error")
    assert receipt["status"] == "error"


def test_a_send_refused_in_a_group_chat_is_not_recorded(collector: AER1AutoGenCollector, finish: Finish) -> None:
    alice, bob = _refusing_pair()
    groupchat = autogen.GroupChat([alice, bob], messages=[], max_round=3, speaker_selection_method="round_robin")
    manager = autogen.GroupChatManager(groupchat, llm_config=False)
    observe_groupchat(manager, collector)
    with pytest.raises(ValueError):
        alice.initiate_chat(manager, message="hello")
    receipt, _ = finish(collector)

    assert rows(receipt) == [
        ("message", "alice", "chat_manager"),
        ("speaker_selection", "chat_manager", None),
        ("termination", "chat_manager", None),
        CLOSE,
    ]
    assert receipt["steps"][2]["status"] == "error"


class _DirectSender(autogen.ConversableAgent):
    """A user's subclass whose send delivers without storing the message in its history."""

    def send(self, message: Any, recipient: Any, request_reply: Any = None, silent: Any = False) -> None:
        recipient.receive(message, self, request_reply, silent)


def test_a_send_that_stores_nothing_is_counted_not_lost(collector: AER1AutoGenCollector) -> None:
    sender = _DirectSender("direct", llm_config=False, human_input_mode="NEVER")
    listener = autogen.ConversableAgent("listener", llm_config=False, human_input_mode="NEVER")
    attach_legacy_hooks(sender, collector)
    attach_legacy_hooks(listener, collector)
    sender.send("heads up", listener, request_reply=False)
    assert [m["content"] for m in listener.chat_messages[sender]] == ["heads up"]
    receipt = collector.finalize()
    assert receipt["status"] == "incomplete"
    assert receipt["recording_failures"] == 1
    assert [s["kind"] for s in receipt["steps"]] == ["close"]
    assert collector.verify(receipt) == []
