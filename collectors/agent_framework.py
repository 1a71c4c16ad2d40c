"""Microsoft Agent Framework collector: agent, chat and function middlewares, and workflow runs.

Needs ``agent-framework-core`` (``pip install "aer1[agent-framework]"``); nothing else in
``aer1`` imports it. One line per agent::

    collector = AER1AgentFrameworkCollector(goal="...")
    agent = collector.observe(Agent(client=client, name="alice", tools=[...]))

adds three observing middlewares to the agent (see :meth:`AER1AgentFrameworkCollector.observe`):

* an agent middleware: one ``message`` step per agent run (messages in and out,
  ``user_input_requests``, finish reason), an ``error`` step when the run raises, and
  the approval responses the run carries (``approval`` steps; a denied call also gets a
  ``tool_call`` step with status ``cancelled``);
* a chat middleware: one step per function call the model proposed, executed or not;
* a function middleware, innermost: one ``tool_call`` step per executed call (call id,
  arguments, result or exception, its own timing).

:meth:`AER1AgentFrameworkCollector.run` and :meth:`~AER1AgentFrameworkCollector.run_stream`
run a workflow (Sequential, Concurrent, GroupChat, Handoff, Magentic or hand-built), observe
every agent inside it, pass every event through unchanged, and record the task, speaker
selections, handoffs, ``request_info`` requests and their responses, executor failures,
outputs and the final status. ``spec/agent-framework.md`` says what is observed and how.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

try:
    from agent_framework import (
        AgentContext,
        AgentExecutor,
        AgentMiddleware,
        AgentResponse,
        ChatContext,
        ChatMiddleware,
        ChatResponse,
        Content,
        FunctionInvocationContext,
        FunctionMiddleware,
        Message,
        ResponseStream,
        SupportsAgentRun,
        Workflow,
        WorkflowEvent,
        WorkflowRunResult,
        WorkflowRunState,
    )
except ImportError as e:  # the extra is not installed: say how to install it
    raise ImportError(
        f"aer1.collectors.agent_framework needs Microsoft Agent Framework: got {e}, want it installed with "
        "pip install 'aer1[agent-framework]'"
    ) from e

from aer1 import Collector
from aer1 import _steps_vocab as vocab

from ._af_internals import (
    active_run,
    function_call_id,
    is_arguments_error,
    max_rounds,
    model_arguments,
    model_facts,
    response_model,
    stream_error,
)
from ._bounded import MAX_DEPTH, MAX_ITEMS, MAX_TEXT_CHARS, NOT_SPECIAL, OMITTED_KEY, bounded, bounded_text
from ._errors import count_failure, error_info, failure_status

__all__ = [
    "DEFAULT_RESPONDER",
    "MAX_DEPTH",
    "MAX_ITEMS",
    "MAX_LISTED_MESSAGES",
    "MAX_TEXT_CHARS",
    "OMITTED_KEY",
    "STOP_REASON_NOTE",
    "WORKFLOW_ACTOR_PREFIX",
    "AER1AgentFrameworkCollector",
    "workflow_actor",
]

#: Prefix of the ``agent`` of workflow-level steps (task, speaker selection, end). ``observe``
#: refuses an agent whose name starts with it, so no agent's steps read as a workflow's.
WORKFLOW_ACTOR_PREFIX = "workflow:"
#: The ``agent`` of a response to a ``request_info`` request when the caller names nobody.
DEFAULT_RESPONDER = "user"
#: Most messages listed per step; older ones are counted, not listed.
MAX_LISTED_MESSAGES = 64
#: Workflow states that end a run (a paused run waits for responses: not an end).
_FINAL_STATES = frozenset({WorkflowRunState.IDLE, WorkflowRunState.FAILED, WorkflowRunState.CANCELLED})

#: The ``reason`` of the ``termination`` step finalize records for a run that had not ended.
UNFINISHED_REASON = ("the run had not ended when the receipt was finalized: its event stream was not read to the "
                     "end, or it was still running")
#: Said by every ``termination`` step: the framework reports how a run ended, not why.
STOP_REASON_NOTE = (
    "Agent Framework reports no structured stop reason: final_state, rounds, max_rounds and the executor "
    "of the closing output are what was observed"
)

#: The agent whose run the current task is in (chat and function middlewares name it as actor).
_CURRENT_AGENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("aer1_af_agent", default=None)


def workflow_actor(workflow: Workflow) -> str:
    """The actor of a workflow's own steps: ``workflow:<name>/<id>``, one per workflow instance.

    Two workflows from the same builder share a name, never an id; a run resumed with
    ``responses=`` runs on the same instance, so it keeps its actor.
    """
    name = getattr(workflow, "name", None) or "workflow"
    wid = getattr(workflow, "id", None)
    return f"{WORKFLOW_ACTOR_PREFIX}{name}/{wid}" if wid else f"{WORKFLOW_ACTOR_PREFIX}{name}"


_text = bounded_text


def _framework_types(value: Any, depth: int) -> Any:
    """Framework contents and messages by their members (for :func:`_plain`)."""
    if isinstance(value, Content):
        return _content(value, depth + 1)
    if isinstance(value, Message):
        return _message(value, depth + 1)
    return NOT_SPECIAL


def _plain(value: Any, depth: int = 0) -> Any:
    """JSON-ready ``value``, bounded (:func:`~._bounded.bounded`): framework contents and messages by their members."""
    return bounded(value, depth, _framework_types)


def _content(item: Content, depth: int = 0) -> dict[str, Any]:
    """The parts of one content item a reader needs: its type and the members of that type."""
    out: dict[str, Any] = {"type": item.type}
    for name in ("text", "call_id", "name", "arguments", "result", "exception", "approved", "id"):
        value = getattr(item, name, None)
        if value is not None:
            out[name] = _plain(value, depth + 1)
    call = getattr(item, "function_call", None)
    if isinstance(call, Content):
        out["function_call"] = _content(call, depth + 1)
    return out


def _message(message: Message, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"role": str(message.role), "contents": _plain(list(message.contents), depth)}
    if message.author_name:
        out["author_name"] = message.author_name
    return out


def _messages(messages: Sequence[Any]) -> dict[str, Any]:
    """The last :data:`MAX_LISTED_MESSAGES` messages, and how many were left out."""
    listed = [m for m in messages if isinstance(m, Message)]
    kept = listed[-MAX_LISTED_MESSAGES:]
    return {"messages": [_message(m) for m in kept], "omitted": len(listed) - len(kept)}


def _model_of(agent: Any, response: AgentResponse[Any]) -> dict[str, Any]:
    """The vocabulary's ``model`` of an agent's reply: provider, models, the run's token usage, why it stopped."""
    provider, request_model = model_facts(agent)
    usage = response.usage_details if isinstance(response.usage_details, Mapping) else {}
    finish = response.finish_reason
    return vocab.model_reply(provider=provider, request_model=request_model, response_model=response_model(response),
                             input_tokens=usage.get("input_token_count"),
                             output_tokens=usage.get("output_token_count"),
                             finish_reasons=None if finish is None else [str(getattr(finish, "value", finish))])


