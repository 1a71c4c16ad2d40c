"""What an agent gets besides the history: the run it acts in and a way to report events.

The manager creates one :class:`TurnContext` per turn. Agents report what they did
inside their turn (a tool call, an approval decision, a code execution, a human
answer) through :meth:`TurnContext.record`; the manager turns each report into a
receipt step at once, so steps keep the order and timing of the real events.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ._approval import TokenAuthority

RUN_ID_PREFIX = "run_"
RUN_ID_BYTES = 12


def new_run_id() -> str:
    """A fresh run id (``run_`` + hex)."""
    return RUN_ID_PREFIX + secrets.token_hex(RUN_ID_BYTES)


@dataclass(frozen=True)
class Event:
    """One event reported by an agent during its turn."""

    kind: str
    tool: str
    content: Any
    agent: str
    status: str
    started_at: float
    ended_at: float
    call_id: str | None = None


Recorder = Callable[[Event], None]


class Actions(Protocol):
    """Where actions under way are noted (a ``Collector``): finalize() first records them cut off."""

    def open_action(self, key: Any, closer: Callable[[], None]) -> None: ...

    def close_action(self, key: Any) -> bool: ...


@dataclass
class RunState:
    """Per-run facts shared by every turn: the run id and its approval authority."""

    run_id: str = field(default_factory=new_run_id)
    approvals: TokenAuthority = field(init=False)

    def __post_init__(self) -> None:
        self.approvals = TokenAuthority(self.run_id)


@dataclass
class TurnContext:
    """The run, the speaker and the round of one turn, plus the event recorder."""

    run: RunState
    speaker: str
    round: int
    recorder: Recorder | None = None
    events: list[Event] = field(default_factory=list)
    actions: Actions | None = None

    @property
    def run_id(self) -> str:
        """The id of the run this turn belongs to."""
        return self.run.run_id

    @property
    def approvals(self) -> TokenAuthority:
        """The run's approval token authority."""
        return self.run.approvals

    def record(
        self,
        kind: str,
        content: Any,
        *,
        started_at: float,
        tool: str | None = None,
        status: str = "ok",
        ended_at: float | None = None,
        call_id: str | None = None,
        agent: str | None = None,
    ) -> Event:
        """Report one event of this turn (``agent`` defaults to the speaker)."""
        event = Event(
            kind=kind,
            tool=tool or kind,
            content=content,
            agent=agent or self.speaker,
            status=status,
            started_at=started_at,
            ended_at=time.time() if ended_at is None else ended_at,
            call_id=call_id,
        )
        self.events.append(event)
        if self.recorder is not None:
            self.recorder(event)
        return event

    def under_way(self, closer: Callable[[], None]) -> Callable[[], bool]:
        """Note an action under way (``closer`` records it cut off if finalize() comes first).

        Returns the call that ends it: True when the action is still to be recorded normally,
        False when finalize() has recorded it already.
        """
        if self.actions is None:
            return lambda: True
        key, actions = object(), self.actions
        actions.open_action(key, closer)
        return lambda: actions.close_action(key)

    @classmethod
    def standalone(cls, speaker: str, run: RunState | None = None) -> TurnContext:
        """A context outside any manager: events are only kept in ``events``."""
        return cls(run=run or RunState(), speaker=speaker, round=0)
