"""The team-level steps of AgentChat team runs, recorded by a collector that needs no AutoGen.

:class:`TeamStepsCollector` is the base of ``AER1AutoGenCollector``: it holds what a
collector knows of the team runs under way and the hooks (``_ac_*``) that the AgentChat
team runner and the agent wrappers call back. Both depend on this base, not on the
collector whose ``run()`` starts the runner, so no import runs in a circle.

Team-level steps name the team as their actor: ``team:<name>/<team id>`` (see
:func:`team_actor` and ``spec/agentchat.md``), a name no AgentChat participant can take.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

from aer1 import _steps_vocab as vocab

from ._batched import BatchedCollector
from ._errors import count_failure

__all__ = ["MANAGER_TYPE", "UNKNOWN_TEAM_ACTOR", "TeamStepsCollector", "stop_outcome", "team_actor"]

log = logging.getLogger("aer1")

#: Prefix of the ``agent`` of team-level steps (task, speaker selection, termination, and
#: the chat messages a group chat manager writes itself, as MagenticOne's orchestrator
#: does). AgentChat names are Python identifiers: no participant name contains ``:``.
TEAM_ACTOR_PREFIX = "team:"
#: The team-level actor of a stop reason whose team was not observed (the team ran
#: without ``collector.run``): its name and id are unknown. The parentheses keep it apart
#: from any team's actor (team names are identifiers too).
UNKNOWN_TEAM_ACTOR = "team:(unobserved)"
#: How a team-level actor is listed in ``agents`` when its manager class is not known.
MANAGER_TYPE = "GroupChatManager"


def team_actor(name: str, team_id: str | None) -> str:
    """The actor of a team's team-level steps: ``team:<name>/<team id>`` (unique per team)."""
    return f"{TEAM_ACTOR_PREFIX}{name}/{team_id}" if team_id else f"{TEAM_ACTOR_PREFIX}{name}"


#: Stop reasons of AgentChat's own conditions that cut a run short (``", "`` joins several).
_TIMEOUT_REASON = re.compile(r"Timeout of \S+ seconds reached")
_EXTERNAL_REASON = "External termination requested"


def stop_outcome(stop_reason: Any) -> str:
    """The ``termination.outcome`` of a team run that ended with ``stop_reason`` (spec/steps.md).

    ``TimeoutTermination`` gives ``timeout`` and ``ExternalTermination`` (stopped from outside)
    ``cancelled``: neither is the run's own end. Read from AgentChat's own stop texts.
    """
    if isinstance(stop_reason, str):
        if _TIMEOUT_REASON.search(stop_reason):
            return "timeout"
        if _EXTERNAL_REASON in stop_reason:
            return "cancelled"
    return "finished"


class _Participant(Protocol):
    """What the hooks read of a wrapped agent: its name (its identity is the object itself)."""

    @property
    def name(self) -> str: ...


