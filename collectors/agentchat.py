"""AER-1 receipts for autogen-agentchat 0.7: wrap each agent, run the team as before.

::

    from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector

    collector = AER1AutoGenCollector(goal="Plan the product launch")
    alice = AER1AgentWrapper(AssistantAgent("alice", model_client=client), collector)
    bob = AER1AgentWrapper(AssistantAgent("bob", model_client=client), collector)
    team = RoundRobinGroupChat([alice, bob], max_turns=6)
    result = await collector.run(team, task="Plan the product launch")  # or team.run(...)
    receipt = collector.finalize(result)

:class:`AER1AgentWrapper` is a ``BaseChatAgent`` the team cannot tell from the agent it
wraps: same name, description, produced message types, state, reset/pause/resume/close.
It forwards the inner agent's ``on_messages_stream`` item by item (streaming chunks
included) and records while forwarding; ``on_messages`` drains that same stream, so each
turn is recorded exactly once on both paths. Steps per turn: ``tool_call`` (one per call,
paired with its result by id and, when ids are empty or repeat, by position),
``human_input``, ``code_execution`` and ``approval`` (through the agent's own executor and
approval function, hooked once and shared by every wrapper of the agent), then the final
``message`` or ``handoff`` with the turn's ``thoughts``; ``error`` when the agent raises
(the exception propagates unchanged). Messages reaching a wrapped agent from outside the
wrapped agents are recorded once each, and the actions of unwrapped agents run inside a
wrapped one (SocietyOfMindAgent, AgentTool) are recorded under their own names.

:func:`team_run_stream` (used by ``AER1AutoGenCollector.run``/``run_stream``) adds the
team-level steps, whose actor is the team (``team:<name>/<team id>``): ``task``,
``speaker_selection`` (observed inside the group chat manager when it can be reached, else
by turn order), and ``termination``; teams that are participants of the team get the
same steps, in this chain or (``nested="link"``) in a linked child per run. What is
observable for each team, and how, is written in ``spec/agentchat.md``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import threading
import time
import weakref
from collections import Counter, OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, cast

try:  # the framework first: without it, say which extra to install
    from autogen_agentchat.agents import BaseChatAgent, CodeExecutorAgent, UserProxyAgent
except ImportError as e:
    from ._extras import missing_framework

    raise missing_framework("agentchat") from e
from autogen_agentchat.base import ChatAgent, Response, TaskResult, Team
from autogen_agentchat.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    BaseTextChatMessage,
    HandoffMessage,
    SelectSpeakerEvent,
    TextMessage,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
    UserInputRequestedEvent,
)
from autogen_core import AgentId, CancellationToken, ComponentModel, FunctionCall
from autogen_core.code_executor import CodeBlock, CodeExecutor, CodeResult

from aer1 import Collector
from aer1 import _steps_vocab as vocab
from aer1._bundle import evidence_bytes

from . import _lifecycle as lifecycle
from ._agentchat_internals import read, write
from ._batched import BatchedCollector
from ._collector import MANAGER_TYPE, AER1AutoGenCollector, team_actor
from ._errors import count_failure, error_info, failure_status
from ._state import PerCollector
from .autogen_core import DelegatingExecutor, observe_approval, observe_code_executor, was_call_recorded

__all__ = ["AER1AgentWrapper", "AER1AutoGenCollector", "agent_config", "team_run_stream"]

log = logging.getLogger("aer1")

#: Attribute (on a wrapped agent) holding its hooks, shared by all its wrappers.
_HOOKS_ATTR = "_aer1_hooks"
#: Attribute (on a group chat manager) holding its observation hook.
_HOOK_ATTR = "_aer1_manager_hook"
#: Most model replies kept per speaker selection (a selector retries at most a few times).
MAX_SELECTOR_REPLIES = 16


def _type_name(value: Any) -> str:
    t = type(value)
    return f"{t.__module__}.{t.__qualname__}"


def _callable_name(func: Any) -> str | None:
    if func is None:
        return None
    name = getattr(func, "__qualname__", None) or getattr(type(func), "__qualname__", None)
    module = getattr(func, "__module__", None)
    return f"{module}.{name}" if module and name else str(name)


def _arguments(raw: str) -> tuple[Any, bool]:
    """A tool call's arguments as the vocabulary keeps them (spec/steps.md), and whether they were valid."""
    value, malformed = vocab.parse_arguments(raw)
    return value, not malformed


#: Most classes whose per-class answers (below) are remembered: a run meets a handful.
MAX_CACHED_CLASSES = 512
# message class -> True when its content is its text (checked once per class, not per message)
_PLAIN_TEXT: dict[type, bool] = {}


def _is_plain_text(cls: type) -> bool:
    plain = _PLAIN_TEXT.get(cls)
    if plain is None:
        plain = issubclass(cls, BaseTextChatMessage) and not issubclass(cls, (HandoffMessage, ToolCallSummaryMessage))
        if len(_PLAIN_TEXT) < MAX_CACHED_CLASSES:
            _PLAIN_TEXT[cls] = plain
    return plain


def _message_content(message: BaseChatMessage) -> Any:
    if _is_plain_text(type(message)):
        return cast(BaseTextChatMessage, message).content
    try:
        dumped = message.dump()
    except Exception:  # a custom message that cannot dump: keep its text
        return message.to_text()
    return dumped.get("content", dumped)


# --------------------------------------------------------------------------- identity


def _model_identity(client: Any) -> dict[str, Any]:
    """Client class, model name and model info: never the client's configuration (keys)."""
    name: Any = None
    for attr in ("_create_args", "_raw_config"):
        mapping = read(client, attr)
        if isinstance(mapping, Mapping) and isinstance(mapping.get("model"), str):
            name = mapping["model"]
            break
    if name is None and isinstance(getattr(client, "model", None), str):
        name = client.model
    try:
        info: Any = dict(client.model_info)
    except Exception:  # a client without model info
        info = None
    return {"client": _type_name(client), "model": name, "model_info": info}


#: ``gen_ai.provider.name`` of AutoGen's model clients, by class; another client is named by its class.
_PROVIDERS = {
    "OpenAIChatCompletionClient": "openai",
    "AzureOpenAIChatCompletionClient": "azure.ai.openai",
    "AnthropicChatCompletionClient": "anthropic",
    "AnthropicBedrockChatCompletionClient": "aws.bedrock",
    "OllamaChatCompletionClient": "ollama",
    "AzureAIChatCompletionClient": "azure.ai.inference",
    "SKChatCompletionAdapter": "semantic_kernel",
    "LlamaCppChatCompletionClient": "llama_cpp",
}


def model_facts(agent: Any) -> tuple[str, str | None] | None:
    """(provider, request model) of the agent's model client, or None when it has none (never its configuration)."""
    client = read(agent, "_model_client")
    if client is None:
        return None
    identity = _model_identity(client)
    return _PROVIDERS.get(type(client).__name__, identity["client"]), identity["model"]


def model_of(message: Any, facts: tuple[str, str | None] | None) -> dict[str, Any] | None:
    """The vocabulary's ``model`` member of a reply: who produced it and its token usage (None: no model's)."""
    usage = getattr(message, "models_usage", None)
    if usage is None and facts is None:
        return None
    provider, name = facts if facts is not None else (None, None)
    return vocab.model_reply(provider=provider, request_model=name,
                             input_tokens=getattr(usage, "prompt_tokens", None),
                             output_tokens=getattr(usage, "completion_tokens", None))


def _tool_schemas(agent: Any) -> tuple[list[Any], list[str]]:
    schemas: list[Any] = []
    workbenches: list[str] = []
    for workbench in read(agent, "_workbench") or []:
        tools = read(workbench, "_tools")
        if isinstance(tools, list):
            schemas.extend(getattr(t, "schema", None) for t in tools)
        else:
            workbenches.append(_type_name(workbench))
    if not schemas:
        schemas = [getattr(t, "schema", None) for t in read(agent, "_tools") or []]
    return schemas, workbenches


_ABSENT = object()
_BEHAVIOUR_ATTRS = (
    ("reflect_on_tool_use", "_reflect_on_tool_use"),
    ("max_tool_iterations", "_max_tool_iterations"),
    ("tool_call_summary_format", "_tool_call_summary_format"),
    ("model_client_stream", "_model_client_stream"),
    ("supported_languages", "_supported_languages"),
    ("sources", "_sources"),
    ("max_retries_on_error", "_max_retries_on_error"),
)


