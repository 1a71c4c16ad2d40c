"""AG2 1.x collector: one line per agent, the network's routing, an approval gate in tool middleware.

Needs ``ag2`` 1.x (``pip install "aer1[ag2]"``; ``from ag2 import Agent``), which is not
AG2 classic (the ``autogen`` module: ``aer1.collectors.legacy``). Nothing else in
``aer1`` imports it. One line per agent::

    collector = AER1AG2Collector(goal="...")
    agent = collector.observe(Agent("alice", config=config, tools=[...]))

``observe`` puts one recording middleware outermost on the agent (its own middleware
keeps its order, its observers are not touched). Per turn it records, in the order they
happen and stamped by the collector's clock (AG2's ``created_at`` is not a usable clock),
in the step vocabulary (``spec/steps.md``, framework member ``ag2``): the ``task`` (the
turn's input), each model reply (``message`` with its ``model``), each model failure
(``error``, and the same exception out), each tool call (``tool_call``: call id, name,
arguments, result or error; a tool not in the tool set too), each question put to a
human (``human_input``) and each answer to AG2's ``approval_required`` (``approval``), and
the end of the turn (a ``termination`` when the turn is a run of its own; its reply, a
``message``, when it runs in a channel or inside an observed agent's call). A sub-agent
run through ``Agent.as_tool`` is tied to its parent's call id (``nested_in``).

:meth:`AER1AG2Collector.observe_hub` listens to an ``ag2.network`` hub: channels opened
and closed (with their reason: the channel's ``termination``), routing decisions
(``Handoff``, ``Finish``), the next speaker the channel's transition graph picked, failed
turns and rejected envelopes.

:meth:`AER1AG2Collector.approval_gate` is tool middleware asking an
:class:`~aer1.groupchat.ApprovalPort` (``CallbackApproval``, ``DeferredApproval``) before
a call runs, with a one-use token bound to the run, the call id, the tool and the
validated arguments.

An action still under way at ``finalize()`` (a turn, a tool call, a question, an approval
being decided, a handoff not yet posted, an open channel) is recorded as cut off
(``cancelled``) and the receipt is ``incomplete``. ``spec/ag2.md`` says what is observed,
the content of each step and what the collector cannot see.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

try:
    from ag2 import Agent
    from ag2.events import (
        HumanMessage,
        ToolApprovalRequest,
        ToolCallEvent,
        ToolErrorEvent,
        ToolNotFoundEvent,
        ToolResultEvent,
    )
    from ag2.middleware import BaseMiddleware, MiddlewareDescription
    from ag2.network.hub.listener import BaseHubListener
except ImportError as e:  # the extra is not installed: say how to install it
    from ._extras import missing_framework

    raise missing_framework("ag2", e) from e

from aer1 import Collector
from aer1 import _steps_vocab as vocab
from aer1._canonical import CanonicalizationError
from aer1.errors import ToolCallRefused
from aer1.groupchat import _approval as approvals
from aer1.groupchat._tools import APPROVAL_DENIED, ARGS_INVALID, arguments_edited, error_content

from . import _ag2_steps as steps
from ._ag2_internals import ALWAYS_GRANTS_KEY, TABLE, channel_of, is_tool_itself
from ._errors import count_failure, error_info, failure_status

__all__ = [
    "CHANNEL_ACTOR_PREFIX",
    "MAX_GATED_RUNS",
    "NOT_INNERMOST",
    "AER1AG2Collector",
    "ApprovalGate",
    "agent_config",
    "channel_actor",
    "current_approval",
]

TABLE.warn_if_unchecked()  # logs once when the installed version is not one the names were checked on

#: Prefix of the ``agent`` of a network channel's own steps: ``channel:<channel id>``.
CHANNEL_ACTOR_PREFIX = "channel:"
#: Runs whose approval tokens a gate keeps at once; past it the oldest run's are dropped
#: (a later call on that run gets a fresh authority: its earlier grants cannot be redeemed).
MAX_GATED_RUNS = 1024
#: Why a gate that is not the innermost tool middleware denies every call without asking.
NOT_INNERMOST = ("the approval gate is not the innermost tool middleware of this tool: the arguments that run "
                 "cannot be bound to an approval (list the gate last)")
#: The most runs whose turns a collector numbers at once (the oldest is forgotten first).
MAX_NUMBERED_RUNS = 8192

_AgentT = TypeVar("_AgentT", bound=Agent)
#: The action key of a Handoff in flight: ("handoff", channel id, agent, tool, call id).
_HandoffKey = tuple[str, str, str, str, str]


def channel_actor(channel_id: str) -> str:
    """The actor of a network channel's own steps (opened, routing, next speaker, closed)."""
    return f"{CHANNEL_ACTOR_PREFIX}{channel_id}"


# ------------------------------------------------------------------------ identity


def _described(entries: Sequence[Any]) -> list[Any]:
    """Middleware descriptions (kind, config, complete), never the middleware objects themselves."""
    out = []
    for entry in entries:
        if isinstance(getattr(entry, "middleware", None), _RecorderFactory):
            continue  # the collector's own recorder is not the agent's configuration
        try:
            described = entry.description
            out.append({"kind": described.kind, "config": steps.plain(described.config),
                        "complete": described.complete})
        except Exception:  # a description that cannot be read: its type only
            out.append({"kind": type(getattr(entry, "middleware", entry)).__qualname__, "complete": False})
    return out


