"""Receipts from GenAI spans of a framework aer1 has no collector for: spans made here with the real SDK.

The spans follow the OpenTelemetry GenAI conventions as any instrumented framework emits
them: an ``invoke_agent`` span per agent turn, ``chat`` spans for model calls, ``execute_tool``
spans for tool calls (with or without the opt-in arguments and results).
"""

from __future__ import annotations

import gc
import random
import weakref
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from aer1.collectors import otel
from aer1.collectors.otel import SpanReceiptCollector

from ...receipts import Peers, evidence_contents, verify_everywhere
from .conftest import Tracing


def rows(receipt: dict[str, Any]) -> list[tuple[str, str, str, str | None]]:
    return [(s["kind"], s["tool"], s["agent"], s.get("target") or s.get("call_id")) for s in receipt["steps"]]


def test_handoff_tools_give_handoff_steps_and_failures_their_error(tracing: Tracing, tmp_path: Path,
                                                                   peers: Peers | None) -> None:
    from_spans = SpanReceiptCollector("triage", root="run", handoffs={"transfer_to_billing": "billing"})
    tracing.provider.add_span_processor(from_spans)
    tracer = tracing.provider.get_tracer("some.framework")
    with tracer.start_as_current_span("run"):
        with tracer.start_as_current_span("invoke_agent triage", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage"}):
            with tracer.start_as_current_span("chat gpt-x", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-x",
                    "gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": 12,
                    "gen_ai.usage.output_tokens": 3, "gen_ai.response.finish_reasons": ("tool_calls",)}):
                pass
            with tracer.start_as_current_span("execute_tool lookup", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                    "gen_ai.tool.call.id": "k1", "gen_ai.tool.call.arguments": '{"id": 7}'}) as span:
                span.set_status(StatusCode.ERROR, "no such account")
                span.set_attribute("error.type", "KeyError")
            with tracer.start_as_current_span("execute_tool transfer_to_billing", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "transfer_to_billing",
                    "gen_ai.tool.call.id": "h1", "gen_ai.tool.call.arguments": "{}",
                    "gen_ai.tool.call.result": "billing"}):
                pass
        with tracer.start_as_current_span("invoke_agent billing", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "billing"}):
            pass
    receipt = from_spans.receipt
    assert receipt is not None
    path = from_spans.save(tmp_path / "r.json")
    verify_everywhere(path, receipt, peers)
    assert rows(receipt) == [
        ("message", "chat", "triage", None),
        ("tool_call", "lookup", "triage", "k1"),
        ("tool_call", "transfer_to_billing", "triage", "h1"),
        ("handoff", "handoff", "triage", "billing"),
        ("message", "invoke_agent", "triage", None),
        ("message", "invoke_agent", "billing", None),
        ("close", "close", "aer1", None),
    ]
    contents = evidence_contents(path)
    assert contents[1]["model"]["request_model"] == "gpt-x" and contents[1]["model"]["input_tokens"] == 12
    assert contents[1]["model"]["finish_reasons"] == ["tool_calls"]
    failed = receipt["steps"][1]
    assert failed["status"] == "error" and receipt["status"] == "ok"  # a failed tool is a step's status, not the run's
    assert contents[2]["error"] == {"type": "KeyError", "module": None, "message": "no such account"}
    assert contents[2]["arguments"] == {"id": 7} and contents[2]["result"] is None
    assert "gen_ai.tool.call.result" in contents[2]["otel"]["absent"]
    assert contents[3]["result"] == "billing" and "absent" not in contents[3]["otel"]
    assert contents[4]["target"] == "billing" and contents[4]["call_id"] == "h1"
    handoff, call = receipt["steps"][3], receipt["steps"][2]
    assert (handoff["trace_id"], handoff["span_id"]) == (call["trace_id"], call["span_id"])


def test_spans_ending_out_of_start_order_are_kept_in_start_order(tracing: Tracing) -> None:
    """Two tool spans started a then b, ended b then a (parallel calls): the receipt keeps a, b."""
    from_spans = SpanReceiptCollector("parallel", root="run")
    tracing.provider.add_span_processor(from_spans)
    tracer = tracing.provider.get_tracer("some.framework")
    with tracer.start_as_current_span("run"):
        a = tracer.start_span("execute_tool a", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "a", "gen_ai.tool.call.id": "ca"})
        b = tracer.start_span("execute_tool b", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "b", "gen_ai.tool.call.id": "cb"})
        b.end()
        a.end()
    receipt = from_spans.receipt
    assert receipt is not None
    assert rows(receipt)[:2] == [("tool_call", "a", "unattributed", "ca"), ("tool_call", "b", "unattributed", "cb")]
    ends = [s["ended_at"] for s in receipt["steps"][:2]]
    assert ends[0] >= ends[1]  # the end times the receipt keeps are the spans' own


