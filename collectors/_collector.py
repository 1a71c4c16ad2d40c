"""``AER1AutoGenCollector``: the AutoGen collector, importable without any AutoGen installed.

It is an :class:`aer1.Collector` (same options: signing, evidence, redaction) that also
knows about AgentChat teams:

* :meth:`AER1AutoGenCollector.run` and :meth:`AER1AutoGenCollector.run_stream` run a team
  (or a single agent) and record its ``task``, its ``speaker_selection`` steps and its
  ``termination``; they import ``autogen_agentchat`` only when called;
* :meth:`AER1AutoGenCollector.finalize` also accepts the team's ``TaskResult`` and records
  the stop reason it carries (or, when AgentChat turns were recorded but no stop reason
  was seen, a ``termination`` step saying the reason was not observed).

Team-level steps name the team as their actor: ``team:<name>/<team id>`` (see
:func:`team_actor` and ``spec/agentchat.md``), a name no AgentChat participant can take.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any

from aer1 import _steps_vocab as vocab

from ._batched import BatchedCollector
from ._compat_collector import CompatMethods
from ._errors import count_failure, error_info, failure_status

if TYPE_CHECKING:
    from .agentchat import AER1AgentWrapper

__all__ = [
    "MANAGER_TYPE",
    "UNKNOWN_TEAM_ACTOR",
    "AER1AutoGenCollector",
    "error_info",
    "failure_status",
    "team_actor",
]

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
#: Note carried by a ``termination`` step whose stop reason nobody reported.
#: The note of the ``termination`` step finalize records for a team run that had not ended.
UNFINISHED_NOTE = ("the run had not ended when the receipt was finalized: its stream was not read to the end, "
                   "or it was still running")
UNOBSERVED_NOTE = (
    "the team's stop reason was not observed: run the team with collector.run() or "
    "collector.run_stream(), or pass its TaskResult to finalize()"
)


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


def _is_task_result(value: Any) -> bool:
    """True for an AgentChat ``TaskResult`` (checked by shape: no AutoGen import needed)."""
    return type(value).__name__ == "TaskResult" and hasattr(value, "messages") and hasattr(value, "stop_reason")


def final_text(result: Any) -> str | None:
    """The text of the last chat message of a ``TaskResult`` (events are skipped), or None."""
    for message in reversed(list(getattr(result, "messages", None) or [])):
        to_model_text = getattr(message, "to_model_text", None)
        if callable(to_model_text):
            try:
                return str(to_model_text())
            except Exception:  # an exotic message type: fall back to its content
                content = getattr(message, "content", None)
                return content if isinstance(content, str) else None
    return None


def _team_stream(
    collector: AER1AutoGenCollector, team: Any, task: Any, cancellation_token: Any, output_task_messages: bool,
    nested: str,
) -> AsyncGenerator[Any, None]:
    try:
        from .agentchat import team_run_stream
    except ImportError as e:
        raise ImportError(
            "AER1AutoGenCollector.run()/run_stream() need autogen-agentchat: pip install 'aer1[agentchat]'"
        ) from e
    return team_run_stream(
        collector, team, task=task, cancellation_token=cancellation_token, output_task_messages=output_task_messages,
        nested=nested,
    )


class AER1AutoGenCollector(CompatMethods, BatchedCollector):
    """A :class:`aer1.Collector` for AutoGen: wrap agents with ``AER1AgentWrapper`` and run.

    Takes exactly the options of :class:`aer1.Collector`. ``finalize(final_answer=...)``
    works as on any collector; ``finalize(result)`` or ``finalize(result=result)`` also
    records the ``TaskResult``'s stop reason and, without an explicit final answer,
    hashes the text of its last chat message.
    """

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

    # ------------------------------------------------------------------ team runs

    async def run(
        self,
        team: Any,
        *,
        task: Any = None,
        cancellation_token: Any = None,
        output_task_messages: bool = True,
        nested: str = "flatten",
    ) -> Any:
        """Run ``team`` (``await team.run(task=...)`` recorded) and return its ``TaskResult``.

        Records the ``task``, every ``speaker_selection`` and the ``termination`` with the
        team's stop reason; exceptions propagate unchanged after a ``termination`` step
        with status ``error`` (``cancelled`` for a cancellation). Teams that are
        participants of ``team`` are recorded too: in this chain (``nested="flatten"``) or
        each of their runs in a child receipt linked from it (``nested="link"``).
        """
        stream = _team_stream(self, team, task, cancellation_token, output_task_messages, nested)
        result: Any = None
        async with contextlib.aclosing(stream):
            async for item in stream:
                result = item  # the TaskResult comes last
        if not _is_task_result(result):
            raise RuntimeError(f"{type(team).__name__}.run_stream() ended without a TaskResult")
        return result

    async def run_stream(
        self,
        team: Any,
        *,
        task: Any = None,
        cancellation_token: Any = None,
        output_task_messages: bool = True,
        nested: str = "flatten",
    ) -> AsyncGenerator[Any, None]:
        """``team.run_stream(task=...)`` recorded: yields every item unchanged (chunks included)."""
        stream = _team_stream(self, team, task, cancellation_token, output_task_messages, nested)
        async with contextlib.aclosing(stream):
            async for item in stream:
                yield item

    # ---------------------------------------------------------------- finishing

    def finalize(self, final_answer: Any = None, *, result: Any = None, status: str | None = None) -> dict[str, Any]:
        """Close the chain; accepts a ``TaskResult`` positionally or as ``result=``.

        With a ``TaskResult`` its stop reason becomes a ``termination`` step (unless
        :meth:`run` already recorded it) and, when ``final_answer`` is None, the text of
        its last chat message is the final answer. Without one, if AgentChat turns were
        recorded and no stop reason was seen, a ``termination`` step says so.
        """
        if result is None and _is_task_result(final_answer):
            result, final_answer = final_answer, None
        if not self.closed:
            self._close_open_actions()  # turns still running: recorded as cut off first
            for run in list(self._ac_open_runs):
                self._ac_end_run(run)
                self._ac_cut_short = True
                self._ac_record_team_step("termination", self.termination_content(
                    "unfinished", None, None, {**run.team, "note": UNFINISHED_NOTE}), status="cancelled",
                    actor=run.actor)
            if result is not None:
                self._ac_record_termination(result)
            elif self._ac_pending_termination:
                self._ac_record_team_step(
                    "termination", self.termination_content("unobserved", None, None, {"note": UNOBSERVED_NOTE}),
                )
        if final_answer is None and result is not None:
            final_answer = final_text(result)
        if status is None and self._ac_cut_short:
            status = "incomplete"  # a run cut short, as the built-in manager says of one
        return super().finalize(final_answer, status=status)

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

    def _ac_turn_started(self, wrapper: AER1AgentWrapper) -> None:
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