def _call_of(item: Content) -> Content | None:
    call = getattr(item, "function_call", None)
    return call if isinstance(call, Content) else None


class _AgentRecorder(AgentMiddleware):
    """Records each run of the agent it is installed on (see the module doc)."""

    def __init__(self, collector: AER1AgentFrameworkCollector) -> None:
        self.collector = collector

    async def process(self, context: AgentContext, call_next: Callable[[], Awaitable[None]]) -> None:
        c = self.collector
        name = _agent_name(context.agent)
        outer = _CURRENT_AGENT.get()
        _CURRENT_AGENT.set(name)
        started = time.time()
        messages_in = list(context.messages)
        c._observe_approval_responses(name, messages_in)
        try:
            await call_next()
        except BaseException as e:
            _CURRENT_AGENT.set(outer)
            c._record_turn_error(name, messages_in, started, e)
            raise
        result = context.result
        if isinstance(result, ResponseStream):
            stream = result

            def on_final(response: AgentResponse[Any]) -> None:
                _CURRENT_AGENT.set(outer)
                c._record_turn(name, messages_in, response, started, context.agent)

            def on_cleanup() -> None:  # runs when the stream ends; a failed stream gets no final response
                error = stream_error(stream)
                if error is not None:
                    _CURRENT_AGENT.set(outer)
                    c._record_turn_error(name, messages_in, started, error)

            context.stream_result_hooks.append(on_final)
            context.stream_cleanup_hooks.append(on_cleanup)
        else:
            _CURRENT_AGENT.set(outer)
            c._record_turn(name, messages_in, result, started, context.agent)


