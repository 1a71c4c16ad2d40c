"""The OpenTelemetry span a step is recorded under: its W3C ids for the step (spec/otel.md).

The core needs no OpenTelemetry: the API is looked up in ``sys.modules`` only, so a process
that never imported it (and so can have no current span) pays one dictionary lookup a step.
A span processor bound to a collector (:class:`aer1.collectors.otel.ReceiptSpanProcessor`)
registers here as its :class:`StepWatcher`: it may name the span of a tool call by call id
(the framework's ``execute_tool`` span, which has often ended when the step is recorded),
and it hears of each step recorded under a span, so that span can name its step.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any, Protocol
from weakref import WeakKeyDictionary

__all__ = ["StepWatcher", "Traced", "current_context", "run_in_context", "span_ids", "step_recorded", "step_span",
           "unwatch", "watch", "watched"]

log = logging.getLogger("aer1")

_TRACE_MODULE = "opentelemetry.trace"
_CONTEXT_MODULE = "opentelemetry.context"


class Traced(Protocol):
    """What the span lookup asks of a collector (:class:`aer1.Collector`): where a failure of its own is counted.

    Named here rather than imported, so that the collector imports this module and never the reverse.
    """

    def count_recording_failure(self, what: str, exc: BaseException) -> None:
        """Count and log an observation that could not be recorded."""


class StepWatcher(Protocol):
    """What a collector asks of a span processor bound to it."""

    def tool_span(self, call_id: str) -> Any:
        """The span of the tool call with this id (a span with ``get_span_context()``), or None."""

    def step_recorded(self, span: Any, step: dict[str, Any]) -> None:
        """A step was recorded under ``span``: called after the step is in the chain."""


_lock = threading.Lock()
_watchers: WeakKeyDictionary[Any, tuple[StepWatcher, ...]] = WeakKeyDictionary()


def watch(collector: object, watcher: StepWatcher) -> None:
    """Bind ``watcher`` to ``collector`` (for as long as the collector lives, or until :func:`unwatch`)."""
    with _lock:
        _watchers[collector] = (*_watchers.get(collector, ()), watcher)


def unwatch(collector: object, watcher: StepWatcher) -> None:
    """Undo :func:`watch`."""
    with _lock:
        left = tuple(w for w in _watchers.get(collector, ()) if w is not watcher)
        if left:
            _watchers[collector] = left
        else:
            _watchers.pop(collector, None)


def watched(collector: object) -> bool:
    """True when a watcher is bound: its spans can take attributes only while they record, so steps go at once."""
    return bool(_watchers) and collector in _watchers


def span_ids(span: Any) -> dict[str, str] | None:
    """``{"trace_id", "span_id"}`` of a span as lowercase hex; None for an invalid context or a span not sampled.

    A span that is not sampled reaches no tracing backend: its ids would join the step to nothing.
    """
    ctx = span.get_span_context()
    if not ctx.is_valid or not ctx.trace_flags.sampled:
        return None
    return {"trace_id": format(ctx.trace_id, "032x"), "span_id": format(ctx.span_id, "016x")}


def step_span(collector: Traced, call_id: str | None) -> tuple[Any, dict[str, str]] | None:
    """The span a step being recorded belongs to, with its ids; None when there is none.

    A tool call's own span (found by call id by a bound watcher) comes first; otherwise the
    span current in this context. A failure of the tracing library is counted on the
    collector (the receipt then says ``recording_failures``) and the step goes without ids.
    """
    try:
        span = None
        if call_id is not None and _watchers:
            for watcher in _watchers.get(collector, ()):
                span = watcher.tool_span(call_id)
                if span is not None:
                    break
        if span is None:
            trace = sys.modules.get(_TRACE_MODULE)
            if trace is None:
                return None
            span = trace.get_current_span()
        ids = span_ids(span)
    except Exception as e:
        collector.count_recording_failure("the step's OpenTelemetry span", e)
        return None
    return None if ids is None else (span, ids)


def step_recorded(collector: Traced, span: Any, step: dict[str, Any]) -> None:
    """Tell the watchers bound to ``collector`` that ``step`` was recorded under ``span``."""
    if not _watchers:
        return
    for watcher in _watchers.get(collector, ()):
        try:
            watcher.step_recorded(span, step)
        except Exception as e:
            collector.count_recording_failure(f"step {step.get('seq')} on its span", e)


def current_context() -> Any:
    """The current OpenTelemetry context, or None when the API was never imported.

    For a step recorded later than it was observed (a batch, spec/otel.md): recorded in this
    context, it carries the span of the moment it was observed.
    """
    context = sys.modules.get(_CONTEXT_MODULE)
    return None if context is None else context.get_current()


def run_in_context(ctx: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)`` with ``ctx`` (from :func:`current_context`) current; plainly when it is None."""
    if ctx is None:
        return func(*args, **kwargs)
    context = sys.modules[_CONTEXT_MODULE]
    token = context.attach(ctx)
    try:
        return func(*args, **kwargs)
    finally:
        context.detach(token)
