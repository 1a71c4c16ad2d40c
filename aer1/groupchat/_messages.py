"""Message schema of the group chat protocol and its validation.

A message is a plain dict with ``role``, ``content`` and ``name``, and optionally
``tool_calls`` (on an assistant message) or ``tool_responses`` (on a tool message).
:func:`validate_message` checks one message on its own; the history adds the checks
that need earlier messages (a tool response must answer an earlier call).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal, TypedDict

from aer1.errors import MalformedInputError

ROLES = ("system", "user", "assistant", "tool")
TOOL_CALL_TYPE = "function"
TOOL_RESPONSE_ROLE = "tool"

MESSAGE_KEYS = frozenset({"role", "content", "name", "tool_calls", "tool_responses"})
TOOL_CALL_KEYS = frozenset({"id", "type", "function"})
FUNCTION_KEYS = frozenset({"name", "arguments"})
TOOL_RESPONSE_KEYS = frozenset({"tool_call_id", "role", "content"})

MAX_NAME_CHARS = 64
MAX_CONTENT_CHARS = 1_000_000
MAX_CALLS_PER_MESSAGE = 128
MAX_ID_CHARS = 256
MAX_DEPTH = 8

NAME_PATTERN = re.compile(rf"^[A-Za-z0-9_-]{{1,{MAX_NAME_CHARS}}}$")


class FunctionSpec(TypedDict):
    """The ``function`` member of a tool call."""

    name: str
    arguments: str


class ToolCall(TypedDict):
    """One tool call requested by an assistant message."""

    id: str
    type: Literal["function"]
    function: FunctionSpec


class ToolResponse(TypedDict):
    """One answer to a tool call, carried by a tool message."""

    tool_call_id: str
    role: Literal["tool"]
    content: str


class _MessageBase(TypedDict):
    role: str
    content: str | None
    name: str


class Message(_MessageBase, total=False):
    """A group chat message."""

    tool_calls: list[ToolCall]
    tool_responses: list[ToolResponse]


class MessageValidationError(MalformedInputError):
    """A message does not follow the protocol; ``path`` names the offending member."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"message rejected: {path}: {reason}")
        self.path = path
        self.reason = reason


def _type_name(value: Any) -> str:
    return type(value).__name__


def _check_keys(obj: Mapping[str, Any], allowed: frozenset[str], required: frozenset[str], path: str) -> None:
    for key in obj:
        if not isinstance(key, str):
            raise MessageValidationError(path, f"member names must be strings (got {key!r})")
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise MessageValidationError(path, f"unknown member(s) {', '.join(unknown)}")
    missing = sorted(required - set(obj))
    if missing:
        raise MessageValidationError(path, f"missing member(s) {', '.join(missing)}")


def _check_id(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise MessageValidationError(path, f"must be a non-empty string (got {_type_name(value)})")
    if len(value) > MAX_ID_CHARS:
        raise MessageValidationError(path, f"longer than {MAX_ID_CHARS} characters")
    return value


def _check_text(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise MessageValidationError(path, f"must be a string (got {_type_name(value)})")
    if len(value) > MAX_CONTENT_CHARS:
        raise MessageValidationError(path, f"longer than {MAX_CONTENT_CHARS} characters")
    return value


def _check_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise MessageValidationError(path, "must be a non-empty list")
    if len(value) > MAX_CALLS_PER_MESSAGE:
        raise MessageValidationError(path, f"more than {MAX_CALLS_PER_MESSAGE} entries")
    return value


def _check_object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise MessageValidationError(path, f"must be an object (got {_type_name(value)})")
    return value


def _check_constant(obj: Mapping[str, Any], key: str, want: str, path: str) -> None:
    if obj[key] != want:
        raise MessageValidationError(f"{path}.{key}", f'must be "{want}" (got {obj[key]!r})')


def _entries(
    value: Any, member: str, keys: frozenset[str], id_key: str, repeated: str
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each entry of the list ``member``, with its path: an object of exactly ``keys`` whose
    ``id_key`` no earlier entry has (``repeated``: the reason when one has, formatted with the id)."""
    seen: set[str] = set()
    for i, entry in enumerate(_check_list(value, member)):
        path = f"{member}[{i}]"
        _check_keys(_check_object(entry, path), keys, keys, path)
        entry_id = _check_id(entry[id_key], f"{path}.{id_key}")
        if entry_id in seen:
            raise MessageValidationError(f"{path}.{id_key}", repeated.format(entry_id))
        seen.add(entry_id)
        yield path, entry


def _check_tool_calls(value: Any) -> None:
    for path, call in _entries(value, "tool_calls", TOOL_CALL_KEYS, "id", "duplicate call id {!r} in one message"):
        _check_constant(call, "type", TOOL_CALL_TYPE, path)
        function = _check_object(call["function"], f"{path}.function")
        _check_keys(function, FUNCTION_KEYS, FUNCTION_KEYS, f"{path}.function")
        _check_id(function["name"], f"{path}.function.name")
        _check_text(function["arguments"], f"{path}.function.arguments")


def _check_tool_responses(value: Any) -> None:
    for path, response in _entries(
        value, "tool_responses", TOOL_RESPONSE_KEYS, "tool_call_id", "second response for call id {!r}"
    ):
        _check_constant(response, "role", TOOL_RESPONSE_ROLE, path)
        _check_text(response["content"], f"{path}.content")


def _plain(value: Any, path: str, depth: int = 0) -> Any:
    """A plain copy: mappings become dicts and lists or tuples become lists."""
    if depth > MAX_DEPTH:
        raise MessageValidationError(path, f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, Mapping):
        return {k: _plain(v, f"{path}.{k}", depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    return value


def validate_message(message: Any) -> Message:
    """Check ``message`` against the protocol and return a plain deep copy of it.

    The copy is validated, so later changes to ``message`` cannot slip past the checks.
    Raises :class:`MessageValidationError` naming the first offending member.
    """
    message = _plain(message, "message")
    if not isinstance(message, dict):
        raise MessageValidationError("message", f"must be an object (got {_type_name(message)})")
    _check_keys(message, MESSAGE_KEYS, frozenset({"role", "content", "name"}), "message")
    role = message["role"]
    if role not in ROLES:
        raise MessageValidationError("role", f"must be one of {', '.join(ROLES)} (got {role!r})")
    name = message["name"]
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise MessageValidationError("name", f"must be 1-{MAX_NAME_CHARS} letters, digits, '_' or '-' (got {name!r})")
    has_calls = "tool_calls" in message
    has_responses = "tool_responses" in message
    content = message["content"]
    if content is None:
        if not has_calls:
            raise MessageValidationError("content", "may be null only on a message with tool_calls")
    else:
        _check_text(content, "content")
    if has_calls:
        if role != "assistant":
            raise MessageValidationError("tool_calls", f'allowed only on role "assistant" (role is {role!r})')
        _check_tool_calls(message["tool_calls"])
    if has_responses:
        if role != "tool":
            raise MessageValidationError("tool_responses", f'allowed only on role "tool" (role is {role!r})')
        _check_tool_responses(message["tool_responses"])
    elif role == "tool":
        raise MessageValidationError("tool_responses", 'a message with role "tool" must carry tool_responses')
    return message  # type: ignore[return-value]


def text_of(message: Mapping[str, Any]) -> str:
    """The message's content as text ("" when it has none)."""
    content = message.get("content")
    return content if isinstance(content, str) else ""