def _model(config: Any) -> dict[str, Any] | None:
    """Config type, provider and model of a model config: never its other fields (API keys)."""
    if config is None:
        return None
    out: dict[str, Any] = {"config_type": f"{type(config).__module__}.{type(config).__qualname__}"}
    for name in ("provider", "model"):
        try:
            value = getattr(config, name)
        except Exception:  # TestConfig raises NotImplementedError when it was given none
            value = None
        out[name] = value if isinstance(value, str) else None
    return out


def _model_facts(agent: Agent) -> steps.ModelFacts:
    """The provider and model an agent's replies come from (the config's class when it names no provider)."""
    try:
        model = _model(getattr(agent, "config", None))
    except Exception:  # an agent whose config cannot be read: its replies name no model
        model = None
    if model is None:
        return steps.ModelFacts()
    return steps.ModelFacts(provider=model["provider"], model=model["model"], config_type=model["config_type"])


def _tool(tool: Any) -> dict[str, Any]:
    schema = getattr(tool, "schema", None)
    function = getattr(schema, "function", None)
    out: dict[str, Any] = {"type": type(tool).__qualname__, "name": getattr(tool, "name", None)}
    if function is not None:
        out["schema"] = {"name": getattr(function, "name", None), "description": getattr(function, "description", None),
                         "parameters": steps.plain(getattr(function, "parameters", None))}
    with contextlib.suppress(Exception):
        out["source"] = tool.source
    with contextlib.suppress(Exception):
        out["middleware"] = _described(tool.middleware)
    return out


def agent_config(agent: Agent) -> dict[str, Any]:
    """What identifies an agent, hashed into its ``config_digest``, from an allow list.

    Class, model (config type, provider, model), system prompt, tool schemas, sources and
    middleware descriptions, agent middleware descriptions (the collector's own left out),
    observer types and the response schema. The model config itself is never read whole:
    it holds credentials (``api_key``).
    """
    config: dict[str, Any] = {"class": f"{type(agent).__module__}.{type(agent).__qualname__}",
                              "model": _model(getattr(agent, "config", None))}
    with contextlib.suppress(Exception):
        config["system_prompt"] = [steps.text(p) for p in agent.system_prompt]
    with contextlib.suppress(Exception):
        config["tools"] = [_tool(t) for t in agent.tools]
    with contextlib.suppress(Exception):
        config["middleware"] = _described(agent.middleware)
    with contextlib.suppress(Exception):
        config["observers"] = [type(o).__qualname__ for o in agent.observers]
    with contextlib.suppress(Exception):
        schema = agent.response_schema
        config["response_schema"] = steps.plain(getattr(schema, "json_schema", None)) if schema is not None else None
    return config


# ------------------------------------------------------------------ per-call bookkeeping


@dataclass
class _Asked:
    """An AG2 approval question seen inside a tool call, recorded when the call ends."""

    request: Any
    answer: Any
    error: BaseException | None
    started: float
    ended: float


@dataclass
class _CallSlot:
    """What the hooks inside one tool call report to the recorder around it."""

    nested_in: str | None = None  # the agent whose call the turn making this call runs inside
    call: Any = None  # the call (its ToolCallEvent) as the recorder saw it
    ran: dict[str, Any] | None = None  # the gate ran the call: its approval and the digest of what ran
    ran_started: float | None = None  # when the call itself started (after its approval)
    refused: str | None = None  # the gate did not let it run: the decision
    asked: list[_Asked] = field(default_factory=list)


#: The tool call running in this task: (collector, agent, call id, slot), set by the recorder.
_CALL: contextvars.ContextVar[tuple[Collector, str, str, _CallSlot] | None] = contextvars.ContextVar(
    "aer1_ag2_call", default=None)
#: The approval token the running call holds (set by the gate while the tool runs).
_TOKEN: contextvars.ContextVar[approvals.ApprovalToken | None] = contextvars.ContextVar("aer1_ag2_token", default=None)


def current_approval() -> approvals.ApprovalToken | None:
    """The approval token of the tool call running now (spent by the gate on exactly this call), or None."""
    return _TOKEN.get()


def _run_id(context: Any) -> tuple[str, Any]:
    """The run a turn is on: its network channel's id, else its stream's id; and the channel."""
    channel = channel_of(context)
    channel_id = getattr(channel, "channel_id", None)
    if isinstance(channel_id, str) and channel_id:
        return channel_id, channel
    return str(context.stream.id), None


# ------------------------------------------------------------------------ the recorder


class _Turn:
    """One agent turn being recorded (one recorder middleware instance per turn).

    A turn is a run of its own (``own_run``) unless it runs in a network channel (the
    channel is the run) or inside an observed agent's tool call (the parent's turn is).
    """

    def __init__(self, collector: AER1AG2Collector, agent: str, facts: steps.ModelFacts, event: Any,
                 context: Any) -> None:
        self.collector = collector
        self.agent = agent
        self.facts = facts
        self.run_id, channel = _run_id(context)
        self.turn = collector._next_turn(self.run_id)
        self.started = time.time()
        self.replies = 0
        self.calls = 0
        self.model_failure: BaseException | None = None  # recorded already as the model call's error step
        self.proposed: dict[str, Any] = {}  # call id -> the call as the model proposed it
        outer = _CALL.get()
        parent = {"agent": outer[1], "call_id": outer[2]} if outer is not None and outer[0] is collector else None
        self.nested_in = parent["agent"] if parent is not None else None
        self.own_run = parent is None and channel is None
        self.in_channel = channel is not None
        channel_info = None
        if channel is not None:
            channel_info = {"channel_id": self.run_id}
            with contextlib.suppress(Exception):
                channel_info["type"] = str(channel.metadata.manifest.type)
        collector.safe_record("task", steps.task_content(event, run_id=self.run_id, turn=self.turn, parent=parent,
                                                         channel=channel_info, nested_in=self.nested_in),
                              agent=agent, kind="task", started_at=self.started)