def agent_config(agent: Any) -> dict[str, Any]:
    """What identifies an agent's configuration, hashed into its ``config_digest``.

    Class, system message, model (client class, model name, model info), tool and handoff
    schemas, code executor class, approval and input functions by name, and behaviour
    flags. The model client's own configuration is never read: it may hold API keys.
    """
    config: dict[str, Any] = {"class": _type_name(agent)}
    system = read(agent, "_system_messages")
    if isinstance(system, list):
        config["system_message"] = [getattr(m, "content", None) for m in system]
    client = read(agent, "_model_client")
    if client is not None:
        config["model"] = _model_identity(client)
    schemas, workbenches = _tool_schemas(agent)
    if schemas:
        config["tools"] = schemas
    if workbenches:
        config["workbenches"] = workbenches
    handoffs = read(agent, "_handoffs")
    if isinstance(handoffs, Mapping) and handoffs:
        config["handoffs"] = [
            {"name": h.name, "target": h.target, "description": h.description, "message": h.message}
            for h in handoffs.values()
        ]
    executor = _original(agent, "_code_executor")
    if executor is not None:
        while isinstance(getattr(executor, "wrapped_executor", None), CodeExecutor):
            executor = executor.wrapped_executor
        config["code_executor"] = _type_name(executor)
        config["approval_func"] = _callable_name(_original(agent, "_approval_func"))
    if isinstance(agent, UserProxyAgent):
        config["input_func"] = _callable_name(_original(agent, "input_func"))
    for key, attr in _BEHAVIOUR_ATTRS:
        value = read(agent, attr, _ABSENT)
        if value is not _ABSENT:
            config[key] = value
    return config


def _handoff_targets(agent: Any) -> dict[str, str]:
    """Handoff tool name -> target agent, for agents with handoffs (AssistantAgent)."""
    handoffs = read(agent, "_handoffs")
    if not isinstance(handoffs, Mapping):
        return {}
    return {str(name): str(getattr(h, "target", name)) for name, h in handoffs.items()}


# ------------------------------------------------------------------ per-collector state

#: ``AER1AgentWrapper(nested=...)``: inner agents' actions recorded in the same chain ...
NESTED_FLATTEN = "flatten"
#: ... or in a child receipt linked from it.
NESTED_LINK = "link"
#: The actor of a message whose ``source`` is empty (a step's agent cannot be).
UNNAMED_SOURCE = "(no source)"
#: Most message ids remembered per collector to record each inbound message once.
MAX_TRACKED_MESSAGE_IDS = 8192
#: Most inner agents and message ids a step lists for the nested run it contains.
MAX_NESTED_LISTED = 256
#: Most linked child collectors a wrapper keeps observers for (one per nested team run).
MAX_TRACKED_CHILDREN = 64


