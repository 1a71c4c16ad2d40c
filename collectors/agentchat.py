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
turn is recorded exactly once on both paths. Steps per turn: ``tool_call`` (one per call),
``human_input``, ``code_execution`` and ``approval`` (through the agent's own executor and
approval function), then the final ``message`` or ``handoff``; ``error`` when the agent
raises (the exception propagates unchanged).

:func:`team_run_stream` (used by ``AER1AutoGenCollector.run``/``run_stream``) adds the
team-level steps: ``task``, ``speaker_selection`` (observed inside the group chat manager
when it can be reached, else by turn order), and ``termination``. What is observable for
each team, and how, is written in ``spec/agentchat.md``.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import time
from collections import Counter
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

from autogen_agentchat.agents import BaseChatAgent, CodeExecutorAgent, UserProxyAgent
from autogen_agentchat.base import ChatAgent, Response, TaskResult
from autogen_agentchat.messages import (
    BaseAgentEvent,
    BaseChatMessage,
    BaseTextChatMessage,
    HandoffMessage,
    SelectSpeakerEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
    UserInputRequestedEvent,
)
from autogen_core import AgentId, CancellationToken, ComponentModel, FunctionCall

from aer1 import Collector

from ._collector import AER1AutoGenCollector, error_info, failure_status
from .autogen_core import observe_approval, observe_code_executor, was_call_recorded

__all__ = ["AER1AgentWrapper", "AER1AutoGenCollector", "agent_config", "team_run_stream"]

log = logging.getLogger("aer1")

#: Attribute (on an inner agent) naming the wrapper that instrumented it last.
_OWNER_ATTR = "_aer1_wrapper"
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
    """A tool call's arguments: the JSON object the model sent, or the raw text when malformed."""
    try:
        return json.loads(raw), True
    except (TypeError, ValueError):
        return raw, False


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
        mapping = getattr(client, attr, None)
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


def _tool_schemas(agent: Any) -> tuple[list[Any], list[str]]:
    schemas: list[Any] = []
    workbenches: list[str] = []
    for workbench in getattr(agent, "_workbench", None) or []:
        tools = getattr(workbench, "_tools", None)
        if isinstance(tools, list):
            schemas.extend(getattr(t, "schema", None) for t in tools)
        else:
            workbenches.append(_type_name(workbench))
    if not schemas:
        schemas = [getattr(t, "schema", None) for t in getattr(agent, "_tools", None) or []]
    return schemas, workbenches


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
    system = getattr(agent, "_system_messages", None)
    if isinstance(system, list):
        config["system_message"] = [getattr(m, "content", None) for m in system]
    client = getattr(agent, "_model_client", None)
    if client is not None:
        config["model"] = _model_identity(client)
    schemas, workbenches = _tool_schemas(agent)
    if schemas:
        config["tools"] = schemas
    if workbenches:
        config["workbenches"] = workbenches
    handoffs = getattr(agent, "_handoffs", None)
    if isinstance(handoffs, Mapping) and handoffs:
        config["handoffs"] = [
            {"name": h.name, "target": h.target, "description": h.description, "message": h.message}
            for h in handoffs.values()
        ]
    executor = getattr(agent, "_code_executor", None)
    if executor is not None:
        config["code_executor"] = _type_name(getattr(executor, "wrapped_executor", executor))
        config["approval_func"] = _callable_name(getattr(agent, "_approval_func", None))
    if isinstance(agent, UserProxyAgent):
        config["input_func"] = _callable_name(agent.input_func)
    for key, attr in _BEHAVIOUR_ATTRS:
        if hasattr(agent, attr):
            config[key] = getattr(agent, attr)
    return config


def _handoff_targets(agent: Any) -> dict[str, str]:
    """Handoff tool name -> target agent, for agents with handoffs (AssistantAgent)."""
    handoffs = getattr(agent, "_handoffs", None)
    if not isinstance(handoffs, Mapping):
        return {}
    return {str(name): str(getattr(h, "target", name)) for name, h in handoffs.items()}


# ------------------------------------------------------------------------------ turns


