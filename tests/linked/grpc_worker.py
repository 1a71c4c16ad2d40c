"""A worker process of the distributed tests: ``python -m tests.linked.grpc_worker HOST NAME JOURNAL [traced]``.

Hosts the planner (w1) or the calculator (w2) on an AER1GrpcWorkerRuntime whose collector
journals to JOURNAL, serves its receipt over the runtime, prints ``ready`` and runs until
SIGTERM (or SIGKILL). With ``traced`` the runtime has its own OpenTelemetry SDK tracer
provider (spans kept in memory), as a traced worker process would, and at SIGTERM writes
each span's ids and its links' ids to ``spans.json`` beside JOURNAL.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from aer1 import Collector
from aer1.collectors.grpc_runtime import AER1GrpcWorkerRuntime

from .grpc_agents import Calculator, Planner, serializers

#: gRPC channel options: no shared subchannel backoff after a refused first connect.
GRPC_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


async def main(host: str, worker: str, journal: str, traced: str = "") -> None:
    collector = Collector(goal=f"worker {worker}", journal=journal, fsync="step")
    options: dict[str, Any] = {}
    exporter = None
    if traced == "traced":
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        provider = TracerProvider()
        exporter = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        options["tracer_provider"] = provider
    runtime = AER1GrpcWorkerRuntime(host, collector, worker=worker, extra_grpc_config=GRPC_OPTIONS, **options)
    runtime.add_message_serializer(serializers())
    await runtime.start()
    if worker == "w1":
        await Planner.register(runtime, "planner", lambda: Planner(collector))
    else:
        await Calculator.register(runtime, "calculator", lambda: Calculator(collector))
    await runtime.serve_receipt()
    print("ready", flush=True)
    await runtime.stop_when_signal()
    if exporter is not None:
        spans = [{"name": span.name, "trace_id": format(span.context.trace_id, "032x"),
                  "span_id": format(span.context.span_id, "016x"),
                  "links": [format(link.context.trace_id, "032x") for link in span.links]}
                 for span in exporter.get_finished_spans()]
        Path(journal).with_name("spans.json").write_text(json.dumps(spans))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