class _Recorder(BaseMiddleware):
    """The collector's agent middleware: records one turn (see the module doc). Never changes it.

    Each action it sees start (the turn, a tool call, a question to a human) is noted with
    ``Collector.open_action``: if ``finalize()`` comes first, it is recorded as cut off.
    """

    def __init__(self, event: Any, context: Any, *, collector: AER1AG2Collector, agent: str,
                 facts: steps.ModelFacts) -> None:
        super().__init__(event, context)
        self._collector = collector
        self._agent = agent
        self._facts = facts
        self._turn: _Turn | None = None

    async def on_turn(self, call_next: Any, event: Any, context: Any) -> Any:
        c = self._collector
        key = object()
        try:
            turn = self._turn = _Turn(c, self._agent, self._facts, event, context)
            c.open_action(key, lambda: c._turn_cut_off(turn))
        except Exception as e:  # observation never breaks the turn; the receipt says incomplete
            count_failure(c, f"agent {self._agent!r} turn start", e)
        with self._watching(context):
            try:
                response = await call_next(event, context)
            except BaseException as e:
                if c.close_action(key):
                    c._turn_ended(self._turn, None, e)
                raise
        if c.close_action(key):
            c._turn_ended(self._turn, response, None)
        return response

    @contextlib.contextmanager
    def _watching(self, context: Any) -> Iterator[None]:
        """While the turn runs, watch its stream for tools not found (no middleware sees those)."""
        scope: Any = contextlib.nullcontext()
        try:
            scope = context.stream.where(ToolNotFoundEvent).sub_scope(self._not_found)
            scope.__enter__()
        except Exception as e:
            count_failure(self._collector, f"agent {self._agent!r} stream", e)
            scope = contextlib.nullcontext()
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                scope.__exit__(None, None, None)

    async def _not_found(self, event: Any) -> None:
        """A subscriber: never raises (a raising subscriber would fail the turn)."""
        try:
            self._collector._not_found(self._turn, event)
        except Exception as e:
            count_failure(self._collector, "a tool not found", e)

    async def on_llm_call(self, call_next: Any, events: Any, context: Any) -> Any:
        started, clock = time.time(), time.perf_counter()
        try:
            response = await call_next(events, context)
        except BaseException as e:
            self._collector._model_failed(self._turn, e, started, time.perf_counter() - clock)
            raise
        self._collector._model_replied(self._turn, response, started, time.perf_counter() - clock)
        return response

    async def on_tool_execution(self, call_next: Any, event: Any, context: Any) -> Any:
        c = self._collector
        started = time.time()
        turn = self._turn
        slot = _CallSlot(nested_in=turn.nested_in if turn is not None else None, call=event)
        key = object()
        c.open_action(key, lambda: c._call_ended(turn, self._agent, event, None, None, slot, started, context,
                                                 cut_off=True))
        token = _CALL.set((c, self._agent, str(getattr(event, "id", "")), slot))
        try:
            outcome = await call_next(event, context)
        except BaseException as e:
            _CALL.reset(token)
            if c.close_action(key):
                c._call_ended(turn, self._agent, event, None, e, slot, started, context)
            raise
        _CALL.reset(token)
        if c.close_action(key):
            c._call_ended(turn, self._agent, event, outcome, None, slot, started, context)
        return outcome

    async def on_human_input(self, call_next: Any, event: Any, context: Any) -> Any:
        c = self._collector
        started = time.time()
        nested_in = self._turn.nested_in if self._turn is not None else None
        outer = _CALL.get()
        key = object()
        c.open_action(key, lambda: c._human_answered(self._agent, event, None, None, started, nested_in, outer,
                                                     cut_off=True))
        try:
            answer = await call_next(event, context)
        except BaseException as e:
            if c.close_action(key):
                c._human_answered(self._agent, event, None, e, started, nested_in, outer)
            raise
        if c.close_action(key):
            c._human_answered(self._agent, event, answer, None, started, nested_in, outer)
        return answer


class _RecorderFactory:
    """What ``observe`` registers on an agent: makes the turn's recorder. Survives copying as itself."""

    def __init__(self, collector: AER1AG2Collector, agent: str, facts: steps.ModelFacts) -> None:
        self.collector = collector
        self.agent = agent
        self.facts = facts

    def __call__(self, event: Any, context: Any) -> _Recorder:
        return _Recorder(event, context, collector=self.collector, agent=self.agent, facts=self.facts)

    def describe(self) -> MiddlewareDescription:
        return MiddlewareDescription(kind="AER1Recorder", config={})

    def __copy__(self) -> _RecorderFactory:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _RecorderFactory:
        return self


# ------------------------------------------------------------------------ the gate