def test_hostile_attribute_values_are_data(tracing: Tracing, tmp_path: Path) -> None:
    """Arguments that are not JSON, JSON with constants, and markup stay as the span's text."""
    from_spans = SpanReceiptCollector("hostile", root="run")
    tracing.provider.add_span_processor(from_spans)
    tracer = tracing.provider.get_tracer("some.framework")
    weird = ['{"x": NaN}', "<script>alert(1)</script>", '{"a": 1, "a": 2}']
    with tracer.start_as_current_span("run"):
        for i, text in enumerate(weird):
            with tracer.start_as_current_span(f"execute_tool t{i}", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": f"t{i}",
                    "gen_ai.tool.call.id": f"c{i}", "gen_ai.tool.call.arguments": text,
                    "gen_ai.tool.call.result": text}):
                pass
    receipt = from_spans.receipt
    assert receipt is not None and receipt.get("recording_failures", 0) == 0
    contents = evidence_contents(from_spans.save(tmp_path / "r.json"))
    for i, text in enumerate(weird):
        assert contents[i + 1]["arguments"] == text and contents[i + 1]["arguments_malformed"] is True
        assert contents[i + 1]["result"] == text


def _tool(tracer: Any, name: str, parent: Any) -> Any:
    """An execute_tool span started (not ended) under ``parent``."""
    return tracer.start_span(f"execute_tool {name}", context=trace.set_span_in_context(parent), attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.call.id": f"c_{name}"})


def _run(tracing: Tracing, goal: str) -> tuple[SpanReceiptCollector, Any, Any]:
    """A collector on the provider, a tracer, and the root span ``run`` started (ended by the test)."""
    from_spans = SpanReceiptCollector(goal, root="run")
    tracing.provider.add_span_processor(from_spans)
    tracer = tracing.provider.get_tracer("some.framework")
    return from_spans, tracer, tracer.start_span("run")


@pytest.mark.parametrize("ends", [("b1", "b", "a"), ("a", "b1", "b"), ("b1", "a", "b")])
def test_a_span_inside_a_later_sibling_no_longer_comes_before_an_earlier_sibling(
        ends: tuple[str, ...], tracing: Tracing, tmp_path: Path, peers: Peers | None) -> None:
    """run holds a then b, b holds b1: in every end order the receipt keeps a, b1, b (each subtree after the earlier
    siblings' subtrees); b1 used to come first whenever it ended before a."""
    from_spans, tracer, run = _run(tracing, "nested")
    a = _tool(tracer, "a", run)
    b = _tool(tracer, "b", run)
    spans = {"a": a, "b": b, "b1": _tool(tracer, "b1", b)}
    for name in ends:
        spans[name].end()
    run.end()
    receipt = from_spans.receipt
    assert receipt is not None and "recording_failures" not in receipt
    assert [s["tool"] for s in receipt["steps"]] == ["a", "b1", "b", "close"]
    verify_everywhere(from_spans.save(tmp_path / "r.json"), receipt, peers)


def test_a_parent_that_ends_before_its_child_no_longer_comes_before_it(tracing: Tracing) -> None:
    """A span after the spans it contains, also when it ended first (a task it started outlived it)."""
    from_spans, tracer, run = _run(tracing, "outlived")
    parent = _tool(tracer, "parent", run)
    child = _tool(tracer, "child", parent)
    parent.end()
    child.end()
    run.end()
    receipt = from_spans.receipt
    assert receipt is not None and [s["tool"] for s in receipt["steps"]] == ["child", "parent", "close"]


def test_passing_max_waiting_spans_no_longer_counts_open_spans_as_never_ended(
        tracing: Tracing, tmp_path: Path, peers: Peers | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the waiting limit the spans are recorded as they end: the spans still open then end later and are
    recorded, so the receipt is complete (it used to count them as not ended, and record none after in end order)."""
    monkeypatch.setattr(otel, "MAX_WAITING_SPANS", 3)
    from_spans, tracer, run = _run(tracing, "many")
    first = _tool(tracer, "first", run)
    rest = [_tool(tracer, f"s{i}", run) for i in range(6)]
    for span in rest:
        span.end()
    first.end()
    run.end()
    receipt = from_spans.receipt
    assert receipt is not None and "recording_failures" not in receipt and receipt["status"] == "ok"
    assert [s["tool"] for s in receipt["steps"]] == ["s0", "s1", "s2", "s3", "s4", "s5", "first", "close"]
    verify_everywhere(from_spans.save(tmp_path / "r.json"), receipt, peers)


@pytest.mark.parametrize("value, arguments, malformed", [
    (True, "true", True),
    (7, "7", True),
    (2.5, "2.5", True),
    (("a", "b"), '["a", "b"]', True),
    ((1, "x", None), '[1, "x", null]', True),
    (b'{"id": 7}', {"id": 7}, False),
    (b"\xff\x00", None, False),  # bytes with no text: no arguments made up (the span's value is under otel)
], ids=repr)
def test_arguments_that_are_not_text_are_no_longer_python_repr_of_them(
        value: Any, arguments: Any, malformed: bool, tracing: Tracing, tmp_path: Path, peers: Peers | None) -> None:
    """A span's arguments given as a value, not text: the step held ``repr`` (``['a', 'b']``, ``True``), and bytes
    decoded with replacement characters, text the span never carried."""
    from_spans, tracer, run = _run(tracing, "structured arguments")
    with trace.use_span(run, end_on_exit=True):
        with tracer.start_as_current_span("execute_tool t", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t", "gen_ai.tool.call.id": "c",
                "gen_ai.tool.call.arguments": value}):
            pass
    receipt = from_spans.receipt
    assert receipt is not None and "recording_failures" not in receipt
    path = from_spans.save(tmp_path / "r.json")
    verify_everywhere(path, receipt, peers)
    content = evidence_contents(path)[1]
    assert content["arguments"] == arguments and content.get("arguments_malformed", False) is malformed
    assert "gen_ai.tool.call.arguments" in content["otel"]["attributes"]


class _Weak(SpanProcessor):
    """Keeps a weak reference to each span handed to processors at its end."""

    def __init__(self) -> None:
        self.ended: list[weakref.ref[ReadableSpan]] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(weakref.ref(span))


def test_recorded_spans_are_no_longer_held_until_the_receipt_is_finalized(tmp_path: Path, peers: Peers | None) -> None:
    """Every span of a long run (most of them not GenAI's) was kept whole until finalize(): now a span recorded is let
    go, and only its agent name is kept, for a span started under it later."""
    provider = TracerProvider()  # no exporter here: nothing else keeps the spans
    from_spans = SpanReceiptCollector("long run", root="run")
    weak = _Weak()
    provider.add_span_processor(from_spans)
    provider.add_span_processor(weak)
    tracer = provider.get_tracer("some.framework")
    run = tracer.start_span("run")
    agent = tracer.start_span("invoke_agent a", context=trace.set_span_in_context(run), attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})
    for i in range(50):
        with tracer.start_as_current_span(f"message {i}", context=trace.set_span_in_context(agent)):
            pass
    agent.end()
    _tool(tracer, "late", agent).end()  # started under a span already recorded: its agent is still found
    gc.collect()
    assert len(weak.ended) == 52 and all(ref() is None for ref in weak.ended)
    run.end()
    receipt = from_spans.receipt
    assert receipt is not None and "recording_failures" not in receipt
    assert [(s["tool"], s["agent"]) for s in receipt["steps"]] == [
        ("invoke_agent", "a"), ("late", "a"), ("close", "aer1")]
    verify_everywhere(from_spans.save(tmp_path / "r.json"), receipt, peers)


def test_a_root_rule_that_raises_no_longer_loses_the_span_it_was_asked_about(tracing: Tracing) -> None:
    """The rule's failure is counted (receipt incomplete), and the span is still recorded: its step used to be lost."""
    def rule(span: Any) -> bool:
        return bool(span.attributes["kind"] == "run")  # KeyError on a root span without "kind"

    from_spans = SpanReceiptCollector("rule", root=rule)
    tracing.provider.add_span_processor(from_spans)
    tracer = tracing.provider.get_tracer("some.framework")
    with tracer.start_as_current_span("chat", attributes={"gen_ai.operation.name": "chat"}):
        pass
    with tracer.start_as_current_span("run", attributes={"kind": "run"}):
        pass
    receipt = from_spans.receipt
    assert receipt is not None and receipt["recording_failures"] == 1
    assert [s["tool"] for s in receipt["steps"]] == ["chat", "close"]


def test_a_root_span_whose_recording_fails_no_longer_leaves_the_receipt_open(
        tracing: Tracing, tmp_path: Path, peers: Peers | None) -> None:
    """A handoff rule that raises on the root's own tool call: counted, and the root's end still finalizes (it used to
    leave the receipt open, every later span of the provider recorded into it)."""
    def handoffs(tool: str) -> str | None:
        raise RuntimeError("a broken rule")

    from_spans = SpanReceiptCollector("rule", root="run", handoffs=handoffs)
    tracing.provider.add_span_processor(from_spans)
    tracer = tracing.provider.get_tracer("some.framework")
    with tracer.start_as_current_span("run", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "transfer", "gen_ai.tool.call.id": "h"}):
        pass
    receipt = from_spans.receipt
    assert receipt is not None and receipt["recording_failures"] == 1
    assert [s["tool"] for s in receipt["steps"]] == ["transfer", "close"]
    verify_everywhere(from_spans.save(tmp_path / "r.json"), receipt, peers)


class _Scripted(IdGenerator):
    """Gives the span ids and trace ids listed, in order (an id generator that repeats ids)."""

    def __init__(self, span_ids: list[int], trace_ids: list[int]) -> None:
        self._span_ids, self._trace_ids = iter(span_ids), iter(trace_ids)

    def generate_span_id(self) -> int:
        return next(self._span_ids)

    def generate_trace_id(self) -> int:
        return next(self._trace_ids)


def _scripted(span_ids: list[int], trace_ids: list[int]) -> tuple[SpanReceiptCollector, Any, InMemorySpanExporter]:
    """A provider of the real SDK with those ids, exporting to memory, and a collector on it."""
    provider = TracerProvider(id_generator=_Scripted(span_ids, trace_ids))
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    from_spans = SpanReceiptCollector("ids")
    provider.add_span_processor(from_spans)
    return from_spans, provider.get_tracer("some.framework"), exporter


def _agent_span(tracer: Any, name: str, parent: Any = None) -> Any:
    return tracer.start_span(name, context=trace.set_span_in_context(parent) if parent is not None else None,
                             attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name})


def test_span_ids_repeated_across_traces_no_longer_lose_one_trace_silently(tmp_path: Path, peers: Peers | None) -> None:
    """Span ids are unique within a trace; a generator numbering each trace's spans gave two traces' spans one place
    in the tree: half of them were lost and the receipt said nothing was."""
    from_spans, tracer, exporter = _scripted([1, 1, 2, 2], [0xA, 0xB])
    ra, rb = _agent_span(tracer, "ra"), _agent_span(tracer, "rb")
    ca, cb = _agent_span(tracer, "ca", ra), _agent_span(tracer, "cb", rb)
    for span in (cb, ca, rb, ra):
        span.end()
    receipt = from_spans.finalize()
    assert len(exporter.get_finished_spans()) == 4 and "recording_failures" not in receipt
    assert sorted(s["agent"] for s in receipt["steps"][:-1]) == ["ca", "cb", "ra", "rb"]
    verify_everywhere(from_spans.save(tmp_path / "r.json"), receipt, peers)


def test_two_spans_of_one_trace_with_one_span_id_are_no_longer_recorded_as_one_silently(
        tmp_path: Path, peers: Peers | None) -> None:
    """Their ends cannot be told apart: neither is recorded and both are counted; the other spans are recorded."""
    from_spans, tracer, _ = _scripted([1, 2, 2, 3], [0xA])
    run = tracer.start_span("run")
    first, second = _agent_span(tracer, "first", run), _agent_span(tracer, "second", run)
    third = _agent_span(tracer, "third", run)
    for span in (second, first, third, run):
        span.end()
    receipt = from_spans.finalize()
    assert receipt["recording_failures"] == 2 and receipt["status"] == "incomplete"
    assert [s["agent"] for s in receipt["steps"]] == ["third", "aer1"]
    verify_everywhere(from_spans.save(tmp_path / "r.json"), receipt, peers)


def _random_run(tracer: Any, rnd: random.Random, spans: int) -> dict[str, list[str]]:
    """Spans started under random open spans and ended in random order, then ``run`` ended; returns the tree."""
    run = tracer.start_span("run")
    live, children = {"run": run}, {"run": []}
    started = 0
    while started < spans or len(live) > 1:
        if started < spans and (len(live) == 1 or rnd.random() < 0.6):
            parent, name = rnd.choice(list(live)), f"s{started}"
            live[name] = _tool(tracer, name, live[parent])
            children[name] = []
            children[parent].append(name)
            started += 1
        else:
            live.pop(rnd.choice([name for name in live if name != "run"])).end()
    run.end()
    return children


def _after_what_it_holds(children: dict[str, list[str]], name: str) -> list[str]:
    """The spans inside ``name``, each parent's children in start order, each span after the spans inside it."""
    inside = [step for child in children[name] for step in _after_what_it_holds(children, child)]
    return inside if name == "run" else [*inside, name]


@pytest.mark.parametrize("seed", range(40))
def test_the_order_kept_no_longer_depends_on_the_order_spans_end_in(seed: int, tracing: Tracing) -> None:
    """Random trees ended in random orders: the receipt's order is the one of the tree as started, every time."""
    from_spans = SpanReceiptCollector("random", root="run")
    tracing.provider.add_span_processor(from_spans)
    children = _random_run(tracing.provider.get_tracer("some.framework"), random.Random(seed), 30)
    receipt = from_spans.receipt
    assert receipt is not None and "recording_failures" not in receipt
    assert [s["tool"] for s in receipt["steps"][:-1]] == _after_what_it_holds(children, "run")


def test_a_root_span_continuing_a_remote_trace_now_finalizes_the_receipt(
        tracing: Tracing, tmp_path: Path, peers: Peers | None) -> None:
    """A service's ``run`` span continues its caller's trace (a remote parent, from ``traceparent``): it was never
    taken as the root, so its end finalized nothing."""
    from_spans = SpanReceiptCollector("service", root="run")
    tracing.provider.add_span_processor(from_spans)
    tracer = tracing.provider.get_tracer("some.framework")
    caller = TraceContextTextMapPropagator().extract(
        {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
    with tracer.start_as_current_span("run", context=caller):
        with tracer.start_as_current_span("chat", attributes={"gen_ai.operation.name": "chat"}):
            pass
        with tracer.start_as_current_span("run"):  # a span of that name inside the root is not a root
            pass
    receipt = from_spans.receipt
    assert receipt is not None and "recording_failures" not in receipt
    assert [s["tool"] for s in receipt["steps"]] == ["chat", "close"]
    assert receipt["steps"][0]["trace_id"] == "0af7651916cd43dd8448eb211c80319c"
    verify_everywhere(from_spans.save(tmp_path / "r.json"), receipt, peers)


class _Text(str):
    """A str subclass whose ``str()`` is another text (enumerations and such are set as attribute values)."""

    def __str__(self) -> str:
        return "not the value"


_EVERY_TYPE: dict[str, Any] = {
    "bool": True, "nan": float("nan"), "inf": float("-inf"), "big": 2**70, "seq": ("a", "b"),
    "mixed": (1, "x", None, 2.5), "nested": ((1, 2), (3,)), "bytes": b"\xff\x00", "none": None,
    "map": {"k": b"\x01", "n": float("nan")}, "text": _Text("plain"), "long": "x" * 100_000,
}


def test_attribute_values_of_every_otel_type_give_steps_that_verify(
        tracing: Tracing, tmp_path: Path, peers: Peers | None) -> None:
    """Every value the SDK keeps (extended attributes included) gives its step, the attribute kept under ``otel``."""
    from_spans, tracer, run = _run(tracing, "every type")
    with trace.use_span(run, end_on_exit=True):
        for name, value in _EVERY_TYPE.items():
            for operation in ("execute_tool", "chat"):
                with tracer.start_as_current_span(f"{operation} {name}", attributes={
                        "gen_ai.operation.name": operation, "gen_ai.tool.name": name, "gen_ai.x": value,
                        "gen_ai.tool.call.arguments": value, "gen_ai.tool.call.result": value,
                        "gen_ai.output.messages": value, "gen_ai.usage.input_tokens": value,
                        "gen_ai.response.finish_reasons": value}):
                    pass
    receipt = from_spans.receipt
    assert receipt is not None and "recording_failures" not in receipt
    assert len(receipt["steps"]) == 2 * len(_EVERY_TYPE) + 1
    path = from_spans.save(tmp_path / "r.json")
    verify_everywhere(path, receipt, peers)
    contents = evidence_contents(path)
    text = next(s["seq"] for s in receipt["steps"] if s["tool"] == "text")
    assert contents[text]["otel"]["attributes"]["gen_ai.x"] == "plain"  # the text it holds, not its str()
    assert contents[text]["arguments"] == "plain" and contents[text]["arguments_malformed"] is True
