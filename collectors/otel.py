"""OpenTelemetry span processors: spans that name their steps, and receipts built from spans (spec/otel.md).

* :class:`ReceiptSpanProcessor` joins a recorded run to its trace: every span started while
  the collector is open carries ``aer1.workflow_id``; a span a step was recorded under
  carries ``aer1.step.seq`` and ``aer1.step.receipt_id``; a tool call's step carries the ids
  of the tool's own ``execute_tool`` span (found by ``gen_ai.tool.call.id``).
* :class:`SpanReceiptCollector` builds a receipt from the GenAI spans of one trace, for any
  instrumented framework: one step per ``invoke_agent``, ``execute_tool``, ``chat`` (and the
  other GenAI operations) span, holding what the span holds and naming what it does not.

Both are added to the user's ``TracerProvider`` in one line; neither changes which spans are
emitted or what the user's exporters receive beyond the ``aer1.*`` attributes. Needs the
OpenTelemetry SDK (extra ``otel``).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import NonRecordingSpan, StatusCode

from aer1 import Collector
from aer1 import _steps_vocab as vocab
from aer1._trace import run_in_context, unwatch, watch

from . import _otel_internals as sdk

__all__ = [
    "ABSENT_CONTENT",
    "MAX_STEPS_PER_SPAN",
    "MAX_TOOL_SPANS",
    "MAX_WAITING_SPANS",
    "WORKFLOW_ATTRIBUTE",
    "ReceiptSpanProcessor",
    "SpanReceiptCollector",
]

log = logging.getLogger("aer1")
sdk.TABLE.warn_if_unchecked()  # logs once when the installed SDK is not one its private names were checked on

#: Span attributes aer1 sets (and the only ones).
WORKFLOW_ATTRIBUTE = "aer1.workflow_id"
STEP_SEQ_ATTRIBUTE = "aer1.step.seq"
STEP_ID_ATTRIBUTE = "aer1.step.receipt_id"
#: GenAI semantic convention names read here.
_OPERATION = sdk.OPERATION
_TOOL_NAME = "gen_ai.tool.name"
_CALL_ID = sdk.TOOL_CALL_ID
_AGENT_NAME = "gen_ai.agent.name"
_EXECUTE_TOOL = sdk.EXECUTE_TOOL
_INVOKE_AGENT = "invoke_agent"
#: Operations that are a model's reply: their steps carry a ``model`` member.
_MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
#: execute_tool spans remembered (by call id) for the tool-call step that follows them.
MAX_TOOL_SPANS = 4096
#: Steps a span names; a span under which more were recorded names the first ones.
MAX_STEPS_PER_SPAN = 64
#: Ended spans a SpanReceiptCollector holds back for an earlier sibling still open; past it they are recorded as
#: they end.
MAX_WAITING_SPANS = 10_000
#: Content the conventions make opt-in, per operation: what a step says is absent when the span lacks it.
ABSENT_CONTENT: Mapping[str, tuple[str, ...]] = {
    "execute_tool": ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"),
    "invoke_agent": ("gen_ai.input.messages", "gen_ai.output.messages"),
    "chat": ("gen_ai.input.messages", "gen_ai.output.messages"),
    "text_completion": ("gen_ai.input.messages", "gen_ai.output.messages"),
    "generate_content": ("gen_ai.input.messages", "gen_ai.output.messages"),
}
_NO_CONTEXT = None


class ReceiptSpanProcessor(SpanProcessor):
    """Joins a collector's steps and the spans of its run, both ways (``provider.add_span_processor(...)``).

    The spans of the run are the spans started on this provider while the collector is open
    (from this processor's creation until ``finalize()``): give each concurrent run its own
    provider, or its spans carry the workflow id of whichever collector is open. A step
    recorded under a span that is still recording names the span's step; an ``execute_tool``
    span has usually ended when the framework's collector records the call (AgentChat and
    Agent Framework record a call from its result), so such a span names its step by
    ``aer1.workflow_id`` and ``gen_ai.tool.call.id`` (the step's ``call_id``) and the step names
    the span by its ids. Whatever this processor fails at is counted on the collector.
    """

    def __init__(self, collector: Collector) -> None:
        self._collector = collector
        self._workflow_id = collector.workflow_id
        self._lock = threading.Lock()
        self._tool_spans: OrderedDict[str, deque[Any]] = OrderedDict()  # call id -> execute_tool spans, oldest first
        self._tool_span_count = 0
        self._remembered: set[int] = set()  # span ids of the execute_tool spans in _tool_spans
        self._named: dict[int, list[tuple[int, str]]] = {}  # span id -> (seq, receipt_id) of its steps
        self._claimed_open: set[int] = set()  # span ids of execute_tool spans given to a step before they ended
        self._shut = False
        watch(collector, self)

    # ------------------------------------------------------------ the provider's calls

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        """Tag the span with the workflow id; remember an execute_tool span by its call id."""
        collector = self._collector
        if collector.closed:
            return
        try:
            # The SDK's own span: tagged in its attribute dict (_otel_internals), else by the public call.
            attributes: Mapping[str, Any] | None = sdk.tag(span, WORKFLOW_ATTRIBUTE, self._workflow_id)
            if attributes is None:
                span.set_attribute(WORKFLOW_ATTRIBUTE, self._workflow_id)
                attributes = _readable(span)
            if attributes.get(_OPERATION) == _EXECUTE_TOOL:
                call_id = attributes.get(_CALL_ID)
                if isinstance(call_id, str) and call_id:
                    self._remember_tool_span(call_id, span)
        except Exception as e:
            collector.count_recording_failure("a span's start", e)

    def on_end(self, span: ReadableSpan) -> None:
        """Forget which steps the span named (it can take no more attributes); remember an execute_tool span
        whose call id was set only after its start (AG2's middleware), for the step that follows it."""
        named = self._named
        if named:  # some open span names steps: is it this one? (the lock only when it is)
            ctx = span.get_span_context()
            if ctx is not None and ctx.span_id in named:
                with self._lock:
                    named.pop(ctx.span_id, None)
        try:
            # The SDK's own span: read in its attribute dict (_otel_internals), else in the public view.
            call_id = sdk.tool_call_id(span)
            if call_id is sdk.NOT_SDK:
                attributes = _readable(span)
                call_id = attributes.get(_CALL_ID) if attributes.get(_OPERATION) == _EXECUTE_TOOL else None
            if not call_id or not isinstance(call_id, str) or self._collector.closed:
                return  # not a tool's span (nearly every span), or the run is over
            ctx = span.get_span_context()
            if ctx is None:
                return
            with self._lock:
                if ctx.span_id in self._claimed_open:  # given to a step while open: never to a second one
                    self._claimed_open.discard(ctx.span_id)
                    return
                if ctx.span_id in self._remembered:
                    return
            self._remember_tool_span(call_id, span)
        except Exception as e:
            self._collector.count_recording_failure("a span's end", e)

    def shutdown(self) -> None:
        """Stop joining; a collector still open is told (its receipt counts a recording failure)."""
        if self._shut:
            return
        self._shut = True
        unwatch(self._collector, self)
        if not self._collector.closed:
            self._collector.count_recording_failure(
                "the spans of the rest of the run",
                RuntimeError("the tracer provider was shut down before the run was finalized"))

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered."""
        return True

    # ------------------------------------------------------------ the collector's calls

    def tool_span(self, call_id: str) -> Any:
        """The oldest execute_tool span with this call id not yet claimed by a step (and claims it)."""
        with self._lock:
            spans = self._tool_spans.get(call_id)
            if not spans:
                return None
            span = spans.popleft()
            self._tool_span_count -= 1
            span_id = span.get_span_context().span_id
            self._remembered.discard(span_id)
            recording = getattr(span, "is_recording", None)
            if recording is not None and recording():  # its end must not offer it again (on_end)
                self._claimed_open.add(span_id)
            if not spans:
                del self._tool_spans[call_id]
            return span

    def step_recorded(self, span: Any, step: dict[str, Any]) -> None:
        """Name the step on its span while the span is recording (a list when several steps share it)."""
        recording = getattr(span, "is_recording", None)  # an ended span is handed over as a ReadableSpan
        if recording is None or not recording():
            return
        key = span.get_span_context().span_id
        seq, receipt_id = step["seq"], step["receipt_id"]
        with self._lock:
            named = self._named.get(key)
            if named is None:  # the span's first step (nearly always): no lists to build
                self._named[key] = [(seq, receipt_id)]
            elif len(named) >= MAX_STEPS_PER_SPAN:
                return
            else:
                named.append((seq, receipt_id))
                seqs = [seq for seq, _ in named]
                ids = [rid for _, rid in named]
        values: tuple[Any, Any] = (seq, receipt_id) if named is None else (seqs, ids)
        # The SDK's own span: named in its attribute dict (_otel_internals), else by the public call.
        if not sdk.name_step(span, *values, STEP_SEQ_ATTRIBUTE, STEP_ID_ATTRIBUTE):
            span.set_attributes({STEP_SEQ_ATTRIBUTE: values[0], STEP_ID_ATTRIBUTE: values[1]})
        if not recording():  # it ended meanwhile, perhaps before its on_end could forget the entry: forget it here
            with self._lock:
                self._named.pop(key, None)

    def _remember_tool_span(self, call_id: str, span: Any) -> None:
        with self._lock:
            self._tool_spans.setdefault(call_id, deque()).append(span)
            self._remembered.add(span.get_span_context().span_id)
            self._tool_span_count += 1
            while self._tool_span_count > MAX_TOOL_SPANS:  # the oldest call, never claimed, is let go
                _, oldest = next(iter(self._tool_spans.items()))
                self._remembered.discard(oldest.popleft().get_span_context().span_id)
                self._tool_span_count -= 1
                if not oldest:
                    self._tool_spans.popitem(last=False)


def _readable(span: ReadableSpan) -> Mapping[str, Any]:
    """The span's attributes as a plain dict, to look names up in.

    The SDK hands them over as a read-only view of its ``BoundedAttributes``, whose ``get``
    answers a name it lacks by raising and catching ``KeyError`` (microseconds, on nearly
    every span); a dict copy of a span's few attributes costs less than one such miss.
    """
    attributes = span.attributes
    if type(attributes) is MappingProxyType:
        try:
            return attributes.copy()
        except AttributeError:  # a view of a mapping without copy(): not the SDK's
            return dict(attributes)
    return attributes or {}


def _utc(ns: int) -> _dt.datetime:
    """Epoch nanoseconds as an aware datetime, exact to the microsecond (a float would round)."""
    seconds, rest = divmod(ns, 1_000_000_000)
    return _dt.datetime.fromtimestamp(seconds, tz=_dt.timezone.utc) + _dt.timedelta(microseconds=rest // 1000)


def _text(value: str) -> str:
    """A string attribute as plain text (instrumentations set ``str`` subclasses such as enums)."""
    return value if type(value) is str else str.__str__(value)


def _data(value: Any) -> Any:
    """An attribute value as JSON data (OpenTelemetry gives sequences as tuples; strings may be enums)."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return [_data(v) for v in value]
    return value


def _attributes(span: ReadableSpan) -> dict[str, Any] | None:
    """The attributes of a GenAI span (one with ``gen_ai.operation.name``) as JSON data, keys as plain text; None
    for any other span, told apart before anything is converted (most spans of a traced run are not GenAI's)."""
    attributes = _readable(span)
    if _OPERATION not in attributes and all(type(k) is str for k in attributes):
        return None  # a key of a str subclass may still name the operation once it is plain text
    return {_text(k): _data(v) for k, v in attributes.items()}


def _json_list(value: Any) -> list[str] | None:
    """A list attribute that some instrumentations give as JSON text (``'["stop"]'``): its strings, else None."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def _arguments_text(value: Any) -> Any:
    """``gen_ai.tool.call.arguments`` as :func:`aer1._steps_vocab.parse_arguments` is to read them: text, an object and
    None as the span holds them, bytes as their UTF-8 text; any other value the span holds (an array, a number, a
    boolean) as its JSON text, kept as text and marked malformed there, rather than as Python's ``repr`` of it
    (text no span carried). None for a value without such a text (bytes that are not UTF-8): the span's value is
    still under ``otel.attributes``."""
    if value is None or isinstance(value, (str, Mapping)):
        return value
    try:
        if isinstance(value, (bytes, bytearray)):
            return bytes(value).decode("utf-8")
        return json.dumps(value, ensure_ascii=False)  # NaN and infinities as JSON's common extension writes them
    except (TypeError, ValueError):  # bytes inside, not UTF-8, or an integer of too many digits
        return None


def _opt_in(attributes: Mapping[str, Any], name: str) -> Any:
    """An opt-in content attribute as data: JSON text parsed when it is JSON, else as the span holds it."""
    value = attributes.get(name)
    if isinstance(value, str):
        try:
            return vocab.exact_json(value)[0]
        except vocab.UnfitArguments:
            return value
    return value


#: A span's place: (trace id, span id).
_Key = tuple[int, int]
_NO_CHILDREN: deque[_Key] = deque(maxlen=0)  # the children of every span recorded: nothing is ever added


class _Node:
    """A span of the recorded trace: its place in the tree; once recorded, only its agent name (the span itself is
    let go, so a long run holds a few dozen bytes per span recorded, not the spans)."""

    __slots__ = ("agent", "children", "done", "ended", "parent", "span")

    def __init__(self, parent: _Key | None, span: Span) -> None:
        self.parent = parent
        self.span: Span | None = span  # while open: its agent name may be set after its start
        self.children: deque[_Key] = deque()  # in start order, not yet recorded
        self.ended: ReadableSpan | None = None  # from its end until it is recorded
        self.done = False
        self.agent: str | None = None  # once recorded (the span let go): its own gen_ai.agent.name, for spans inside it


class SpanReceiptCollector(SpanProcessor):
    """A receipt built from the GenAI spans of one trace (``provider.add_span_processor(...)``).

    The spans recorded are those started on the provider from this processor's addition
    until the receipt is finalized, of every trace (AgentChat's runtime starts a trace per
    published message; give each concurrent run its own provider). Each GenAI span (one
    with ``gen_ai.operation.name``) becomes a step when it ends, its content in the step
    vocabulary (spec/steps.md): ``execute_tool`` a ``tool_call`` named ``gen_ai.tool.name`` with
    ``call_id`` ``gen_ai.tool.call.id`` and the arguments and result when the span holds them;
    ``invoke_agent``, ``chat`` and the other operations a ``message`` named after the
    operation (``chat`` and the completions with their ``model`` facts). Under ``otel``: the
    span's name, status and ``gen_ai.*`` / ``error.type`` attributes exactly as the span holds
    them, and ``absent``, the opt-in content attributes the span lacks (never guessed).
    ``handoffs`` (tool name -> target agent, or a function of the tool name) marks the tools
    that hand the conversation over: their call is followed by a ``handoff`` step. The order
    kept is each parent's children in start order, a span after the spans it contains (spec/otel.md).
    The receipt is finalized when the root span ends (``root``: a span name or a predicate;
    the first span without a parent seen that it accepts), at the provider's shutdown, or by
    :meth:`finalize`; ``collector_options`` are :class:`aer1.Collector`'s (signing key,
    evidence, journal, redaction, timestamps, ...).
    """

    def __init__(self, goal: str, *, root: str | Callable[[Span], bool] | None = None,
                 handoffs: Mapping[str, str] | Callable[[str], str | None] | None = None,
                 **collector_options: Any) -> None:
        self.collector = Collector(goal, **collector_options)
        if handoffs is not None and not callable(handoffs) and not isinstance(handoffs, Mapping):
            raise TypeError(f"handoffs must be a mapping, a function or None, got {type(handoffs).__name__}")
        self._handoffs = handoffs
        if root is not None and not callable(root) and not (isinstance(root, str) and root):
            raise TypeError(f"root must be a span name, a predicate or None, got {type(root).__name__}")
        self._root_rule: Callable[[Span], bool] | None = (
            root if callable(root) or root is None else lambda span: span.name == root)
        self._lock = threading.RLock()
        self._root: _Key | None = None
        self._nodes: dict[_Key, _Node] = {}  # by (trace id, span id): span ids may repeat across traces
        self._waiting = 0
        self._end_order = False  # past MAX_WAITING_SPANS: spans are recorded as they end
        self._ambiguous: set[_Key] = set()  # ids that two spans of the run had: none of those is recorded
        self._receipt: dict[str, Any] | None = None

    @property
    def receipt(self) -> dict[str, Any] | None:
        """The receipt once finalized (at the root span's end or by :meth:`finalize`), else None."""
        return self._receipt

    # ------------------------------------------------------------ the provider's calls

    def on_start(self, span: Span, parent_context: Any = None) -> None:
        """Place the span in the trace's tree (its parent's children, in start order)."""
        try:
            self._started(span)
        except Exception as e:
            self.collector.count_recording_failure(f"span {getattr(span, 'name', '?')!r} at its start", e)

    def on_end(self, span: ReadableSpan) -> None:
        """Record the span's step, and the steps of later siblings that waited for it."""
        try:
            self._ended(span)
        except Exception as e:
            self.collector.count_recording_failure(f"span {getattr(span, 'name', '?')!r} at its end", e)

    def shutdown(self) -> None:
        """The provider shut down: the receipt is finalized now, its open spans counted as not recorded."""
        self.finalize()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Steps are recorded as spans end: nothing is buffered but spans waiting for a sibling."""
        return True

    # ------------------------------------------------------------ receipts

    def finalize(self, final_answer: Any = None) -> dict[str, Any]:
        """Record what ended, count what did not, and close the receipt (the same receipt when called again)."""
        with self._lock:
            if self._receipt is not None:
                return self._receipt
            self._flush_all()
            receipt = self._receipt = self.collector.finalize(final_answer)
            self._nodes.clear()
            return receipt

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write the receipt (finalized now if it was not) and its evidence; returns the receipt path."""
        return self.collector.save(path, self.finalize())

    # ------------------------------------------------------------ the tree

    def _started(self, span: Span) -> None:
        ctx = span.get_span_context()
        with self._lock:
            if self._receipt is not None:
                return
            key = (ctx.trace_id, ctx.span_id)
            if key in self._nodes:
                self._ambiguous_id(key)
                return
            parent = (span.parent.trace_id, span.parent.span_id) if span.parent is not None else None
            if parent is not None and parent not in self._nodes:
                parent = None  # a parent outside what was seen (another process, before this processor)
            self._nodes[key] = _Node(parent, span)
            if parent is not None and not self._end_order and not self._nodes[parent].done:
                # (a span started under a span already recorded is placed as a root; its agent is still looked up)
                self._nodes[parent].children.append(key)
            # the user's rule last: when it raises (counted), the span is still in the tree and gives its step
            # a root: no parent seen (none, or a remote one: a service continuing its caller's trace)
            if self._root is None and self._root_rule is not None and parent is None and self._root_rule(span):
                self._root = key

    def _ended(self, span: ReadableSpan) -> None:
        ctx = span.get_span_context()
        if ctx is None:
            return
        finish = False
        try:
            with self._lock:
                key = (ctx.trace_id, ctx.span_id)
                node = self._nodes.get(key)
                if node is None or self._receipt is not None or key in self._ambiguous:
                    return
                node.ended = span
                self._waiting += 1
                finish = key == self._root  # the root's end finalizes, whatever recording it gives
                if self._end_order:
                    self._emit(node)
                else:
                    self._skip_recorded(node)
                    path = None if node.children else self._path_to(key)  # a span it contains is still open
                    if path is not None:
                        self._drain(path)
                if self._waiting > MAX_WAITING_SPANS and not self._end_order:
                    log.warning("aer1: %d ended spans wait for an earlier sibling: recorded in end order from here",
                                self._waiting)
                    self._flush_all(final=False)  # the spans still open are recorded when they end
                    self._end_order = True
        finally:
            if finish:
                self.finalize()

    def _ambiguous_id(self, key: _Key) -> None:
        """A second span with the id of a span seen (an id generator that repeats itself): the ends of the two cannot
        be told apart, so the later one is not recorded, nor the first unless it was already; each span not recorded
        is counted, and the spans placed under the first are recorded as roots of their own trees."""
        self.collector.count_recording_failure(
            f"span {format(key[1], '016x')}", RuntimeError("another span of the run has the same span id"))
        if key in self._ambiguous:
            return
        self._ambiguous.add(key)
        node = self._nodes[key]
        if not node.done:
            self.collector.count_recording_failure(
                f"span {format(key[1], '016x')}", RuntimeError("a later span of the run has the same span id"))
            if node.ended is not None:
                self._waiting -= 1
            node.done = True
            node.ended = node.span = None

    def _placed_under(self, node: _Node) -> _Node | None:
        """The node whose children the span is among, or None for a root of its own tree."""
        if node.parent is None:
            return None
        parent = self._nodes.get(node.parent)
        return None if parent is None or parent.done else parent

    def _path_to(self, key: _Key) -> list[_Key] | None:
        """The ids from the root of the span's tree down to the span when it is on the tree's first path still to
        record (the first unrecorded child of the first unrecorded child ... of the root), else None: an earlier
        span is to be recorded first. The span has no unrecorded child."""
        path = [key]
        while len(path) <= len(self._nodes):
            node = self._nodes[key]
            parent = self._placed_under(node)
            if parent is None:
                path.reverse()
                return path
            self._skip_recorded(parent)
            if not parent.children or parent.children[0] != key:
                return None
            key = node.parent  # type: ignore[assignment]  # not None: it is placed under its parent
            path.append(key)
        return None

    def _skip_recorded(self, node: _Node) -> None:
        children = node.children
        while children and (children[0] not in self._nodes or self._nodes[children[0]].done):
            children.popleft()

    def _drain(self, path: list[_Key]) -> None:
        """Record the spans of a tree in order (each parent's children in start order, a span after the spans it
        contains) from the last span of ``path`` (from :meth:`_path_to`) on, while each has ended."""
        while path:
            node = self._nodes[path[-1]]
            self._skip_recorded(node)
            if node.children:
                path.append(node.children[0])  # its first child still to record comes first
                continue
            if node.ended is None:
                return  # still open: it and every span after it wait
            self._emit(node)
            path.pop()

    def _emit(self, node: _Node) -> None:
        ended = node.ended
        if node.done or ended is None:
            return
        agent = _readable(ended).get(_AGENT_NAME)  # ended: its attributes are final
        node.agent = _text(agent) if isinstance(agent, str) and agent else None
        node.done = True
        node.ended = node.span = None
        node.children = _NO_CHILDREN  # none are added to a span recorded (its own deque is most of a node's size)
        self._waiting -= 1
        try:
            self._record(ended, node)
        except Exception as e:  # counted, and the spans after it are still recorded
            self.collector.count_recording_failure(f"span {getattr(ended, 'name', '?')!r} at its end", e)

    def _flush_all(self, final: bool = True) -> None:
        """Record every ended span not yet recorded, in start order; when ``final`` (the receipt is being finalized),
        count the spans that never ended."""
        unended = 0
        for node in list(self._nodes.values()):  # dicts keep insertion order: start order
            if node.done:
                continue
            if node.ended is not None:
                self._emit(node)
            else:
                unended += 1
        for node in self._nodes.values():
            node.children.clear()
        if unended and final:
            self.collector.count_recording_failure(
                f"{unended} span(s) of the trace", RuntimeError("they had not ended when the receipt was finalized"))

    def _agent(self, node: _Node) -> str | None:
        """The agent of the span or of the nearest span around it that names one (read now: set late by some)."""
        seen = 0
        current: _Node | None = node
        while current is not None and seen <= len(self._nodes):
            span = current.ended if current.ended is not None else current.span
            agent = current.agent if current.done else _readable(span).get(_AGENT_NAME) if span is not None else None
            if isinstance(agent, str) and agent:
                return _text(agent)
            current = self._nodes.get(current.parent) if current.parent is not None else None
            seen += 1
        return None

    def _handoff_target(self, tool_name: str) -> str | None:
        rule = self._handoffs
        if rule is None:
            return None
        target = rule(tool_name) if callable(rule) else rule.get(tool_name)
        return target if isinstance(target, str) and target else None

    def _record(self, span: ReadableSpan, node: _Node) -> None:
        attributes = _attributes(span)
        operation = None if attributes is None else attributes.get(_OPERATION)
        if attributes is None or not isinstance(operation, str) or not operation:
            return  # not a GenAI span: a place in the tree, no step
        status = span.status.status_code
        failed = status == StatusCode.ERROR
        extras: dict[str, Any] = {
            "span": span.name, "operation": operation, "status": status.name,
            "attributes": {k: v for k, v in attributes.items() if k.startswith("gen_ai.") or k == "error.type"}}
        if span.status.description:
            extras["status_description"] = span.status.description
        absent = [name for name in ABSENT_CONTENT.get(operation, ()) if name not in attributes]
        if absent:
            extras["absent"] = absent
        error = None
        if failed:
            kind_of_error = attributes.get("error.type")
            error = vocab.error_code(kind_of_error if isinstance(kind_of_error, str) and kind_of_error else "error",
                                     span.status.description or "the span's status is ERROR")
        tool_name, call_id = attributes.get(_TOOL_NAME), attributes.get(_CALL_ID)
        call_id = call_id if isinstance(call_id, str) else None
        is_tool = operation == _EXECUTE_TOOL and isinstance(tool_name, str) and tool_name != ""
        agent = self._agent(node)
        options: dict[str, Any] = {
            "agent": agent,
            "status": "error" if failed else "ok",
            "started_at": _utc(span.start_time or 0),
            "ended_at": _utc(span.end_time or span.start_time or 0),
        }
        if is_tool and isinstance(tool_name, str):
            content = vocab.tool_call(
                "otel", name=tool_name, call_id=call_id,
                arguments=_arguments_text(attributes.get("gen_ai.tool.call.arguments")),
                result=None if failed else _opt_in(attributes, "gen_ai.tool.call.result"), error=error,
                extras=extras)
            label = tool_name
            options["kind"] = "tool_call"
            if call_id:
                options["call_id"] = call_id
        else:
            model = None
            if operation in _MODEL_OPERATIONS:
                model = vocab.model_reply(
                    provider=attributes.get("gen_ai.provider.name") or attributes.get("gen_ai.system"),
                    request_model=attributes.get("gen_ai.request.model"),
                    response_model=attributes.get("gen_ai.response.model"),
                    input_tokens=attributes.get("gen_ai.usage.input_tokens"),
                    output_tokens=attributes.get("gen_ai.usage.output_tokens"),
                    finish_reasons=_json_list(attributes.get("gen_ai.response.finish_reasons")),
                    latency_ms=((span.end_time - span.start_time) / 1e6
                                if span.end_time and span.start_time else None))
            content = vocab.message("otel", content=_opt_in(attributes, "gen_ai.output.messages"),
                                    role="assistant", model=model, extras=extras)
            if error is not None:
                content["error"] = error
            label = operation
            options["kind"] = "message"
        # recorded with the span current, so the step carries the span's own ids
        span_context = span.get_span_context()  # None: a span without ids, recorded without them
        ctx = _NO_CONTEXT if span_context is None else trace.set_span_in_context(NonRecordingSpan(span_context),
                                                                                 _NO_CONTEXT)
        run_in_context(ctx, self.collector.safe_record, label, content, **options)
        target = self._handoff_target(label) if is_tool and not failed else None
        if target is not None:
            handoff = vocab.handoff("otel", target=target, content=None, call_id=call_id,
                                    extras={"span": span.name, "operation": operation})
            run_in_context(ctx, self.collector.safe_record, "handoff", handoff, agent=agent, kind="handoff",
                           target=target, started_at=options["ended_at"], ended_at=options["ended_at"])