class _ChatRecorder(ChatMiddleware):
    """Records the function calls the model proposed in each chat response."""

    def __init__(self, collector: AER1AgentFrameworkCollector) -> None:
        self.collector = collector

    async def process(self, context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        c = self.collector
        name = _CURRENT_AGENT.get() or "assistant"
        await call_next()
        result = context.result
        if isinstance(result, ResponseStream):

            def on_final(response: ChatResponse[Any]) -> None:
                c._record_proposals(name, response)

            context.stream_result_hooks.append(on_final)
        elif isinstance(result, ChatResponse):
            c._record_proposals(name, result)


class _FunctionRecorder(FunctionMiddleware):
    """Records each executed tool call: call id, arguments, result or exception, timing."""

    def __init__(self, collector: AER1AgentFrameworkCollector) -> None:
        self.collector = collector

    async def process(self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]) -> None:
        c = self.collector
        started = time.time()
        key = object()  # finalize() before the call returns: recorded as cut off
        c.open_action(key, lambda: c._record_call(context, started, cut_off=True))
        try:
            await call_next()
        except BaseException as e:
            if c.close_action(key):
                c._record_call(context, started, error=e)
            raise
        if c.close_action(key):
            c._record_call(context, started)


_AgentT = TypeVar("_AgentT", bound=SupportsAgentRun)


def _vocab_error(details: Mapping[str, Any] | None) -> dict[str, Any]:
    """The vocabulary's ``error`` of a workflow's error details (type and message as the framework gives them)."""
    if details is None:
        return vocab.error_code("workflow_error", "")
    return vocab.error_code(str(details.get("type") or "workflow_error"), details.get("message") or "")


def _result_text(result: Any) -> Any:
    """A tool result in the vocabulary: text contents alone read as their text (what the model is told).

    Agent Framework hands a tool's return value back as a list of contents; when every one
    is a text content, the result is their text, as the other collectors record it. Any
    other content (data, images, errors) keeps the list.
    """
    if isinstance(result, list) and result and all(
        isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)
        and set(c) <= {"type", "text", "annotations", "additional_properties", "raw_representation"}
        for c in result
    ):
        return "".join(c["text"] for c in result)
    return result


def _agent_name(agent: Any) -> str:
    name = getattr(agent, "name", None) or getattr(agent, "id", None)
    return str(name) if name else type(agent).__name__


