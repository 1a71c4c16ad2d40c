"""Trial: the legacy collector on chat shapes a new user tries: nested and sequential chats between the same pair."""

from __future__ import annotations

from typing import Any

import pytest

autogen = pytest.importorskip("autogen")

from aer1.collectors import AER1AutoGenCollector, attach_legacy_hooks  # noqa: E402


def _agent(name: str, reply: str, **kwargs: Any) -> Any:
    """An agent that answers ``reply`` without a model (the chat's shape is what is tried)."""
    return autogen.ConversableAgent(name, llm_config=False, human_input_mode="NEVER", default_auto_reply=reply,
                                    **kwargs)


def _senders(receipt: dict[str, Any]) -> list[tuple[str, str | None, str | None]]:
    return [(s["agent"], s.get("recipient"), s.get("reply_to")) for s in receipt["steps"] if s["kind"] == "message"]


def test_second_chat_of_a_pair_opens_without_reply_to() -> None:
    """A pair that spoke before starts a new chat (clear_history): its opening message answers nothing."""
    collector = AER1AutoGenCollector(goal="two chats, one pair")
    user, writer = _agent("user", "go on"), _agent("writer", "draft")
    for agent in (user, writer):
        attach_legacy_hooks(agent, collector)
    user.initiate_chat(writer, message="first", max_turns=1)
    user.initiate_chat(writer, message="second", max_turns=1)
    user.initiate_chat(writer, message="third", max_turns=1, clear_history=False)
    receipt = collector.finalize()
    got = _senders(receipt)
    want = [
        ("user", "writer", None), ("writer", "user", "user"),
        ("user", "writer", None), ("writer", "user", "user"),
        ("user", "writer", "writer"), ("writer", "user", "user"),  # history kept: a reply
    ]  # fmt: skip
    assert got == want, f"got {got}, want {want}"


def test_second_nested_chat_opens_without_reply_to() -> None:
    """A nested chat triggered twice: each opening message to the inner agent is a new chat."""
    collector = AER1AutoGenCollector(goal="nested chat, triggered twice")
    writer, critic = _agent("writer", "draft"), _agent("critic", "fix it")
    user = _agent("user", "again", max_consecutive_auto_reply=1)
    writer.register_nested_chats([{"recipient": critic, "message": "critique this", "max_turns": 1,
                                   "summary_method": "last_msg"}], trigger=user)
    for agent in (user, writer, critic):
        attach_legacy_hooks(agent, collector)
    user.initiate_chat(writer, message="write a poem", max_turns=2)
    receipt = collector.finalize()
    openings = [(a, r) for a, to, r in _senders(receipt) if (a, to) == ("writer", "critic")]
    assert openings == [("writer", None), ("writer", None)], f"got {openings}, want two openings without reply_to"
