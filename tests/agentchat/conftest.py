"""Fixtures for the AgentChat collector tests: scripted clients and three-way receipt checks."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, ModelFamily, ModelInfo, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

from aer1 import verify_receipt
from aer1.collectors import AER1AutoGenCollector
from aer1.receipt import evidence_path_for
from aer1.verifier import PASS

#: Model info for a scripted client that AssistantAgent lets call tools and hand off.
FUNCTION_CALLING = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=False,
    family=ModelFamily.UNKNOWN,
    structured_output=False,
)
CLOSE = ("close", "aer1")
_NO_USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)
_counter = itertools.count()

Scripted = Callable[[Sequence[str | CreateResult]], ReplayChatCompletionClient]
Checked = tuple[dict[str, Any], list[Any]]
Check = Callable[..., Checked]


def calls(*specs: tuple[str, str, str]) -> CreateResult:
    """A model turn requesting tool calls: (call id, tool name, JSON arguments) each."""
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=call_id, name=name, arguments=args) for call_id, name, args in specs],
        usage=_NO_USAGE,
        cached=False,
    )


def pairs(receipt: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, agent) of every step, close included."""
    return [(s["kind"], s["agent"]) for s in receipt["steps"]]


@pytest.fixture
def collector() -> AER1AutoGenCollector:
    return AER1AutoGenCollector(goal="exercise the AgentChat collector")


@pytest.fixture
def scripted() -> Scripted:
    """Make a replay client that declares function calling."""

    def make(replies: Sequence[str | CreateResult]) -> ReplayChatCompletionClient:
        return ReplayChatCompletionClient(list(replies), model_info=FUNCTION_CALLING)

    return make


@pytest.fixture
def check(
    tmp_path: Path,
    peer_verify_cli: Callable[[str | os.PathLike[str]], tuple[int, str]],
    peer_verify_workflow: Callable[[dict[str, Any]], list[str]],
) -> Check:
    """Finalize, verify with ours (memory and file+evidence) and both peers; (receipt, contents)."""

    def run(collector: AER1AutoGenCollector, *args: Any, **kwargs: Any) -> Checked:
        receipt = collector.finalize(*args, **kwargs)
        assert collector.verify(receipt) == []
        path = collector.save(str(tmp_path / f"receipt-{next(_counter)}.json"), workflow=receipt)
        report = verify_receipt(path)
        assert report.valid, [c.to_dict() for c in report.checks if c.status != PASS]
        assert report.check("evidence").status == PASS
        code, out = peer_verify_cli(path)
        assert code == 0, out
        assert peer_verify_workflow(receipt) == []
        lines = Path(evidence_path_for(path)).read_bytes().splitlines()
        contents = [orjson.loads(line)["content"] for line in lines[1:]]
        assert len(contents) == len(receipt["steps"])
        return receipt, contents

    return run
