"""Canary: every private name of the OpenTelemetry SDK the span processor uses exists, and writing through them
gives exporters what the SDK's public calls give them.

``collectors/_otel_internals.py`` tags spans in the SDK's attribute dict; a release that renames
a name, or keeps attributes differently, fails here instead of as spans that lack their tags.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext

from aer1.collectors import AER1AutoGenCollector
from aer1.collectors import _otel_internals as internals
from aer1.collectors.otel import STEP_ID_ATTRIBUTE, STEP_SEQ_ATTRIBUTE, WORKFLOW_ATTRIBUTE, ReceiptSpanProcessor


class _Keep(SpanProcessor):
    """Keeps what exporters are handed."""

    def __init__(self) -> None:
        self.ended: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span)


def _provider(limits: SpanLimits | None = None) -> tuple[TracerProvider, _Keep]:
    provider = TracerProvider(span_limits=limits) if limits is not None else TracerProvider()
    keep = _Keep()
    provider.add_span_processor(keep)
    return provider, keep


def test_the_installed_sdk_is_the_checked_version() -> None:
    installed = internals.TABLE.installed()
    assert installed == {internals.DISTRIBUTION: internals.PINNED}, f"got {installed}, want {internals.PINNED}"


def test_every_name_the_processor_uses_exists() -> None:
    assert internals.missing() == [], "got these names missing from the installed SDK, want none"


def test_a_missing_name_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The canary itself can fail: a renamed attribute is listed."""
    renamed = internals.Name("opentelemetry.sdk.trace:Span", "_renamed_upstream", "canary check", instance=True)
    monkeypatch.setattr(internals.TABLE, "entries", (*internals.TABLE.entries, renamed))
    assert internals.missing() == ["opentelemetry.sdk.trace:Span._renamed_upstream"]


def test_tagging_gives_exporters_what_set_attribute_gives() -> None:
    provider, keep = _provider()
    tracer = provider.get_tracer("t")
    fast = tracer.start_span("s", attributes={"a": "b", WORKFLOW_ATTRIBUTE: "old"})
    public = tracer.start_span("s", attributes={"a": "b", WORKFLOW_ATTRIBUTE: "old"})
    stored = internals.tag(fast, WORKFLOW_ATTRIBUTE, "wf")
    public.set_attribute(WORKFLOW_ATTRIBUTE, "wf")
    assert stored is not None and stored[WORKFLOW_ATTRIBUTE] == "wf"
    assert internals.name_step(fast, [1, 2], ["r1", "r2"], STEP_SEQ_ATTRIBUTE, STEP_ID_ATTRIBUTE)
    public.set_attributes({STEP_SEQ_ATTRIBUTE: [1, 2], STEP_ID_ATTRIBUTE: ["r1", "r2"]})
    fast.end()
    public.end()
    got, want = (list(span.attributes.items()) for span in keep.ended)  # items in order: a key set again moves last
    assert got == want
    assert internals.store(keep.ended[0]) == dict(want)


def test_limits_and_ended_spans_are_left_to_the_sdk() -> None:
    """Where the SDK would cut a value or drop an attribute, or the span ended, nothing is written here."""
    cut, _ = _provider(SpanLimits(max_attribute_length=4))
    assert internals.tag(cut.get_tracer("t").start_span("s"), WORKFLOW_ATTRIBUTE, "wf") is None
    full, _ = _provider(SpanLimits(max_span_attributes=1))
    span = full.get_tracer("t").start_span("s", attributes={"a": "b"})
    assert internals.tag(span, WORKFLOW_ATTRIBUTE, "wf") is None
    assert not internals.name_step(span, 1, "r", STEP_SEQ_ATTRIBUTE, STEP_ID_ATTRIBUTE)
    ended, _ = _provider()
    span = ended.get_tracer("t").start_span("s")
    span.end()
    assert not internals.name_step(span, 1, "r", STEP_SEQ_ATTRIBUTE, STEP_ID_ATTRIBUTE)
    assert internals.tag(span, WORKFLOW_ATTRIBUTE, "wf") is None
    other = NonRecordingSpan(SpanContext(1, 2, False))
    assert internals.tag(other, WORKFLOW_ATTRIBUTE, "wf") is None and internals.store(other) is None


@pytest.mark.parametrize("limits", [None, SpanLimits(max_attribute_length=8), SpanLimits(max_span_attributes=1)])
def test_the_processor_tags_as_the_public_calls_would(limits: SpanLimits | None) -> None:
    """With and without limits in reach, the workflow id a span ends with is what set_attribute leaves."""
    collector = AER1AutoGenCollector(goal="tags")
    provider, keep = _provider(limits)
    provider.add_span_processor(ReceiptSpanProcessor(collector))
    with provider.get_tracer("t").start_as_current_span("s", attributes={"a": "b"}):
        pass
    reference, ref_keep = _provider(limits)
    span: Any = reference.get_tracer("t").start_span("s", attributes={"a": "b"})
    span.set_attribute(WORKFLOW_ATTRIBUTE, collector.workflow_id)
    span.end()
    assert dict(keep.ended[0].attributes) == dict(ref_keep.ended[0].attributes)
    collector.finalize()


def test_the_call_id_of_an_ended_span_is_read_from_the_sdk_dict() -> None:
    """An execute_tool span gives its call id, any other span None, a span not the SDK's NOT_SDK."""
    provider, keep = _provider()
    tracer = provider.get_tracer("t")
    tracer.start_span("execute_tool add", attributes={internals.OPERATION: internals.EXECUTE_TOOL,
                                                      internals.TOOL_CALL_ID: "call-1"}).end()
    tracer.start_span("chat", attributes={internals.OPERATION: "chat", internals.TOOL_CALL_ID: "call-2"}).end()
    tracer.start_span("execute_tool late").end()
    assert [internals.tool_call_id(span) for span in keep.ended] == ["call-1", None, None]
    assert internals.tool_call_id(NonRecordingSpan(SpanContext(1, 2, False))) is internals.NOT_SDK


def test_tagging_waits_for_a_writer_holding_the_attributes_lock() -> None:
    """A ConcurrentMultiSpanProcessor runs other processors' on_start at the same time: the tag waits its turn."""
    provider, _ = _provider()
    span: Any = provider.get_tracer("t").start_span("s")
    done = threading.Event()
    with span._attributes._lock:  # another processor's write, in progress
        writer = threading.Thread(target=lambda: (internals.tag(span, WORKFLOW_ATTRIBUTE, "wf"), done.set()))
        writer.start()
        assert not done.wait(0.2), "got the tag written while the lock was held, want it to wait"
    writer.join(5)
    assert done.is_set() and span.attributes[WORKFLOW_ATTRIBUTE] == "wf"
