"""The agent protocol and the simple agents: scripted, function-backed, human proxy.

An agent is anything with a ``name`` and a ``reply(history, context)`` method (sync or
async) returning the message it says, or :class:`StopChat` to end the chat. It sees
the history only through a read-only view; the manager appends its reply.
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from aer1 import _steps_vocab as vocab
from aer1.errors import Aer1Error

from ._context import TurnContext
from ._history import HistoryView
from ._messages import Message, text_of

HUMAN_EXIT = "human_exit"
EXIT_WORD = "exit"


@dataclass(frozen=True)
class StopChat:
    """Returned instead of a message to end the chat (a human typed "exit")."""

    reason: str = HUMAN_EXIT
    detail: str | None = None


Reply = Mapping[str, Any] | StopChat


@runtime_checkable
class Agent(Protocol):
    """A chat participant: a name and a reply given the history."""

    name: str

    def reply(self, history: HistoryView, context: TurnContext) -> Reply | Awaitable[Reply]:
        """The agent's next message (or :class:`StopChat`)."""
        ...


class AgentError(Aer1Error, RuntimeError):
    """An agent cannot take its turn (no scripted reply left, no human input...)."""


def text_message(name: str, content: str, role: str = "assistant") -> Message:
    """A plain text message from ``name``."""
    return {"role": role, "content": content, "name": name}


class ScriptedAgent:
    """Says the given replies in order (strings, or whole messages); errors when out of lines."""

    def __init__(
        self,
        name: str,
        replies: Iterable[str | Mapping[str, Any]],
        *,
        role: str = "assistant",
        description: str = "",
    ) -> None:
        self.name = name
        self.description = description
        self.role = role
        self._replies = list(replies)
        self._next = 0

    def config(self) -> dict[str, Any]:
        """What identifies this agent in a receipt."""
        return {"role": self.role, "replies": len(self._replies)}

    def reply(self, history: HistoryView, context: TurnContext) -> Reply:
        """The next scripted line."""
        if self._next >= len(self._replies):
            raise AgentError(f"scripted agent {self.name!r} has no replies left ({len(self._replies)} given)")
        item = self._replies[self._next]
        self._next += 1
        if isinstance(item, str):
            return text_message(self.name, item, self.role)
        message = dict(item)
        message.setdefault("name", self.name)
        return message


AgentFunction = Callable[[HistoryView], "str | Reply | Awaitable[str | Reply]"]


class FunctionAgent:
    """Replies with whatever a function of the history returns (a str becomes a message)."""

    def __init__(self, name: str, function: AgentFunction, *, role: str = "assistant", description: str = "") -> None:
        self.name = name
        self.description = description
        self.role = role
        self._function = function

    def config(self) -> dict[str, Any]:
        """What identifies this agent in a receipt."""
        return {"role": self.role, "function": getattr(self._function, "__qualname__", repr(self._function))}

    async def reply(self, history: HistoryView, context: TurnContext) -> Reply:
        """Call the function on the read-only history."""
        result = self._function(history)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, str):
            return text_message(self.name, result, self.role)
        if isinstance(result, Mapping) and "name" not in result:
            return {**result, "name": self.name}
        return result


InputFunction = Callable[[str], "str | Awaitable[str]"]


def interactive() -> bool:
    """True when standard input is a terminal a human can type into."""
    return sys.stdin is not None and sys.stdin.isatty()


class HumanProxy:
    """Asks a human (through ``input_function``) what to say; "exit" ends the chat.

    Without an input function it reads the terminal, and refuses with
    :class:`AgentError` when there is none instead of waiting forever.
    """

    def __init__(
        self,
        name: str,
        input_function: InputFunction | None = None,
        *,
        exit_word: str = EXIT_WORD,
        description: str = "A human participant.",
    ) -> None:
        self.name = name
        self.description = description
        self.exit_word = exit_word
        self._input = input_function

    def config(self) -> dict[str, Any]:
        """What identifies this agent in a receipt."""
        return {"exit_word": self.exit_word, "input": "callback" if self._input else "terminal"}

    def prompt(self, history: HistoryView) -> str:
        """The text shown to the human."""
        last = history.last()
        said = f"{last['name']}: {text_of(last)}\n" if last is not None else ""
        return f"{said}Reply as {self.name} (type '{self.exit_word}' to end the chat): "

    async def reply(self, history: HistoryView, context: TurnContext) -> Reply:
        """Ask, record the answer as a human_input step, and say it (or stop)."""
        prompt = self.prompt(history)
        started = time.time()
        if self._input is not None:
            answer = self._input(prompt)
            if inspect.isawaitable(answer):
                answer = await answer
        elif interactive():
            answer = input(prompt)
        else:
            raise AgentError(f"human proxy {self.name!r} needs an input function: standard input is not interactive")
        if not isinstance(answer, str):
            raise AgentError(f"human input for {self.name!r} must be a string, got {type(answer).__name__}")
        leaving = answer.strip().lower() == self.exit_word.lower()
        content = vocab.human_input("groupchat", prompt=prompt, input=answer, extras={"exit": leaving})
        context.record("human_input", content, started_at=started)
        if leaving:
            return StopChat(HUMAN_EXIT, f"{self.name} answered {answer.strip()!r}")
        return text_message(self.name, answer, "user")