class AER1AgentFrameworkCollector(Collector):
    """An :class:`aer1.Collector` that observes Agent Framework agents and workflows."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: request id -> (kind, call id) of requests seen and not answered yet
        self._pending: dict[str, tuple[str, str | None]] = {}
        #: runs started and not ended: finalize records each as not finished
        self._open_runs: list[_Run] = []
        self._cut_short = False
        #: call id -> who answered its approval request through ``run(responses=..., responder=...)``
        self._approvers: dict[str, str] = {}

    # ----------------------------------------------------------------- agents

    def middleware(self) -> list[AgentMiddleware | ChatMiddleware | FunctionMiddleware]:
        """The three recorders, in the order to install them (last: innermost)."""
        return [_AgentRecorder(self), _ChatRecorder(self), _FunctionRecorder(self)]

    def observe(self, agent: _AgentT) -> _AgentT:
        """Append this collector's middlewares to ``agent.middleware`` (once) and return the agent.

        Appended last, our function middleware is the innermost one: it sees a call only
        if every middleware before it let the call through, with the arguments it ran with.
        """
        name = _agent_name(agent)
        if name.startswith(WORKFLOW_ACTOR_PREFIX):
            raise ValueError(f"agent name {name!r} starts with {WORKFLOW_ACTOR_PREFIX!r}: got a workflow actor's "
                             "name, want another name (it would read as a workflow's steps)")
        current = list(getattr(agent, "middleware", None) or [])
        if any(getattr(m, "collector", None) is self for m in current):
            return agent
        try:
            agent.middleware = [*current, *self.middleware()]  # type: ignore[attr-defined]
        except AttributeError as e:
            raise TypeError(f"{type(agent).__name__} takes no middleware: got an agent without a middleware list, "
                            "want an agent_framework Agent") from e
        try:
            self.register_agent(name, type=type(agent).__name__, description=getattr(agent, "description", None))
        except ValueError as e:  # a second agent with the same name: its steps still carry the name
            count_failure(self, f"agent {name!r} registration", e)
        return agent

    def _record_turn(self, name: str, messages_in: list[Message], response: Any, started: float,
                     agent: Any = None) -> None:
        try:
            out: dict[str, Any] = {"input": _messages(messages_in)}
            text: str | None = None
            response_id: str | None = None
            model: dict[str, Any] | None = None
            if isinstance(response, AgentResponse):
                out["response"] = _messages(response.messages)
                out["user_input_requests"] = _plain(list(response.user_input_requests))
                out["finish_reason"] = _plain(response.finish_reason)
                text = response.text or None
                response_id = response.response_id if isinstance(response.response_id, str) else None
                model = _model_of(agent, response)
                for request in response.user_input_requests:
                    self._record_approval_request(name, request)
            else:
                out["response"] = None
            content = vocab.message("agent_framework", content=text, message_id=response_id, role="assistant",
                                    model=model, extras=out)
            self.safe_record("agent_run", content, agent=name, kind="message", started_at=started)
        except Exception as e:
            count_failure(self, f"agent {name!r} turn", e)

    def _record_turn_error(self, name: str, messages_in: list[Message], started: float, exc: BaseException) -> None:
        try:
            content = vocab.error_step("agent_framework", error=error_info(exc), phase="reply",
                                       extras={"input": _messages(messages_in)})
            self.safe_record("agent_run", content, agent=name, kind="error", status=failure_status(exc),
                             started_at=started)
        except Exception as e:
            count_failure(self, f"agent {name!r} failure", e)

    def _record_approval_request(self, name: str, request: Content) -> None:
        call = _call_of(request)
        if request.type != "function_approval_request" or call is None:
            content = vocab.human_input("agent_framework", prompt=_content(request), input=None,
                                        request_id=getattr(request, "id", None))
            self.safe_record("user_input_request", content, agent=name, kind="human_input")
            return
        content = vocab.approval("agent_framework", decision="requested", name=call.name, call_id=call.call_id or None,
                                 arguments=_plain(call.arguments), extras={"request_id": request.id})
        self.safe_record(f"approve:{call.name}", content, agent=name, kind="approval", call_id=call.call_id or None)

    def _observe_approval_responses(self, name: str, messages: list[Message]) -> None:
        """Record each approval response an agent run receives; a denied call as cancelled."""
        try:
            for message in messages:
                for item in message.contents:
                    call = _call_of(item)
                    if item.type != "function_approval_response" or call is None:
                        continue
                    approved = bool(item.approved)
                    cid = call.call_id or None
                    responder = self._approvers.pop(cid, DEFAULT_RESPONDER) if cid else DEFAULT_RESPONDER
                    content = vocab.approval("agent_framework", decision="approved" if approved else "denied",
                                             name=call.name, call_id=cid, arguments=_plain(call.arguments),
                                             responder=responder, extras={"request_id": item.id, "for_agent": name})
                    self.safe_record(f"approve:{call.name}", content, agent=responder, kind="approval", call_id=cid)
                    if not approved:
                        denied = vocab.tool_call("agent_framework", name=str(call.name), call_id=cid,
                                                 arguments=_plain(call.arguments), result=None,
                                                 error=vocab.error_code("approval_denied", "approval denied"),
                                                 extras={"executed": False})
                        self.safe_record(str(call.name), denied, agent=name, kind="tool_call", status="cancelled",
                                         call_id=cid)
        except Exception as e:
            count_failure(self, f"agent {name!r} approval responses", e)

    def _record_proposals(self, name: str, response: ChatResponse[Any]) -> None:
        try:
            for message in response.messages:
                for item in message.contents:
                    if item.type == "function_call":
                        content = {"function": item.name, "arguments": _plain(item.arguments), "proposed": True}
                        self.safe_record("function_call_proposed", content, agent=name, kind="message",
                                         call_id=item.call_id or None)
        except Exception as e:
            count_failure(self, f"agent {name!r} model response", e)

    def _record_call(
        self, context: FunctionInvocationContext, started: float, error: BaseException | None = None,
        cut_off: bool = False,
    ) -> None:
        try:
            name = _CURRENT_AGENT.get() or "assistant"
            call_id = function_call_id(context)
            result = _result_text(_plain(context.result)) if error is None and not cut_off else None
            failure = error_info(error) if error is not None else None
            extras: dict[str, Any] = {"executed": True}
            if error is not None and is_arguments_error(error):  # refused before it ran (spec/steps.md)
                failure = vocab.error_code(vocab.ARGUMENTS_INVALID, failure["message"] if failure else "")
                extras = {"executed": False, "exception": type(error).__qualname__}
            if cut_off:
                failure = vocab.error_code(vocab.CANCELLED, vocab.UNFINISHED_MESSAGE)
            content = vocab.tool_call("agent_framework", name=str(context.function.name), call_id=call_id,
                                      arguments=model_arguments(context.function, _plain(context.arguments)),
                                      result=result, error=failure, extras=extras)
            status = "cancelled" if cut_off else "ok" if error is None else failure_status(error)
            self.safe_record(str(context.function.name), content, agent=name, kind="tool_call", status=status,
                             started_at=started, call_id=call_id)
        except Exception as e:
            count_failure(self, "tool call", e)

    # -------------------------------------------------------------- workflows

    def _observe_workflow(self, workflow: Workflow) -> None:
        """Observe every agent the workflow runs (its participants' steps, surfaced or not)."""
        for executor in workflow.get_executors_list():
            if isinstance(executor, AgentExecutor):
                self.observe(executor.agent)

    async def run(
        self,
        workflow: Workflow,
        message: Any = None,
        *,
        responses: Mapping[str, Any] | None = None,
        responder: str | None = None,
        **kwargs: Any,
    ) -> WorkflowRunResult:
        """``await workflow.run(...)`` (not streamed, as the caller asked), recording each event as it happens.

        The events are observed on the run's own event stream (see ``_af_internals.active_run``);
        the result returned is the framework's own.
        """
        run = self._start(workflow, message, responses, responder)
        pending: Awaitable[WorkflowRunResult] = workflow.run(message, responses=responses, **kwargs)
        stream = active_run(workflow)
        if stream is not None:
            stream.with_update_transform(run.observer(self))
        try:
            result = await pending
        except BaseException as e:
            self._record_abort(run, e)
            raise
        if stream is None:  # a release without the private handle: record the events afterwards
            for event in [*result.status_timeline(), *result]:
                self._observe_event(run, event)
        self._record_end(run)
        return result

    async def run_stream(
        self,
        workflow: Workflow,
        message: Any = None,
        *,
        responses: Mapping[str, Any] | None = None,
        responder: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[WorkflowEvent[Any]]:
        """Yield every event of ``workflow.run(..., stream=True)`` unchanged, each recorded before it is yielded.

        ``responses`` answers pending ``request_info`` requests (as ``workflow.run`` takes
        them); ``responder`` names who answered (default :data:`DEFAULT_RESPONDER`).
        """
        run = self._start(workflow, message, responses, responder)
        stream = workflow.run(message, stream=True, responses=responses, **kwargs)
        stream.with_update_transform(run.observer(self))
        try:
            async for event in stream:
                yield event
        except BaseException as e:
            self._record_abort(run, e)
            raise
        self._record_end(run)

    def _start(
        self, workflow: Workflow, message: Any, responses: Mapping[str, Any] | None, responder: str | None
    ) -> _Run:
        """Observe the workflow's agents; record the task and the responses the run starts with."""
        actor = workflow_actor(workflow)
        try:
            self._observe_workflow(workflow)
            self.register_agent(actor, type=type(workflow).__name__)
        except Exception as e:
            count_failure(self, f"workflow {actor!r}", e)
        if message is not None:
            self.safe_record("task", {"input": _plain(message)}, agent=actor, kind="task")
        if responses:
            self._record_responses(responses, responder or DEFAULT_RESPONDER)
        run = _Run(actor, max_rounds(workflow))
        self._open_runs.append(run)
        return run

    def _close_run(self, run: _Run) -> bool:
        """Mark ``run`` ended; False when it already was (finalize recorded it as not finished)."""
        if run not in self._open_runs:
            return False
        self._open_runs.remove(run)
        return True

    def finalize(self, final_answer: Any = None, *, status: str | None = None) -> dict[str, Any]:
        """Close the chain; a run still open first gets a ``termination`` step saying it had not ended,
        and the receipt's status is then ``incomplete`` (unless ``status`` says otherwise).

        A caller that stops iterating :meth:`run_stream` early leaves the stream suspended;
        Python closes it only later, after the receipt was finalized, so its end would be lost.
        """
        for run in list(self._open_runs):
            self._close_run(run)
            self._cut_short = True
            self.safe_record("workflow_end", self._termination("unfinished", UNFINISHED_REASON, {
                "final_state": _state(run.state), "rounds": run.rounds}), agent=run.actor, kind="termination",
                status="cancelled")
        if status is None and self._cut_short:
            status = "incomplete"  # as the built-in manager says of a run cut short
        return super().finalize(final_answer, status=status)

    def _record_abort(self, run: _Run, exc: BaseException) -> None:
        """The ``termination`` step of a run that raised (status ``error`` or ``cancelled``)."""
        if not self._close_run(run):
            return
        status = failure_status(exc)
        content = self._termination("error" if status == "error" else "cancelled", None,
                                    {"final_state": _state(run.state)}, error=error_info(exc))
        self.safe_record("workflow_end", content, agent=run.actor, kind="termination", status=status)

    def _termination(self, outcome: str, reason: str | None, extras: dict[str, Any],
                     error: dict[str, Any] | None = None) -> dict[str, Any]:
        """A workflow run's ``termination`` content (spec/steps.md), the steps so far counted by status."""
        return vocab.termination("agent_framework", outcome=outcome, reason=reason, messages=None,
                                 step_statuses=self.status_counts(), error=error, extras=extras)

    def _record_responses(self, responses: Mapping[str, Any], responder: str) -> None:
        for request_id, response in responses.items():
            kind, call_id = self._pending.pop(str(request_id), ("human_input", None))
            if kind == "approval":
                if call_id is not None:  # the agent run that receives it records the decision and this responder
                    self._approvers[call_id] = responder
                continue
            content = vocab.human_input("agent_framework", prompt=None, input=_plain(response),
                                        request_id=str(request_id))
            self.safe_record("request_info_response", content, agent=responder, kind="human_input", call_id=call_id)

    def _record_end(self, run: _Run) -> None:
        """The ``termination`` step: what is known of the end (the framework gives no stop reason)."""
        if not self._close_run(run):
            return
        state = run.state
        if state == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS:
            return  # paused: the run goes on when the responses come
        extras: dict[str, Any] = {
            "final_state": _state(state),
            "rounds": run.rounds,
            "max_rounds": run.max_rounds,
            "max_rounds_reached": run.max_rounds is not None and run.rounds >= run.max_rounds,
            "closing_output_from": run.last_output_from,
            "note": STOP_REASON_NOTE,
        }
        outcome = "error" if state == WorkflowRunState.FAILED else "cancelled" \
            if state == WorkflowRunState.CANCELLED else "finished"
        content = self._termination(outcome, None, extras)
        self.safe_record("workflow_end", content, agent=run.actor, kind="termination",
                         status=vocab.outcome_status(outcome))

    def _observe_event(self, run: _Run, event: WorkflowEvent[Any]) -> None:
        """Record one workflow event (never raises: a failure is counted)."""
        try:
            self._record_event(run, event)
        except Exception as e:
            count_failure(self, f"workflow event {getattr(event, 'type', '?')!r}", e)

    def _record_event(self, run: _Run, event: WorkflowEvent[Any]) -> None:
        actor = run.actor
        kind = event.type
        data = event.data
        if kind == "status":
            run.state = event.state
        elif kind == "group_chat":
            if type(data).__name__ == "GroupChatRequestSentEvent":
                run.rounds += 1
            self._record_group_chat(actor, data)
        elif kind == "handoff_sent":
            self.safe_record("handoff", vocab.handoff("agent_framework", target=str(data.target), content=None,
                                                      extras={"source": data.source}),
                             agent=str(data.source), kind="handoff", target=str(data.target))
        elif kind == "magentic_orchestrator":
            self._record_magentic(actor, data)
        elif kind == "request_info":
            self._record_request(actor, event)
        elif kind in ("output", "intermediate"):
            run.last_output_from = event.executor_id
            self.safe_record(f"workflow_{kind}", {"executor_id": event.executor_id, "data": _plain(_data_of(data))},
                             agent=str(event.executor_id or actor), kind="message")
        elif kind == "executor_failed":
            details = event.details
            self.safe_record("executor_failed", vocab.error_step(
                "agent_framework", error=_vocab_error(_details(details)), phase="executor",
                extras={"executor_id": event.executor_id, "details": _details(details)}),
                agent=str(event.executor_id or actor), kind="error", status="error")
        elif kind == "failed":
            self.safe_record("workflow_failed", vocab.error_step(
                "agent_framework", error=_vocab_error(_details(event.details)), phase="workflow",
                extras={"details": _details(event.details)}), agent=actor, kind="error", status="error")
        elif kind in ("error", "warning"):
            self.safe_record(f"workflow_{kind}", {"data": _plain(data)}, agent=actor, kind="error" if kind == "error"
                             else "message", status="error" if kind == "error" else "ok")

    def _record_group_chat(self, actor: str, data: Any) -> None:
        participant = str(data.participant_name)
        content = {"round": data.round_index, "participant": participant}
        if type(data).__name__ == "GroupChatRequestSentEvent":
            self.safe_record("speaker_selection", content, agent=actor, kind="speaker_selection", target=participant)
        else:
            self.safe_record("group_chat_response", content, agent=actor, kind="message")

    def _record_magentic(self, actor: str, data: Any) -> None:
        """The manager's plan and progress ledgers (its choice of speaker is the next group chat request)."""
        event_type = getattr(getattr(data, "event_type", None), "value", None)
        body = data.content
        to_dict = getattr(body, "to_dict", None)
        self.safe_record(f"magentic_{event_type}", {"content": _plain(to_dict() if callable(to_dict) else body)},
                         agent=actor, kind="message")

    def _record_request(self, actor: str, event: WorkflowEvent[Any]) -> None:
        request_id = str(event.request_id)
        data = event.data
        if isinstance(data, Content) and data.type == "function_approval_request":
            call = _call_of(data)
            self._pending[request_id] = ("approval", call.call_id if call is not None else None)
            return  # the agent run that asked records the request (with the call id)
        self._pending[request_id] = ("human_input", None)
        content = vocab.human_input("agent_framework", prompt=_plain(_data_of(data)), input=None,
                                    request_id=request_id)
        self.safe_record("request_info", content, agent=str(event.source_executor_id or actor), kind="human_input")


class _Run:
    """What one ``run_stream`` call has seen so far (for its ``termination`` step)."""

    def __init__(self, actor: str, max_rounds: int | None) -> None:
        self.actor = actor
        self.max_rounds = max_rounds
        self.rounds = 0
        self.state: WorkflowRunState | None = None
        self.last_output_from: str | None = None

    def observer(self, collector: AER1AgentFrameworkCollector) -> Callable[[WorkflowEvent[Any]], None]:
        """An update transform for the run's event stream: records each event, changes none."""

        def observe(event: WorkflowEvent[Any]) -> None:
            collector._observe_event(self, event)

        return observe


def _state(state: WorkflowRunState | None) -> str | None:
    return state.value if state is not None else None


def _data_of(data: Any) -> Any:
    """An event's payload as data: agent responses and updates by their messages or text."""
    if isinstance(data, AgentResponse):
        return _messages(data.messages)
    messages = getattr(data, "messages", None)
    if isinstance(messages, list):
        return _messages(messages)
    contents = getattr(data, "contents", None)
    if isinstance(contents, list):
        return {"author_name": getattr(data, "author_name", None), "contents": _plain(list(contents))}
    return data


def _details(details: Any) -> dict[str, Any] | None:
    if details is None:
        return None
    return {"type": _text(details.error_type), "message": _text(details.message),
            "executor_id": details.executor_id}
