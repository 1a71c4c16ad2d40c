"""A worker process of the distributed tests: ``python -m tests.linked.grpc_worker HOST NAME JOURNAL``.

Hosts the planner (w1) or the calculator (w2) on an AER1GrpcWorkerRuntime whose collector
journals to JOURNAL, serves its receipt over the runtime, prints ``ready`` and runs until
SIGTERM (or SIGKILL).
"""

from __future__ import annotations

import asyncio
import sys

from aer1 import Collector
from aer1.collectors.grpc_runtime import AER1GrpcWorkerRuntime

from .grpc_agents import Calculator, Planner, serializers

#: gRPC channel options: no shared subchannel backoff after a refused first connect.
GRPC_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


async def main(host: str, worker: str, journal: str) -> None:
    collector = Collector(goal=f"worker {worker}", journal=journal, fsync="step")
    runtime = AER1GrpcWorkerRuntime(host, collector, worker=worker, extra_grpc_config=GRPC_OPTIONS)
    runtime.add_message_serializer(serializers())
    await runtime.start()
    if worker == "w1":
        await Planner.register(runtime, "planner", lambda: Planner(collector))
    else:
        await Calculator.register(runtime, "calculator", lambda: Calculator(collector))
    await runtime.serve_receipt()
    print("ready", flush=True)
    await runtime.stop_when_signal()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
