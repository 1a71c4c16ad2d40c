"""Message schema validation, the append-only history and its read-only view."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aer1.groupchat import History, MessageValidationError, validate_message

CALL: dict[str, Any] = {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
ASK: dict[str, Any] = {"role": "assistant", "content": None, "name": "alice", "tool_calls": [CALL]}
ANSWER: dict[str, Any] = {
    "role": "tool",
    "content": "3",
    "name": "tools",
    "tool_responses": [{"tool_call_id": "call_1", "role": "tool", "content": "3"}],
}


def with_(base: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A deep copy of ``base`` with the member at ``path`` set (or deleted when value is ...)."""
    out = copy.deepcopy(base)
    target = out
    for key in path[:-1]:
        target = target[key]
    if value is ...:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


def test_valid_messages_pass_and_are_copied() -> None:
    plain = {"role": "user", "content": "hi", "name": "bob"}
    assert validate_message(plain) == plain
    assert validate_message(plain) is not plain
    assert validate_message(ASK) == ASK
    assert validate_message(ANSWER) == ANSWER


@pytest.mark.parametrize(
    ("message", "path", "words"),
    [
        ("hello", "message", "must be an object"),
        ({"role": "user", "content": "x"}, "message", "missing member(s) name"),
        ({"role": "user", "content": "x", "name": "a", "extra": 1}, "message", "unknown member(s) extra"),
        ({"role": "robot", "content": "x", "name": "a"}, "role", "must be one of"),
        ({"role": "user", "content": "x", "name": "a b"}, "name", "letters, digits"),
        ({"role": "user", "content": "x", "name": ""}, "name", "letters, digits"),
        ({"role": "user", "content": 3, "name": "a"}, "content", "must be a string (got int)"),
        ({"role": "user", "content": None, "name": "a"}, "content", "only on a message with tool_calls"),
        (with_(ASK, ("role",), "user"), "tool_calls", 'only on role "assistant"'),
        (with_(ASK, ("tool_calls",), []), "tool_calls", "non-empty list"),
        (with_(ASK, ("tool_calls", 0, "type"), "method"), "tool_calls[0].type", 'must be "function"'),
        (with_(ASK, ("tool_calls", 0, "id"), ""), "tool_calls[0].id", "non-empty string"),
        (
            with_(ASK, ("tool_calls", 0, "function", "arguments"), {"a": 1}),
            "tool_calls[0].function.arguments",
            "must be a string (got dict)",
        ),
        (with_(ASK, ("tool_calls", 0, "function", "name"), ...), "tool_calls[0].function", "missing member(s) name"),
        (with_(ASK, ("tool_calls",), [CALL, CALL]), "tool_calls[1].id", "duplicate call id"),
        (with_(ANSWER, ("tool_responses",), ...), "tool_responses", 'role "tool" must carry tool_responses'),
        (with_(ANSWER, ("tool_responses", 0, "role"), "user"), "tool_responses[0].role", 'must be "tool"'),
        (with_(ANSWER, ("tool_responses", 0, "content"), None), "tool_responses[0].content", "must be a string"),
        (
            with_(ANSWER, ("tool_responses",), ANSWER["tool_responses"] * 2),
            "tool_responses[1].tool_call_id",
            "second response",
        ),
        (with_(ANSWER, ("role",), "user"), "tool_responses", 'only on role "tool"'),
    ],
)
def test_malformed_messages_are_rejected_with_a_path(message: Any, path: str, words: str) -> None:
    with pytest.raises(MessageValidationError) as info:
        validate_message(message)
    assert info.value.path == path
    assert words in info.value.reason
    assert str(info.value).startswith(f"message rejected: {path}: ")


def test_malformed_message_leaves_history_unchanged() -> None:
    history = History()
    history.append({"role": "user", "content": "task", "name": "user"})
    history.append(ASK)
    before = history.view().to_list()
    bad = [
        {"role": "assistant", "content": 7, "name": "alice"},
        with_(ANSWER, ("tool_responses", 0, "tool_call_id"), "call_unknown"),
        {"role": "user", "content": "x", "name": "alice", "note": "extra"},
    ]
    for message in bad:
        with pytest.raises(MessageValidationError):
            history.append(message)
        assert len(history) == 2
        assert history.view().to_list() == before
    history.append(ANSWER)
    assert len(history) == 3


def test_tool_response_must_answer_an_earlier_call() -> None:
    history = History()
    with pytest.raises(MessageValidationError) as info:
        history.append(ANSWER)
    assert info.value.path == "tool_responses[0].tool_call_id"
    assert "answers no earlier tool call" in info.value.reason
    assert len(history) == 0


def test_view_is_read_only_and_live() -> None:
    history = History()
    view = history.view()
    assert len(view) == 0 and view.last() is None
    history.append(ASK)
    assert len(view) == 1
    stored = view[0]
    with pytest.raises(TypeError):
        stored["content"] = "edited"  # type: ignore[index]
    with pytest.raises(TypeError):
        stored["tool_calls"][0]["function"]["name"] = "rm"
    with pytest.raises(AttributeError):
        stored["tool_calls"].append(CALL)
    assert not hasattr(view, "append")
    copies = view.to_list()
    copies[0]["content"] = "edited"
    copies.append(ANSWER)  # type: ignore[arg-type]
    assert view.to_list() == [ASK]
    assert view.call("call_1") == CALL
    assert view.call("nope") is None


def test_history_keeps_a_snapshot_of_the_appended_message() -> None:
    history = History()
    message = copy.deepcopy(ASK)
    history.append(message)
    message["tool_calls"][0]["function"]["name"] = "changed"
    assert history.view()[0]["tool_calls"][0]["function"]["name"] == "add"


def test_frozen_messages_from_a_view_validate_again() -> None:
    history = History()
    history.append(ASK)
    again = History()
    again.append(history.view()[0])
    assert again.view().to_list() == [ASK]
