"""``AER1AutoGenCollector``: the AutoGen collector, importable without any AutoGen installed.

It is an :class:`aer1.Collector` (same options: signing, evidence, redaction) that also
knows about AgentChat teams:

* :meth:`AER1AutoGenCollector.run` and :meth:`AER1AutoGenCollector.run_stream` run a team
  (or a single agent) and record its ``task``, its ``speaker_selection`` steps and its
  ``termination``; they import ``autogen_agentchat`` only when called;
* :meth:`AER1AutoGenCollector.finalize` also accepts the team's ``TaskResult`` and records
  the stop reason it carries (or, when AgentChat turns were recorded but no stop reason
  was seen, a ``termination`` step saying the reason was not observed).

What it knows of team runs, and the hooks the AgentChat code calls back, are its base's
(:class:`~._team_steps.TeamStepsCollector`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Any

from ._compat_collector import CompatMethods
from ._errors import error_info, failure_status
from ._team_steps import TeamStepsCollector

__all__ = ["AER1AutoGenCollector", "error_info", "failure_status"]

#: The note of the ``termination`` step finalize records for a team run that had not ended.
UNFINISHED_NOTE = ("the run had not ended when the receipt was finalized: its stream was not read to the end, "
                   "or it was still running")
#: Note carried by a ``termination`` step whose stop reason nobody reported.
UNOBSERVED_NOTE = (
    "the team's stop reason was not observed: run the team with collector.run() or "
    "collector.run_stream(), or pass its TaskResult to finalize()"
)


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


class AER1AutoGenCollector(CompatMethods, TeamStepsCollector):
    """A :class:`aer1.Collector` for AutoGen: wrap agents with ``AER1AgentWrapper`` and run.

    Takes exactly the options of :class:`aer1.Collector`. ``finalize(final_answer=...)``
    works as on any collector; ``finalize(result)`` or ``finalize(result=result)`` also
    records the ``TaskResult``'s stop reason and, without an explicit final answer,
    hashes the text of its last chat message.
    """

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
