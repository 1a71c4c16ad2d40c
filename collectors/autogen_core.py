"""Recording hooks for autogen-core: tools, workbenches, code executors, approvals, runtime.

Everything here observes and never changes what AutoGen does: wrapped objects keep their
names, descriptions, schemas, return values and exceptions. Recording goes through
``Collector.safe_record``, so a recording failure is logged and counted by the collector
(the receipt then says ``incomplete``) but never breaks the run.

Public names:

* :func:`observe_tools`: a list of tools (or callables) or a workbench, recorded per call.
* :func:`was_call_recorded`: whether an observed tool already recorded a call id.
* :func:`observe_code_executor`: a ``CodeExecutor`` recording each execution.
* :func:`observe_approval`: a ``CodeExecutorAgent`` approval function recording each decision.
* :class:`AER1InterventionHandler`: records the sends, publishes and responses of a
  ``SingleThreadedAgentRuntime``.

The step contents are specified in ``spec/autogen-core.md``.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

try:  # the framework first: without it, say which extra to install
    from autogen_core import (
        AgentId,
        CancellationToken,
        ComponentModel,
        DefaultInterventionHandler,
        DropMessage,
        MessageContext,
        MessageHandlerContext,
    )
    from autogen_core.code_executor import CodeBlock, CodeExecutor, CodeResult
    from autogen_core.tools import (
        BaseTool,
        FunctionTool,
        StaticStreamWorkbench,
        StaticWorkbench,
        StreamTool,
        Tool,
        ToolOverride,
        ToolResult,
        ToolSchema,
        Workbench,
    )
except ImportError as e:
    from ._extras import missing_framework

    raise missing_framework("autogen_core", e) from e
from pydantic import BaseModel

from aer1 import _steps_vocab as vocab

from . import _agentchat_internals as internals
from ._agentchat_internals import read
from ._errors import error_info, failure_status, outcome
from ._state import PerCollector

if TYPE_CHECKING:
    from aer1 import Collector

__all__ = [
    "MAX_TRACKED_CALL_IDS",
    "RUNTIME_ACTOR",
    "AER1InterventionHandler",
    "core_agent_name",
    "observe_approval",
    "observe_code_executor",
    "observe_tools",
    "was_call_recorded",
]

internals.TABLE.warn_if_unchecked()  # logs once when the installed version is not one the names were checked on

logger = logging.getLogger("aer1")

#: Actor named on steps whose agent is not known: a message sent from outside any agent,
#: or a tool called outside a runtime message handler without ``agent=``.
RUNTIME_ACTOR = "runtime"
#: Most call ids remembered per collector for :func:`was_call_recorded` (oldest dropped first).
MAX_TRACKED_CALL_IDS = 4096

_T = TypeVar("_T")
ToolLike = BaseTool[Any, Any] | Tool | Callable[..., Any]


# ----------------------------------------------------------------------------- helpers


def core_agent_name(agent_id: AgentId | None) -> str:
    """Name an autogen-core agent on a step: ``"type/key"`` (AutoGen's own form), or ``runtime``."""
    return str(agent_id) if agent_id is not None else RUNTIME_ACTOR


def _current_actor(agent: str | None) -> str:
    """The given agent name, else the runtime agent handling the current message."""
    if agent is not None:
        return agent
    try:
        return core_agent_name(MessageHandlerContext.agent_id())
    except RuntimeError:
        return RUNTIME_ACTOR


def _ended(started_at: float) -> float:
    """Now, never before ``started_at`` (the wall clock can step back between the two reads)."""
    return max(time.time(), started_at)


def _record_until_now(collector: Collector, kind: str, content: dict[str, Any], agent: str, status: str,
                      started_at: float) -> None:
    """One step of ``kind`` (labelled with its kind) by ``agent``, from ``started_at`` until now."""
    collector.safe_record(kind, content, agent=agent, kind=kind, status=status, started_at=started_at,
                          ended_at=_ended(started_at))


def _type_name(value: Any) -> str:
    t = type(value)
    return f"{t.__module__}.{t.__qualname__}"


class _CallLedger:
    """Calls recorded by observed tools for one collector: (call id, tool name) -> how often.

    Keyed by the id *and* the tool name: models send empty ids (OpenAI streaming) or one id
    for every call of a response (Ollama), so the id alone cannot tell calls apart.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: OrderedDict[tuple[str, str], int] = OrderedDict()

    def add(self, call_id: str, name: str) -> None:
        key = (call_id, name)
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + 1
            self.counts.move_to_end(key)
            while len(self.counts) > MAX_TRACKED_CALL_IDS:
                self.counts.popitem(last=False)

    def take(self, call_id: str, name: str | None, consume: bool) -> bool:
        with self.lock:
            if name is not None:
                key: tuple[str, str] | None = (call_id, name)
            else:
                key = next((k for k in self.counts if k[0] == call_id), None)
            count = self.counts.get(key, 0) if key is not None else 0
            if key is None or count == 0:
                return False
            if consume:
                if count == 1:
                    del self.counts[key]
                else:
                    self.counts[key] = count - 1
            return True


_LEDGERS: PerCollector[_CallLedger] = PerCollector(_CallLedger)
_ledger = _LEDGERS.of


def was_call_recorded(
    collector: Collector, call_id: str, *, consume: bool = True, name: str | None = None
) -> bool:
    """True if a tool observed by :func:`observe_tools` recorded a call with ``call_id`` on ``collector``.

    With ``name`` (the tool name the model called), the call must also have that name:
    this is how an empty call id (OpenAI streaming) or an id shared by several calls of
    one response (Ollama) is matched; without it an empty id never matches. Each recording
    answers True once (``consume=True``, the default): a model that reuses a call id in a
    later turn is then not mistaken for a recorded call. Pass ``consume=False`` to ask
    without using the answer up. At most :data:`MAX_TRACKED_CALL_IDS` calls are kept per
    collector (oldest dropped first); the bookkeeping lives as long as the collector.
    """
    if not isinstance(call_id, str) or (not call_id and name is None):
        return False
    ledger = _LEDGERS.peek(collector)
    return ledger is not None and ledger.take(call_id, name, consume)


class _ObservedCall:
    """One observed tool call, timed from its creation; :meth:`done` records its ``tool_call`` step."""

    def __init__(self, collector: Collector, label: str, agent: str | None, call_id: str | None,
                 arguments: Any) -> None:
        self.collector = collector
        self.label = label
        self.agent = agent
        self.call_id = call_id
        self.arguments = arguments
        self.started_at = time.time()
        collector.open_action(self, self._cut_off)  # finalize() first: recorded as cut off

    def _cut_off(self) -> None:
        self._record(None, vocab.error_code(vocab.CANCELLED, vocab.UNFINISHED_MESSAGE), "cancelled", None)

    def done(
        self,
        *,
        result: Any = None,
        is_error: bool = False,
        exc: BaseException | None = None,
        streamed: int | None = None,
    ) -> None:
        """Record the step and remember its call id when recording succeeded."""
        if not self.collector.close_action(self):
            return  # finalize() came first and recorded the call as cut off
        error: dict[str, Any] | None = None
        status = "ok"
        if exc is not None:
            error, status = error_info(exc), failure_status(exc)
        elif is_error:
            error, status = vocab.tool_failure(self.arguments, result), "error"
        self._record(None if status != "ok" else result, error, status,
                     {"streamed": streamed} if streamed is not None else None)

    def _record(self, result: Any, error: dict[str, Any] | None, status: str, extras: dict[str, Any] | None) -> None:
        ended_at = _ended(self.started_at)
        content = vocab.tool_call("autogen_core", name=self.label, call_id=self.call_id, arguments=self.arguments,
                                  result=result, error=error, extras=extras)
        step = self.collector.safe_record(
            self.label,
            content,
            agent=_current_actor(self.agent),
            kind="tool_call",
            status=status,
            started_at=self.started_at,
            ended_at=ended_at,
            call_id=self.call_id or None,  # an empty id is in the content; the member must not be empty
        )
        if step is not None and isinstance(self.call_id, str):
            _ledger(self.collector).add(self.call_id, self.label)


# ------------------------------------------------------------------------------- tools


class _Delegating:
    """Reads every attribute it does not define itself from the object it observes."""

    _aer1_inner: Any

    def __getattr__(self, item: str) -> Any:
        if item.startswith("_aer1_"):
            raise AttributeError(item)
        return getattr(self._aer1_inner, item)

    def __repr__(self) -> str:
        return f"observed({self._aer1_inner!r})"


_Lifecycle = TypeVar("_Lifecycle", bound="_DelegatingLifecycle")


class _DelegatingLifecycle(_Delegating):
    """A stand-in whose start, stop, ``async with`` entry and component model are its inner object's."""

    async def start(self) -> None:
        await self._aer1_inner.start()

    async def stop(self) -> None:
        await self._aer1_inner.stop()

    async def __aenter__(self: _Lifecycle) -> _Lifecycle:
        await self._aer1_inner.__aenter__()
        return self

    def dump_component(self) -> ComponentModel:
        """The wrapped object's component model."""
        return cast(ComponentModel, self._aer1_inner.dump_component())


class _ObservedTool(_Delegating, BaseTool[BaseModel, BaseModel]):
    """A tool that records each ``run_json`` call and otherwise behaves as the tool it wraps."""

    _aer1_inner: Tool

    def __init__(self, inner: Tool, collector: Collector, agent: str | None, label: str | None = None) -> None:
        super().__init__(inner.args_type(), inner.return_type(), inner.name, inner.description)
        self._aer1_inner = inner
        self._aer1_collector = collector
        self._aer1_agent = agent
        self._aer1_label = label

    # Everything a model, agent or workbench reads comes from the wrapped tool.
    @property
    def name(self) -> str:
        return self._aer1_inner.name

    @property
    def description(self) -> str:
        return self._aer1_inner.description

    @property
    def schema(self) -> ToolSchema:
        return self._aer1_inner.schema

    @property
    def wrapped_tool(self) -> Tool:
        """The tool this one records."""
        return self._aer1_inner

    def args_type(self) -> type[BaseModel]:
        return self._aer1_inner.args_type()

    def return_type(self) -> type[Any]:
        return self._aer1_inner.return_type()

    def state_type(self) -> type[BaseModel] | None:
        return self._aer1_inner.state_type()

    def return_value_as_string(self, value: Any) -> str:
        return self._aer1_inner.return_value_as_string(value)

    async def save_state_json(self) -> Mapping[str, Any]:
        return await self._aer1_inner.save_state_json()

    async def load_state_json(self, state: Mapping[str, Any]) -> None:
        await self._aer1_inner.load_state_json(state)

    def dump_component(self) -> ComponentModel:
        """The wrapped tool's component model: observation is not part of a configuration."""
        dump = getattr(self._aer1_inner, "dump_component", None)
        if not callable(dump):
            raise TypeError(f"tool {self.name!r} ({_type_name(self._aer1_inner)}) is not a component")
        return cast(ComponentModel, dump())

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> Any:
        """Run the wrapped tool unrecorded (``run_json`` is the recorded entry point)."""
        if isinstance(self._aer1_inner, BaseTool):
            return await self._aer1_inner.run(args, cancellation_token)
        return await self._aer1_inner.run_json(args.model_dump(), cancellation_token)

    def _result_text(self, value: Any) -> Any:
        try:
            return self._aer1_inner.return_value_as_string(value)
        except Exception:  # the caller meets the same failure; keep the raw value
            return value

    async def run_json(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken, call_id: str | None = None
    ) -> Any:
        """Run the wrapped tool and record one ``tool_call`` step around the call."""
        call = self._aer1_call(call_id, args)
        try:
            value = await self._aer1_inner.run_json(args, cancellation_token, call_id=call_id)
        except BaseException as exc:
            call.done(exc=exc)
            raise
        call.done(result=self._result_text(value))
        return value

    def _aer1_call(self, call_id: str | None, args: Mapping[str, Any]) -> _ObservedCall:
        label = self._aer1_label or self._aer1_inner.name
        return _ObservedCall(self._aer1_collector, label, self._aer1_agent, call_id, dict(args))


class _ObservedStreamTool(_ObservedTool):
    """An observed tool that also streams (``StreamTool``): one step per complete stream."""

    async def run_json_stream(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken, call_id: str | None = None
    ) -> AsyncGenerator[Any, None]:
        """Forward each streamed item; record the final item as the result."""
        inner = cast(StreamTool, self._aer1_inner)
        count = 0
        last: Any = None
        call = self._aer1_call(call_id, args)
        try:
            async for item in inner.run_json_stream(args, cancellation_token, call_id=call_id):
                count += 1
                last = item
                yield item
        except BaseException as exc:  # GeneratorExit: the consumer stopped early
            call.done(exc=exc, streamed=count)
            raise
        call.done(result=self._result_text(last), streamed=count)


def _observe_tool(
    tool: ToolLike, collector: Collector, agent: str | None, label: str | None = None
) -> BaseTool[Any, Any]:
    if isinstance(tool, _ObservedTool) and tool._aer1_collector is collector:
        return tool
    if isinstance(tool, Tool):
        cls = _ObservedStreamTool if isinstance(tool, StreamTool) else _ObservedTool
        return cls(tool, collector, agent, label)
    if callable(tool):
        # Exactly what AssistantAgent does with a plain callable.
        description = tool.__doc__ if getattr(tool, "__doc__", None) is not None else ""
        return _ObservedTool(FunctionTool(tool, description=description or ""), collector, agent, label)
    raise TypeError(f"cannot observe {_type_name(tool)}: expected a tool, a callable or a workbench")


# -------------------------------------------------------------------------- workbenches


class _ObservedWorkbench(_DelegatingLifecycle, Workbench):
    """A workbench recording each ``call_tool`` and delegating everything else."""

    _aer1_inner: Workbench

    def __init__(self, inner: Workbench, collector: Collector, agent: str | None) -> None:
        self._aer1_inner = inner
        self._aer1_collector = collector
        self._aer1_agent = agent

    @property
    def wrapped_workbench(self) -> Workbench:
        """The workbench this one records."""
        return self._aer1_inner

    async def list_tools(self) -> list[ToolSchema]:
        return await self._aer1_inner.list_tools()

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult:
        """Call the tool in the wrapped workbench and record one ``tool_call`` step."""
        call = self._aer1_call(name, call_id, arguments)
        try:
            result = await self._aer1_inner.call_tool(name, arguments, cancellation_token, call_id)
        except BaseException as exc:
            call.done(exc=exc)
            raise
        call.done(result=result.to_text(), is_error=result.is_error)
        return result

    def _aer1_call(self, name: str, call_id: str | None, arguments: Mapping[str, Any] | None) -> _ObservedCall:
        return _ObservedCall(self._aer1_collector, name, self._aer1_agent, call_id, dict(arguments or {}))

    async def reset(self) -> None:
        await self._aer1_inner.reset()

    async def save_state(self) -> Mapping[str, Any]:
        return await self._aer1_inner.save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        await self._aer1_inner.load_state(state)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self._aer1_inner.__aexit__(exc_type, exc_val, exc_tb)


class _ObservedStreamWorkbench(_ObservedWorkbench):
    """An observed workbench that also streams (``call_tool_stream``): one step per stream."""

    async def call_tool_stream(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> AsyncGenerator[Any | ToolResult, None]:
        """Forward each streamed item; record the final ``ToolResult``."""
        inner = cast(Any, self._aer1_inner)
        count = 0
        final: ToolResult | None = None
        call = self._aer1_call(name, call_id, arguments)
        try:
            async for item in inner.call_tool_stream(name, arguments, cancellation_token, call_id):
                count += 1
                if isinstance(item, ToolResult):
                    final = item
                yield item
        except BaseException as exc:
            call.done(exc=exc, streamed=count)
            raise
        call.done(
            result=final.to_text() if final is not None else None,
            is_error=final.is_error if final is not None else False,
            streamed=count,
        )


_STATIC_WORKBENCHES = (StaticWorkbench, StaticStreamWorkbench)


def _observe_workbench(workbench: Workbench, collector: Collector, agent: str | None) -> Workbench:
    if isinstance(workbench, _ObservedWorkbench) and workbench._aer1_collector is collector:
        return workbench
    tools = read(workbench, internals.WORKBENCH_TOOLS)
    overrides = read(workbench, internals.TOOL_OVERRIDES)
    if type(workbench) in _STATIC_WORKBENCHES and isinstance(tools, list) and isinstance(overrides, dict):
        # Same class over the same (observed) tools: the agent keeps its exact code path
        # (AssistantAgent streams only through StaticStreamWorkbench) and each tool run is timed.
        typed_overrides = cast(dict[str, ToolOverride], overrides)
        observed = [_observe_tool(t, collector, agent, _override_label(t.name, typed_overrides)) for t in tools]
        static_class = cast(type[StaticWorkbench], type(workbench))
        return static_class(observed, tool_overrides=dict(typed_overrides) or None)
    if callable(getattr(workbench, "call_tool_stream", None)):
        return _ObservedStreamWorkbench(workbench, collector, agent)
    return _ObservedWorkbench(workbench, collector, agent)


def _override_label(name: str, overrides: Mapping[str, ToolOverride]) -> str | None:
    override = overrides.get(name)
    return override.name if override is not None and override.name else None


@overload
def observe_tools(tools_or_workbench: Workbench, collector: Collector, *, agent: str | None = None) -> Workbench: ...


@overload
def observe_tools(
    tools_or_workbench: Sequence[ToolLike | Workbench], collector: Collector, *, agent: str | None = None
) -> list[Any]: ...


@overload
def observe_tools(
    tools_or_workbench: BaseTool[Any, Any] | Tool, collector: Collector, *, agent: str | None = None
) -> BaseTool[Any, Any]: ...


def observe_tools(tools_or_workbench: Any, collector: Collector, *, agent: str | None = None) -> Any:
    """Return the same kind of thing, recording one ``tool_call`` step per call.

    * a list of tools (``BaseTool``, any ``Tool``, or plain callables as ``AssistantAgent``
      accepts them, which become a ``FunctionTool`` exactly as ``AssistantAgent`` would make
      it) gives a list of ``BaseTool``: same name, description, schema, argument and return
      types, state and component configuration; workbenches in the list are observed too;
    * a ``StaticWorkbench`` or ``StaticStreamWorkbench`` gives a new workbench of the same
      class over the observed tools (same overrides); any other ``Workbench`` gives a
      delegating ``Workbench`` (with ``call_tool_stream`` if the wrapped one has it);
    * a single tool gives the observed tool.

    ``agent`` names the acting agent on the steps; by default the runtime agent handling
    the current message (``"type/key"``), else ``"runtime"``. Observing twice for the same
    collector returns the already observed object.
    """
    if isinstance(tools_or_workbench, Workbench):
        return _observe_workbench(tools_or_workbench, collector, agent)
    if isinstance(tools_or_workbench, (Tool, BaseTool)):
        return _observe_tool(tools_or_workbench, collector, agent)
    if isinstance(tools_or_workbench, Sequence) and not isinstance(tools_or_workbench, (str, bytes)):
        return [
            _observe_workbench(item, collector, agent)
            if isinstance(item, Workbench)
            else _observe_tool(item, collector, agent)
            for item in tools_or_workbench
        ]
    raise TypeError(f"observe_tools expects a list of tools or a Workbench, not {_type_name(tools_or_workbench)}")


# ------------------------------------------------------------------------ code execution


class DelegatingExecutor(_DelegatingLifecycle, CodeExecutor):
    """A ``CodeExecutor`` standing for ``_aer1_inner``: lifecycle, context manager and dump delegated."""

    _aer1_inner: CodeExecutor

    @property
    def wrapped_executor(self) -> CodeExecutor:
        """The executor this one stands for."""
        return self._aer1_inner

    async def restart(self) -> None:
        await self._aer1_inner.restart()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        return await self._aer1_inner.__aexit__(exc_type, exc_val, exc_tb)


class _ObservedCodeExecutor(DelegatingExecutor):
    """A ``CodeExecutor`` recording each ``execute_code_blocks`` call and delegating the rest."""

    def __init__(self, inner: CodeExecutor, collector: Collector, agent: str) -> None:
        self._aer1_inner = inner
        self._aer1_collector = collector
        self._aer1_agent = agent

    async def execute_code_blocks(
        self, code_blocks: list[CodeBlock], cancellation_token: CancellationToken
    ) -> CodeResult:
        """Execute with the wrapped executor; record the result as it returned it."""
        blocks = [{"language": b.language, "code": b.code} for b in code_blocks]
        started_at = time.time()
        try:
            result = await self._aer1_inner.execute_code_blocks(code_blocks, cancellation_token)
        except BaseException as exc:
            content = vocab.code_execution("autogen_core", blocks=blocks, exit_code=None, output=None,
                                           error=error_info(exc))
            self._record(content, started_at, failure_status(exc))
            raise
        # Read now: CodeExecutorAgent rewrites result.output in place after this returns.
        content = vocab.code_execution(
            "autogen_core", blocks=blocks, exit_code=result.exit_code, output=result.output,
            extras={"code_file": getattr(result, "code_file", None), "result_type": _type_name(result)})
        self._record(content, started_at, vocab.code_status(result.exit_code))
        return result

    def _record(self, content: dict[str, Any], started_at: float, status: str) -> None:
        _record_until_now(self._aer1_collector, "code_execution", content, self._aer1_agent, status, started_at)

def observe_code_executor(executor: CodeExecutor, collector: Collector, *, agent: str) -> CodeExecutor:
    """Wrap ``executor`` so each ``execute_code_blocks`` records a ``code_execution`` step.

    The result is a ``CodeExecutor`` (``CodeExecutorAgent`` accepts it) that delegates
    ``start``/``stop``/``restart``, the async context manager, ``dump_component`` and any
    other attribute (``work_dir``, ``timeout``...) to ``executor``. ``agent`` is the name of
    the agent executing the code (the ``CodeExecutorAgent``'s name).
    """
    if isinstance(executor, _ObservedCodeExecutor) and executor._aer1_collector is collector:
        return executor
    if not isinstance(executor, CodeExecutor):
        raise TypeError(f"observe_code_executor expects a CodeExecutor, not {_type_name(executor)}")
    return _ObservedCodeExecutor(executor, collector, agent)


# ------------------------------------------------------------------------------ approval


def _record_approval(
    collector: Collector,
    agent: str,
    request: Any,
    started_at: float,
    response: Any,
    exc: BaseException | None,
) -> None:
    context = getattr(request, "context", None)
    approved = getattr(response, "approved", None) if exc is None else None
    decision = "pending" if approved is None else "approved" if approved is True else "denied"
    content = vocab.approval(
        "autogen_core", decision=decision, name="code_execution", call_id=None, arguments=None,
        error=error_info(exc) if exc is not None else None,
        extras={"reason": getattr(response, "reason", None) if exc is None else None,
                "code": getattr(request, "code", None),
                "context_messages": len(context) if isinstance(context, Sequence) else None})
    status = "ok" if exc is None else failure_status(exc)
    _record_until_now(collector, "approval", content, agent, status, started_at)


@overload
def observe_approval(
    approval_func: Callable[[Any], Awaitable[_T]], collector: Collector, *, agent: str
) -> Callable[[Any], Awaitable[_T]]: ...


@overload
def observe_approval(
    approval_func: Callable[[Any], _T], collector: Collector, *, agent: str
) -> Callable[[Any], _T]: ...


def observe_approval(approval_func: Callable[[Any], Any], collector: Collector, *, agent: str) -> Callable[[Any], Any]:
    """Wrap a ``CodeExecutorAgent`` ``approval_func`` to record an ``approval`` step per decision.

    A coroutine function gives a coroutine function and a plain function a plain function
    (``CodeExecutorAgent`` decides how to call it with ``inspect.iscoroutinefunction``).
    The decision is returned unchanged; an exception is recorded and re-raised.
    """
    if inspect.iscoroutinefunction(approval_func):

        @functools.wraps(approval_func)
        async def observed_async(request: Any) -> Any:
            with outcome(functools.partial(_record_approval, collector, agent, request, time.time())) as response:
                response.append(await approval_func(request))
            return response[0]

        return observed_async

    @functools.wraps(approval_func)
    def observed(request: Any) -> Any:
        with outcome(functools.partial(_record_approval, collector, agent, request, time.time())) as response:
            response.append(approval_func(request))
        return response[0]

    return observed


# ------------------------------------------------------------------- intervention handler


class AER1InterventionHandler(DefaultInterventionHandler):
    """Record every send, publish and response a ``SingleThreadedAgentRuntime`` processes.

    Each becomes a ``message`` step (tool label ``send``, ``publish`` or ``response``) whose
    agent is the sender (``"type/key"``, or ``runtime`` for messages from outside any agent).
    The handler always returns the message it was given, unchanged (never ``None``, never
    ``DropMessage``) and never raises: the runtime drops a published message silently when a
    handler raises. Recording failures are counted by the collector and logged on ``aer1``.
    """

    def __init__(self, collector: Collector) -> None:
        self._collector = collector

    async def on_send(
        self, message: Any, *, message_context: MessageContext, recipient: AgentId
    ) -> Any | type[DropMessage]:
        """Record a direct message (``send_message``) and pass it on unchanged."""
        self._safely(
            "send",
            message,
            sender=message_context.sender,
            recipient=recipient,
            extra={"message_id": message_context.message_id, "is_rpc": message_context.is_rpc},
        )
        return message

    async def on_publish(self, message: Any, *, message_context: MessageContext) -> Any | type[DropMessage]:
        """Record a published message and pass it on unchanged."""
        topic = message_context.topic_id
        self._safely(
            "publish",
            message,
            sender=message_context.sender,
            recipient=None,
            extra={
                "message_id": message_context.message_id,
                "topic": {"type": topic.type, "source": topic.source} if topic is not None else None,
            },
        )
        return message

    async def on_response(self, message: Any, *, sender: AgentId, recipient: AgentId | None) -> Any | type[DropMessage]:
        """Record a handler's return value on its way back to the caller and pass it on unchanged."""
        self._safely("response", message, sender=sender, recipient=recipient, extra={})
        return message

    def _safely(
        self,
        label: str,
        message: Any,
        *,
        sender: AgentId | None,
        recipient: AgentId | None,
        extra: dict[str, Any],
    ) -> None:
        try:
            now = time.time()
            content = vocab.message("autogen_core", content=message, message_id=None, role=None, extras={
                "delivery": label,
                "sender": str(sender) if sender is not None else None,
                "recipient": str(recipient) if recipient is not None else None,
                "message_type": _type_name(message),
                **extra,
            })
            self._collector.safe_record(
                label,
                content,
                agent=core_agent_name(sender),
                kind="message",
                started_at=now,
                ended_at=now,
                recipient=str(recipient) if recipient is not None else None,
                reply_to=str(recipient) if label == "response" and recipient is not None else None,
            )
        except Exception:  # safe_record does not raise; this guards the content built above
            logger.warning("aer1: could not record a runtime %s", label, exc_info=True)
