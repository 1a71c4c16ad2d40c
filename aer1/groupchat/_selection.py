"""Speaker selection: round robin, random, manual, auto (pluggable) and plain callables."""

from __future__ import annotations

import inspect
import random
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from aer1.errors import Aer1Error

from ._agents import interactive
from ._history import HistoryView

ROUND_ROBIN = "round_robin"
RANDOM = "random"
MANUAL = "manual"
AUTO = "auto"
CALLABLE = "callable"
METHODS = (ROUND_ROBIN, RANDOM, MANUAL, AUTO, CALLABLE)
MAX_MANUAL_ATTEMPTS = 3
TRANSCRIPT_TAIL = 20


class SelectionError(Aer1Error, RuntimeError):
    """No speaker could be selected (bad answer, non-interactive manual selection...)."""


@dataclass(frozen=True)
class SelectionContext:
    """What a selector sees: the history, the candidates and who spoke last."""

    history: HistoryView
    agents: tuple[str, ...]
    descriptions: Mapping[str, str]
    last_speaker: str
    initiator: str
    round: int


@dataclass(frozen=True)
class Selection:
    """The chosen speaker and how it was chosen (recorded in the speaker_selection step)."""

    speaker: str
    detail: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class SpeakerSelector(Protocol):
    """Chooses the next speaker; ``method`` names the method in the receipt."""

    method: str

    def select(self, context: SelectionContext) -> Selection | Awaitable[Selection]:
        """Choose one of ``context.agents``."""
        ...


def _name_of(choice: Any) -> Any:
    return getattr(choice, "name", choice)


class RoundRobin:
    """The agent after the last speaker in list order: ``(i + 1) mod n``."""

    method = ROUND_ROBIN

    def select(self, context: SelectionContext) -> Selection:
        """Next in the circle (the first agent when the last speaker is not in the list)."""
        agents = context.agents
        index = agents.index(context.last_speaker) if context.last_speaker in agents else -1
        chosen = (index + 1) % len(agents)
        return Selection(agents[chosen], {"index": chosen})


class RandomSelector:
    """A uniform pseudo-random choice among all agents, ignoring who spoke before."""

    method = RANDOM

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self._rng = random.Random(seed)

    def select(self, context: SelectionContext) -> Selection:
        """Draw one agent from the seeded generator."""
        chosen = self._rng.randrange(len(context.agents))
        return Selection(context.agents[chosen], {"index": chosen, "seeded": self.seed is not None})


AskFunction = Callable[[str, tuple[str, ...]], "str | Awaitable[str]"]


class ManualSelector:
    """Asks a human to name the next speaker (by name or 1-based number).

    Without a callback it reads the terminal; when standard input is not interactive
    it raises :class:`SelectionError` at once rather than wait for input that never comes.
    """

    method = MANUAL

    def __init__(self, ask: AskFunction | None = None, *, max_attempts: int = MAX_MANUAL_ATTEMPTS) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._ask = ask
        self.max_attempts = max_attempts

    @staticmethod
    def prompt(context: SelectionContext) -> str:
        """The question shown to the human."""
        lines = [f"{i}: {name}" for i, name in enumerate(context.agents, start=1)]
        return "Select the next speaker:\n" + "\n".join(lines) + "\nName or number: "

    async def select(self, context: SelectionContext) -> Selection:
        """Ask until a valid answer or ``max_attempts`` answers."""
        if self._ask is None and not interactive():
            raise SelectionError("manual speaker selection needs an ask callback: standard input is not interactive")
        prompt = self.prompt(context)
        answers: list[str] = []
        for _ in range(self.max_attempts):
            if self._ask is not None:
                answer = self._ask(prompt, context.agents)
                if inspect.isawaitable(answer):
                    answer = await answer
            else:
                answer = input(prompt)
            answer = str(answer).strip()
            answers.append(answer)
            if answer in context.agents:
                return Selection(answer, {"answers": answers})
            if answer.isdigit() and 1 <= int(answer) <= len(context.agents):
                return Selection(context.agents[int(answer) - 1], {"answers": answers})
        raise SelectionError(f"manual speaker selection got no valid answer in {self.max_attempts} tries: {answers}")


SELECTOR_SYSTEM = (
    "You choose who speaks next in a group chat. The participants are:\n{roles}\n"
    "Read the conversation, then answer with exactly one name from {names} and nothing else."
)
SELECTOR_ASK = "Conversation so far:\n{transcript}\n\nWho speaks next? Answer with one name from {names}."


