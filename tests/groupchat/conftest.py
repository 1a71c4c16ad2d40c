"""Fixtures for the group chat tests: three-way receipt verification."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aer1 import verify_receipt
from aer1.groupchat import ChatResult

_counter = itertools.count()


@pytest.fixture
def check_receipt(
    tmp_path: Path,
    peer_verify_cli: Callable[[str | os.PathLike[str]], tuple[int, str]],
    peer_verify_workflow: Callable[[dict[str, Any]], list[str]],
) -> Callable[[ChatResult], Path]:
    """Verify a run's receipt with ours (in memory and from file with evidence) and both peers."""

    def check(result: ChatResult) -> Path:
        assert result.collector.verify(result.receipt) == []
        path = tmp_path / f"receipt-{next(_counter)}.json"
        result.save(str(path))
        report = verify_receipt(path)
        assert report.valid, [c.detail for c in report.checks]
        assert report.check("evidence").status == "PASS"
        code, out = peer_verify_cli(path)
        assert code == 0, out
        assert peer_verify_workflow(result.receipt) == []
        return path

    return check
