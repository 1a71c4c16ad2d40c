"""``ReceiptSpanProcessor`` on spans made here with the real SDK: which span a step is given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aer1 import Collector
from aer1.collectors.otel import STEP_SEQ_ATTRIBUTE, ReceiptSpanProcessor

from ...receipts import Peers
from .conftest import Tracing, finalized

_TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "call_0"}


def test_a_tool_span_given_to_a_step_while_open_is_no_longer_given_to_a_later_step(
        tracing: Tracing, tmp_path: Path, peers: Peers | None) -> None:
    """Two turns reuse the call id ``call_0`` (some models number their calls per turn): the first turn's step is
    recorded inside its tool span, the second's after its span ended. The first span was offered again at its end,
    so the second step carried the first span's ids instead of its own."""
    collector = Collector("turns")
    tracing.provider.add_span_processor(ReceiptSpanProcessor(collector))
    tracer = tracing.provider.get_tracer("some.framework")
    with tracer.start_as_current_span("execute_tool lookup", attributes=_TOOL) as first:
        collector.record("lookup", {"turn": 1}, agent="a", call_id="call_0")
    with tracer.start_as_current_span("execute_tool lookup", attributes=_TOOL) as second:
        pass
    collector.record("lookup", {"turn": 2}, agent="a", call_id="call_0")
    receipt = finalized(collector, tmp_path, peers)
    ids = [format(span.get_span_context().span_id, "016x") for span in (first, second)]
    assert [step["span_id"] for step in receipt["steps"][:2]] == ids
    exported = {span.context.span_id: span for span in tracing.spans()}
    assert exported[first.get_span_context().span_id].attributes[STEP_SEQ_ATTRIBUTE] == 1


def test_a_span_that_ends_while_its_step_is_named_leaves_no_entry_behind(tracing: Tracing) -> None:
    """The span ends (another thread) after the step saw it recording and before the step's entry was kept: its
    on_end had nothing to forget yet, so the entry stayed for good. Now the step forgets it itself."""
    collector = Collector("race")
    processor = ReceiptSpanProcessor(collector)
    tracing.provider.add_span_processor(processor)
    span: Any = tracing.provider.get_tracer("t").start_span("invoke_agent a")
    context = span.get_span_context()

    def ends_now() -> Any:
        span.end()  # what another thread did at this moment
        return context

    span.get_span_context = ends_now
    processor.step_recorded(span, {"seq": 1, "receipt_id": "r"})
    assert processor._named == {}, f"got {processor._named}, want no entry for an ended span"
    collector.finalize()
