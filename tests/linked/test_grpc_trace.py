"""Traces across processes: AutoGen's gRPC runtime carries the trace context, receipts keep the join.

A GrpcWorkerAgentRuntimeHost on 127.0.0.1, two traced worker processes (each its own SDK
tracer provider; the planner on w1 asks the calculator on w2) and a traced starter. The
starter's steps and the link steps that bind the workers' receipts carry the starter's
trace. AutoGen 0.7's runtime hands the caller's context on as a span *link* (its worker
spans start traces of their own, linked to the caller's span), so each worker step names
its worker's span, and that span links to the trace that asked (the starter's, or the
planner's for the calculator): from any step of the bundle, following links reaches the
starter's trace (spec/otel.md).
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from autogen_core import AgentId
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from aer1 import Collector
from aer1.collectors.grpc_runtime import AER1GrpcWorkerRuntime, collect_worker_receipts

from .grpc_agents import Answer, Plan, serializers
from .grpc_worker import GRPC_OPTIONS
from .helpers import verify_bundle_cli
from .test_grpc_runtime import GUARD_S, Worker, running_cluster


def reached(start: str, spans: Any) -> set[str]:
    """The traces reached from ``start`` by following span links (a worker asking another links twice)."""
    links: dict[str, set[str]] = {}
    for span in spans:
        links.setdefault(span["trace_id"], set()).update(span["links"])
    seen, todo = {start}, [start]
    while todo:
        for linked in links.get(todo.pop(), set()) - seen:
            seen.add(linked)
            todo.append(linked)
    return seen


@pytest.fixture
async def traced_cluster(tmp_path: Path) -> AsyncIterator[list[Worker]]:
    async with running_cluster(tmp_path, traced=True) as workers:
        yield workers


async def test_linked_worker_receipts_keep_the_starters_trace(traced_cluster: str, tmp_path: Path) -> None:
    address = traced_cluster[0].address
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("user")
    parent = Collector(goal="plan on a traced worker")
    starter = AER1GrpcWorkerRuntime(address, parent, worker="starter", extra_grpc_config=GRPC_OPTIONS,
                                    tracer_provider=provider)
    starter.add_message_serializer(serializers())
    await starter.start()
    try:
        with tracer.start_as_current_span("user run") as root:
            answer = await asyncio.wait_for(starter.send_message(Plan("budget"), AgentId("planner", "default")),
                                            GUARD_S)
            linked = await collect_worker_receipts(starter, parent, ["w1", "w2"], timeout=GUARD_S)
    finally:
        await asyncio.wait_for(starter.stop(), GUARD_S)
    assert isinstance(answer, Answer) and linked["w1"] is not None and linked["w2"] is not None
    trace_id = format(root.get_span_context().trace_id, "032x")
    receipt = parent.finalize(final_answer=answer.text)
    folder = tmp_path / "bundle"
    paths = parent.save_bundle(folder, receipt)
    code, doc = verify_bundle_cli(str(folder))
    assert code == 0, doc["failures"]

    assert receipt["steps"][0]["trace_id"] == trace_id  # the starter's own send
    links = [s for s in receipt["steps"] if s["kind"] == "link"]
    assert len(links) == 2 and all(link["trace_id"] == trace_id for link in links)
    starter_spans = {format(s.context.span_id, "016x") for s in exporter.get_finished_spans()}
    assert all(link["span_id"] in starter_spans for link in links)
    for path in paths[1:]:
        child: dict[str, Any] = json.loads(Path(path).read_text())
        worker_steps = [s for s in child["steps"] if s["kind"] != "close"]
        assert worker_steps and all("trace_id" in s for s in worker_steps)
    for worker in traced_cluster:  # at SIGTERM the worker writes what its spans were
        worker.end(signal.SIGTERM)
    worker_spans = {span["span_id"]: span for worker in traced_cluster
                    for span in json.loads(worker.journal.with_name("spans.json").read_text())}
    for path in paths[1:]:
        child = json.loads(Path(path).read_text())
        for step in (s for s in child["steps"] if s["kind"] != "close"):
            span = worker_spans[step["span_id"]]  # the worker's own "process" span, in the worker's trace
            assert span["trace_id"] == step["trace_id"] and span["name"].startswith("autogen process")
            assert trace_id in reached(step["trace_id"], worker_spans.values()), (step["seq"], span)
