"""AG2 1.x with its own OpenTelemetry middleware (``ag2.middleware.builtin.telemetry.TelemetryMiddleware``).

Real components: an AG2 ``Agent`` on AG2's scripted model (``ag2.testing.TestConfig``), the
framework's telemetry middleware emitting GenAI spans to the real SDK, the native AG2
collector beside the span processors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ag2 import Agent
from ag2.middleware.builtin.telemetry import TelemetryMiddleware
from ag2.testing import TestConfig

from aer1.collectors.ag2 import AER1AG2Collector
from aer1.collectors.otel import ReceiptSpanProcessor, SpanReceiptCollector

from ...receipts import Peers, evidence_contents, verify_everywhere
from ..ag2.support import call
from .conftest import Tracing, finalized


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def ask(collector: AER1AG2Collector, tracing: Tracing, capture: bool) -> None:
    agent = collector.observe(Agent(
        "alice", "You add.", config=TestConfig([call("add", "c1", a=1, b=2), call("add", "c2", a=3, b=4)], "done"),
        tools=[add], middleware=[TelemetryMiddleware(tracer_provider=tracing.provider, agent_name="alice",
                                                     capture_content=capture)]))
    with tracing.provider.get_tracer("user").start_as_current_span("user run"):
        reply = await agent.ask("add twice")
    assert reply.body == "done"


def tool_calls(receipt: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(s["tool"], s.get("call_id")) for s in receipt["steps"] if s["kind"] == "tool_call"]


@pytest.mark.parametrize("capture", [True, False], ids=["content on", "content off"])
async def test_a_receipt_from_the_spans_lists_the_native_tool_calls(capture: bool, tracing: Tracing, tmp_path: Path,
                                                                    peers: Peers | None) -> None:
    native = AER1AG2Collector(goal="add")
    from_spans = SpanReceiptCollector("add, from spans", root="user run")
    tracing.provider.add_span_processor(from_spans)
    await ask(native, tracing, capture)
    receipt = from_spans.receipt
    assert receipt is not None and receipt.get("recording_failures", 0) == 0
    path = from_spans.save(tmp_path / "spans.json")
    verify_everywhere(path, receipt, peers)
    native_receipt = native.finalize("done")
    native_path = native.save(tmp_path / "native.json", workflow=native_receipt)
    # the same calls with the same ids; the two run concurrently, so the native collector's order (as they
    # finish) may differ from the spans' start order
    assert sorted(tool_calls(receipt)) == sorted(tool_calls(native_receipt)) == [("add", "c1"), ("add", "c2")]
    contents, native_contents = evidence_contents(path), evidence_contents(native_path)
    native_by_call = {s["call_id"]: native_contents[s["seq"]] for s in native_receipt["steps"]
                      if s["kind"] == "tool_call"}
    for step in (s for s in receipt["steps"] if s["kind"] == "tool_call"):
        content = contents[step["seq"]]
        assert step["agent"] == "alice"
        if capture:
            assert content["arguments"] == native_by_call[step["call_id"]]["arguments"]
            assert content["result"] in (3, 7) and "absent" not in content["otel"]
        else:
            assert content["arguments"] is None and content["result"] is None
            assert content["otel"]["absent"] == ["gen_ai.tool.call.arguments", "gen_ai.tool.call.result"]


async def test_tool_steps_are_their_execute_tool_spans(tracing: Tracing, tmp_path: Path, peers: Peers | None) -> None:
    collector = AER1AG2Collector(goal="add")
    tracing.provider.add_span_processor(ReceiptSpanProcessor(collector))
    await ask(collector, tracing, True)
    receipt = finalized(collector, tmp_path, peers)
    spans = {format(s.context.span_id, "016x"): s for s in tracing.spans()}
    tools = [s for s in receipt["steps"] if s["kind"] == "tool_call"]
    assert len(tools) == 2
    for step in tools:
        span = spans[step["span_id"]]
        assert span.name == "execute_tool add" and span.attributes["gen_ai.tool.call.id"] == step["call_id"]
    assert all(s.attributes.get("aer1.workflow_id") == receipt["workflow_id"] for s in spans.values())
