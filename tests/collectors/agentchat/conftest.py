"""Fixtures for the AgentChat collector tests: scripted clients and three-way receipt checks."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from autogen_core import FunctionCall
from autogen_core.models import CreateResult
from autogen_ext.models.replay import ReplayChatCompletionClient

from aer1.collectors import AER1AutoGenCollector

from ...cli_runs import run_cli  # noqa: F401 (a fixture for the tests here)
from ...receipts import Peers, evidence_contents, verify_everywhere
from ...scripted_models import function_calls, scripted_client

CLOSE = ("close", "aer1")
_counter = itertools.count()

Scripted = Callable[[Sequence[str | CreateResult]], ReplayChatCompletionClient]
Checked = tuple[dict[str, Any], list[Any]]
Check = Callable[..., Checked]


def calls(*specs: tuple[str, str, str]) -> CreateResult:
    """A model turn requesting tool calls: (call id, tool name, JSON arguments) each."""
    return function_calls(*(FunctionCall(id=call_id, name=name, arguments=args) for call_id, name, args in specs))


TEAM_PREFIX = "team:"


def actor(agent: str) -> str:
    """A step's agent, with every team-level actor (``team:<name>/<id>``) read as ``team``."""
    return "team" if agent.startswith(TEAM_PREFIX) else agent


def pairs(receipt: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, agent) of every step, close included; team-level actors read as ``team``."""
    return [(s["kind"], actor(s["agent"])) for s in receipt["steps"]]


@pytest.fixture
def collector() -> AER1AutoGenCollector:
    return AER1AutoGenCollector(goal="exercise the AgentChat collector")


@pytest.fixture
def scripted() -> Scripted:
    """Make a replay client that declares function calling."""
    return scripted_client


@pytest.fixture
def check(tmp_path: Path, peers: Peers | None) -> Check:
    """Finalize, verify with ours (memory and file+evidence) and both peers when installed; (receipt, contents)."""

    def run(collector: AER1AutoGenCollector, *args: Any, **kwargs: Any) -> Checked:
        receipt = collector.finalize(*args, **kwargs)
        assert collector.verify(receipt) == []
        path = collector.save(str(tmp_path / f"receipt-{next(_counter)}.json"), workflow=receipt)
        verify_everywhere(path, receipt, peers)
        contents = list(evidence_contents(path).values())
        assert len(contents) == len(receipt["steps"])
        return receipt, contents

    return run