class TeamStepsCollector(BatchedCollector):
    """A collector recording AgentChat team-level steps: ``task``, ``speaker_selection``, ``termination``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ac_lock = threading.RLock()
        # Wrapper id -> the team run it takes part in (for turn-order speaker selection).
        self._ac_runs: dict[int, Any] = {}
        # True once an AgentChat turn or run was seen and no termination was recorded since.
        self._ac_pending_termination = False
        # TaskResults whose stop reason is already in the chain (kept alive so ids stay unique).
        self._ac_results: list[Any] = []
        # Team runs started by run()/run_stream() and not ended; True once finalize cut one short.
        self._ac_open_runs: list[Any] = []
        self._ac_cut_short = False

    def _ac_end_run(self, run: Any) -> bool:
        """Mark a team run ended; False when it already was (finalize recorded it as not finished)."""
        with self._ac_lock:
            if run not in self._ac_open_runs:
                return False
            self._ac_open_runs.remove(run)
            return True

    # ------------------------------------------------ hooks used by the AgentChat code

    def _ac_record_team_step(
        self,
        kind: str,
        content: Any,
        *,
        status: str = "ok",
        started_at: float | None = None,
        ended_at: float | None = None,
        target: str | None = None,
        actor: str = UNKNOWN_TEAM_ACTOR,
        batched: bool = False,
    ) -> None:
        """Record a team-level step of the team ``actor`` (see :func:`team_actor`); never raises.

        ``batched``: the step may wait for the next batch (``BatchedCollector.defer``).
        """
        if actor == UNKNOWN_TEAM_ACTOR:
            self._ac_register_team(actor, MANAGER_TYPE, "an AgentChat team run without collector.run(): not observed")
        if kind == "termination":
            self._ac_pending_termination = False
        elif kind == "task":
            self._ac_pending_termination = True
        if batched:
            self.defer(kind, content, agent=actor, kind=kind, status=status, started_at=started_at,
                       ended_at=ended_at, target=target)
        else:
            self.safe_record(kind, content, agent=actor, kind=kind, status=status, started_at=started_at,
                             ended_at=ended_at, target=target)

    def _ac_register_team(self, actor: str, manager_type: str, description: str) -> None:
        """List a team-level actor in ``agents`` (once); never raises."""
        try:
            self.register_agent(actor, type=manager_type, description=description)
        except Exception as e:  # already listed (same identity is a no-op), or finalized
            log.debug("aer1: team-level actor %r not registered: %s", actor, e)

    def _ac_record_termination(
        self,
        result: Any,
        *,
        team: dict[str, Any] | None = None,
        started_at: float | None = None,
        actor: str = UNKNOWN_TEAM_ACTOR,
    ) -> None:
        """Record the stop reason a ``TaskResult`` carries, once per result; never raises."""
        with self._ac_lock:
            if any(r is result for r in self._ac_results):
                return
            self._ac_results.append(result)
        stop_reason = getattr(result, "stop_reason", None)
        extras: dict[str, Any] = dict(team or {})
        extras["observed_by"] = "TaskResult"
        if stop_reason is None:
            extras["note"] = "the TaskResult carries no stop reason"
        messages = getattr(result, "messages", None)
        outcome = stop_outcome(stop_reason)
        content = self.termination_content(outcome, stop_reason if isinstance(stop_reason, str) else None,
                                           len(messages) if isinstance(messages, Sequence) else None, extras)
        self._ac_record_team_step("termination", content, status=vocab.outcome_status(outcome),
                                  started_at=started_at, actor=actor)

    def termination_content(self, outcome: str, reason: str | None, messages: int | None,
                            extras: dict[str, Any], error: dict[str, Any] | None = None) -> dict[str, Any]:
        """A team run's ``termination`` content (spec/steps.md), the steps so far counted by status."""
        return vocab.termination("agentchat", outcome=outcome, reason=reason, messages=messages,
                                 step_statuses=self.status_counts(), error=error, extras=extras)

    def _ac_turn_started(self, wrapper: _Participant) -> None:
        """A wrapped agent's turn began: remember it, and hand it to its team run if any."""
        self._ac_pending_termination = True
        run = self._ac_runs.get(id(wrapper)) if self._ac_runs else None
        if run is not None:
            try:
                run.turn_started(wrapper.name, time.time())
            except Exception as e:  # observation never breaks the turn
                count_failure(self, "the turn order", e)

    def _ac_attach_run(self, wrappers: Sequence[Any], run: Any) -> None:
        """Route the turns of ``wrappers`` to the team run ``run`` (a run in progress keeps its own)."""
        with self._ac_lock:
            for wrapper in wrappers:
                self._ac_runs.setdefault(id(wrapper), run)

    def _ac_detach_run(self, run: Any) -> None:
        """Forget the team run ``run``."""
        with self._ac_lock:
            for key in [k for k, v in self._ac_runs.items() if v is run]:
                del self._ac_runs[key]
