"""Trial: a caller that stops reading collector.run_stream early got status "ok" and a stop reason "not observed"
by an unknown team, though the team was observed and had simply not ended."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import RoundRobinGroupChat

from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector
from aer1.collectors._collector import UNFINISHED_NOTE

from ...cli_runs import Run
from ...scripted_models import scripted_client


def _team(collector: AER1AutoGenCollector) -> RoundRobinGroupChat:
    alice = AER1AgentWrapper(AssistantAgent("alice", model_client=scripted_client(["a1", "a2"])), collector)
    bob = AER1AgentWrapper(AssistantAgent("bob", model_client=scripted_client(["b1", "b2"])), collector)
    return RoundRobinGroupChat([alice, bob], max_turns=4)


async def test_stream_left_early_ends_with_the_teams_termination_saying_so(
        tmp_path: Path, run_cli: Run, caplog: pytest.LogCaptureFixture) -> None:
    collector = AER1AutoGenCollector(goal="read a few items, then stop")
    team = _team(collector)
    items = collector.run_stream(team, task="go")
    seen = 0
    async for _ in items:
        seen += 1
        if seen == 2:
            break
    receipt = collector.finalize()
    with caplog.at_level(logging.WARNING, logger="aer1"):
        await items.aclose()  # what the event loop does later to a stream left suspended
    assert not [r for r in caplog.records if "'termination' arrived after finalize" in r.getMessage()], caplog.text
    ends = [s for s in receipt["steps"] if s["kind"] == "termination"]
    task = receipt["steps"][0]
    assert [(s["agent"], s["status"]) for s in ends] == [(task["agent"], "cancelled")], receipt["steps"]
    assert receipt["status"] == "incomplete"
    path = tmp_path / "receipt.json"
    collector.save(path, workflow=receipt)
    lines = (tmp_path / "receipt.evidence.jsonl").read_text().splitlines()
    content = json.loads(lines[ends[0]["seq"]])["content"]
    assert (content["agentchat"]["note"], content["observed"]) == (UNFINISHED_NOTE, False), content
    assert run_cli(path)[0] == 0


async def test_stream_read_to_the_end_keeps_its_stop_reason() -> None:
    collector = AER1AutoGenCollector(goal="read every item")
    _ = [item async for item in collector.run_stream(_team(collector), task="go")]
    receipt = collector.finalize()
    ends = [(s["status"]) for s in receipt["steps"] if s["kind"] == "termination"]
    assert (ends, receipt["status"]) == (["ok"], "ok")
