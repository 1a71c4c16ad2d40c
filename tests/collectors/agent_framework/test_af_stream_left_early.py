"""Trial: a caller that stops reading collector.run_stream early got a receipt saying "ok" with no end of the run."""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path

import pytest

from ...cli_runs import Run

if importlib.util.find_spec("agent_framework_orchestrations") is None:  # the ag2/autogen environments
    pytest.skip("the agent-framework extra is not installed", allow_module_level=True)

from aer1.collectors.agent_framework import UNFINISHED_REASON, AER1AgentFrameworkCollector

from .workflows import sequential


async def test_stream_left_early_ends_with_a_termination_saying_so(tmp_path: Path, run_cli: Run,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    collector = AER1AgentFrameworkCollector(goal="read a few events, then stop")
    workflow, _ = sequential()
    events = collector.run_stream(workflow, "add 1 and 2")
    seen = 0
    async for _ in events:
        seen += 1
        if seen == 3:
            break
    receipt = collector.finalize("stopped early")
    with caplog.at_level(logging.WARNING, logger="aer1"):
        await events.aclose()  # what the event loop does later to a stream left suspended
    assert not [r for r in caplog.records if "after finalize" in r.getMessage()], caplog.text
    path = tmp_path / "receipt.json"
    collector.save(path, workflow=receipt)
    ends = [s for s in receipt["steps"] if s["kind"] == "termination"]
    assert [(s["tool"], s["status"]) for s in ends] == [("workflow_end", "cancelled")], receipt["steps"]
    assert (receipt["status"], collector.recording_failures) == ("incomplete", 0)
    lines = (tmp_path / "receipt.evidence.jsonl").read_text().splitlines()
    assert json.loads(lines[ends[0]["seq"]])["content"]["reason"] == UNFINISHED_REASON
    assert collector.finalize("stopped early") == receipt  # finalize stays idempotent
    assert run_cli(path)[0] == 0


async def test_stream_read_to_the_end_is_unchanged() -> None:
    collector = AER1AgentFrameworkCollector(goal="read every event")
    workflow, _ = sequential()
    _ = [event async for event in collector.run_stream(workflow, "add 1 and 2")]
    receipt = collector.finalize("done")
    ends = [(s["tool"], s["status"]) for s in receipt["steps"] if s["kind"] == "termination"]
    assert (ends, receipt["status"]) == ([("workflow_end", "ok")], "ok")
