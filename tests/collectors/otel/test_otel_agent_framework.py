"""Agent Framework with its own OpenTelemetry instrumentation (``agent_framework.observability``) on.

Real components: Agent Framework agents and orchestrations on a scripted chat client (the
framework's own function-invocation layer), the framework's ``invoke_agent`` /
``execute_tool`` / workflow spans from the global tracer provider, the real SDK exporting to
memory, the native collector beside the span processors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_framework.observability import OBSERVABILITY_SETTINGS

from aer1.collectors.agent_framework import AER1AgentFrameworkCollector
from aer1.collectors.otel import ReceiptSpanProcessor, SpanReceiptCollector
from aer1.verifier import verify_receipt

from ...receipts import Peers, evidence_contents, verify_everywhere
from ..agent_framework.test_af_orchestrations import assert_same_steps
from ..agent_framework.workflows import handoff, sequential
from .conftest import Tracing, finalized

RUNS = {"sequential": sequential, "handoff": handoff}


async def run(name: str, collector: AER1AgentFrameworkCollector, tracing: Tracing | None) -> None:
    """One orchestration run by the native collector, inside the user's own span when tracing is on."""
    workflow, agents = RUNS[name]()
    for agent in agents:
        collector.observe(agent)
    if tracing is None:
        _ = [event async for event in collector.run_stream(workflow, "plan the launch")]
        return
    with tracing.provider.get_tracer("user").start_as_current_span("user run"):
        _ = [event async for event in collector.run_stream(workflow, "plan the launch")]


def shape(receipt: dict[str, Any]) -> list[tuple[str, str, str, str | None, str]]:
    """What each step is; a workflow's actor without its per-build id (``workflow:Handoff/<uuid>``)."""
    return [(s["kind"], s["tool"], s["agent"].split("/")[0], s.get("call_id"), s["status"]) for s in receipt["steps"]]


def tool_calls(receipt: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(s["tool"], s.get("call_id")) for s in receipt["steps"] if s["kind"] == "tool_call"]


def _hex(ctx: Any) -> tuple[str, str]:
    return format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")


@pytest.mark.parametrize("name", sorted(RUNS))
async def test_tool_steps_are_their_execute_tool_spans_and_spans_name_their_steps(
        name: str, tracing: Tracing, tmp_path: Path, peers: Peers | None) -> None:
    collector = AER1AgentFrameworkCollector(goal="plan")
    tracing.provider.add_span_processor(ReceiptSpanProcessor(collector))
    await run(name, collector, tracing)
    receipt = finalized(collector, tmp_path, peers)
    spans = tracing.spans()
    by_id = {_hex(s.context)[1]: s for s in spans}
    tools = [s for s in receipt["steps"] if s["kind"] == "tool_call"]
    assert tools, "each run calls a tool"
    for step in tools:
        span = by_id[step["span_id"]]
        assert span.name == f"execute_tool {step['tool']}"
        assert _hex(span.context) == (step["trace_id"], step["span_id"])
        assert span.attributes["gen_ai.tool.call.id"] == step["call_id"]
        assert span.attributes["aer1.workflow_id"] == receipt["workflow_id"]
    # the framework's own spans (workflow, executors, edges, agents) all carry the workflow id
    names = {s.name.split(" ")[0] for s in spans}
    assert {"workflow.run", "executor.process", "invoke_agent", "execute_tool"} <= names, names
    assert all(s.attributes.get("aer1.workflow_id") == receipt["workflow_id"] for s in spans)
    # a span that was open when steps were recorded under it names them
    steps = {s["seq"]: s for s in receipt["steps"]}
    named = [s for s in spans if "aer1.step.seq" in s.attributes]
    assert named
    for span in named:
        seqs, ids = span.attributes["aer1.step.seq"], span.attributes["aer1.step.receipt_id"]
        seqs, ids = ([seqs], [ids]) if isinstance(seqs, int) else (list(seqs), list(ids))
        for seq, rid in zip(seqs, ids, strict=True):
            assert steps[seq]["receipt_id"] == rid and steps[seq]["span_id"] == _hex(span.context)[1]