class _Seen:
    """What one collector knows across wrappers: wrapped agent names, recorded message ids."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.wrapped: set[str] = set()
        self.messages: OrderedDict[str, None] = OrderedDict()

    def add_message(self, message_id: str) -> bool:
        """Remember ``message_id``; False when it was already recorded."""
        with self.lock:
            if message_id in self.messages:
                return False
            self.messages[message_id] = None
            if len(self.messages) > MAX_TRACKED_MESSAGE_IDS:
                self.messages.popitem(last=False)
            return True


_SEEN: PerCollector[_Seen] = PerCollector(_Seen)
#: The wrapped agent whose turn runs in this context, with its collector: a wrapped agent
#: whose turn starts inside it (an inner team's member, an AgentTool's agent) is nested in it.
_RUNNING: ContextVar[tuple[Collector, str] | None] = ContextVar("aer1_running_turn", default=None)
#: Inside a nested team's run recorded into a linked child: (collector, its child) pairs,
#: outermost first. A wrapped agent whose turn runs there records into the child.
_ROUTES: ContextVar[tuple[tuple[Collector, Collector], ...]] = ContextVar("aer1_nested_routes", default=())
#: A nested team run's child collector -> the collector its tree started from (the one the
#: agents are wrapped for).
_ORIGINS: weakref.WeakKeyDictionary[Collector, Collector] = weakref.WeakKeyDictionary()
_seen = _SEEN.of


def recorder(collector: Collector) -> Callable[..., Any]:
    """How hooks record a step into ``collector``: with its next batch when it takes steps so."""
    return collector.defer if isinstance(collector, BatchedCollector) else collector.safe_record


def routed(collector: Collector) -> Collector:
    """Where a turn of an agent wrapped for ``collector`` records in this context (see ``_ROUTES``)."""
    for outer, child in _ROUTES.get():
        if outer is collector:
            collector = child
    return collector


def note_recorded_messages(collector: Collector, message_ids: Sequence[str]) -> None:
    """Messages recorded outside a wrapper (the team's task): not recorded again when received."""
    seen = _seen(collector)
    for message_id in message_ids:
        seen.add_message(message_id)


# ------------------------------------------------------------------------------ turns


class _Pending:
    """A requested tool call awaiting its result: where it stood in its model response."""

    __slots__ = ("call", "index", "repeated", "requested")

    def __init__(self, call: FunctionCall, requested: float, index: int, repeated: bool) -> None:
        self.call = call
        self.requested = requested
        self.index = index
        self.repeated = repeated


class _OpenTurn:
    """A wrapper's turn under way, as its collector holds it (``Collector.open_action``).

    Called by ``finalize()`` when the turn has not ended: the turn (made now if no item
    needed it yet) records its unanswered calls and itself as cancelled.
    """

    __slots__ = ("make", "turn")

    def __init__(self, make: Callable[[], _Turn]) -> None:
        self.make = make
        self.turn: _Turn | None = None

    def __call__(self) -> None:
        turn = self.turn if self.turn is not None else self.make()
        turn.cut_off()


class _Turn:
    """One turn of one agent: pairs its tool calls and records its final message.

    A wrapper's turn may carry items of other agents (a SocietyOfMindAgent's inner team, an
    AgentTool's agent). Those are the inner agents' actions: an inner agent wrapped for the
    same collector records them itself; for an unwrapped one a nested turn records them
    under the inner agent's name. Either way the outer turn's next step names them
    (``nested``).
    """

    __slots__ = ("agent", "child", "child_started", "collector", "handoff_calls", "handoff_targets", "nested",
                 "nested_in", "record", "reply_to", "requests", "seen", "started", "sub_turns", "thoughts",
                 "wrapper")  # fmt: skip

    def __init__(
        self,
        collector: Collector,
        agent: str,
        *,
        wrapper: AER1AgentWrapper | None = None,
        reply_to: str | None = None,
        nested_in: str | None = None,
        seen: _Seen | None = None,
        started: float | None = None,
    ) -> None:
        self.collector = collector
        # The turn's steps: chained with the next batch where the collector takes them so.
        self.record = recorder(collector)
        self.wrapper = wrapper
        self.agent = agent
        self.nested_in = nested_in
        self.seen = seen if seen is not None else _seen(collector)
        self.handoff_targets = wrapper._handoff_targets if wrapper is not None else {}
        self.started = time.time() if started is None else started
        self.reply_to = reply_to
        # Requested calls in request order, until their result is seen (ids may be empty or repeat).
        self.requests: list[_Pending] = []
        self.handoff_calls: list[dict[str, Any]] = []
        self.thoughts: list[Any] = []
        self.nested: dict[str, Any] | None = None
        self.sub_turns: dict[str, _Turn] = {}
        # nested="link": the child collector of the inner run since this turn's last step
        self.child: Collector | None = None
        self.child_started = 0.0

    def handle(self, handler: _Handler, item: Any) -> None:
        """Apply ``handler`` (the one ``_HANDLERS`` holds for the item's class) to ``item``; never raises."""
        try:
            source = getattr(item, "source", self.agent)
            if source != self.agent and isinstance(source, str):
                source = source or UNNAMED_SOURCE
                self._inner_item(handler, source, item)
            else:
                handler(self, item)
        except Exception as e:  # observation never breaks the turn; the receipt says incomplete
            count_failure(self.collector, f"{type(item).__name__} from {self.agent!r}", e)

    # -- items of agents run inside this turn ---------------------------------------

    def _inner_item(self, handler: _Handler, source: str, item: Any) -> None:
        nested = self.nested
        if nested is None:
            nested = self.nested = {"agents": [], "message_ids": [], "items": 0}
        nested["items"] += 1
        if source not in nested["agents"] and len(nested["agents"]) < MAX_NESTED_LISTED:
            nested["agents"].append(source)
        message_id = getattr(item, "id", None)
        if isinstance(message_id, str) and len(nested["message_ids"]) < MAX_NESTED_LISTED:
            nested["message_ids"].append(message_id)
        if source in self.seen.wrapped:
            return  # the inner agent's own wrapper records it
        sub = self.sub_turns.get(source)
        if sub is None:
            collector = self.collector
            if self.wrapper is not None and self.wrapper._link_nested:
                if self.child is None:
                    self.child, self.child_started = self.collector.child(f"nested run in {self.agent}"), time.time()
                collector = self.child
            sub = self.sub_turns[source] = _Turn(collector, source, nested_in=self.agent,
                                                 seen=self.seen if collector is self.collector else None)
        handler(sub, item)

    def _link_child(self) -> str | None:
        """nested="link": close the inner run's child receipt and link it here; its workflow_id."""
        child, self.child = self.child, None
        if child is None:
            return None
        self.sub_turns = {}
        try:
            self.collector.link(child, agent=self.agent, started_at=self.child_started, ended_at=time.time(),
                                verify=False)
        except Exception as e:  # observation never breaks the turn; the receipt says incomplete
            count_failure(self.collector, f"the nested run in {self.agent!r}", e)
            return None
        return child.workflow_id

    def _nesting(self, content: dict[str, Any]) -> dict[str, Any]:
        """Add (once) the inner run seen since the last step, and what this turn is nested in."""
        if self.child is not None:
            linked = self._link_child()
            if linked is not None and self.nested is not None:
                self.nested["linked_workflow_id"] = linked
        if self.nested is not None:
            content.setdefault("agentchat", {})["nested"] = self.nested
            self.nested = None
        if self.nested_in is not None:
            content["nested_in"] = self.nested_in
        return content

    # -- handlers -----------------------------------------------------------------

    def _requested(self, item: ToolCallRequestEvent) -> None:
        now = time.time()
        ids = Counter(call.id for call in item.content)
        for index, call in enumerate(item.content):
            self.requests.append(_Pending(call, now, index, ids[call.id] > 1 or not call.id))

    def _executed(self, item: ToolCallExecutionEvent) -> None:
        now = time.time()
        for result in item.content:
            self._result(result.call_id, result.name, result.content, bool(result.is_error), now)

    def _input_requested(self, item: UserInputRequestedEvent) -> None:
        if self.wrapper is not None:
            self.wrapper._input_request_id = item.request_id

    def _thought(self, item: ThoughtEvent) -> None:
        self.thoughts.append(item.content)

    def _take_request(self, call_id: str, name: str | None) -> _Pending | None:
        """The earliest pending call with this id (and name, when one has it): position breaks ties."""
        fallback: int | None = None
        for i, pending in enumerate(self.requests):
            if pending.call.id == call_id:
                if name is None or pending.call.name == name:
                    return self.requests.pop(i)
                if fallback is None:
                    fallback = i
        return self.requests.pop(fallback) if fallback is not None else None

    def _result(self, call_id: str, name: str | None, result: Any, is_error: bool, now: float) -> None:
        pending = self._take_request(call_id, name)
        call = pending.call if pending is not None else None
        label = name or (call.name if call is not None else "") or "tool"
        if label in self.handoff_targets:
            arguments = _arguments(call.arguments)[0] if call is not None else None
            self.handoff_calls.append(
                {"name": label, "call_id": call_id, "target": self.handoff_targets[label], "arguments": arguments,
                 "result": result}
            )  # fmt: skip
            return
        if was_call_recorded(self.collector, call_id, name=label):
            return  # the observed tool recorded it, with its own timing
        extras: dict[str, Any] | None = None
        if pending is not None and pending.repeated:
            # empty or repeated ids: the id alone says nothing
            extras = {"call_index": pending.index, "paired_by": "position"}
        content = vocab.tool_call(
            "agentchat", name=label, call_id=call_id, arguments=call.arguments if call is not None else None,
            result=None if is_error else result,
            error=vocab.tool_failure(call.arguments if call is not None else None, result) if is_error else None,
            extras=extras,
        )
        self.record(
            label,
            self._nesting(content),
            agent=self.agent,
            kind="tool_call",
            status="error" if is_error else "ok",
            started_at=pending.requested if pending is not None else now,
            ended_at=now,
            call_id=call_id or None,
        )

    def _chat_item(self, message: BaseChatMessage) -> None:
        """A chat message in the stream: recorded for an inner (unwrapped) agent only."""
        if self.wrapper is not None or not self.seen.add_message(message.id):
            return
        extras: dict[str, Any] = {"message_type": type(message).__name__}
        if self.thoughts:
            extras["thoughts"], self.thoughts = self.thoughts, []
        content = vocab.message("agentchat", content=_message_content(message), message_id=message.id,
                                role="assistant", model=model_of(message, None), extras=extras)
        self.record(
            "message", self._nesting(content), agent=self.agent, kind="message", started_at=self.started
        )
        self.started = time.time()

    def _response(self, response: Response) -> None:
        message = response.chat_message
        if message.source not in self.seen.wrapped:  # a wrapped agent's message is never recorded as received
            self.seen.add_message(message.id)
        cls = type(message)
        if _is_plain_text(cls):  # the common case: a text message is no handoff
            content: Any = cast(BaseTextChatMessage, message).content
        elif isinstance(message, HandoffMessage):
            self._handoff(message)
            return
        else:
            content = _message_content(message)
        extras: dict[str, Any] = {"message_type": cls.__name__}
        if self.thoughts:
            extras["thoughts"] = list(self.thoughts)  # the step keeps what it was given
        facts = self.wrapper._model_facts if self.wrapper is not None else None
        step = vocab.message("agentchat", content=content, message_id=message.id, role="assistant",
                             model=model_of(message, facts), extras=extras)
        self.record(
            "message",
            self._nesting(step),
            agent=self.agent,
            kind="message",
            started_at=self.started,
            reply_to=self.reply_to,
        )

    def _handoff(self, message: HandoffMessage) -> None:
        # Calls requested but whose result never came back still belong to the handoff.
        for pending in [p for p in self.requests if p.call.name in self.handoff_targets]:
            self.requests.remove(pending)
            call = pending.call
            self.handoff_calls.append(
                {"name": call.name, "call_id": call.id, "target": self.handoff_targets[call.name],
                 "arguments": _arguments(call.arguments)[0], "result": None}
            )  # fmt: skip
        selected = next((i for i, c in enumerate(self.handoff_calls) if c["target"] == message.target), None)
        selected_call_id = self.handoff_calls[selected]["call_id"] if selected is not None else None
        extras: dict[str, Any] = {
            "message_type": type(message).__name__,
            "context": message.context,
            "handoff_calls": list(self.handoff_calls),
            "selected_call_id": selected_call_id,
            "selected_call_index": selected,
        }
        if self.thoughts:
            extras["thoughts"] = list(self.thoughts)
        content = vocab.handoff("agentchat", target=message.target, content=message.content, message_id=message.id,
                                call_id=selected_call_id, extras=extras)
        self.record(
            "handoff", self._nesting(content), agent=self.agent, kind="handoff", started_at=self.started,
            reply_to=self.reply_to, target=message.target or None,
        )  # fmt: skip

    def failed(self, exc: BaseException) -> None:
        """The agent raised (or was cancelled): record unanswered calls, then the error."""
        status = failure_status(exc)
        for sub in self.sub_turns.values():
            sub.unanswered(exc, status)
        self.unanswered(exc, status)
        self._error_step(error_info(exc), status)

    def cut_off(self) -> None:
        """finalize() came while the turn ran: its unanswered calls and the turn itself are recorded cancelled."""
        error = vocab.error_code(vocab.CANCELLED, vocab.UNFINISHED_MESSAGE)
        for sub in self.sub_turns.values():
            sub.unanswered(None, "cancelled", error)
        self.unanswered(None, "cancelled", error)
        self._error_step(error, "cancelled")

    def _error_step(self, error: dict[str, Any], status: str) -> None:
        extras = {"thoughts": self.thoughts} if self.thoughts else None
        content = vocab.error_step("agentchat", error=error, phase="reply", extras=extras)
        self.collector.safe_record(
            "error", self._nesting(content), agent=self.agent, kind="error", status=status, started_at=self.started
        )

    def unanswered(self, exc: BaseException | None, status: str, error: dict[str, Any] | None = None) -> None:
        """Record the calls requested in this turn whose result never came (``exc``: what ended the turn)."""
        if error is None:
            error = error_info(exc) if exc is not None else vocab.error_code(vocab.CANCELLED, "no result was observed")
        for pending in self.requests:
            call = pending.call
            if call.name in self.handoff_targets or was_call_recorded(self.collector, call.id, name=call.name):
                continue
            extras = {"call_index": pending.index} if pending.repeated else None
            content = vocab.tool_call("agentchat", name=call.name, call_id=call.id, arguments=call.arguments,
                                      result=None, error=error, nested_in=self.nested_in, extras=extras)
            self.collector.safe_record(
                call.name or "tool", content, agent=self.agent, kind="tool_call", status=status,
                started_at=pending.requested, call_id=call.id or None,
            )  # fmt: skip
        self.requests.clear()


_Handler = Callable[[_Turn, Any], None]
# item class -> what a turn does with such items (None: forward only); found once per class.
_HANDLERS: dict[type, _Handler | None] = {}


def _find_handler(cls: type) -> _Handler | None:
    """What a turn does with items of class ``cls`` (None: forward only), remembered per class."""
    handler: _Handler | None = None
    if issubclass(cls, Response):
        handler = _Turn._response
    elif issubclass(cls, ToolCallRequestEvent):
        handler = _Turn._requested
    elif issubclass(cls, ToolCallExecutionEvent):
        handler = _Turn._executed
    elif issubclass(cls, UserInputRequestedEvent):
        handler = _Turn._input_requested
    elif issubclass(cls, ThoughtEvent):
        handler = _Turn._thought
    elif issubclass(cls, BaseChatMessage):
        handler = _Turn._chat_item
    if len(_HANDLERS) < MAX_CACHED_CLASSES:
        _HANDLERS[cls] = handler
    return handler


_RESPONSE: _Handler = _Turn._response


def _quick_response(response: Any, collector: Collector, seen: _Seen, agent: str, started: float,
                    reply_to: str | None, nested_in: str | None, facts: tuple[str, str | None] | None) -> bool:
    """A wrapper's turn's final message when no item before it needed the turn: the step
    ``_Turn._response`` records (no thoughts, calls or inner run can precede it), made without a ``_Turn``.

    ``response`` is the ``Response`` item. False, with nothing done, for a message that is not
    plain text (a handoff...): the turn records it.
    """
    try:
        message = response.chat_message
        cls = type(message)
        if not _is_plain_text(cls):
            return False
        if message.source not in seen.wrapped:
            seen.add_message(message.id)
        step = vocab.message("agentchat", content=cast(BaseTextChatMessage, message).content, message_id=message.id,
                             role="assistant", model=model_of(message, facts), nested_in=nested_in,
                             extras={"message_type": cls.__name__})
        recorder(collector)("message", step, agent=agent, kind="message", started_at=started, reply_to=reply_to)
    except Exception as e:  # observation never breaks the turn; the receipt says incomplete
        count_failure(collector, f"{type(response).__name__} from {agent!r}", e)
    return True

# ------------------------------------------------------------------ hooks on an agent


class _DispatchingExecutor(DelegatingExecutor):
    """The code executor a wrapped ``CodeExecutorAgent`` holds: runs through the active wrapper."""

    def __init__(self, hooks: _AgentHooks, original: CodeExecutor) -> None:
        self._aer1_hooks = hooks
        self._aer1_inner = original

    async def execute_code_blocks(
        self, code_blocks: list[CodeBlock], cancellation_token: CancellationToken
    ) -> CodeResult:
        executor = cast(CodeExecutor, self._aer1_hooks.target(_EXECUTOR, self._aer1_inner))
        return await executor.execute_code_blocks(code_blocks, cancellation_token)


_EXECUTOR, _APPROVAL, _INPUT = "_code_executor", "_approval_func", "input_func"


class _AgentHooks:
    """The one set of hooks on a wrapped agent, shared by every wrapper of it.

    Installed at the first wrap and never moved: the agent's code executor, approval
    function and input function are replaced by dispatchers (same sync/async kind) that
    call the observer of the wrapper whose turn is running, innermost first, and the
    original outside any wrapper's turn. So each wrapper (and each collector) records
    exactly what happens in its own turns, however often the agent is wrapped.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.active: list[AER1AgentWrapper] = []  # wrappers whose turn is running, innermost last
        self.originals: dict[str, Any] = {}
        self.dispatchers: dict[str, Any] = {}
        if isinstance(inner, CodeExecutorAgent):
            executor = read(inner, _EXECUTOR)
            if executor is not None:
                self._install(_EXECUTOR, _DispatchingExecutor(self, executor), executor)
            approval = read(inner, _APPROVAL)
            if approval is not None:
                self._install(_APPROVAL, self._dispatch(_APPROVAL, approval), approval)
        if isinstance(inner, UserProxyAgent):
            self._install(_INPUT, self._dispatch(_INPUT, inner.input_func), inner.input_func)

    def _install(self, attr: str, dispatcher: Any, original: Any) -> None:
        self.originals[attr] = original
        self.dispatchers[attr] = dispatcher
        _set(self.inner, attr, dispatcher)

    def target(self, attr: str, original: Any) -> Any:
        """The running wrapper's observer of ``attr``, or ``original`` outside any wrapper's turn."""
        if self.active:
            return self.active[-1]._observers.get(attr, original)
        return original

    def _dispatch(self, attr: str, func: Callable[..., Any]) -> Callable[..., Any]:
        hooks = self
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def dispatch_async(*args: Any, **kwargs: Any) -> Any:
                return await hooks.target(attr, func)(*args, **kwargs)

            return dispatch_async

        @functools.wraps(func)
        def dispatch(*args: Any, **kwargs: Any) -> Any:
            return hooks.target(attr, func)(*args, **kwargs)

        return dispatch

    @contextlib.contextmanager
    def unhooked(self) -> Iterator[None]:
        """The agent exactly as it was built, for the duration of the block."""
        for attr, original in self.originals.items():
            _set(self.inner, attr, original)
        try:
            yield
        finally:
            for attr, dispatcher in self.dispatchers.items():
                _set(self.inner, attr, dispatcher)


def _hooks(inner: Any) -> _AgentHooks:
    hooks = getattr(inner, _HOOKS_ATTR, None)
    if not (isinstance(hooks, _AgentHooks) and hooks.inner is inner):
        hooks = _AgentHooks(inner)
        # getattr/object.__setattr__, never ``inner.__dict__``: reading an instance's __dict__
        # turns off CPython's fast attribute reads on that agent for all its later turns.
        object.__setattr__(inner, _HOOKS_ATTR, hooks)
    return hooks


def _original(agent: Any, attr: str) -> Any:
    """``agent.<attr>`` as the agent was built (before any wrapper's hook)."""
    hooks = getattr(agent, _HOOKS_ATTR, None)
    if isinstance(hooks, _AgentHooks) and hooks.inner is agent and attr in hooks.originals:
        return hooks.originals[attr]
    return getattr(agent, attr, None) if attr == _INPUT else read(agent, attr)


def _set(agent: Any, attr: str, value: Any) -> None:
    """Set a hooked attribute: ``input_func`` is public, the others are declared private names."""
    if attr == _INPUT:
        setattr(agent, attr, value)
    else:
        write(agent, attr, value)


# ---------------------------------------------------------------------------- wrapper


class AER1AgentWrapper(BaseChatAgent):
    """A chat agent recording the turns of the agent it wraps into an AER-1 receipt.

    The team sees the wrapped agent: same name and description, produced message
    types, state (``save_state``/``load_state``), ``on_reset``, ``on_pause``,
    ``on_resume`` and ``close``; other attributes are read from the wrapped agent.
    Resets and saved or loaded states are recorded as ``lifecycle`` steps (spec/agentchat.md).
    The agent is listed once in the receipt (type, description, configuration digest).

    For a ``CodeExecutorAgent`` the wrapper observes the agent's code executor and
    approval function (``code_execution`` and ``approval`` steps); for a
    ``UserProxyAgent`` its ``input_func`` (``human_input`` steps). These are recorded
    during the wrapper's own turns only: an agent wrapped twice (again, or for a second
    collector) records each turn in the wrapper that ran it. Observing tools with their
    own timing is opt-in: build the agent with ``observe_tools(tools, collector, agent=name)``.

    ``nested``: what happens to the actions of agents the wrapped agent runs (a
    SocietyOfMindAgent's team, an AgentTool's agent) when they are not wrapped themselves.
    ``"flatten"`` (the default) records them in this collector under their own names;
    ``"link"`` records each inner run (what happened between two steps of this agent) into a
    child collector whose receipt is linked, with a ``link`` step, just before the step that
    follows it (spec/linked.md); save the tree with ``collector.save_bundle(folder)``.

    ``dump_component()`` returns the wrapped agent's component model (observation is
    not configuration: wrap the loaded agent again), and raises what AutoGen raises.
    """

    def __init__(self, agent: ChatAgent, collector: Collector, *, nested: str = NESTED_FLATTEN) -> None:
        if nested not in (NESTED_FLATTEN, NESTED_LINK):
            raise ValueError(f"nested must be {NESTED_FLATTEN!r} or {NESTED_LINK!r}, got {nested!r}")
        if isinstance(agent, AER1AgentWrapper):
            raise ValueError(f"agent {agent.name!r} is already wrapped by AER1AgentWrapper")
        if not isinstance(agent, ChatAgent):
            raise TypeError(f"AER1AgentWrapper wraps a ChatAgent, not {_type_name(agent)}")
        if not isinstance(collector, Collector):
            raise TypeError(f"AER1AgentWrapper needs an aer1 Collector, not {_type_name(collector)}")
        super().__init__(name=agent.name, description=agent.description)
        self._inner = agent
        self._collector = collector
        self._link_nested = nested == NESTED_LINK
        # The collector when it also records team runs (turn order, pending termination).
        self._team_collector = collector if isinstance(collector, AER1AutoGenCollector) else None
        self._handoff_targets = _handoff_targets(agent)
        self._input_request_id: str | None = None
        self._model_facts = model_facts(agent)
        self._identity: dict[str, Any] = {"type": type(agent).__name__, "description": agent.description,
                                          "config": agent_config(agent)}
        collector.register_agent(agent.name, **self._identity)
        lifecycle.note_config(collector, agent.name, self._identity["config"])
        lifecycle.claim(agent, collector, subject="agent", name=agent.name, detected="wrap")
        self._seen = _seen(collector)
        with self._seen.lock:
            self._seen.wrapped.add(agent.name)
        self._hooks = _hooks(agent)
        self._observers = self._base_observers = self._make_observers(collector)
        # What every turn reads: collector, seen, team collector, name, the agent's running wrappers, the agent.
        self._fixed: tuple[Collector, _Seen, AER1AutoGenCollector | None, str, list[AER1AgentWrapper], ChatAgent] = (
            collector, self._seen, self._team_collector, agent.name, self._hooks.active, agent)
        # nested teams recorded into linked children: observers per child collector, and the
        # child this agent's turns go to while the nested team it belongs to runs
        self._routed_observers: dict[int, tuple[Collector, dict[str, Any]]] = {}
        self._route: AER1AutoGenCollector | None = None

    # -- the wrapped agent -------------------------------------------------------

    @property
    def wrapped_agent(self) -> ChatAgent:
        """The agent this wrapper records."""
        return self._inner

    @property
    def collector(self) -> Collector:
        """The collector this wrapper records into."""
        return self._collector

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return self._inner.produced_message_types

    def __getattr__(self, item: str) -> Any:
        # Called only for names the wrapper lacks; ``_inner`` itself missing means __init__ has
        # not set it yet. (Reading ``self.__dict__`` here would slow every later attribute read.)
        if item == "_inner" or item.startswith("__"):
            raise AttributeError(item)
        return getattr(self._inner, item)

    def __repr__(self) -> str:
        return f"AER1AgentWrapper({self._inner!r})"

    # -- turns -----------------------------------------------------------------

    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        """Drain :meth:`on_messages_stream` and return its ``Response`` (recorded once)."""
        response: Response | None = None
        async for item in self.on_messages_stream(messages, cancellation_token):
            if isinstance(item, Response):
                response = item
        if response is None:
            raise RuntimeError(f"agent {self.name!r} ended its turn without a Response")
        return response

    async def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        """Forward the wrapped agent's stream item by item, recording as items pass."""
        # Read at once: every attribute read on a wrapper passes its __getattr__ hook first.
        base, seen, team_collector, name, active, inner = self._fixed
        collector, route = base, self._route
        if route is not None or _ROUTES.get():  # in a nested team recorded into a linked child
            collector = route if route is not None else routed(base)
            if collector is not base:
                seen = self._enter_child(collector)
                team_collector = collector if isinstance(collector, AER1AutoGenCollector) else None
        inbound = False
        try:  # most turns receive only wrapped agents' messages: nothing to record
            wrapped = seen.wrapped
            for message in messages:
                if message.source not in wrapped:
                    inbound = True
                    break
        except Exception:  # an odd message: _inbound counts what it cannot record
            inbound = True
        if inbound:
            self._inbound(messages, collector, seen)
        reply_to = (messages[-1].source or None) if messages else None
        outer = _RUNNING.get()
        nested_in = outer[1] if outer is not None and outer[0] is collector and outer[1] != name else None
        # The turn's state is made at its first item that needs it: a turn whose first handled
        # item is its final text message (most turns) records that step without it.
        turn: _Turn | None = None
        started = time.time()
        # finalize() before the turn ends records it cut off (its unanswered calls, the turn) instead
        opened = _OpenTurn(lambda: _Turn(collector, name, wrapper=self, reply_to=reply_to, nested_in=nested_in,
                                         seen=seen, started=started))
        collector.open_action(opened, opened)
        running = _RUNNING.set((collector, name))
        active.append(self)
        if team_collector is not None:
            team_collector._ac_turn_started(self)
        stream = inner.on_messages_stream(messages, cancellation_token)
        exhausted = False
        handlers = _HANDLERS
        try:
            async for item in stream:
                # Most items (streaming chunks) are only forwarded: one lookup each.
                try:
                    handler = handlers[type(item)]
                except KeyError:
                    handler = _find_handler(type(item))
                if handler is not None:
                    if turn is None:
                        if handler is _RESPONSE and _quick_response(item, collector, seen, name, started, reply_to,
                                                                    nested_in, self._model_facts):
                            yield item
                            continue
                        turn = opened.turn = _Turn(collector, name, wrapper=self, reply_to=reply_to,
                                                   nested_in=nested_in, seen=seen, started=started)
                    turn.handle(handler, item)
                yield item
            exhausted = True
        except GeneratorExit:
            raise  # the caller stopped reading: nothing was decided by the agent
        except BaseException as exc:
            exhausted = True  # the inner stream raised: it is finished
            if collector.close_action(opened):  # else finalize() already recorded the turn as cut off
                if turn is None:
                    turn = _Turn(collector, name, wrapper=self, reply_to=reply_to, nested_in=nested_in, seen=seen,
                                 started=started)
                turn.failed(exc)
            raise
        finally:
            collector.close_action(opened)
            try:
                _RUNNING.reset(running)
            except ValueError:  # closed from another context: nothing to undo there
                pass
            if active and active[-1] is self:  # the common case: this turn is the innermost
                active.pop()
            elif self in active:
                del active[len(active) - 1 - active[::-1].index(self)]
            if collector is not base:
                self._observers = self._base_observers
            if not exhausted:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()

    def _enter_child(self, child: Collector) -> _Seen:
        """A turn recorded into ``child`` (a nested team's linked child): agent listed, observers set."""
        entry = self._routed_observers.get(id(child))
        if entry is None or entry[0] is not child:
            with contextlib.suppress(Exception):  # finalized already: its steps are counted late
                child.register_agent(self.name, **self._identity)
            entry = self._routed_observers[id(child)] = (child, self._make_observers(child))
            if len(self._routed_observers) > MAX_TRACKED_CHILDREN:
                del self._routed_observers[next(iter(self._routed_observers))]
        self._observers = entry[1]
        seen = _seen(child)
        with seen.lock:
            seen.wrapped.update(self._seen.wrapped)
        return seen

    def _inbound(self, messages: Sequence[BaseChatMessage], collector: Collector, seen: _Seen) -> None:
        """Record, once each by id, messages reaching this agent from outside the wrapped agents."""
        wrapped = seen.wrapped
        for message in messages:
            try:
                if message.source in wrapped or not seen.add_message(message.id):
                    continue
                now = time.time()
                recorder(collector)(
                    "message",
                    vocab.message("agentchat", content=_message_content(message), message_id=message.id, role=None,
                                  extras={"message_type": type(message).__name__, "observed_by": "inbound",
                                          "received_by": self.name}),
                    agent=message.source or UNNAMED_SOURCE, kind="message", started_at=now, ended_at=now,
                )  # fmt: skip
            except Exception as e:  # observation never breaks the turn; the receipt says incomplete
                count_failure(collector, f"a message to {self.name!r}", e)

    # -- delegated lifecycle -----------------------------------------------------

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        """The agent's reset, recorded as a ``lifecycle`` step (its configuration checked after)."""
        await lifecycle.observed(self._collector, self.name, "reset", self._inner.on_reset(cancellation_token),
                                 after=self._check_config)

    async def on_pause(self, cancellation_token: CancellationToken) -> None:
        await self._inner.on_pause(cancellation_token)

    async def on_resume(self, cancellation_token: CancellationToken) -> None:
        await self._inner.on_resume(cancellation_token)

    async def save_state(self) -> Mapping[str, Any]:
        """The agent's state, unchanged; recorded as a ``lifecycle`` step with its digest."""
        return await lifecycle.observed(self._collector, self.name, "save_state", self._inner.save_state())

    async def load_state(self, state: Mapping[str, Any]) -> None:
        """Load the agent's state; recorded as a ``lifecycle`` step with its digest (configuration checked after)."""
        await lifecycle.observed(self._collector, self.name, "load_state", self._inner.load_state(state), state=state,
                                 after=self._check_config)

    def _check_config(self) -> None:
        lifecycle.check_config(self._collector, self.name, agent_config(self._inner))

    async def close(self) -> None:
        await self._inner.close()

    def dump_component(self) -> ComponentModel:
        """The wrapped agent's component model, as if it were not wrapped (same exceptions)."""
        with self._hooks.unhooked():
            return self._inner.dump_component()

    # -- this wrapper's observers -----------------------------------------------

    def _make_observers(self, collector: Collector) -> dict[str, Any]:
        """What this wrapper's turns recording into ``collector`` run instead of the agent's executor and functions."""
        originals = self._hooks.originals
        observers: dict[str, Any] = {}
        if _EXECUTOR in originals:
            observers[_EXECUTOR] = observe_code_executor(originals[_EXECUTOR], collector, agent=self.name)
        if _APPROVAL in originals:
            observers[_APPROVAL] = observe_approval(originals[_APPROVAL], collector, agent=self.name)
        if _INPUT in originals:
            observers[_INPUT] = self._observe_input(originals[_INPUT], collector)
        return observers

    def _observe_input(self, func: Callable[..., Any], collector: Collector) -> Callable[..., Any]:
        """``input_func`` recording a ``human_input`` step (same sync/async kind)."""
        wrapper = self
        if inspect.iscoroutinefunction(func):
            async_func = cast(Callable[[str, CancellationToken | None], Awaitable[str]], func)

            async def observed_input_async(prompt: str, cancellation_token: CancellationToken | None) -> str:
                started, request_id = time.time(), wrapper._input_request_id
                try:
                    value = await async_func(prompt, cancellation_token)
                except BaseException as exc:
                    wrapper._record_input(collector, prompt, request_id, started, None, exc)
                    raise
                wrapper._record_input(collector, prompt, request_id, started, value, None)
                return value

            return observed_input_async

        sync_func = cast(Callable[[str], str], func)

        def observed_input(prompt: str) -> str:
            started, request_id = time.time(), wrapper._input_request_id
            try:
                value = sync_func(prompt)
            except BaseException as exc:
                wrapper._record_input(collector, prompt, request_id, started, None, exc)
                raise
            wrapper._record_input(collector, prompt, request_id, started, value, None)
            return value

        return observed_input

    def _record_input(
        self, collector: Collector, prompt: str, request_id: str | None, started: float, value: Any,
        exc: BaseException | None,
    ) -> None:
        content = vocab.human_input("agentchat", prompt=prompt, input=value, request_id=request_id,
                                    error=error_info(exc) if exc is not None else None)
        status = "ok" if exc is None else failure_status(exc)
        collector.safe_record(
            "human_input", content, agent=self.name, kind="human_input", status=status, started_at=started
        )


# ------------------------------------------------------------------------ team runs


#: AgentChat's selection mechanisms under the vocabulary's name (spec/steps.md); others keep theirs.
_MECHANISMS = {"selector_func": "function"}


class _TeamRun:
    """One ``collector.run_stream(team)``: team identity and where selections are seen."""

    def __init__(self, collector: AER1AutoGenCollector, team: Any) -> None:
        self.collector = collector
        self.team_obj = team
        name = str(getattr(team, "name", type(team).__name__))
        team_id = read(team, "_team_id")
        team_id = team_id if isinstance(team_id, str) and team_id else None
        self.team: dict[str, Any] = {"team": name, "team_id": team_id, "team_type": type(team).__name__}
        self.team_identity = {"name": name, "id": team_id, "type": type(team).__name__}
        #: The actor of this team's team-level steps: no participant can be named so.
        self.actor = team_actor(name, team_id)
        participants = read(team, "_participants")
        self.wrapped = [p for p in participants or [] if isinstance(p, AER1AgentWrapper)]
        self.hook: _ManagerHook | None = None

    def record_selection(
        self,
        names: list[str] | None,
        details: Mapping[str, Any],
        *,
        observed_by: str,
        status: str = "ok",
        started_at: float | None = None,
    ) -> None:
        extras: dict[str, Any] = {**self.team, **details, "observed_by": observed_by}
        mechanism = extras.pop("mechanism", None)
        replies = extras.pop("model_replies", None)
        error = extras.pop("error", None)
        content = vocab.speaker_selection(
            "agentchat", selected=names or [], mechanism=_MECHANISMS.get(mechanism, mechanism),
            model_replies=replies, error=error, extras=extras)
        target = names[0] if names and len(names) == 1 and names[0] else None
        # A selector's or orchestrator's notes hold what user functions returned: recorded at once.
        batched = self.hook is None or not self.hook.takes_notes
        self.collector._ac_record_team_step(
            "speaker_selection", content, status=status, started_at=started_at, target=target, actor=self.actor,
            batched=batched,
        )

    def turn_started(self, agent: str, now: float) -> None:
        """Turn order: used only when the manager's own selection cannot be observed."""
        if self.hook is None:
            self.record_selection(
                [agent], {"mechanism": None, "note": "selection mechanism not observed"},
                observed_by="turn_order", started_at=now,
            )  # fmt: skip

    def watches_events(self) -> bool:
        """True when selections are seen in the team's events (nothing else observes them)."""
        return self.hook is None and not self.wrapped

    def observe(self, item: Any) -> None:
        if self.hook is None and not self.wrapped and isinstance(item, SelectSpeakerEvent):
            self.record_selection(
                list(item.content), {"mechanism": None, "manager": item.source}, observed_by="SelectSpeakerEvent"
            )

    def manager_message(self, message: BaseChatMessage) -> None:
        note_recorded_messages(self.collector, [message.id])
        self.collector._ac_record_team_step(
            "message",
            vocab.message("agentchat", content=_message_content(message), message_id=message.id, role="assistant",
                          extras={**self.team, "manager": message.source, "message_type": type(message).__name__}),
            actor=self.actor,
        )


def _class_names(obj: Any) -> set[str]:
    return {c.__name__ for c in type(obj).__mro__}


class _ModelProbe:
    """Stands in for a manager's model client: same answers, replies noted for the receipt."""

    def __init__(self, inner: Any, hook: _ManagerHook) -> None:
        self._aer1_inner = inner
        self._aer1_hook = hook

    def __getattr__(self, item: str) -> Any:
        if item.startswith("_aer1_"):
            raise AttributeError(item)
        return getattr(self._aer1_inner, item)

    async def create(self, *args: Any, **kwargs: Any) -> Any:
        result = await self._aer1_inner.create(*args, **kwargs)
        self._aer1_hook.note_reply(getattr(result, "content", None))
        return result

    async def create_stream(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        async for chunk in self._aer1_inner.create_stream(*args, **kwargs):
            if not isinstance(chunk, str):
                self._aer1_hook.note_reply(getattr(chunk, "content", None))
            yield chunk


class _ManagerHook:
    """Observation points inside one group chat manager instance (installed once).

    ``select_speaker`` is timed and its answer recorded with the mechanism that made it;
    ``publish_message`` shows requests to speak that no ``select_speaker`` call made
    (MagenticOne's orchestrator) and the chat messages the manager writes itself. A
    selector's ``selector_func``, ``candidate_func`` and model client are observed to say
    which of them chose. Everything is forwarded unchanged; outside a collector run the
    hook only forwards.
    """

    def __init__(self, manager: Any) -> None:
        self.manager = manager
        self.run: _TeamRun | None = None
        names = _class_names(manager)
        self.selector = "SelectorGroupChatManager" in names
        self.magentic = "MagenticOneOrchestrator" in names
        self.round_robin = "RoundRobinGroupChatManager" in names
        self.swarm = "SwarmGroupChatManager" in names
        self.graph = "GraphFlowManager" in names
        self.details: dict[str, Any] = {}
        self.replies: list[Any] = []
        self.expected: Counter[str] = Counter()  # selections recorded, their requests not yet seen
        self.last_manager_message: str | None = None
        self._select = manager.select_speaker
        self._publish = manager.publish_message
        manager.select_speaker = self.select_speaker
        # Managers AutoGen ships select every speaker in select_speaker and write no chat
        # messages; any other one (MagenticOne, custom) is also watched where it publishes.
        self.watch_publish = not (self.round_robin or self.selector or self.swarm or self.graph)
        if self.watch_publish:
            manager.publish_message = self.publish_message
        # Only a selector's functions and a selector's or orchestrator's model write notes.
        self.takes_notes = self.selector or self.magentic
        if self.selector:
            for attr, key in (("_selector_func", "selector_func"), ("_candidate_func", "candidate_func")):
                func = read(manager, attr)
                if func is not None:
                    write(manager, attr, self._observe_func(func, key))
        if (self.selector or self.magentic) and read(manager, "_model_client") is not None:
            write(manager, "_model_client", _ModelProbe(read(manager, "_model_client"), self))
        # Not ``manager.__dict__``: see AER1AgentWrapper._instrument (fast attribute reads).
        object.__setattr__(manager, _HOOK_ATTR, self)

    def start(self, run: _TeamRun) -> None:
        self.run = run
        self.details, self.replies, self.expected = {}, [], Counter()

    def note_reply(self, content: Any) -> None:
        if self.run is not None and len(self.replies) < MAX_SELECTOR_REPLIES:
            self.replies.append(content)

    def _observe_func(self, func: Callable[..., Any], key: str) -> Callable[..., Any]:
        """``selector_func``/``candidate_func`` noting what it returned (same sync/async kind)."""
        hook = self
        name = _callable_name(func)
        if inspect.iscoroutinefunction(func):

            async def observed_async(thread: Any) -> Any:
                value = await func(thread)
                hook.details[key] = {"name": name, "returned": value}
                return value

            return observed_async

        def observed(thread: Any) -> Any:
            value = func(thread)
            hook.details[key] = {"name": name, "returned": value}
            return value

        return observed

    # -- select_speaker ------------------------------------------------------------

    async def select_speaker(self, thread: Sequence[Any]) -> Any:
        run = self.run
        if run is None:
            return await self._select(thread)
        started = time.time()
        if self.takes_notes:
            self.details, self.replies = {}, []
        before = self._safely(self._before, thread) or {}
        try:
            result = await self._select(thread)
        except BaseException as exc:
            run.record_selection(
                None, {**before, **self.details, "error": error_info(exc)},
                observed_by="select_speaker", status=failure_status(exc), started_at=started,
            )  # fmt: skip
            raise
        names = [result] if isinstance(result, str) else [str(n) for n in result]
        details = before
        if self.selector or self.graph:
            details = self._safely(self._after, names, before) or before
        if names:
            run.record_selection(names, details, observed_by="select_speaker", started_at=started)
            if self.watch_publish:  # only the publish observer reads (and empties) the counter
                self.expected.update(names)
        return result

    def _safely(self, func: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any] | None:
        try:
            return func(*args)
        except Exception as e:  # details are best effort; the selection is still recorded
            log.debug("aer1: selection details unavailable: %s: %s", type(e).__name__, e)
            return None

    def _before(self, thread: Sequence[Any]) -> dict[str, Any]:
        manager = self.manager
        if self.round_robin:
            return {"mechanism": "round_robin", "position": read(manager, "_next_speaker_index")}
        if self.swarm:
            for message in reversed(thread):
                if isinstance(message, HandoffMessage):
                    return {
                        "mechanism": "handoff",
                        "handoff": {"from": message.source, "target": message.target, "message_id": message.id},
                    }
            return {"mechanism": "current_speaker", "current_speaker": read(manager, "_current_speaker")}
        if self.selector:
            return {
                "previous_speaker": read(manager, "_previous_speaker"),
                "allow_repeated_speaker": read(manager, "_allow_repeated_speaker"),
            }
        if self.graph:
            after = next((m.source for m in reversed(thread) if isinstance(m, BaseChatMessage)), None)
            return {"mechanism": "graph", "after": after, "ready": list(read(manager, "_ready", ()))}
        return {"mechanism": f"{type(manager).__name__}.select_speaker"}

    def _after(self, names: list[str], before: dict[str, Any]) -> dict[str, Any]:
        details = dict(before)
        if self.selector:
            chosen_by_func = self.details.get("selector_func", {}).get("returned") is not None
            details.update(self.details)
            if chosen_by_func:
                details["mechanism"] = "selector_func"
            elif self.replies:
                details["model_replies"] = list(self.replies)
                last = self.replies[-1]
                mentioned = read(self.manager, "_mentioned_agents")(last, read(self.manager, "_participant_names"))
                repeated = names == [before.get("previous_speaker")] and not before.get("allow_repeated_speaker")
                valid = isinstance(last, str) and list(mentioned) == names and not repeated
                details["mechanism"] = "model" if valid else "model_fallback"
            else:
                details["mechanism"] = "single_candidate"
        if self.graph:
            details["parallel"] = len(names) > 1
        return details

    # -- publish_message -------------------------------------------------------------

    async def publish_message(self, message: Any, topic_id: Any, **kwargs: Any) -> None:
        run = self.run
        if run is not None:
            try:
                self._observe_publish(run, message, topic_id)
            except Exception as e:  # the message is published regardless; the receipt says incomplete
                count_failure(run.collector, "a manager publish", e)
        await self._publish(message, topic_id, **kwargs)

    def _observe_publish(self, run: _TeamRun, message: Any, topic_id: Any) -> None:
        kind = type(message).__name__
        if kind == "GroupChatMessage":
            inner = getattr(message, "message", None)
            if isinstance(inner, BaseChatMessage) and inner.source == read(self.manager, "_name"):
                run.manager_message(inner)
                self.last_manager_message = inner.id
            return
        if kind != "GroupChatRequestPublish":
            return
        topics = read(self.manager, "_participant_name_to_topic_type", {})
        speaker = next((n for n, t in topics.items() if t == getattr(topic_id, "type", None)), None)
        if speaker is None:
            return
        if self.expected[speaker] > 0:
            self.expected[speaker] -= 1  # already recorded by select_speaker
            return
        details: dict[str, Any] = {"mechanism": "request"}
        if self.magentic:
            details = {"mechanism": "orchestrator_ledger", "instruction_message_id": self.last_manager_message}
            ledger = self._ledger()
            if ledger is not None:
                details["next_speaker"] = ledger.get("next_speaker")
        self.replies = []
        run.record_selection([speaker], details, observed_by="request")

    def _ledger(self) -> dict[str, Any] | None:
        from autogen_core.utils import extract_json_from_str

        for reply in reversed(self.replies):
            if isinstance(reply, str):
                try:
                    found = extract_json_from_str(reply)
                except Exception:  # not a ledger
                    continue
                if found and isinstance(found[0], dict) and "next_speaker" in found[0]:
                    return found[0]
        return None


async def _find_manager(team: Any) -> Any:
    """The team's group chat manager instance, created now if needed; None if unreachable."""
    runtime = read(team, "_runtime")
    manager_type = read(team, "_group_chat_manager_topic_type")
    key = read(team, "_team_id")
    getter = getattr(runtime, "try_get_underlying_agent_instance", None)
    if runtime is None or not isinstance(manager_type, str) or not isinstance(key, str) or getter is None:
        return None
    if read(team, "_initialized", True) is False:
        await read(team, "_init")(runtime)
    manager = await getter(AgentId(manager_type, key))
    if not (callable(getattr(manager, "select_speaker", None)) and callable(getattr(manager, "publish_message", None))):
        return None
    return manager


async def _attach(team: Any, run: _TeamRun) -> _ManagerHook | None:
    try:
        manager = await _find_manager(team)
        if manager is None:
            return None
        hook = getattr(manager, _HOOK_ATTR, None)
        if not (isinstance(hook, _ManagerHook) and hook.manager is manager):
            hook = _ManagerHook(manager)
    except Exception as e:  # fall back to turn order
        log.info("aer1: group chat manager not observable (%s: %s); using turn order", type(e).__name__, e)
        return None
    if hook.run is not None:
        return None  # the team is running already (AutoGen refuses this run): keep observing that one
    hook.start(run)
    return hook


def _task_content(task: Any) -> Any:
    if task is None or isinstance(task, str):
        return task
    if isinstance(task, BaseChatMessage):
        return [task.dump()]
    if isinstance(task, Sequence):
        return [m.dump() if isinstance(m, BaseChatMessage) else m for m in task]
    return task


def _task_message_ids(task: Any) -> list[str]:
    if isinstance(task, BaseChatMessage):
        return [task.id]
    if isinstance(task, Sequence) and not isinstance(task, str):
        return [m.id for m in task if isinstance(m, BaseChatMessage)]
    return []


async def team_run_stream(
    collector: AER1AutoGenCollector,
    team: Any,
    *,
    task: Any = None,
    cancellation_token: CancellationToken | None = None,
    output_task_messages: bool = True,
    nested: str = NESTED_FLATTEN,
) -> AsyncGenerator[Any, None]:
    """Run ``team.run_stream(...)`` recording task, speaker selections and termination.

    Every item is yielded unchanged. The ``termination`` step carries the
    ``TaskResult``'s stop reason; when the run raises (or the caller stops reading) it
    says the reason was not observed, with the error, and the exception propagates.
    Teams that are participants of ``team`` are recorded the same way: into this
    collector (``nested="flatten"``) or each run into a linked child (``"link"``).
    """
    if nested not in (NESTED_FLATTEN, NESTED_LINK):
        raise ValueError(f"nested must be {NESTED_FLATTEN!r} or {NESTED_LINK!r}, got {nested!r}")
    run = _TeamRun(collector, team)
    run.hook = await _attach(team, run)
    manager = run.hook.manager if run.hook is not None else None
    collector._ac_register_team(
        run.actor,
        type(manager).__name__ if manager is not None else MANAGER_TYPE,
        f"the manager of {run.team['team_type']} {run.team['team']!r}: receives the task, selects speakers, "
        "ends the run",
    )
    inner_hook = getattr(team, _TEAM_HOOK_ATTR, None)
    lifecycle.observe_team(collector, team, run.actor, run.team, run.wrapped, agent_config,
                           nested=isinstance(inner_hook, _InnerTeamHook) and inner_hook.recording)
    given = _task_content(task)
    if isinstance(task, str):
        # What AutoGen itself makes of a text task, made here so its message id is known.
        task = TextMessage(content=task, source="user")
    message_ids = _task_message_ids(task)
    if message_ids:
        note_recorded_messages(collector, message_ids)
    content = vocab.task("agentchat", task=given, message_ids=message_ids, team=run.team_identity,
                         extras={**run.team, "output_task_messages": output_task_messages})
    collector._ac_record_team_step("task", content, actor=run.actor)
    collector._ac_open_runs.append(run)
    if run.hook is None:  # turn order is the fallback: route the wrapped participants' turns here
        collector._ac_attach_run(run.wrapped, run)
    result: TaskResult | None = None
    stream = team.run_stream(
        task=task, cancellation_token=cancellation_token, output_task_messages=output_task_messages
    )
    watch = run.watches_events()
    inner_teams = _observe_inner_teams(run, nested)  # released in the finally below
    try:
        async with contextlib.aclosing(stream):
            async for item in stream:
                if isinstance(item, TaskResult):
                    result = item
                    if collector._ac_end_run(run):
                        collector._ac_record_termination(item, team=run.team, actor=run.actor)
                elif watch:
                    run.observe(item)
                yield item
    except BaseException as exc:
        if result is None and collector._ac_end_run(run):
            extras: dict[str, Any] = dict(run.team)
            if isinstance(exc, GeneratorExit):
                extras["note"] = "the caller stopped reading the stream before the team ended"
            status = failure_status(exc)
            ended = collector.termination_content("cancelled" if status == "cancelled" else "error", None, None,
                                                  extras, error=error_info(exc))
            collector._ac_record_team_step("termination", ended, status=status, actor=run.actor)
        raise
    finally:
        if run.hook is not None and run.hook.run is run:
            run.hook.run = None
        for inner in inner_teams:
            inner.outer = None
        collector._ac_detach_run(run)


# ------------------------------------------------------------ teams nested in a team

#: Attribute (on a team that is a participant of another team) holding its observation hook.
_TEAM_HOOK_ATTR = "_aer1_nested_team_hook"


class _InnerTeamHook:
    """A team used as a participant of another team: its runs recorded as the outer run says.

    Installed once per team instance (its ``run_stream``, which the outer team's
    participant container calls). While an outer run observed by ``collector.run`` is in
    progress, each inner run is recorded with :func:`team_run_stream`: into the outer
    collector (``flatten``), or into a child collector linked from the outer chain when
    the inner run ends (``link``). Outside such a run it only forwards.
    """

    def __init__(self, team: Any) -> None:
        self.team = team
        self.outer: tuple[AER1AutoGenCollector, str, str] | None = None  # collector, nested mode, outer actor
        self.recording = False
        self._run_stream = team.run_stream
        object.__setattr__(team, "run_stream", self.run_stream)
        object.__setattr__(team, _TEAM_HOOK_ATTR, self)

    def run_stream(self, *, task: Any = None, cancellation_token: CancellationToken | None = None,
                   output_task_messages: bool = True) -> AsyncGenerator[Any, None]:
        """The team's ``run_stream``, recorded while an outer run is observed."""
        if self.outer is None or self.recording:
            return cast(AsyncGenerator[Any, None], self._run_stream(
                task=task, cancellation_token=cancellation_token, output_task_messages=output_task_messages))
        return self._recorded(*self.outer, task, cancellation_token, output_task_messages)

    async def _recorded(self, collector: AER1AutoGenCollector, nested: str, outer_actor: str, task: Any,
                        cancellation_token: CancellationToken | None,
                        output_task_messages: bool) -> AsyncGenerator[Any, None]:
        name = str(getattr(self.team, "name", type(self.team).__name__))
        target, routes = collector, None
        if nested == NESTED_LINK:
            with contextlib.suppress(Exception):  # listed already (a name is one participant), or finalized
                collector.register_agent(name, type=type(self.team).__name__,
                                         description=str(getattr(self.team, "description", "")) or None)
            target = cast(AER1AutoGenCollector, collector.child(f"team {name} nested in {outer_actor}"))
            routes = _ROUTES.set((*_ROUTES.get(), (collector, target)))
        # The team's own wrapped participants record into the child whatever context runs them
        # (a runtime shared with the outer team does not carry the context variable).
        routed_wrappers: list[AER1AgentWrapper] = []
        if target is not collector:
            origin = _ORIGINS.get(collector, collector)
            _ORIGINS[target] = origin
            routed_wrappers = [p for p in read(self.team, "_participants") or []
                               if isinstance(p, AER1AgentWrapper) and p._collector is origin and p._route is None]
            for wrapper in routed_wrappers:
                wrapper._route = target
        started = time.time()
        result: TaskResult | None = None
        self.recording = True  # team_run_stream calls run_stream: that call runs the team itself
        try:
            stream = team_run_stream(target, self.team, task=task, cancellation_token=cancellation_token,
                                     output_task_messages=output_task_messages, nested=nested)
            async with contextlib.aclosing(stream):
                async for item in stream:
                    if isinstance(item, TaskResult):
                        result = item
                    yield item
        finally:
            self.recording = False
            for wrapper in routed_wrappers:
                wrapper._route = None
            if routes is not None:
                with contextlib.suppress(ValueError):  # closed from another context: nothing to undo there
                    _ROUTES.reset(routes)
            if target is not collector:
                _link_team_run(collector, target, name, result, started)


def _link_team_run(collector: AER1AutoGenCollector, child: AER1AutoGenCollector, name: str,
                   result: TaskResult | None, started: float) -> None:
    """Close a nested team run's child and link it from ``collector`` (agent: the team's name)."""
    try:
        receipt = child.finalize(result) if result is not None else child.finalize()
        collector.link(receipt, evidence=evidence_bytes(child, receipt), children=list(child.linked_children.values()),
                       agent=name, started_at=started, ended_at=time.time(), verify=False)
    except Exception as e:  # observation never breaks the run; the receipt says incomplete
        count_failure(collector, f"the nested team {name!r}", e)


def _observe_inner_teams(run: _TeamRun, nested: str) -> list[_InnerTeamHook]:
    """Hook the teams that are participants of ``run``'s team for the duration of the run."""
    hooks: list[_InnerTeamHook] = []
    for participant in read(run.team_obj, "_participants") or []:
        if not isinstance(participant, Team):
            continue
        try:
            hook = getattr(participant, _TEAM_HOOK_ATTR, None)
            if not (isinstance(hook, _InnerTeamHook) and hook.team is participant):
                hook = _InnerTeamHook(participant)
        except Exception as e:  # an exotic team: its runs stay unobserved, the run goes on
            count_failure(run.collector, f"the nested team {getattr(participant, 'name', '?')!r}", e)
            continue
        if hook.outer is None:
            hook.outer = (run.collector, nested, run.actor)
            hooks.append(hook)
    return hooks
