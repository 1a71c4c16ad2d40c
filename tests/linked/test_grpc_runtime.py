"""AutoGen's distributed runtime, for real: a GrpcWorkerAgentRuntimeHost on 127.0.0.1 and two
worker processes whose agents exchange messages and call tools.

Each worker records into its own receipt and journal; receipts come back over the runtime
as bytes (the workers' files are never read by the starter, except the journal of the
killed worker, which ``aer1 recover`` turns into a child receipt where the worker ran).
The starter links them into the workflow receipt and the bundle verifies.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from autogen_core import AgentId
from autogen_ext.runtimes.grpc import GrpcWorkerAgentRuntimeHost

from aer1 import Collector
from aer1._vocabulary import VOCABULARY
from aer1.collectors.grpc_runtime import AER1GrpcWorkerRuntime, collect_worker_receipts
from aer1.verifier import verify_receipt

from ..receipts import evidence_contents
from .grpc_agents import Answer, Plan, Stall, serializers
from .grpc_worker import GRPC_OPTIONS
from .helpers import verify_bundle_cli

ROOT = Path(__file__).resolve().parents[2]
#: Guards against a hang of the runtime (it times nothing out by itself); never a measurement.
GUARD_S = 60.0
#: How long the starter waits for the killed worker's receipt before recording that it did not come.
DEAD_WORKER_WAIT_S = 2.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _listening(port: int) -> None:
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return


class Worker:
    """A worker process and the lines it prints."""

    def __init__(self, address: str, name: str, journal: Path, *, traced: bool = False) -> None:
        self.name, self.journal, self.address = name, journal, address
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.linked.grpc_worker", address, name, str(journal)] + (["traced"] * traced),
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip

    async def said(self, word: str) -> None:
        assert self.proc.stdout is not None
        while True:
            line = await asyncio.to_thread(self.proc.stdout.readline)
            if not line:
                raise AssertionError(f"worker {self.name} exited before printing {word!r}")
            if line.strip() == word:
                return

    def end(self, sig: int) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@contextlib.asynccontextmanager
async def running_cluster(tmp_path: Path, *, traced: bool = False) -> AsyncIterator[list[Worker]]:
    """A host on a free port and the workers w1 and w2, each ready; ended (SIGTERM) and stopped after."""
    port = _free_port()
    address = f"127.0.0.1:{port}"
    host = GrpcWorkerAgentRuntimeHost(address=address, extra_grpc_config=GRPC_OPTIONS)
    host.start()
    workers: list[Worker] = []
    try:
        await asyncio.wait_for(_listening(port), GUARD_S)
        for name in ("w1", "w2"):
            (tmp_path / name).mkdir()
            workers.append(Worker(address, name, tmp_path / name / "run.journal", traced=traced))
        for w in workers:
            await asyncio.wait_for(w.said("ready"), GUARD_S)
        yield workers
    finally:
        for w in workers:
            w.end(signal.SIGTERM)
        await host.stop(grace=1)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[dict[str, Any]]:
    async with running_cluster(tmp_path) as workers:
        yield {"address": workers[0].address, "workers": {w.name: w for w in workers}}


async def test_two_workers_one_killed_bundle_verifies(cluster: dict[str, Any], tmp_path: Path) -> None:
    parent = Collector(goal="plan with two workers")
    starter = AER1GrpcWorkerRuntime(cluster["address"], parent, worker="starter", extra_grpc_config=GRPC_OPTIONS)
    starter.add_message_serializer(serializers())
    await starter.start()
    try:
        answer = await asyncio.wait_for(starter.send_message(Plan("budget"), AgentId("planner", "default")), GUARD_S)
        assert isinstance(answer, Answer) and answer.text == "budget: two numbers, 20 and 22 -> 42"

        # w2 makes a tool call, then hangs: killed mid-run, its receipt never finalized.
        stalled = asyncio.ensure_future(starter.send_message(Stall("hang"), AgentId("calculator", "default")))
        w2 = cluster["workers"]["w2"]
        await asyncio.wait_for(w2.said("stalling"), GUARD_S)
        w2.end(signal.SIGKILL)
        stalled.cancel()

        # w1 answers (generous guard); w2 is dead, so its wait always runs out.
        linked = await collect_worker_receipts(starter, parent, ["w1"], timeout=GUARD_S)
        linked.update(await collect_worker_receipts(starter, parent, ["w2"], timeout=DEAD_WORKER_WAIT_S))
    finally:
        await asyncio.wait_for(starter.stop(), GUARD_S)
    assert linked["w1"] is not None and linked["w2"] is None

    # Where w2 ran, its journal is recovered; the recovered receipt travels as bytes.
    out = w2.journal.parent / "w2.json"
    done = subprocess.run([sys.executable, "-m", "aer1._cli", "recover", str(w2.journal), "-o", str(out)],
                          capture_output=True, text=True, timeout=GUARD_S)
    assert done.returncode in (0, 1), done.stderr
    step = parent.link(out.read_bytes(), evidence=out.with_name("w2.evidence.jsonl").read_bytes(),
                       agent="worker:w2")
    assert step["status"] == "error"
    receipt = parent.finalize(final_answer=answer.text)
    folder = tmp_path / "bundle"
    paths = parent.save_bundle(folder, receipt)
    assert len(paths) == 3

    code, doc = verify_bundle_cli(str(folder))
    assert code == 0, doc["failures"]
    assert (doc["links"]["followed"], doc["links"]["not_followed"]) == (2, 0)
    links = {link["child"]["workflow_id"]: link for link in doc["tree"]["links"]}
    w1_receipt, w2_receipt = (json.loads(Path(p).read_text()) for p in paths[1:])
    assert w1_receipt["status"] == "ok" and links[w1_receipt["workflow_id"]]["child"]["closed_by"] is None
    w2_link = links[w2_receipt["workflow_id"]]
    assert (w2_link["child"]["status"], w2_link["child"]["closed_by"]) == ("incomplete", "recovery")
    assert "closed by recovery" in w2_link["detail"]

    # What each chain holds: the starter's send and the w2 error, then the links.
    kinds = [(s["kind"], s["agent"]) for s in receipt["steps"]]
    assert kinds[0] == ("message", "caller")
    assert ("error", "worker:w2") in kinds and ("link", "worker:w1") in kinds and ("link", "worker:w2") in kinds
    w1_steps = [(s["kind"], s["agent"]) for s in w1_receipt["steps"]]
    assert w1_steps == [("tool_call", "planner"), ("message", "planner/default"), ("close", "aer1")]
    # Every content the runtime writes is in the step vocabulary (spec/steps.md, spec/linked.md).
    parent_contents = evidence_contents(paths[0])
    sent = parent_contents[1]
    (w2_error,) = (parent_contents[s["seq"]] for s in receipt["steps"]
                   if (s["kind"], s["agent"]) == ("error", "worker:w2"))
    stalled_send = parent_contents[2]  # the Stall sent to w2, cancelled: the vocabulary's error says so
    assert stalled_send["autogen_core"]["delivery"] == "send" and stalled_send["error"]["type"] == "CancelledError"
    assert receipt["steps"][1]["status"] == "cancelled"
    assert (sent["vocabulary"], sent["role"], sent["model"], sent["content"]) == (
        VOCABULARY, None, None, {"task": "budget"})
    assert sent["autogen_core"]["delivery"] == "send" and sent["autogen_core"]["result"] == {"text": answer.text}
    assert (w2_error["vocabulary"], w2_error["phase"], w2_error["autogen_core"]["worker"]) == (
        VOCABULARY, "collect_receipt", "w2")
    assert w2_error["error"] == {"type": "TimeoutError", "module": "builtins",
                                 "message": f"no answer within {DEAD_WORKER_WAIT_S} s"}
    handled = evidence_contents(paths[1])[2]
    assert (handled["vocabulary"], handled["content"], handled["autogen_core"]["delivery"]) == (
        VOCABULARY, {"task": "budget"}, "handled")
    assert "error" not in handled and handled["autogen_core"]["result"] == {"text": answer.text}
    w2_steps = [(s["kind"], s["tool"]) for s in w2_receipt["steps"]]
    assert w2_steps[:3] == [("tool_call", "add"), ("message", "message"), ("tool_call", "add")], w2_steps
    assert w2_steps[-1] == ("close", "close")


def test_worker_name_is_checked() -> None:
    with pytest.raises(ValueError, match="worker must be a non-empty name without '/'"):
        AER1GrpcWorkerRuntime("127.0.0.1:1", Collector(goal="x"), worker="a/b")


async def test_a_send_or_publish_that_fails_is_recorded_in_the_vocabulary(tmp_path: Path) -> None:
    """The runtime refuses both before it is started: each is a ``message`` step ``error``, its error said."""
    from autogen_core import TopicId

    collector = Collector(goal="a runtime never started")
    runtime = AER1GrpcWorkerRuntime("127.0.0.1:1", collector, worker="idle")
    runtime.add_message_serializer(serializers())
    with pytest.raises(ValueError, match="must be running") as published:
        await runtime.publish_message(Plan("x"), TopicId("plans", "starter"))
    with pytest.raises(ValueError, match="must be running") as sent:
        await runtime.send_message(Plan("y"), AgentId("planner", "default"))
    receipt = collector.finalize()
    path = collector.save(tmp_path / "idle.json", workflow=receipt)
    assert [(s["kind"], s["tool"], s["agent"], s["status"]) for s in receipt["steps"][:2]] == [
        ("message", "publish", "caller", "error"), ("message", "send", "caller", "error")]
    contents = evidence_contents(path)
    for seq, raised, delivery, message in ((1, published, "publish", {"task": "x"}), (2, sent, "send", {"task": "y"})):
        content = contents[seq]
        assert (content["vocabulary"], content["content"], content["autogen_core"]["delivery"]) == (
            VOCABULARY, message, delivery)
        assert content["error"] == {"type": "ValueError", "module": "builtins", "message": str(raised.value)}
        assert "result" not in content["autogen_core"]
    assert contents[1]["autogen_core"]["topic"] == {"type": "plans", "source": "starter"}
    report = verify_receipt(path)
    assert report.valid, [f.reason for f in report.failures]