class _Turn:
    """One call of a wrapped agent: pairs tool calls and records the final message."""

    __slots__ = ("agent", "collector", "handoff_calls", "reply_to", "requests", "started", "wrapper")

    def __init__(self, wrapper: AER1AgentWrapper, messages: Sequence[BaseChatMessage]) -> None:
        self.wrapper = wrapper
        self.collector = wrapper._collector
        self.agent = wrapper.name
        self.started = time.time()
        self.reply_to = messages[-1].source if messages else None
        # call id -> (the call, when it was requested), until its result is seen.
        self.requests: dict[str, tuple[FunctionCall, float]] = {}
        self.handoff_calls: list[dict[str, Any]] = []

    def handle(self, handler: _Handler, item: Any) -> None:
        """Apply ``handler`` (the one ``_HANDLERS`` holds for the item's class) to ``item``; never raises."""
        try:
            handler(self, item)
        except Exception as e:  # observation never breaks the turn
            log.warning(
                "aer1: could not observe %s from %r: %s: %s", type(item).__name__, self.agent, type(e).__name__, e
            )

    def _requested(self, item: ToolCallRequestEvent) -> None:
        now = time.time()
        for call in item.content:
            self.requests[call.id] = (call, now)

    def _executed(self, item: ToolCallExecutionEvent) -> None:
        now = time.time()
        for result in item.content:
            self._result(result.call_id, result.name, result.content, bool(result.is_error), now)

    def _input_requested(self, item: UserInputRequestedEvent) -> None:
        self.wrapper._input_request_id = item.request_id

    def _result(self, call_id: str, name: str | None, result: Any, is_error: bool, now: float) -> None:
        call, requested = self.requests.pop(call_id, (None, now))
        label = name or (call.name if call is not None else "") or "tool"
        arguments, valid = _arguments(call.arguments) if call is not None else (None, True)
        handoffs = self.wrapper._handoff_targets
        if label in handoffs:
            self.handoff_calls.append(
                {"name": label, "call_id": call_id, "target": handoffs[label], "arguments": arguments, "result": result}
            )
            return
        if was_call_recorded(self.collector, call_id):
            return  # the observed tool recorded it, with its own timing
        content: dict[str, Any] = {
            "name": label,
            "call_id": call_id,
            "arguments": arguments,
            "result": result,
            "is_error": is_error,
        }
        if not valid:
            content["arguments_malformed"] = True
        self.collector.safe_record(
            label,
            content,
            agent=self.agent,
            kind="tool_call",
            status="error" if is_error else "ok",
            started_at=requested,
            ended_at=now,
            call_id=call_id,
        )

    def _response(self, response: Response) -> None:
        message = response.chat_message
        cls = type(message)
        if _is_plain_text(cls):  # the common case: a text message is no handoff
            content: Any = cast(BaseTextChatMessage, message).content
        elif isinstance(message, HandoffMessage):
            self._handoff(message)
            return
        else:
            content = _message_content(message)
        self.collector.safe_record(
            "message",
            {"message_type": cls.__name__, "message_id": message.id, "content": content},
            agent=self.agent,
            kind="message",
            started_at=self.started,
            reply_to=self.reply_to,
        )

    def _handoff(self, message: HandoffMessage) -> None:
        # Calls requested but whose result never came back still belong to the handoff.
        for call_id, (call, _) in list(self.requests.items()):
            if call.name in self.wrapper._handoff_targets:
                del self.requests[call_id]
                self.handoff_calls.append(
                    {"name": call.name, "call_id": call_id, "target": self.wrapper._handoff_targets[call.name],
                     "arguments": _arguments(call.arguments)[0], "result": None}
                )  # fmt: skip
        selected = next((c["call_id"] for c in self.handoff_calls if c["target"] == message.target), None)
        content = {
            "message_type": type(message).__name__,
            "message_id": message.id,
            "target": message.target,
            "content": message.content,
            "context": message.context,
            "handoff_calls": self.handoff_calls,
            "selected_call_id": selected,
        }
        self.collector.safe_record(
            "handoff", content, agent=self.agent, kind="handoff", started_at=self.started,
            reply_to=self.reply_to, target=message.target,
        )  # fmt: skip

    def failed(self, exc: BaseException) -> None:
        """The agent raised (or was cancelled): record unanswered calls, then the error."""
        status = failure_status(exc)
        for call_id, (call, requested) in list(self.requests.items()):
            if call.name in self.wrapper._handoff_targets or was_call_recorded(self.collector, call_id):
                continue
            arguments, _ = _arguments(call.arguments)
            self.collector.safe_record(
                call.name or "tool",
                {"name": call.name, "call_id": call_id, "arguments": arguments, "result": None, "is_error": True,
                 "note": f"no result was observed: the turn ended with {type(exc).__name__}"},
                agent=self.agent, kind="tool_call", status=status, started_at=requested, call_id=call_id,
            )  # fmt: skip
        self.requests.clear()
        self.collector.safe_record(
            "error", error_info(exc), agent=self.agent, kind="error", status=status, started_at=self.started
        )


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
    if len(_HANDLERS) < MAX_CACHED_CLASSES:
        _HANDLERS[cls] = handler
    return handler