class ApprovalGate:
    """AG2 tool middleware asking an approval port before each call runs; list it last (innermost).

    Approved: the call runs holding a one-use token (:func:`current_approval`) bound to the
    run, the call id, the tool and the validated arguments, spent on exactly the arguments
    handed to the tool. Denied: the model sees ``{"error": {"kind", "message"}}`` and the
    tool does not run; pending: it sees ``approval required: apr_...``. A decision that
    edits the arguments is a denial (edits are not applied). Each decision is an
    ``approval`` step binding the digest of the arguments; the call's ``tool_call`` step
    carries the digest of the arguments that ran. Copies of the gate are the gate (AG2
    deep-copies tools with their middleware), so its tokens survive registration.
    """

    def __init__(self, collector: AER1AG2Collector, port: approvals.ApprovalPort) -> None:
        if not isinstance(port, approvals.ApprovalPort):
            raise TypeError(f"port must be an ApprovalPort (request() and name), got {type(port).__name__}")
        self.collector = collector
        self.port = port
        self._lock = threading.Lock()
        self._authorities: dict[str, approvals.TokenAuthority] = {}

    def __copy__(self) -> ApprovalGate:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> ApprovalGate:
        return self

    def describe(self) -> MiddlewareDescription:
        return MiddlewareDescription(kind="AER1ApprovalGate", config={"port": str(self.port.name)})

    def authority(self, run_id: str) -> approvals.TokenAuthority:
        """The token authority of one run (made on first use; the oldest past MAX_GATED_RUNS is dropped)."""
        with self._lock:
            found = self._authorities.get(run_id)
            if found is None:
                found = self._authorities[run_id] = approvals.TokenAuthority(run_id)
                while len(self._authorities) > MAX_GATED_RUNS:
                    del self._authorities[next(iter(self._authorities))]
            return found

    async def __call__(self, call_next: Callable[[Any, Any], Awaitable[Any]], event: Any, context: Any) -> Any:
        run_id, _ = _run_id(context)
        call_id, tool = str(event.id), str(event.name)
        outer = _CALL.get()
        slot = outer[3] if outer is not None and outer[2] == call_id else None
        try:
            arguments = event.serialized_arguments
            if not isinstance(arguments, dict):
                raise ValueError(f"got {type(arguments).__name__}, want a JSON object")
            digest = approvals.arguments_digest(arguments)
        except (ValueError, TypeError, CanonicalizationError) as e:
            return _refusal(event, ARGS_INVALID, f"arguments are not an exact JSON object: {e}")
        if not is_tool_itself(call_next):  # fail closed: what a later middleware passes on is not seen
            return self._decided(event, context, run_id, arguments, digest, slot, approvals.DENIED, NOT_INNERMOST,
                                 edited=False)
        authority = self.authority(run_id)
        if not authority.first_gate(call_id):
            return self._decided(event, context, run_id, arguments, digest, slot, approvals.DENIED,
                                 "call id was already gated in this run (replayed call)", edited=False)
        request = approvals.ToolApprovalRequest(run_id, call_id, tool, copy.deepcopy(arguments))
        started = time.time()
        c = self.collector
        agent, nested_in = (outer[1], outer[3].nested_in) if outer is not None else (None, None)
        key = object()  # finalize() while the port decides: the approval is recorded as cut off
        c.open_action(key, lambda: c._gate_decided(request, arguments, digest, self.port.name, approvals.PENDING, None,
                                                   False, started, agent=agent, nested_in=nested_in, cut_off=True))
        failure: BaseException | None = None
        try:
            decision = await self.port.request(request)
            if not isinstance(decision, approvals.ApprovalDecision):
                raise TypeError(f"returned {decision!r}, not an ApprovalDecision")
        except Exception as e:  # a failing port denies (fail closed)
            failure = e
            decision = approvals.ApprovalDecision.deny(
                f"approval port {self.port.name!r} failed: {type(e).__name__}: {e}")
        except BaseException as e:  # cut off (a cancellation): the question stays unanswered
            if c.close_action(key):
                c._gate_decided(request, arguments, digest, self.port.name, approvals.PENDING, None, False, started,
                                agent=agent, nested_in=nested_in, failure=e, cut_off=True)
            raise
        outcome, reason = decision.outcome, decision.reason
        edited = arguments_edited(request, decision, digest)
        if edited and outcome == approvals.APPROVED:
            outcome, reason = approvals.DENIED, "the approval edited the arguments; edits are not applied"
        if c.close_action(key):
            c._gate_decided(request, arguments, digest, self.port.name, outcome, reason, edited, started,
                            agent=agent, nested_in=nested_in, failure=failure)
        if outcome != approvals.APPROVED:
            if slot is not None:
                slot.refused = outcome
            if outcome == approvals.PENDING:
                return ToolResultEvent.from_call(event, result=f"{approvals.PENDING_PREFIX}{request.approval_id}")
            return _refusal(event, APPROVAL_DENIED, f"approval denied: {reason}" if reason else "approval denied")
        token = authority.issue(call_id, tool, arguments)
        ran = copy.deepcopy(arguments)  # the tool gets its own copy: the digest is of exactly these
        try:
            authority.redeem(token, call_id=call_id, tool=tool, arguments=ran)
        except approvals.TokenRefused as e:  # cannot happen for a token issued just now; fail closed if it does
            return _refusal(event, APPROVAL_DENIED, f"approval token refused: {e}")
        call = event.handled_by(event.source) if getattr(event, "source", None) else copy.copy(event)
        call.serialized_arguments = ran
        if slot is not None:
            slot.ran_started = time.time()
            slot.ran = {"approval_id": request.approval_id, "grant_id": token.grant_id, "arguments_digest": digest}
        reset = _TOKEN.set(token)
        try:
            return await call_next(call, context)
        finally:
            _TOKEN.reset(reset)
            authority.discard(token)

    def _decided(self, event: Any, context: Any, run_id: str, arguments: Any, digest: str, slot: _CallSlot | None,
                 outcome: str, reason: str, *, edited: bool) -> Any:
        request = approvals.ToolApprovalRequest(run_id, str(event.id), str(event.name), copy.deepcopy(arguments))
        now = time.time()
        outer = _CALL.get()
        self.collector._gate_decided(request, arguments, digest, self.port.name, outcome, reason, edited, now,
                                     agent=outer[1] if outer is not None else None,
                                     nested_in=outer[3].nested_in if outer is not None else None)
        if slot is not None:
            slot.refused = outcome
        return _refusal(event, APPROVAL_DENIED, f"approval denied: {reason}")


