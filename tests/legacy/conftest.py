"""Fixtures for the legacy AutoGen tests: a fresh collector, and the full verification."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aer1 import verify_receipt
from aer1.collectors import AER1AutoGenCollector
from aer1.verifier import PASS

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
def finish(
    tmp_path: Path,
    peer_verify_cli: Callable[[str | os.PathLike[str]], tuple[int, str]],
    peer_verify_workflow: Callable[[dict[str, Any]], list[str]],
) -> Finish:
    """Finalize, verify with ours and both peers, save; return (receipt, contents by seq)."""

    def run(collector: AER1AutoGenCollector, final_answer: Any = None) -> tuple[dict[str, Any], dict[int, Any]]:
        receipt = collector.finalize(final_answer=final_answer)
        assert collector.verify(receipt) == []
        assert peer_verify_workflow(receipt) == []
        path = tmp_path / "receipt.json"
        collector.save(path, workflow=receipt)
        report = verify_receipt(path)
        assert report.valid, [f.reason for f in report.failures]
        assert report.check("evidence").status == PASS
        code, output = peer_verify_cli(path)
        assert code == 0, output
        contents: dict[int, Any] = {}
        lines = (tmp_path / "receipt.evidence.jsonl").read_text(encoding="utf-8").splitlines()
        for line in lines[1:]:
            item = json.loads(line)
            contents[item["seq"]] = item["content"]
        assert receipt["status"] != "incomplete"
        assert "recording_failures" not in receipt
        return receipt, contents

    return run
