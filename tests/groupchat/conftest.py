"""Fixtures for the group chat tests: three-way receipt verification, the real sandbox."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from aer1.groupchat import ChatResult
from aer1.groupchat._sandbox import BWRAP_PATH, BubblewrapSandbox, probe_bubblewrap

from ..receipts import Peers, verify_everywhere

_counter = itertools.count()


@pytest.fixture
def check_receipt(
    tmp_path: Path, peers: Peers | None
) -> Callable[[ChatResult], Path]:
    """Verify a run's receipt with ours (in memory and from file with evidence) and both peers when installed."""

    def check(result: ChatResult) -> Path:
        assert result.collector.verify(result.receipt) == []
        path = tmp_path / f"receipt-{next(_counter)}.json"
        result.save(str(path))
        verify_everywhere(path, result.receipt, peers)
        return path

    return check


@pytest.fixture(scope="module")
def bwrap() -> BubblewrapSandbox:
    """The real bubblewrap sandbox; never skipped when bubblewrap is installed, or under CI."""
    problem = probe_bubblewrap()
    if problem is not None:
        if os.environ.get("CI") == "true" or os.path.exists(BWRAP_PATH):
            pytest.fail(f"bubblewrap sandbox unavailable: {problem}")
        pytest.skip(f"bubblewrap is not installed: {problem}")
    return BubblewrapSandbox()


@pytest.fixture
def work_dir(tmp_path: Path) -> Path:
    return tmp_path / "work"