@pytest.mark.parametrize("name", sorted(RUNS))
async def test_the_same_run_with_tracing_off_records_the_same_steps(name: str, tracing: Tracing,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    traced = AER1AgentFrameworkCollector(goal="plan")
    tracing.provider.add_span_processor(ReceiptSpanProcessor(traced))
    await run(name, traced, tracing)
    on = traced.finalize("done")
    tracing.off()
    monkeypatch.setattr(OBSERVABILITY_SETTINGS, "enable_instrumentation", False)
    plain = AER1AgentFrameworkCollector(goal="plan")
    await run(name, plain, None)
    off = plain.finalize("done")
    assert_same_steps(shape(on), shape(off))  # workflow events and agent steps interleave as the run goes
    assert any("span_id" in s for s in on["steps"]) and not any("span_id" in s for s in off["steps"])
    assert verify_receipt(on).valid and verify_receipt(off).valid


@pytest.mark.parametrize("sensitive", [False, True], ids=["content off", "content on"])
@pytest.mark.parametrize("name", sorted(RUNS))
async def test_a_receipt_from_the_spans_lists_the_native_tool_calls(
        name: str, sensitive: bool, tracing: Tracing, tmp_path: Path, peers: Peers | None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OBSERVABILITY_SETTINGS, "enable_sensitive_data", sensitive)
    native = AER1AgentFrameworkCollector(goal="plan")
    from_spans = SpanReceiptCollector("plan, from spans", root="user run")
    tracing.provider.add_span_processor(from_spans)
    await run(name, native, tracing)
    receipt = from_spans.receipt
    assert receipt is not None, "the root span ended: the receipt is finalized"
    assert receipt.get("recording_failures", 0) == 0 and receipt["status"] == "ok"
    path = from_spans.save(tmp_path / "spans.json")
    verify_everywhere(path, receipt, peers)
    native_receipt = native.finalize("done")
    native_path = native.save(tmp_path / "native.json", workflow=native_receipt)
    assert tool_calls(receipt) == tool_calls(native_receipt) and tool_calls(receipt)
    native_steps = {s.get("call_id"): s for s in native_receipt["steps"] if s["kind"] == "tool_call"}
    native_contents, contents = evidence_contents(native_path), evidence_contents(path)
    for step in (s for s in receipt["steps"] if s["kind"] == "tool_call"):
        native_step = native_steps[step["call_id"]]
        assert step["agent"] == native_step["agent"]
        content = contents[step["seq"]]
        assert content["vocabulary"] == "aer1-steps/1" and content["name"] == step["tool"]
        if sensitive:  # the instrumentation captured the arguments and result: the same arguments as native
            assert content["arguments"] == native_contents[native_step["seq"]]["arguments"]
            assert content["result"] is not None and "absent" not in content["otel"]
        else:  # not captured: said to be absent, not guessed
            assert content["arguments"] is None and content["result"] is None
            assert content["otel"]["absent"] == ["gen_ai.tool.call.arguments", "gen_ai.tool.call.result"]
    agents = [s["agent"] for s in receipt["steps"] if s["tool"] == "invoke_agent"]
    assert agents == [a for a in ("alice", "bob")], agents


async def test_a_failing_processor_leaves_the_run_alone_and_the_receipt_says_so(
        tracing: Tracing, monkeypatch: pytest.MonkeyPatch) -> None:
    collector = AER1AgentFrameworkCollector(goal="plan")
    processor = ReceiptSpanProcessor(collector)

    def broken(*args: Any) -> None:
        raise RuntimeError("processor bug")

    monkeypatch.setattr(processor, "_remember_tool_span", broken)
    tracing.provider.add_span_processor(processor)
    await run("sequential", collector, tracing)
    receipt = collector.finalize("done")
    plain = AER1AgentFrameworkCollector(goal="plan")
    await run("sequential", plain, None)
    assert_same_steps(shape(receipt), shape(plain.finalize("done")))
    assert receipt["status"] == "incomplete" and receipt["recording_failures"] >= 1
    assert verify_receipt(receipt).valid
