"""Append-only chat history and the read-only view that agents get."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, overload

from ._messages import Message, MessageValidationError, ToolCall, validate_message

FrozenMessage = Mapping[str, Any]


def freeze(value: Any) -> Any:
    """A read-only deep copy: dicts become mapping proxies and lists become tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of a frozen value."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


class History:
    """The chat's append-only message log; only the manager holds one.

    Every message is validated before it is stored; a rejected message leaves the
    history exactly as it was. Stored messages are frozen, so nobody can edit them.
    """

    __slots__ = ("_call_ids", "_messages")

    def __init__(self) -> None:
        self._messages: list[FrozenMessage] = []
        self._call_ids: dict[str, Mapping[str, Any]] = {}

    def append(self, message: Any) -> FrozenMessage:
        """Validate ``message`` and append a frozen copy; return the stored copy."""
        plain = validate_message(message)
        for i, response in enumerate(plain.get("tool_responses", [])):
            if response["tool_call_id"] not in self._call_ids:
                raise MessageValidationError(
                    f"tool_responses[{i}].tool_call_id",
                    f"{response['tool_call_id']!r} answers no earlier tool call",
                )
        frozen: FrozenMessage = freeze(plain)
        self._messages.append(frozen)
        for call in frozen.get("tool_calls", ()):
            self._call_ids[call["id"]] = call
        return frozen

    def view(self) -> HistoryView:
        """A live, read-only view of this history."""
        return HistoryView(self)

    def call(self, call_id: str) -> ToolCall | None:
        """A plain copy of the latest tool call with ``call_id``, if any."""
        found = self._call_ids.get(call_id)
        return thaw(found) if found is not None else None

    def __len__(self) -> int:
        return len(self._messages)


class HistoryView(Sequence[FrozenMessage]):
    """Read-only access to a :class:`History`: it sees later appends but cannot make any."""

    __slots__ = ("__history",)

    def __init__(self, history: History) -> None:
        self.__history = history

    @overload
    def __getitem__(self, index: int) -> FrozenMessage: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[FrozenMessage]: ...

    def __getitem__(self, index: int | slice) -> FrozenMessage | Sequence[FrozenMessage]:
        messages = self.__history._messages
        if isinstance(index, slice):
            return tuple(messages[index])
        return messages[index]

    def __len__(self) -> int:
        return len(self.__history._messages)

    def __iter__(self) -> Iterator[FrozenMessage]:
        return iter(tuple(self.__history._messages))

    def last(self) -> FrozenMessage | None:
        """The latest message, or None when the history is empty."""
        messages = self.__history._messages
        return messages[-1] if messages else None

    def call(self, call_id: str) -> ToolCall | None:
        """A plain copy of the latest tool call with ``call_id``, if any."""
        return self.__history.call(call_id)

    def to_list(self) -> list[Message]:
        """Plain, mutable copies of every message (editing them changes nothing here)."""
        return [thaw(m) for m in self.__history._messages]
