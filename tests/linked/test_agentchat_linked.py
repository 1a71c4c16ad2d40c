"""AgentChat: an agent that runs agents records each inner run into a linked child receipt.

With ``AER1AgentWrapper(agent, collector, nested="link")`` the inner team of a
SocietyOfMindAgent, or the agent behind an AgentTool, is recorded in its own chain; the
outer chain holds a ``link`` step just before the outer step that follows the inner run,
and that step names the child. The run behaves exactly as unwrapped, and the bundle
verifies. ``nested="flatten"`` (the default) is tested in tests/agentchat.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent, SocietyOfMindAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_agentchat.tools import AgentTool
from autogen_core import FunctionCall

from aer1._link import link_content, link_hash
from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector

from ..receipts import evidence_contents
from ..scripted_models import function_calls, scripted_client
from .helpers import verify_bundle_cli


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _transcript(result: TaskResult) -> list[tuple[str, str, str]]:
    return [(type(m).__name__, m.source, m.to_text()) for m in result.messages]


def _society() -> SocietyOfMindAgent:
    worker = AssistantAgent(
        "worker", tools=[add], reflect_on_tool_use=True,
        model_client=scripted_client([function_calls(FunctionCall(id="w1", name="add", arguments='{"a": 2, "b": 3}')),
                                      "the sum is 5"]),
    )  # fmt: skip
    inner = RoundRobinGroupChat([worker], max_turns=1)
    return SocietyOfMindAgent("society", team=inner, model_client=scripted_client(["society says 5"]))


def _boss() -> AssistantAgent:
    worker = AssistantAgent(
        "worker", description="adds numbers", tools=[add], reflect_on_tool_use=True,
        model_client=scripted_client([function_calls(FunctionCall(id="w1", name="add", arguments='{"a": 4, "b": 5}')),
                                      "nine"]),
    )  # fmt: skip
    return AssistantAgent(
        "boss", tools=[AgentTool(worker)], reflect_on_tool_use=True,
        model_client=scripted_client([function_calls(FunctionCall(id="b1", name="worker",
                                                                  arguments='{"task": "add 4 and 5"}')),
                                      "boss: nine"]),
    )  # fmt: skip


def _steps(path: str) -> tuple[list[dict[str, Any]], dict[int, Any]]:
    receipt = json.loads(Path(path).read_text())
    return receipt["steps"], evidence_contents(path)


@pytest.mark.parametrize(("build", "outer", "outer_kind"), [(_society, "society", "message"),
                                                            (_boss, "boss", "tool_call")])
async def test_inner_run_goes_to_a_linked_child(tmp_path: Path, build: Any, outer: str, outer_kind: str) -> None:
    plain = await build().run(task="add")
    collector = AER1AutoGenCollector(goal="exercise linked nesting")
    result = await AER1AgentWrapper(build(), collector, nested="link").run(task="add")
    assert _transcript(result) == _transcript(plain)
    receipt = collector.finalize(result.messages[-1].to_text())
    paths = collector.save_bundle(tmp_path / "bundle", receipt)
    assert len(paths) == 2
    code, doc = verify_bundle_cli(str(tmp_path / "bundle"))
    assert code == 0, doc["failures"]
    assert doc["links"]["followed"] == 1

    parent_steps, parent_contents = _steps(paths[0])
    actors = {s["agent"] for s in parent_steps if not s["agent"].startswith("team:")}  # the outer run's stop
    assert actors <= {outer, "user", "aer1"}, f"inner steps leaked into the parent: {actors}"
    i = next(i for i, s in enumerate(parent_steps) if s["kind"] == "link")
    link, following = parent_steps[i], parent_steps[i + 1]
    assert (link["agent"], following["agent"], following["kind"]) == (outer, outer, outer_kind)
    child_steps, child_contents = _steps(paths[1])
    assert link["target"] == doc["tree"]["links"][0]["target"]
    assert parent_contents[following["seq"]]["agentchat"]["nested"]["linked_workflow_id"] == link["target"]
    assert link["receipt_hash"] == link_hash(link_content(json.loads(Path(paths[1]).read_text())))

    inner = [(s["kind"], s["agent"]) for s in child_steps]
    assert ("tool_call", "worker") in inner and ("message", "worker") in inner
    call = child_contents[inner.index(("tool_call", "worker")) + 1]
    assert call["name"] == "add" and call["nested_in"] == outer


async def test_flatten_stays_the_default() -> None:
    collector = AER1AutoGenCollector(goal="flattened")
    await AER1AgentWrapper(_society(), collector).run(task="add")
    receipt = collector.finalize()
    kinds = [(s["kind"], s["agent"]) for s in receipt["steps"]]
    assert ("tool_call", "worker") in kinds and not any(k == "link" for k, _ in kinds)
    assert collector.linked_children == {}


def test_unknown_nested_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="nested must be 'flatten' or 'link', got 'deep'"):
        AER1AgentWrapper(_society(), AER1AutoGenCollector(goal="x"), nested="deep")