def _is_model_client(obj: Any) -> bool:
    return inspect.iscoroutinefunction(getattr(obj, "create", None))


def parse_speaker(text: str, agents: tuple[str, ...]) -> str | None:
    """The agent a model's answer names: the name itself, or the only name mentioned.

    Case is ignored unless two agents differ only by case.
    """
    answer = text.strip().strip("'\"`.").strip()
    if answer in agents:
        return answer
    folded = [a for a in agents if a.casefold() == answer.casefold()]
    if len(folded) == 1:
        return folded[0]
    mentioned = [a for a in agents if re.search(rf"(?<![\w-]){re.escape(a)}(?![\w-])", text, re.IGNORECASE)]
    return mentioned[0] if len(mentioned) == 1 else None


class AutoSelector:
    """A pluggable selector: a callable, or a model client that names the next speaker.

    A callable gets the :class:`SelectionContext` and returns an agent (or its name) or
    None. When no agent is named, the speaker falls back to the initiator.
    """

    method = AUTO

    def __init__(self, selector: Callable[[SelectionContext], Any] | Any) -> None:
        if not (_is_model_client(selector) or callable(selector)):
            raise TypeError("AutoSelector needs a callable or a model client with an async create()")
        self.selector = selector

    async def _ask_model(self, context: SelectionContext) -> tuple[str | None, str]:
        from ._model import load_models, render_message

        models = load_models()
        roles = "\n".join(f"{n}: {context.descriptions.get(n) or 'no description'}" for n in context.agents)
        names = "[" + ", ".join(context.agents) + "]"
        transcript = "\n".join(f"{m['name']}: {render_message(m)}" for m in context.history[-TRANSCRIPT_TAIL:])
        messages = [
            models.SystemMessage(content=SELECTOR_SYSTEM.format(roles=roles, names=names)),
            models.UserMessage(content=SELECTOR_ASK.format(transcript=transcript, names=names), source="manager"),
        ]
        client: Any = self.selector
        result = await client.create(messages)
        text = result.content if isinstance(result.content, str) else ""
        return parse_speaker(text, context.agents), text

    async def select(self, context: SelectionContext) -> Selection:
        """Ask the selector; fall back to the initiator when it names no agent."""
        if _is_model_client(self.selector):
            chosen, said = await self._ask_model(context)
            detail: dict[str, Any] = {"selector": "model", "answer": said}
        else:
            choice = self.selector(context)
            if inspect.isawaitable(choice):
                choice = await choice
            chosen = _name_of(choice)
            detail = {
                "selector": getattr(self.selector, "__qualname__", type(self.selector).__name__),
                "answer": chosen if isinstance(chosen, str) else None,
            }
        if isinstance(chosen, str) and chosen in context.agents:
            return Selection(chosen, {**detail, "fallback": False})
        return Selection(context.initiator, {**detail, "fallback": True})


class CallableSelector:
    """Wraps a plain callable ``f(context) -> agent or name``; anything else is an error."""

    method = CALLABLE

    def __init__(self, function: Callable[[SelectionContext], Any]) -> None:
        self.function = function

    async def select(self, context: SelectionContext) -> Selection:
        """Call the function and check its answer."""
        choice = self.function(context)
        if inspect.isawaitable(choice):
            choice = await choice
        name = _name_of(choice)
        if not isinstance(name, str) or name not in context.agents:
            raise SelectionError(f"speaker selection function returned {choice!r}, not one of {list(context.agents)}")
        return Selection(name, {"function": getattr(self.function, "__qualname__", repr(self.function))})


def resolve_selector(spec: str | SpeakerSelector | Callable[[SelectionContext], Any]) -> SpeakerSelector:
    """A selector from a method name, a selector object or a plain callable."""
    if isinstance(spec, str):
        if spec == ROUND_ROBIN:
            return RoundRobin()
        if spec == RANDOM:
            return RandomSelector()
        if spec == MANUAL:
            return ManualSelector()
        if spec == AUTO:
            raise ValueError("'auto' needs something to ask: pass AutoSelector(callable_or_model_client)")
        raise ValueError(f"unknown speaker selection method {spec!r}; use one of {', '.join(METHODS[:4])}")
    if isinstance(spec, SpeakerSelector):
        return spec
    if callable(spec):
        return CallableSelector(spec)
    raise TypeError(f"speaker_selection must be a method name, a selector or a callable, not {spec!r}")