# ---------------------------------------------------------------------------- wrapper


class AER1AgentWrapper(BaseChatAgent):
    """A chat agent recording the turns of the agent it wraps into an AER-1 receipt.

    The team sees the wrapped agent: same name and description, produced message
    types, state (``save_state``/``load_state``), ``on_reset``, ``on_pause``,
    ``on_resume`` and ``close``; other attributes are read from the wrapped agent.
    The agent is listed once in the receipt (type, description, configuration digest).

    For a ``CodeExecutorAgent`` the wrapper observes the agent's code executor and
    approval function (``code_execution`` and ``approval`` steps); for a
    ``UserProxyAgent`` its ``input_func`` (``human_input`` steps, recorded during the
    wrapper's turns only). These hooks are set on the wrapped agent itself; wrapping the
    agent again moves them to the new wrapper. Observing tools with their own timing is
    opt-in: build the agent with ``observe_tools(tools, collector, agent=name)``.

    ``dump_component()`` returns the wrapped agent's component model (observation is
    not configuration: wrap the loaded agent again).
    """

    def __init__(self, agent: ChatAgent, collector: Collector) -> None:
        if isinstance(agent, AER1AgentWrapper):
            raise ValueError(f"agent {agent.name!r} is already wrapped by AER1AgentWrapper")
        if not isinstance(agent, ChatAgent):
            raise TypeError(f"AER1AgentWrapper wraps a ChatAgent, not {_type_name(agent)}")
        if not isinstance(collector, Collector):
            raise TypeError(f"AER1AgentWrapper needs an aer1 Collector, not {_type_name(collector)}")
        super().__init__(name=agent.name, description=agent.description)
        self._inner = agent
        self._collector = collector
        # The collector when it also records team runs (turn order, pending termination).
        self._team_collector = collector if isinstance(collector, AER1AutoGenCollector) else None
        self._handoff_targets = _handoff_targets(agent)
        self._turns_active = 0
        self._input_request_id: str | None = None
        self._swapped: list[tuple[str, Any]] = []
        collector.register_agent(
            agent.name, type=type(agent).__name__, description=agent.description, config=agent_config(agent)
        )
        self._instrument()

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
        turn = _Turn(self, messages)
        self._turns_active += 1
        if self._team_collector is not None:
            self._team_collector._ac_turn_started(self)
        stream = self._inner.on_messages_stream(messages, cancellation_token)
        exhausted = False
        handlers = _HANDLERS
        try:
            async for item in stream:
                # Most items (streaming chunks, thoughts) are only forwarded: one lookup each.
                try:
                    handler = handlers[type(item)]
                except KeyError:
                    handler = _find_handler(type(item))
                if handler is not None:
                    turn.handle(handler, item)
                yield item
            exhausted = True
        except GeneratorExit:
            raise  # the caller stopped reading: nothing was decided by the agent
        except BaseException as exc:
            exhausted = True  # the inner stream raised: it is finished
            turn.failed(exc)
            raise
        finally:
            self._turns_active -= 1
            if not exhausted:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()

    # -- delegated lifecycle -----------------------------------------------------

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        await self._inner.on_reset(cancellation_token)

    async def on_pause(self, cancellation_token: CancellationToken) -> None:
        await self._inner.on_pause(cancellation_token)

    async def on_resume(self, cancellation_token: CancellationToken) -> None:
        await self._inner.on_resume(cancellation_token)

    async def save_state(self) -> Mapping[str, Any]:
        return await self._inner.save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        await self._inner.load_state(state)

    async def close(self) -> None:
        await self._inner.close()

    def dump_component(self) -> ComponentModel:
        """The wrapped agent's component model, as if it were not wrapped."""
        current = [(attr, getattr(self._inner, attr)) for attr, _ in self._swapped]
        for attr, original in self._swapped:
            setattr(self._inner, attr, original)
        try:
            return self._inner.dump_component()
        except Exception as e:
            raise TypeError(
                f"AER1AgentWrapper({self.name!r}) serializes as the agent it wraps "
                f"({type(self._inner).__name__}), which cannot be serialized: {e}"
            ) from e
        finally:
            for attr, value in current:
                setattr(self._inner, attr, value)

    # -- hooks on the wrapped agent ---------------------------------------------

    def _instrument(self) -> None:
        inner = self._inner
        # getattr/object.__setattr__, never ``inner.__dict__``: reading an instance's __dict__
        # turns off CPython's fast attribute reads on that agent for all its later turns.
        previous = getattr(inner, _OWNER_ATTR, None)
        if isinstance(previous, AER1AgentWrapper) and previous._inner is inner:
            previous._uninstrument()
        if isinstance(inner, CodeExecutorAgent):
            executor = inner._code_executor
            self._swap("_code_executor", observe_code_executor(executor, self._collector, agent=self.name))
            approval = inner._approval_func
            if approval is not None:
                self._swap("_approval_func", observe_approval(approval, self._collector, agent=self.name))
        if isinstance(inner, UserProxyAgent):
            self._swap("input_func", self._observe_input(inner.input_func))
        object.__setattr__(inner, _OWNER_ATTR, self)

    def _swap(self, attr: str, value: Any) -> None:
        self._swapped.append((attr, getattr(self._inner, attr)))
        setattr(self._inner, attr, value)

    def _uninstrument(self) -> None:
        for attr, original in reversed(self._swapped):
            setattr(self._inner, attr, original)
        self._swapped.clear()

    def _observe_input(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """``input_func`` recording a ``human_input`` step (same sync/async kind)."""
        wrapper = self
        if inspect.iscoroutinefunction(func):
            async_func = cast(Callable[[str, CancellationToken | None], Awaitable[str]], func)

            async def observed_input_async(prompt: str, cancellation_token: CancellationToken | None) -> str:
                if not wrapper._turns_active:
                    return await async_func(prompt, cancellation_token)
                started, request_id = time.time(), wrapper._input_request_id
                try:
                    value = await async_func(prompt, cancellation_token)
                except BaseException as exc:
                    wrapper._record_input(prompt, request_id, started, None, exc)
                    raise
                wrapper._record_input(prompt, request_id, started, value, None)
                return value

            return observed_input_async

        sync_func = cast(Callable[[str], str], func)

        def observed_input(prompt: str) -> str:
            if not wrapper._turns_active:
                return sync_func(prompt)
            started, request_id = time.time(), wrapper._input_request_id
            try:
                value = sync_func(prompt)
            except BaseException as exc:
                wrapper._record_input(prompt, request_id, started, None, exc)
                raise
            wrapper._record_input(prompt, request_id, started, value, None)
            return value

        return observed_input

    def _record_input(
        self, prompt: str, request_id: str | None, started: float, value: Any, exc: BaseException | None
    ) -> None:
        content: dict[str, Any] = {"prompt": prompt, "request_id": request_id, "input": value}
        status = "ok"
        if exc is not None:
            content["error"] = error_info(exc)
            status = failure_status(exc)
        self._collector.safe_record(
            "human_input", content, agent=self.name, kind="human_input", status=status, started_at=started
        )


# ------------------------------------------------------------------------ team runs


class _TeamRun:
    """One ``collector.run_stream(team)``: team identity and where selections are seen."""

    def __init__(self, collector: AER1AutoGenCollector, team: Any) -> None:
        self.collector = collector
        self.team = {"team": str(getattr(team, "name", type(team).__name__)), "team_type": type(team).__name__}
        participants = getattr(team, "_participants", None)
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
        content: dict[str, Any] = {**self.team, "selected": names, **details, "observed_by": observed_by}
        target = names[0] if names and len(names) == 1 else None
        self.collector._ac_record_team_step(
            "speaker_selection", content, status=status, started_at=started_at, target=target
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
        self.collector._ac_record_team_step(
            "message",
            {
                **self.team,
                "manager": message.source,
                "message_type": type(message).__name__,
                "message_id": message.id,
                "content": _message_content(message),
            },
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
                func = getattr(manager, attr, None)
                if func is not None:
                    setattr(manager, attr, self._observe_func(func, key))
        if (self.selector or self.magentic) and getattr(manager, "_model_client", None) is not None:
            manager._model_client = _ModelProbe(manager._model_client, self)
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
            return {"mechanism": "round_robin", "position": manager._next_speaker_index}
        if self.swarm:
            for message in reversed(thread):
                if isinstance(message, HandoffMessage):
                    return {
                        "mechanism": "handoff",
                        "handoff": {"from": message.source, "target": message.target, "message_id": message.id},
                    }
            return {"mechanism": "current_speaker", "current_speaker": manager._current_speaker}
        if self.selector:
            return {
                "previous_speaker": manager._previous_speaker,
                "allow_repeated_speaker": manager._allow_repeated_speaker,
            }
        if self.graph:
            after = next((m.source for m in reversed(thread) if isinstance(m, BaseChatMessage)), None)
            return {"mechanism": "graph", "after": after, "ready": list(manager._ready)}
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
                mentioned = self.manager._mentioned_agents(last, self.manager._participant_names)
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
            except Exception as e:  # the message is published regardless
                log.warning("aer1: could not observe a manager publish: %s: %s", type(e).__name__, e)
        await self._publish(message, topic_id, **kwargs)

    def _observe_publish(self, run: _TeamRun, message: Any, topic_id: Any) -> None:
        kind = type(message).__name__
        if kind == "GroupChatMessage":
            inner = getattr(message, "message", None)
            if isinstance(inner, BaseChatMessage) and inner.source == getattr(self.manager, "_name", None):
                run.manager_message(inner)
                self.last_manager_message = inner.id
            return
        if kind != "GroupChatRequestPublish":
            return
        topics = getattr(self.manager, "_participant_name_to_topic_type", {})
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
    runtime = getattr(team, "_runtime", None)
    manager_type = getattr(team, "_group_chat_manager_topic_type", None)
    key = getattr(team, "_team_id", None)
    getter = getattr(runtime, "try_get_underlying_agent_instance", None)
    if runtime is None or not isinstance(manager_type, str) or not isinstance(key, str) or getter is None:
        return None
    if getattr(team, "_initialized", True) is False:
        await team._init(runtime)
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


async def team_run_stream(
    collector: AER1AutoGenCollector,
    team: Any,
    *,
    task: Any = None,
    cancellation_token: CancellationToken | None = None,
    output_task_messages: bool = True,
) -> AsyncGenerator[Any, None]:
    """Run ``team.run_stream(...)`` recording task, speaker selections and termination.

    Every item is yielded unchanged. The ``termination`` step carries the
    ``TaskResult``'s stop reason; when the run raises (or the caller stops reading) it
    says the reason was not observed, with the error, and the exception propagates.
    """
    run = _TeamRun(collector, team)
    collector._ac_record_team_step(
        "task", {**run.team, "task": _task_content(task), "output_task_messages": output_task_messages}
    )
    run.hook = await _attach(team, run)
    if run.hook is None:  # turn order is the fallback: route the wrapped participants' turns here
        collector._ac_attach_run(run.wrapped, run)
    result: TaskResult | None = None
    stream = team.run_stream(
        task=task, cancellation_token=cancellation_token, output_task_messages=output_task_messages
    )
    watch = run.watches_events()
    try:
        async with contextlib.aclosing(stream):
            async for item in stream:
                if isinstance(item, TaskResult):
                    result = item
                    collector._ac_record_termination(item, team=run.team)
                elif watch:
                    run.observe(item)
                yield item
    except BaseException as exc:
        if result is None:
            content: dict[str, Any] = {**run.team, "stop_reason": None, "observed": False, "error": error_info(exc)}
            if isinstance(exc, GeneratorExit):
                content["note"] = "the caller stopped reading the stream before the team ended"
            collector._ac_record_team_step("termination", content, status=failure_status(exc))
        raise
    finally:
        if run.hook is not None and run.hook.run is run:
            run.hook.run = None
        collector._ac_detach_run(run)
