"""AgentChat with AutoGen's own OpenTelemetry instrumentation on, recorded by the native collector.

Real components: an AgentChat RoundRobinGroupChat on ReplayChatCompletionClient, a
SingleThreadedAgentRuntime given the tracer provider (its message spans), AutoGen's own
``execute_tool`` / ``invoke_agent`` / ``create_agent`` spans, the real SDK exporting to memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import FunctionCall, SingleThreadedAgentRuntime

from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector
from aer1.collectors.otel import ReceiptSpanProcessor, SpanReceiptCollector
from aer1.verifier import verify_receipt

from ...receipts import Peers, evidence_contents, verify_everywhere
from ...scripted_models import function_calls, scripted_client
from .conftest import Tracing


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def mul(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


async def run_team(collector: AER1AutoGenCollector | None, tracing: Tracing | None) -> None:
    """alice calls add and mul in one model turn, then answers; bob replies: two rounds."""
    alice_client = scripted_client([
        function_calls(FunctionCall(id="call_add", name="add", arguments='{"a": 1, "b": 2}'),
                       FunctionCall(id="call_mul", name="mul", arguments='{"a": 3, "b": 4}')),
        "3 and 12",
        function_calls(FunctionCall(id="call_add_2", name="add", arguments='{"a": 5, "b": 6}')),
        "11",
    ])
    alice = AssistantAgent("alice", model_client=alice_client, tools=[add, mul], reflect_on_tool_use=True)
    bob = AssistantAgent("bob", model_client=scripted_client(["noted", "noted again"]))
    agents: list[Any] = [alice, bob] if collector is None else [AER1AgentWrapper(alice, collector),
                                                                AER1AgentWrapper(bob, collector)]
    runtime = SingleThreadedAgentRuntime(tracer_provider=tracing.provider if tracing is not None else None)
    runtime.start()
    team = RoundRobinGroupChat(agents, max_turns=4, runtime=runtime)
    if tracing is None:
        await team.run(task="compute")
    else:
        with tracing.provider.get_tracer("user").start_as_current_span("user run"):
            await team.run(task="compute")
    await runtime.stop_when_idle()


def tool_calls(receipt: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(s["tool"], s.get("call_id")) for s in receipt["steps"] if s["kind"] == "tool_call"]


def shape(receipt: dict[str, Any]) -> list[tuple[str, str, str, str | None, str]]:
    """What a step is, apart from its times, hashes and span ids."""
    return [(s["kind"], s["tool"], s["agent"], s.get("call_id"), s["status"]) for s in receipt["steps"]]


def _hex(ids: Any) -> tuple[str, str]:
    return format(ids.trace_id, "032x"), format(ids.span_id, "016x")


async def test_tool_steps_are_their_execute_tool_spans_and_spans_name_their_steps(
        tracing: Tracing, tmp_path: Path, peers: Peers | None) -> None:
    collector = AER1AutoGenCollector(goal="compute")
    tracing.provider.add_span_processor(ReceiptSpanProcessor(collector))
    await run_team(collector, tracing)
    receipt = collector.finalize("done")
    verify_everywhere(collector.save(str(tmp_path / "r.json"), workflow=receipt), receipt, peers)
    spans = tracing.spans()
    by_id = {_hex(s.context)[1]: s for s in spans}
    tools = [s for s in receipt["steps"] if s["kind"] == "tool_call"]
    assert [t["call_id"] for t in tools] == ["call_add", "call_mul", "call_add_2"]
    for step in tools:
        span = by_id[step["span_id"]]
        assert span.name == f"execute_tool {step['tool']}", (step["seq"], span.name)
        assert _hex(span.context) == (step["trace_id"], step["span_id"])
        # the span names its step: this receipt's workflow and the step's call id
        assert span.attributes["aer1.workflow_id"] == receipt["workflow_id"]
        assert span.attributes["gen_ai.tool.call.id"] == step["call_id"]
    # every span of the run carries the workflow id
    assert spans and all(s.attributes.get("aer1.workflow_id") == receipt["workflow_id"] for s in spans)
    # a span a step was recorded under while it was open names that step (seq and receipt id)
    named = [s for s in spans if "aer1.step.seq" in s.attributes]
    assert any(s.name == "invoke_agent alice" for s in named), [s.name for s in named]
    steps = {s["seq"]: s for s in receipt["steps"]}
    for span in named:
        seqs = span.attributes["aer1.step.seq"]
        ids = span.attributes["aer1.step.receipt_id"]
        seqs, ids = ([seqs], [ids]) if isinstance(seqs, int) else (list(seqs), list(ids))
        for seq, rid in zip(seqs, ids, strict=True):
            assert steps[seq]["receipt_id"] == rid and steps[seq]["span_id"] == _hex(span.context)[1]


async def test_the_same_run_with_tracing_off_records_the_same_steps(tracing: Tracing) -> None:
    traced = AER1AutoGenCollector(goal="compute")
    tracing.provider.add_span_processor(ReceiptSpanProcessor(traced))
    await run_team(traced, tracing)
    on = traced.finalize("done")
    tracing.off()
    plain = AER1AutoGenCollector(goal="compute")
    await run_team(plain, None)
    off = plain.finalize("done")
    assert shape(on) == shape(off)
    assert not any("trace_id" in s for s in off["steps"])
    assert verify_receipt(off).valid and verify_receipt(on).valid


async def test_a_receipt_from_the_spans_lists_the_native_tool_calls(tracing: Tracing, tmp_path: Path,
                                                                    peers: Peers | None) -> None:
    native = AER1AutoGenCollector(goal="compute")
    from_spans = SpanReceiptCollector("compute, from spans", root="user run")
    tracing.provider.add_span_processor(from_spans)
    await run_team(native, tracing)
    receipt = from_spans.receipt
    assert receipt is not None, "the root span ended: the receipt is finalized"
    path = from_spans.save(tmp_path / "spans.json")
    verify_everywhere(path, receipt, peers)
    assert tool_calls(receipt) == tool_calls(native.finalize("done")) == [
        ("add", "call_add"), ("mul", "call_mul"), ("add", "call_add_2")]
    tools = [s for s in receipt["steps"] if s["kind"] == "tool_call"]
    assert {s["agent"] for s in tools} == {"alice"}
    # AutoGen captures no arguments or results on its tool spans: the steps say so, and hold no guess
    contents = evidence_contents(path)
    for step in tools:
        content = contents[step["seq"]]
        assert content["vocabulary"] == "aer1-steps/1"
        assert (content["name"], content["call_id"]) == (step["tool"], step["call_id"])
        assert content["otel"]["absent"] == ["gen_ai.tool.call.arguments", "gen_ai.tool.call.result"], content
        assert content["otel"]["attributes"]["gen_ai.tool.call.id"] == step["call_id"]
        assert content["arguments"] is None and content["result"] is None


@pytest.mark.parametrize("where", ["tool span start", "naming a step"])
async def test_a_failing_processor_leaves_the_run_alone_and_the_receipt_says_so(
        where: str, tracing: Tracing, monkeypatch: pytest.MonkeyPatch) -> None:
    collector = AER1AutoGenCollector(goal="compute")
    processor = ReceiptSpanProcessor(collector)

    def broken(*args: Any) -> None:
        raise RuntimeError("processor bug")

    monkeypatch.setattr(processor, "_remember_tool_span" if where == "tool span start" else "step_recorded", broken)
    tracing.provider.add_span_processor(processor)
    await run_team(collector, tracing)
    receipt = collector.finalize("done")
    plain = AER1AutoGenCollector(goal="compute")
    await run_team(plain, None)
    assert shape(receipt) == shape(plain.finalize("done"))  # every step recorded all the same
    assert receipt["status"] == "incomplete" and receipt["recording_failures"] >= 1
    assert verify_receipt(receipt).valid


async def test_a_provider_shut_down_mid_run_leaves_the_run_alone_and_the_receipt_says_so(tracing: Tracing) -> None:
    collector = AER1AutoGenCollector(goal="compute")
    tracing.provider.add_span_processor(ReceiptSpanProcessor(collector))
    from_spans = SpanReceiptCollector("compute, from spans")
    tracing.provider.add_span_processor(from_spans)
    with tracing.provider.get_tracer("user").start_as_current_span("user run"):
        collector.record("task", {"task": "compute"}, agent="user")
        tracing.provider.shutdown()  # the "user run" span is still open
    receipt = collector.finalize("done")
    assert receipt["status"] == "incomplete" and receipt["recording_failures"] == 1
    spans_receipt = from_spans.receipt
    assert spans_receipt is not None, "shutdown finalizes the receipt from spans"
    assert spans_receipt["status"] == "incomplete" and spans_receipt["recording_failures"] == 1  # the open span
    assert verify_receipt(receipt).valid and verify_receipt(spans_receipt).valid