def _refusal(event: Any, kind: str, message: str) -> Any:
    """The event a refused call settles as: the error the model sees, never a traceback."""
    result = error_content(kind, message)
    error = ToolCallRefused(message)
    return ToolErrorEvent(parent_id=event.id, name=event.name, error=error,
                          result=ToolResultEvent.from_call(event, result=result).result)


# ------------------------------------------------------------------------ the hub listener


class _HubListener(BaseHubListener):
    """Records what an ``ag2.network`` hub reports (see :meth:`AER1AG2Collector.observe_hub`). Never raises."""

    def __init__(self, collector: AER1AG2Collector, hub: Any) -> None:
        self._collector = collector
        self._hub = hub

    async def on_channel_event(self, channel_id: Any, kind: Any, payload: Any) -> None:
        try:
            self._collector._channel_event(self._hub, str(channel_id), str(kind), payload)
        except Exception as e:
            count_failure(self._collector, f"channel event {kind!r}", e)

    async def on_envelope_posted(self, envelope: Any, metadata: Any) -> None:
        try:
            self._collector._envelope_posted(self._hub, envelope)
        except Exception as e:
            count_failure(self._collector, "a posted envelope", e)

    async def on_turn_failed(self, channel_id: Any, agent_id: Any, envelope_id: Any, exc: Any) -> None:
        try:
            self._collector._turn_failed(self._hub, str(channel_id), str(agent_id), envelope_id, exc)
        except Exception as e:
            count_failure(self._collector, "a failed network turn", e)

    async def on_envelope_rejected(self, envelope: Any, reason: Any) -> None:
        try:
            self._collector._envelope_rejected(self._hub, envelope, reason)
        except Exception as e:
            count_failure(self._collector, "a rejected envelope", e)


# ------------------------------------------------------------------------ the collector


