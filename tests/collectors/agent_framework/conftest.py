"""Fixtures for the Agent Framework collector tests: not collected without the extra, three-way receipt checks."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ...cli_runs import run_cli  # noqa: F401 (a fixture for the tests here)
from ...receipts import Peers, evidence_contents, verify_everywhere

HAVE_EXTRA = importlib.util.find_spec("agent_framework_orchestrations") is not None
if not HAVE_EXTRA and os.environ.get("CI") == "true":  # `make test` installs it: under CI a skip would hide a gap
    raise RuntimeError("the agent-framework extra is not installed under CI: pip install -e '.[agent-framework]'")
#: Without the extra (the ag2 and autogen environments), these tests are not collected.
collect_ignore_glob = [] if HAVE_EXTRA else ["test_*.py"]

if HAVE_EXTRA:
    from aer1.collectors.agent_framework import AER1AgentFrameworkCollector

Checked = tuple[dict[str, Any], dict[int, Any]]
Check = Callable[["AER1AgentFrameworkCollector"], Checked]


@pytest.fixture
def collector() -> AER1AgentFrameworkCollector:
    return AER1AgentFrameworkCollector(goal="exercise the Agent Framework collector")


@pytest.fixture
def check(tmp_path: Path, peers: Peers | None) -> Check:
    """Finalize, save, verify with ours (evidence included) and both peers; (receipt, contents by seq)."""

    def run(collector: AER1AgentFrameworkCollector) -> Checked:
        receipt = collector.finalize("done")
        assert collector.verify(receipt) == []
        assert collector.recording_failures == 0, f"got {collector.recording_failures} recording failures, want 0"
        path = tmp_path / f"{collector.workflow_id}.json"
        collector.save(path, workflow=receipt)
        verify_everywhere(path, receipt, peers)
        return receipt, evidence_contents(path)

    return run
