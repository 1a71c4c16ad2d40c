"""Shared fixtures for the autogen-core collector tests: scripted model clients, receipt checks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from autogen_core.models import CreateResult, ModelFamily, ModelInfo
from autogen_ext.models.replay import ReplayChatCompletionClient

from aer1 import Collector
from aer1.receipt import evidence_path_for

#: Model info for a scripted client that AssistantAgent lets call tools.
FUNCTION_CALLING = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=False,
    family=ModelFamily.UNKNOWN,
    structured_output=False,
)

Finish = Callable[..., tuple[dict[str, Any], dict[int, Any]]]


@pytest.fixture
def collector() -> Collector:
    """A fresh collector (evidence on, default redaction)."""
    return Collector(goal="exercise the autogen-core hooks")


@pytest.fixture
def scripted() -> Callable[[Sequence[str | CreateResult]], ReplayChatCompletionClient]:
    """Make a replay client that declares function calling."""

    def make(replies: Sequence[str | CreateResult]) -> ReplayChatCompletionClient:
        return ReplayChatCompletionClient(list(replies), model_info=FUNCTION_CALLING)

    return make


def _read_evidence(path: str) -> dict[int, Any]:
    lines = Path(path).read_bytes().splitlines()
    out: dict[int, Any] = {}
    for line in lines[1:]:
        entry = orjson.loads(line)
        out[entry["seq"]] = entry["content"]
    return out


@pytest.fixture
def finish(
    tmp_path: Path,
    peer_verify_cli: Callable[[str], tuple[int, str]],
    peer_verify_workflow: Callable[[dict[str, Any]], list[str]],
) -> Finish:
    """Finalize, verify with ours and both peer verifiers, save; return (receipt, evidence by seq)."""

    def run(collector: Collector, final_answer: Any = None) -> tuple[dict[str, Any], dict[int, Any]]:
        receipt = collector.finalize(final_answer)
        assert collector.verify(receipt) == []
        path = collector.save(str(tmp_path / "receipt.json"), workflow=receipt)
        code, out = peer_verify_cli(path)
        assert code == 0, out
        assert peer_verify_workflow(receipt) == []
        return receipt, _read_evidence(evidence_path_for(path))

    return run
