"""Fixtures for the legacy AutoGen tests: a fresh collector, and the full verification."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aer1.collectors import AER1AutoGenCollector

from ...receipts import Peers, evidence_contents, verify_everywhere
from .support import Finish, quiet


@pytest.fixture
def collector() -> AER1AutoGenCollector:
    """A fresh collector (evidence on, so step contents can be asserted)."""
    return AER1AutoGenCollector(goal="legacy AutoGen test run")


@pytest.fixture(autouse=True)
def _quiet_console() -> Iterator[None]:
    """AutoGen prints every message; keep test output readable."""
    with quiet():
        yield


@pytest.fixture
def finish(tmp_path: Path, peers: Peers | None) -> Finish:
    """Finalize, verify with ours (memory and file+evidence) and both peers (when installed); (receipt, contents)."""

    def run(collector: AER1AutoGenCollector, final_answer: Any = None) -> tuple[dict[str, Any], dict[int, Any]]:
        receipt = collector.finalize(final_answer=final_answer)
        assert collector.verify(receipt) == []
        path = tmp_path / "receipt.json"
        collector.save(path, workflow=receipt)
        verify_everywhere(path, receipt, peers)
        assert receipt["status"] != "incomplete"
        assert "recording_failures" not in receipt
        return receipt, evidence_contents(path)

    return run
