"""Fixtures for the AG2 1.x collector tests: not collected without the extra, full receipt checks.

Every test runs real ``ag2`` agents on AG2's own scripted model (``ag2.testing.TestConfig``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aer1.collectors import _ag2_internals as internals

from ...receipts import Peers, evidence_contents, verify_everywhere

HAVE_EXTRA = internals.installed() is not None
if not HAVE_EXTRA and os.environ.get("CI") == "true":  # `make test` installs it: under CI a skip would hide a gap
    raise RuntimeError("AG2 1.x is not installed under CI: pip install -e '.[ag2]'")
#: Without the extra (the ag2 classic and autogen environments), these tests are not collected.
collect_ignore_glob = [] if HAVE_EXTRA else ["test_*.py"]

if HAVE_EXTRA:
    from aer1.collectors.ag2 import AER1AG2Collector

Checked = tuple[dict[str, Any], dict[int, Any]]
Check = Callable[..., Checked]


@pytest.fixture
def collector() -> AER1AG2Collector:
    return AER1AG2Collector(goal="exercise the AG2 1.x collector")


@pytest.fixture
def check(tmp_path: Path, peers: Peers | None) -> Check:
    """Finalize, save, verify with ours (evidence included) and both peers; (receipt, contents by seq)."""

    def run(collector: AER1AG2Collector, *, failures: int = 0) -> Checked:
        receipt = collector.finalize("done")
        assert collector.verify(receipt) == []
        assert collector.recording_failures == failures, (
            f"got {collector.recording_failures} recording failures, want {failures}")
        path = tmp_path / f"{collector.workflow_id}.json"
        collector.save(path, workflow=receipt)
        verify_everywhere(path, receipt, peers)
        return receipt, evidence_contents(path)

    return run
