"""Fixtures for the Agent Framework collector tests: skip without the extra, three-way receipt checks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agent_framework_orchestrations", reason="needs the agent-framework extra")

from aer1.collectors.agent_framework import AER1AgentFrameworkCollector

from ..receipts import PeerCli, PeerWorkflow, evidence_contents, verify_everywhere

Checked = tuple[dict[str, Any], dict[int, Any]]
Check = Callable[[AER1AgentFrameworkCollector], Checked]


@pytest.fixture
def collector() -> AER1AgentFrameworkCollector:
    return AER1AgentFrameworkCollector(goal="exercise the Agent Framework collector")


@pytest.fixture
def check(tmp_path: Path, peer_verify_cli: PeerCli, peer_verify_workflow: PeerWorkflow) -> Check:
    """Finalize, save, verify with ours (evidence included) and both peers; (receipt, contents by seq)."""

    def run(collector: AER1AgentFrameworkCollector) -> Checked:
        receipt = collector.finalize("done")
        assert collector.verify(receipt) == []
        assert collector.recording_failures == 0, f"got {collector.recording_failures} recording failures, want 0"
        path = tmp_path / f"{collector.workflow_id}.json"
        collector.save(path, workflow=receipt)
        verify_everywhere(path, receipt, peer_verify_cli, peer_verify_workflow)
        return receipt, evidence_contents(path)

    return run
