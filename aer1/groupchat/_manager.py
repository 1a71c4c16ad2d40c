"""The group chat manager: runs the turns, owns the history, records every event.

One run: the task message, then for each round a speaker selection, the speaker's
turn (with whatever it reported: approvals, tool calls, code executions, human
input) and its message; then the termination. Each becomes a receipt step at the
moment it happens, through :class:`aer1.Collector`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aer1 import Collector, CollectorClosedError
from aer1 import _steps_vocab as vocab
from aer1.errors import Aer1Error

from ._agents import Agent, StopChat
from ._context import Event, Recorder, RunState, TurnContext
from ._history import History, thaw
from ._messages import NAME_PATTERN, Message, MessageValidationError, text_of
from ._selection import Selection, SelectionContext, SelectionError, SpeakerSelector, resolve_selector

log = logging.getLogger("aer1")

#: The agent name the manager records its own steps under; no participant may take it.
MANAGER = "manager"
#: Why a run stopped (the termination step's ``reason``); a human's exit is ``StopChat``'s reason.
STOP_TERMINATION_MSG = "is_termination_msg"
STOP_MAX_ROUND = "max_round"
STOP_ERROR = "error"
STOP_CANCELLED = "cancelled"
DEFAULT_MAX_ROUND = 10
PHASE_SELECTION = "speaker_selection"
PHASE_REPLY = "reply"
PHASE_VALIDATION = "validation"
PHASE_TERMINATION_CHECK = "termination_check"
PHASE_CANCELLED = "cancelled"
#: Selector methods under the vocabulary's mechanism names (spec/steps.md); a model selector is ``model``.
_MECHANISMS = {"auto": "function", "callable": "function"}

TerminationCheck = Callable[[Message], bool] | Callable[[dict[str, Any]], bool]


class GroupChatError(Aer1Error, RuntimeError):
    """The chat was aborted; ``result`` holds the messages and the (error) receipt."""

    def __init__(self, message: str, result: ChatResult) -> None:
        super().__init__(message)
        self.result = result


@dataclass
class ChatResult:
    """What a run returns: the messages, why it stopped, and its receipt."""

    messages: list[Message]
    stop_reason: str
    receipt: dict[str, Any]
    run_id: str
    rounds: int
    collector: Collector
    detail: str | None = None

    @property
    def final_answer(self) -> str:
        """The text of the last message."""
        return text_of(self.messages[-1]) if self.messages else ""

    def save(self, path: str) -> str:
        """Write the receipt (and its evidence beside it); returns the receipt path."""
        return self.collector.save(path, workflow=self.receipt)


class _Stop(Exception):
    """Internal: the run ended for ``reason``."""

    def __init__(self, reason: str, detail: str | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


class _Failure(Exception):
    """Internal: a phase of the run failed; the cause is chained."""

    def __init__(self, phase: str, agent: str) -> None:
        super().__init__(phase)
        self.phase = phase
        self.agent = agent


def _qualname(obj: Any) -> str | None:
    if obj is None:
        return None
    return getattr(obj, "__qualname__", type(obj).__name__)


class GroupChat:
    """A group chat and its manager.

    ``speaker_selection`` is "round_robin", "random", "manual", a selector object
    (:class:`~.selection.RandomSelector`, :class:`~.selection.AutoSelector`...) or a plain
    callable ``f(context) -> agent or name``. ``max_round`` caps the number of agent
    turns after the task. ``is_termination_msg(message)`` is checked after every turn.
    ``collector_options`` are passed to :class:`aer1.Collector` for each run.
    """

    def __init__(
        self,
        agents: Iterable[Agent],
        *,
        speaker_selection: str | SpeakerSelector | Callable[[SelectionContext], Any] = "round_robin",
        max_round: int = DEFAULT_MAX_ROUND,
        is_termination_msg: TerminationCheck | None = None,
        initiator: str | None = None,
        collector_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.agents = list(agents)
        if not self.agents:
            raise ValueError("a group chat needs at least one agent")
        names = [a.name for a in self.agents]
        for name in names:
            if not isinstance(name, str) or not NAME_PATTERN.match(name):
                raise ValueError(f"agent name {name!r} must be 1-64 letters, digits, '_' or '-'")
            if name == MANAGER:
                raise ValueError(f"agent name {MANAGER!r} is reserved for the manager")
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"agent names must be unique: {', '.join(duplicates)}")
        if not isinstance(max_round, int) or isinstance(max_round, bool) or max_round < 1:
            raise ValueError(f"max_round must be a positive integer, got {max_round!r}")
        if initiator is not None and not NAME_PATTERN.match(initiator):
            raise ValueError(f"initiator {initiator!r} is not a valid name")
        self.selector = resolve_selector(speaker_selection)
        self.max_round = max_round
        self.is_termination_msg = is_termination_msg
        self.initiator = initiator or names[0]
        self.collector_options = dict(collector_options or {})
        self._by_name = {a.name: a for a in self.agents}

    @property
    def agent_names(self) -> tuple[str, ...]:
        """The participants' names in list order."""
        return tuple(self._by_name)

    def config(self) -> dict[str, Any]:
        """The manager's identity in a receipt."""
        return {
            "speaker_selection": self.selector.method,
            "selector": type(self.selector).__name__,
            "max_round": self.max_round,
            "is_termination_msg": _qualname(self.is_termination_msg),
            "agents": list(self.agent_names),
        }

    # ------------------------------------------------------------------- run

    def run(self, task: str, *, sender: str | None = None, collector: Collector | None = None) -> ChatResult:
        """Run the chat to its end (blocking); see :meth:`arun`."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(task, sender=sender, collector=collector))
        raise RuntimeError("GroupChat.run() cannot be called from a running event loop; await arun() there")

    async def arun(self, task: str, *, sender: str | None = None, collector: Collector | None = None) -> ChatResult:
        """Run the chat: returns messages, stop reason and receipt, or raises GroupChatError."""
        if not isinstance(task, str) or not task:
            raise ValueError("task must be a non-empty string")
        sender = sender or self.initiator
        if sender == MANAGER:
            raise ValueError(f"the task cannot come from {MANAGER!r}")
        task_message: Message = {"role": "user", "content": task, "name": sender}
        history = History()
        history.append(task_message)  # validates the sender's name before anything is recorded
        collector = collector if collector is not None else Collector(goal=task, **self.collector_options)
        run = RunState()
        self._register(collector)
        recorder = self._recorder(collector)
        collector.safe_record(
            "task",
            vocab.task("groupchat", task=task, team={"name": MANAGER, "id": run.run_id, "type": "GroupChat"},
                       extras={"run_id": run.run_id, "message": task_message, "agents": list(self.agent_names),
                               "speaker_selection": self.selector.method, "max_round": self.max_round}),
            agent=sender,
            kind="task",
        )
        fallback = self.initiator if self.initiator in self._by_name else self.agent_names[0]
        rounds = 0
        last_speaker = sender
        try:
            while True:
                if rounds >= self.max_round:
                    raise _Stop(STOP_MAX_ROUND, f"{self.max_round} rounds done")
                speaker = await self._select(collector, history, last_speaker, fallback, rounds + 1)
                spoke, stop = await self._turn(history, run, recorder, collector, speaker, rounds + 1)
                if spoke:
                    rounds += 1
                    last_speaker = speaker
                if stop is not None:
                    raise stop
        except _Stop as stop:
            self._terminate(collector, stop.reason, stop.detail, rounds, len(history))
            receipt = _close(collector, text_of(history.view()[-1]), status=self._status(collector, "ok"))
            return ChatResult(
                history.view().to_list(), stop.reason, receipt, run.run_id, rounds, collector, stop.detail
            )
        except _Failure as failure:
            cause = failure.__cause__ or failure
            detail = f"{type(cause).__name__}: {cause}"
            extras: dict[str, Any] = {"round": rounds + 1}
            if isinstance(cause, MessageValidationError):
                extras["path"] = cause.path
            collector.safe_record("error", vocab.error_step("groupchat", error=vocab.error_info(cause),
                                                            phase=failure.phase, extras=extras),
                                  agent=failure.agent, kind="error", status="error")
            self._terminate(collector, STOP_ERROR, detail, rounds, len(history), vocab.error_info(cause))
            receipt = _close(collector, text_of(history.view()[-1]), status=self._status(collector, "error"))
            result = ChatResult(history.view().to_list(), STOP_ERROR, receipt, run.run_id, rounds, collector, detail)
            raise GroupChatError(
                f"group chat aborted in {failure.phase} ({failure.agent}): {detail}", result
            ) from cause
        except (asyncio.CancelledError, KeyboardInterrupt) as e:
            # the run is interrupted from outside: close the receipt as incomplete, then let it propagate
            content = vocab.error_step("groupchat", error=vocab.error_info(e), phase=PHASE_CANCELLED,
                                       extras={"round": rounds + 1})
            collector.safe_record("error", content, agent=MANAGER, kind="error", status="cancelled")
            self._terminate(collector, STOP_CANCELLED, type(e).__name__, rounds, len(history), vocab.error_info(e))
            _close(collector, text_of(history.view()[-1]), status="incomplete")
            raise

    async def _select(
        self, collector: Collector, history: History, last_speaker: str, fallback: str, round_no: int
    ) -> str:
        context = SelectionContext(
            history=history.view(),
            agents=self.agent_names,
            descriptions={a.name: str(getattr(a, "description", "") or "") for a in self.agents},
            last_speaker=last_speaker,
            initiator=fallback,
            round=round_no,
        )
        started = time.time()
        try:
            selection = self.selector.select(context)
            if inspect.isawaitable(selection):
                selection = await selection
            if not isinstance(selection, Selection) or selection.speaker not in self._by_name:
                raise SelectionError(f"selector {self.selector.method!r} returned {selection!r}")
        except Exception as e:
            raise _Failure(PHASE_SELECTION, MANAGER) from e
        detail = dict(selection.detail)
        said = detail.get("answer")
        model = detail.get("selector") == "model"
        mechanism = ("model_fallback" if detail.get("fallback") else "model") if model else \
            _MECHANISMS.get(self.selector.method, self.selector.method)
        collector.safe_record(
            "speaker_selection",
            vocab.speaker_selection(
                "groupchat", selected=[selection.speaker], mechanism=mechanism, candidates=list(self.agent_names),
                model_replies=[said] if model and isinstance(said, str) else None,
                extras={"method": self.selector.method, "previous": last_speaker, "round": round_no,
                        "detail": detail}),
            agent=MANAGER,
            kind="speaker_selection",
            started_at=started,
            target=selection.speaker,
        )
        return selection.speaker

    async def _turn(
        self,
        history: History,
        run: RunState,
        recorder: Recorder,
        collector: Collector,
        speaker: str,
        round_no: int,
    ) -> tuple[bool, _Stop | None]:
        """One turn: whether a message was appended, and the stop it caused (if any)."""
        agent = self._by_name[speaker]
        context = TurnContext(run=run, speaker=speaker, round=round_no, recorder=recorder, actions=collector)
        started = time.time()
        try:
            reply = agent.reply(history.view(), context)
            if inspect.isawaitable(reply):
                reply = await reply
        except Exception as e:
            raise _Failure(PHASE_REPLY, speaker) from e
        if isinstance(reply, StopChat):
            return False, _Stop(reply.reason, reply.detail)
        try:
            if isinstance(reply, Mapping) and reply.get("name") != speaker:
                raise MessageValidationError(
                    "name", f"must be the speaker's name {speaker!r} (got {reply.get('name')!r})"
                )
            stored = history.append(reply)
        except MessageValidationError as e:
            raise _Failure(PHASE_VALIDATION, speaker) from e
        message: Message = thaw(stored)
        collector.safe_record(
            "message",
            vocab.message("groupchat", content=message.get("content"), role=message.get("role"),
                          extras={"index": len(history) - 1, "round": round_no, "message": message}),
            agent=speaker,
            kind="message",
            started_at=started,
        )
        if self.is_termination_msg is None:
            return True, None
        try:
            done = bool(self.is_termination_msg(thaw(stored)))
        except Exception as e:
            raise _Failure(PHASE_TERMINATION_CHECK, MANAGER) from e
        return True, _Stop(STOP_TERMINATION_MSG, f"message {len(history) - 1} from {speaker}") if done else None

    # -------------------------------------------------------------- recording

    def _register(self, collector: Collector) -> None:
        entries: list[tuple[str, str, str | None, Any]] = [
            (MANAGER, "GroupChatManager", "The built-in group chat manager.", self.config())
        ]
        for agent in self.agents:
            config = agent.config() if callable(getattr(agent, "config", None)) else None  # type: ignore[attr-defined]
            entries.append((agent.name, type(agent).__name__, getattr(agent, "description", None) or None, config))
        for name, kind, description, config in entries:
            try:
                collector.register_agent(name, type=kind, description=description, config=config)
            except Exception as e:  # a listing problem must not stop the chat
                log.warning("aer1: could not register agent %r: %s", name, e)

    @staticmethod
    def _recorder(collector: Collector) -> Recorder:
        def record(event: Event) -> None:
            collector.safe_record(
                event.tool,
                event.content,
                agent=event.agent,
                kind=event.kind,
                status=event.status,
                started_at=event.started_at,
                ended_at=event.ended_at,
                call_id=event.call_id,
            )

        return record

    @staticmethod
    def _terminate(collector: Collector, reason: str, detail: str | None, rounds: int, messages: int,
                   error: dict[str, Any] | None = None) -> None:
        outcome = "error" if reason == STOP_ERROR else "cancelled" if reason == STOP_CANCELLED else "finished"
        collector.safe_record(
            "termination",
            vocab.termination("groupchat", outcome=outcome, reason=reason, messages=messages,
                              step_statuses=collector.status_counts(), error=error,
                              extras={"detail": detail, "rounds": rounds}),
            agent=MANAGER,
            kind="termination",
            status=vocab.outcome_status(outcome),
        )

    @staticmethod
    def _status(collector: Collector, status: str) -> str:
        return "incomplete" if collector.recording_failures else status


def _close(collector: Collector, final_answer: str, *, status: str) -> dict[str, Any]:
    """Finalize the run's receipt; one the caller finalized while the run was under way is returned as it is.

    The caller's ``finalize()`` came first (a run cancelled and finalized at once): the
    receipt it closed already records, as cut off, what was under way.
    """
    try:
        return collector.finalize(final_answer, status=status)
    except CollectorClosedError:
        return collector.receipt()
