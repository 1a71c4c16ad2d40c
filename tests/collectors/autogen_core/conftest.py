"""Shared fixtures for the autogen-core collector tests: scripted model clients, receipt checks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from autogen_core.models import CreateResult
from autogen_ext.models.replay import ReplayChatCompletionClient

from aer1 import Collector

from ...receipts import Peers, evidence_contents, verify_everywhere
from ...scripted_models import scripted_client

Finish = Callable[..., tuple[dict[str, Any], dict[int, Any]]]


@pytest.fixture
def collector() -> Collector:
    """A fresh collector (evidence on, default redaction)."""
    return Collector(goal="exercise the autogen-core hooks")


@pytest.fixture
def scripted() -> Callable[[Sequence[str | CreateResult]], ReplayChatCompletionClient]:
    """Make a replay client that declares function calling."""
    return scripted_client


@pytest.fixture
def finish(tmp_path: Path, peers: Peers | None) -> Finish:
    """Finalize, verify with ours (memory and file+evidence) and both peers (when installed); (receipt, evidence)."""

    def run(collector: Collector, final_answer: Any = None) -> tuple[dict[str, Any], dict[int, Any]]:
        receipt = collector.finalize(final_answer)
        assert collector.verify(receipt) == []
        path = collector.save(str(tmp_path / "receipt.json"), workflow=receipt)
        verify_everywhere(path, receipt, peers)
        return receipt, evidence_contents(path)

    return run