class AER1AG2Collector(Collector):
    """An :class:`aer1.Collector` that observes AG2 1.x agents, ``ag2.network`` hubs and tool approvals."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ag2_lock = threading.Lock()
        self._turns: dict[str, int] = {}  # run id -> turns started on it
        self._observed: set[str] = set()
        self._hubs: list[Any] = []
        self._speakers: dict[str, int] = {}  # channel id -> the turn whose next speaker was recorded
        #: (channel id, agent, tool) -> handoffs a tool returned, not yet posted: (action key, target)
        self._handoffs: dict[tuple[str, str, str], list[tuple[_HandoffKey, Any]]] = {}
        self._cut_off = False  # an action was still under way at finalize()

    # -------------------------------------------------------------- public API

    def observe(self, agent: _AgentT) -> _AgentT:
        """Record every turn of ``agent``; returns the same agent (behaviour, middleware order and observers kept).

        One recording middleware goes in outermost, once per collector; the agent is listed in
        the receipt's ``agents`` with its config digest (:func:`agent_config`).
        """
        if not isinstance(agent, Agent):
            raise TypeError(f"observe() takes an ag2.Agent, got {type(agent).__name__}")
        if any(isinstance(e.middleware, _RecorderFactory) and e.middleware.collector is self for e in agent.middleware):
            return agent
        try:
            self.register_agent(agent.name, type=f"{type(agent).__module__}.{type(agent).__qualname__}",
                                config=agent_config(agent))
        except Exception as e:  # already listed with another identity, or finalized: said, never fatal
            count_failure(self, f"agent {agent.name!r} identity", e)
        agent.insert_middleware(_RecorderFactory(self, agent.name, _model_facts(agent)))
        with self._ag2_lock:
            self._observed.add(agent.name)
        return agent

    def approval_gate(self, port: approvals.ApprovalPort) -> ApprovalGate:
        """Tool middleware asking ``port`` before each call: ``tool(f, middleware=[..., gate])`` (last = innermost)."""
        return ApprovalGate(self, port)

    def observe_hub(self, hub: Any) -> Any:
        """Record what an ``ag2.network`` hub reports (see the module doc); returns the hub. Once per hub."""
        if any(h is hub for h in self._hubs):
            return hub
        hub.register_listener(_HubListener(self, hub))
        self._hubs.append(hub)
        return hub

    # -------------------------------------------------------------- turns

    def _next_turn(self, run_id: str) -> int:
        with self._ag2_lock:
            n = self._turns.pop(run_id, 0) + 1
            self._turns[run_id] = n  # most recent last: the oldest run is forgotten first
            while len(self._turns) > MAX_NUMBERED_RUNS:
                del self._turns[next(iter(self._turns))]
            return n

    def _turn_ended(self, turn: _Turn | None, response: Any, error: BaseException | None) -> None:
        """A turn returned or raised: its error (unless its model call's error said it), then its end.

        A turn that is a run of its own ends with a ``termination``; one inside a channel or
        another agent's call hands its reply back (a ``message``).
        """
        if turn is None:
            return
        try:
            if error is not None:
                status = failure_status(error)
                if error is not turn.model_failure:
                    self.safe_record("turn_error", steps.turn_error_content(
                        error_info(error), run_id=turn.run_id, turn=turn.turn, nested_in=turn.nested_in),
                        agent=turn.agent, kind="error", status=status, started_at=turn.started)
                if turn.own_run:
                    self._turn_termination(turn, "error" if status == "error" else "cancelled", None,
                                           error_info(error))
                return
            if turn.own_run:
                self._turn_termination(turn, "finished", response, None)
                return
            content = steps.turn_reply_content(response, run_id=turn.run_id, turn=turn.turn, replies=turn.replies,
                                               tool_calls=turn.calls, nested_in=turn.nested_in)
            self.safe_record("turn_end", content, agent=turn.agent, kind="message", started_at=turn.started)
        except Exception as e:
            count_failure(self, f"agent {turn.agent!r} turn end", e)

    def _turn_termination(self, turn: _Turn, outcome: str, response: Any, error: dict[str, Any] | None) -> None:
        content = steps.turn_end_content(outcome=outcome, run_id=turn.run_id, turn=turn.turn, response=response,
                                         error=error, replies=turn.replies, tool_calls=turn.calls,
                                         step_statuses=self.status_counts())
        self.safe_record("turn_end", content, agent=turn.agent, kind="termination",
                         status=vocab.outcome_status(outcome), started_at=turn.started)

    def _turn_cut_off(self, turn: _Turn) -> None:
        """finalize() came while the turn ran: the turn is recorded cut off (and, as a run, unfinished)."""
        self._cut_off = True
        error = steps.cut_off_error()
        self.safe_record("turn_error", steps.turn_error_content(error, run_id=turn.run_id, turn=turn.turn,
                                                                nested_in=turn.nested_in),
                         agent=turn.agent, kind="error", status="cancelled", started_at=turn.started)
        if turn.own_run:
            self._turn_termination(turn, "unfinished", None, error)

    def _model_replied(self, turn: _Turn | None, response: Any, started: float, latency: float) -> None:
        if turn is None:
            return
        try:
            turn.replies += 1
            calls = getattr(getattr(response, "tool_calls", None), "calls", None) or []
            for call in calls:
                turn.proposed[str(getattr(call, "id", ""))] = call
            content = steps.reply_content(response, facts=turn.facts, latency_ms=latency * 1000,
                                          nested_in=turn.nested_in)
            self.safe_record("message", content, agent=turn.agent, kind="message", started_at=started)
        except Exception as e:
            count_failure(self, f"agent {turn.agent!r} model reply", e)

    def _model_failed(self, turn: _Turn | None, exc: BaseException, started: float, latency: float) -> None:
        if turn is None:
            return
        try:
            turn.model_failure = exc
            content = steps.model_failure_content(exc, latency_ms=latency * 1000, nested_in=turn.nested_in)
            self.safe_record("model_call", content, agent=turn.agent, kind="error", status=failure_status(exc),
                             started_at=started)
        except Exception as e:
            count_failure(self, f"agent {turn.agent!r} model failure", e)

    def _not_found(self, turn: _Turn | None, event: Any) -> None:
        if turn is None:
            return
        call_id = str(getattr(event, "parent_id", ""))
        call = turn.proposed.get(call_id) or ToolCallEvent(name=str(getattr(event, "name", "") or "tool"), id=call_id)
        turn.calls += 1
        content, status = steps.tool_call_content(call, event, error=None, ran=None, nested_in=turn.nested_in)
        self.safe_record(str(content["name"]), content, agent=turn.agent, kind="tool_call", status=status,
                         call_id=call_id or None)

    def _call_ended(self, turn: _Turn | None, agent: str, event: Any, outcome: Any, error: BaseException | None,
                    slot: _CallSlot, started: float, context: Any, *, cut_off: bool = False) -> None:
        try:
            if cut_off:
                self._cut_off = True
            ended = time.time()
            if turn is not None:
                turn.calls += 1
            for asked in slot.asked:
                self._record_asked(agent, asked, event, context, slot.nested_in)
            if slot.asked and slot.ran_started is None:
                slot.ran_started = slot.asked[-1].ended  # the call ran after its last approval was answered
            content, status = steps.tool_call_content(event, outcome, error=error, ran=slot.ran, refused=slot.refused,
                                                      cut_off=cut_off, nested_in=slot.nested_in)
            begun = slot.ran_started if slot.ran_started is not None and slot.refused is None else started
            call_id = content.get("call_id")
            self.safe_record(str(content["name"]), content, agent=agent, kind="tool_call", status=status,
                             started_at=min(begun, ended), ended_at=ended,
                             call_id=call_id if isinstance(call_id, str) and call_id else None)
            if status == "ok" and turn is not None and turn.in_channel and outcome is not None:
                self._routing_requested(turn, agent, event, outcome)
        except Exception as e:
            count_failure(self, f"agent {agent!r} tool call", e)

    def _record_asked(self, agent: str, asked: _Asked, call: Any, context: Any, nested_in: str | None) -> None:
        """AG2's approval question of one call: "always" counts only if AG2 kept the grant."""
        grants = getattr(context, "variables", {}).get(ALWAYS_GRANTS_KEY) or {}
        scope = getattr(call, "source", None) or getattr(call, "name", None)
        always = isinstance(grants, Mapping) and bool(grants.get(scope))
        content = steps.human_approval_content(asked.request, call, asked.answer, asked.error, always,
                                               nested_in=nested_in)
        status = "ok" if asked.error is None else failure_status(asked.error)
        cid = content.get("call_id")
        self.safe_record("approval", content, agent=agent, kind="approval", status=status, started_at=asked.started,
                         ended_at=asked.ended, call_id=cid if isinstance(cid, str) and cid else None)

    def _human_answered(self, agent: str, request: Any, answer: Any, error: BaseException | None, started: float,
                        nested_in: str | None, outer: tuple[Collector, str, str, _CallSlot] | None, *,
                        cut_off: bool = False) -> None:
        try:
            if cut_off:
                self._cut_off = True
            ended = time.time()
            in_call = outer[2] if outer is not None and outer[0] is self else None
            status = "cancelled" if cut_off else "ok" if error is None else failure_status(error)
            if isinstance(request, ToolApprovalRequest):
                if not cut_off and outer is not None and in_call == str(request.tool_call_id):
                    outer[3].asked.append(_Asked(request, answer, error, started, ended))
                    return  # recorded with its call, once AG2 has applied the answer
                call = outer[3].call if outer is not None and in_call == str(request.tool_call_id) else None
                content = steps.human_approval_content(request, call, answer, error, False, cut_off=cut_off,
                                                       nested_in=nested_in)
                self.safe_record("approval", content, agent=agent, kind="approval", status=status,
                                 started_at=started, call_id=str(request.tool_call_id) or None)
                return
            content = steps.human_input_content(request, answer if isinstance(answer, HumanMessage) else None, error,
                                                in_call=in_call, cut_off=cut_off, nested_in=nested_in)
            self.safe_record("human_input", content, agent=agent, kind="human_input", status=status,
                             started_at=started)
        except Exception as e:
            count_failure(self, f"agent {agent!r} human input", e)

    def _gate_decided(self, request: approvals.ToolApprovalRequest, arguments: Any, digest: str, port: str,
                      outcome: str, reason: str | None, edited: bool, started: float, *, agent: str | None,
                      nested_in: str | None, failure: BaseException | None = None, cut_off: bool = False) -> None:
        """A decision of an approval gate (status ``error`` when its port failed; ``cancelled`` when cut off)."""
        try:
            if cut_off and failure is None:
                self._cut_off = True
            status = "ok"
            error = None
            if cut_off:
                status = failure_status(failure) if failure is not None else "cancelled"
                error = error_info(failure) if failure is not None else steps.cut_off_error()
            elif failure is not None:
                status, error = "error", error_info(failure)
            content = steps.approval_content(approval_id=request.approval_id, call_id=request.call_id,
                                             tool=request.tool, arguments=arguments, digest=digest,
                                             port=port, decision=outcome, reason=reason, edited=edited,
                                             run_id=request.run_id, error=error, nested_in=nested_in)
            self.safe_record("approval", content, agent=agent or "approval_gate", kind="approval", status=status,
                             started_at=started, call_id=request.call_id)
        except Exception as e:
            count_failure(self, "an approval decision", e)

    def finalize(self, final_answer: Any = None, *, status: str | None = None) -> dict[str, Any]:
        """Close the chain; every action still under way is first recorded as cut off (``cancelled``).

        A tool call, a question to a human, an approval being decided, a turn, a handoff not
        yet posted or a channel still open at this point is recorded with status
        ``cancelled`` and the receipt's status is then ``incomplete`` (unless ``status``
        says otherwise).
        """
        self._close_open_actions()
        if status is None and self._cut_off:
            status = "incomplete"
        return super().finalize(final_answer, status=status)

    # -------------------------------------------------------------- networks

    def _channel_actor(self, channel_id: str) -> str:
        actor = channel_actor(channel_id)
        with contextlib.suppress(Exception):  # listed once: a second time is a no-op
            self.register_agent(actor, type="ag2.network.Channel")
        return actor

    def _channel_event(self, hub: Any, channel_id: str, kind: str, payload: Any) -> None:
        actor = self._channel_actor(channel_id)
        names: Callable[[Any], str | None] = lambda agent_id: _name(hub, agent_id)  # noqa: E731
        key = ("channel", channel_id)
        if kind == "created":
            self.safe_record("channel_created", steps.channel_task_content(channel_id, payload, names), agent=actor,
                             kind="task")
            self.open_action(key, lambda: self._channel_ended(actor, channel_id, "unfinished", None, names))
        elif kind in ("closed", "expired"):
            if self.close_action(key):
                self._channel_ended(actor, channel_id, kind, payload, names)
        else:
            self.safe_record(f"channel_{kind}", steps.channel_content(channel_id, kind, payload, names), agent=actor,
                             kind="message")

    def _channel_ended(self, actor: str, channel_id: str, kind: str, payload: Any,
                       names: Callable[[Any], str | None]) -> None:
        if kind == "unfinished":
            self._cut_off = True
        else:  # a Handoff the hub never posted did not happen: said, not left open
            with self._ag2_lock:
                waiting = [self._handoffs.pop(k) for k in [k for k in self._handoffs if k[0] == channel_id]]
            for key, target in (entry for entries in waiting for entry in entries):
                if self.close_action(key):
                    self._handoff_cut_off(key, target, reason=f"the channel was {kind} before the hub posted it")
        content, status = steps.channel_end_content(channel_id, kind, payload, names,
                                                    step_statuses=self.status_counts())
        self.safe_record(f"channel_{kind}", content, agent=actor, kind="termination", status=status)

    def _routing_requested(self, turn: _Turn, agent: str, call: Any, outcome: Any) -> None:
        """A tool in a channel returned a ``Handoff``: in flight until the hub posts it (finalize first: cut off)."""
        parts = getattr(getattr(outcome, "result", None), "parts", None) or []
        for part in parts[:1]:
            decision = getattr(part, "data", None)
            if type(decision).__name__ != "Handoff":
                continue
            call_id, tool = str(getattr(call, "id", "")), str(getattr(call, "name", ""))
            target = getattr(decision, "target", None)
            key: _HandoffKey = ("handoff", turn.run_id, agent, tool, call_id)
            with self._ag2_lock:
                self._handoffs.setdefault((turn.run_id, agent, tool), []).append((key, target))
            self.open_action(key, functools.partial(self._handoff_cut_off, key, target))

    def _handoff_cut_off(self, key: _HandoffKey, target: Any, reason: str | None = None) -> None:
        """A ``Handoff`` that was never posted: cut off by finalize(), or its channel ended first (``reason``)."""
        if reason is None:
            self._cut_off = True
        _, channel_id, agent, tool, call_id = key
        content = steps.handoff_cut_off_content(channel_id, agent, tool, call_id, target, reason)
        self.safe_record("handoff", content, agent=agent, kind="handoff", status="cancelled",
                         target=steps.text(target) or None, call_id=call_id or None)

    def _handoff_posted(self, channel_id: str, sender: str | None, tool: Any) -> str | None:
        """The call id of the tool call whose ``Handoff`` this posted envelope carries (None: not observed)."""
        with self._ag2_lock:
            waiting = self._handoffs.get((channel_id, str(sender), str(tool)))
            key = waiting.pop(0)[0] if waiting else None
            if waiting == []:
                del self._handoffs[(channel_id, str(sender), str(tool))]
        if key is None:
            return None
        self.close_action(key)
        return key[4] or None

    def _envelope_posted(self, hub: Any, envelope: Any) -> None:
        channel_id = str(getattr(envelope, "channel_id", "") or "")
        if not channel_id:
            return
        actor = self._channel_actor(channel_id)
        routing = _routing_of(envelope)
        sender = _name(hub, getattr(envelope, "sender_id", None))
        mechanism = "graph"
        if routing is not None:
            kind = routing.get("kind")
            target_name = _name(hub, routing.get("target"))
            if kind == "handoff" and target_name:
                mechanism = "handoff"
                call_id = self._handoff_posted(channel_id, sender, routing.get("tool"))
                content = steps.handoff_content(channel_id, envelope, routing, sender, target_name, call_id)
                self.safe_record("handoff", content, agent=sender or actor, kind="handoff", target=target_name,
                                 call_id=call_id)
            else:
                content = steps.routing_message_content(channel_id, envelope, routing, sender)
                self.safe_record("finish" if kind == "finish" else "routing", content, agent=sender or actor,
                                 kind="message")
        self._next_speaker(hub, channel_id, actor, envelope, mechanism)

    def _next_speaker(self, hub: Any, channel_id: str, actor: str, envelope: Any, mechanism: str) -> None:
        """The speaker the channel's adapter expects next, once per turn it counts."""
        state = hub.adapter_state(channel_id)
        turns = getattr(state, "turn_count", None)
        expected = getattr(state, "expected_next_speaker", None)
        if not isinstance(turns, int) or turns < 1:
            return  # no turn taken yet (invites, opening): the graph's first speaker comes with the first turn
        with self._ag2_lock:
            if self._speakers.get(channel_id) == turns:
                return
            self._speakers[channel_id] = turns
        name = _name(hub, expected)
        content = steps.speaker_content(channel_id, name, turns, getattr(envelope, "envelope_id", None),
                                        getattr(state, "pending_close_reason", None), mechanism)
        self.safe_record("speaker_selection", content, agent=actor, kind="speaker_selection", target=name)

    def _turn_failed(self, hub: Any, channel_id: str, agent_id: str, envelope_id: Any, exc: Any) -> None:
        actor = self._channel_actor(channel_id)
        content = steps.turn_failed_content(channel_id, _name(hub, agent_id), envelope_id, exc)
        self.safe_record("turn_failed", content, agent=actor, kind="error", status="error")

    def _envelope_rejected(self, hub: Any, envelope: Any, reason: Any) -> None:
        channel_id = str(getattr(envelope, "channel_id", "") or "unknown")
        content = steps.rejected_content(envelope, reason, _name(hub, getattr(envelope, "sender_id", None)))
        self.safe_record("envelope_rejected", content, agent=self._channel_actor(channel_id), kind="error",
                         status="error")


def _routing_of(envelope: Any) -> dict[str, Any] | None:
    """The routing decision an envelope carries (``{"kind": "handoff"|"finish", ...}``), or None."""
    for holder in (getattr(envelope, "event_data", None), getattr(envelope, "metadata", None)):
        if isinstance(holder, Mapping):
            routing = holder.get("routing")
            if isinstance(routing, Mapping) and routing.get("kind") is not None:
                return dict(routing)
    return None


def _name(hub: Any, agent_id: Any) -> str | None:
    """A participant's name (its passport's) for an agent id, or the id when the hub cannot say."""
    if not isinstance(agent_id, str) or not agent_id:
        return None
    try:
        name = hub.name_for(agent_id)
    except Exception:
        return agent_id
    return name if isinstance(name, str) and name else agent_id

