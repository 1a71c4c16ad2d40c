"""AgentChat: a team used as a participant of another team, recorded into a linked child.

``collector.run(outer, task=..., nested="link")`` records each run of an inner team (its
task, speaker selections, its wrapped agents' turns, its termination with the stop
reason) into a child receipt, linked from the outer chain by a ``link`` step named after
the inner team when that run ends. ``nested="flatten"`` (the default) records the same
team-level steps in the outer chain, under the inner team's own actor. Either way the run
is the run AutoGen makes unwrapped, and the bundle verifies with ``aer1-verify --bundle``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat, SelectorGroupChat
from autogen_core import FunctionCall

from aer1._link import link_content, link_hash
from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector

from ..receipts import evidence_contents
from ..scripted_models import function_calls, scripted_client
from .helpers import verify_bundle_cli


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


Wrap = Any  # (agent) -> agent: the wrapper of a test, or no wrapper at all


def _agents(wrap: Wrap, rounds: int = 1) -> tuple[Any, Any, Any]:
    """drafter (calls a tool) and checker in the inner team, editor in the outer team."""
    drafter = AssistantAgent(
        "drafter", tools=[add], reflect_on_tool_use=True,
        model_client=scripted_client([r for i in range(rounds) for r in (
            function_calls(FunctionCall(id=f"d{i}", name="add", arguments=f'{{"a": {i}, "b": 3}}')), f"draft {i}")]),
    )  # fmt: skip
    checker = AssistantAgent("checker", model_client=scripted_client([f"checked {i}" for i in range(rounds)]))
    editor = AssistantAgent("editor", model_client=scripted_client([f"edited {i}" for i in range(rounds)]))
    return wrap(drafter), wrap(checker), wrap(editor)


def _teams(wrap: Wrap, rounds: int = 1) -> RoundRobinGroupChat:
    drafter, checker, editor = _agents(wrap, rounds)
    inner = RoundRobinGroupChat([drafter, checker], name="writers", description="drafts and checks",
                                termination_condition=MaxMessageTermination(3))
    return RoundRobinGroupChat([inner, editor], name="desk", max_turns=2 * rounds)


def _transcript(result: TaskResult) -> list[tuple[str, str, str]]:
    return [(type(m).__name__, m.source, m.to_text()) for m in result.messages]


def _read(path: str) -> tuple[dict[str, Any], dict[int, Any]]:
    return json.loads(Path(path).read_text()), evidence_contents(path)


async def test_inner_team_run_goes_to_a_linked_child(tmp_path: Path) -> None:
    plain = await _teams(lambda a: a).run(task="write it")
    collector = AER1AutoGenCollector(goal="nested team, linked")
    result = await collector.run(_teams(lambda a: AER1AgentWrapper(a, collector)), task="write it", nested="link")
    assert _transcript(result) == _transcript(plain)
    assert result.stop_reason == plain.stop_reason
    receipt = collector.finalize(result)
    paths = collector.save_bundle(tmp_path / "bundle", receipt)
    assert len(paths) == 2, paths
    code, doc = verify_bundle_cli(str(tmp_path / "bundle"))
    assert code == 0, doc["failures"]
    assert (doc["links"]["followed"], doc["links"]["not_followed"]) == (1, 0)

    parent, parent_contents = _read(paths[0])
    child, child_contents = _read(paths[1])
    parent_steps = [(s["kind"], s["agent"]) for s in parent["steps"]]
    assert not any(agent in ("drafter", "checker") or agent.startswith("team:writers") for _, agent in parent_steps), \
        f"inner steps leaked into the parent: {parent_steps}"
    link_i = parent_steps.index(("link", "writers"))
    link = parent["steps"][link_i]
    assert link["target"] == child["workflow_id"] and link["status"] == "ok"
    assert link["receipt_hash"] == link_hash(link_content(child))
    selections = [parent_contents[s["seq"]]["selected"] for s in parent["steps"] if s["kind"] == "speaker_selection"]
    assert selections == [["writers"], ["editor"]]
    # the link comes after the outer selection of the inner team, before the next one
    sel_seqs = [s["seq"] for s in parent["steps"] if s["kind"] == "speaker_selection"]
    assert sel_seqs[0] < link["seq"] < sel_seqs[1]
    assert {"name": "writers", "type": "RoundRobinGroupChat", "description": "drafts and checks"} in parent["agents"]

    kinds = [(s["kind"], s["agent"]) for s in child["steps"]]
    actor = next(a for k, a in kinds if k == "task")
    assert actor.startswith("team:writers/")
    assert [k for k, a in kinds if a == actor] == ["task", "speaker_selection", "speaker_selection", "termination"]
    assert ("tool_call", "drafter") in kinds and ("message", "drafter") in kinds and ("message", "checker") in kinds
    by_kind = {s["kind"]: child_contents[s["seq"]] for s in child["steps"] if s["agent"] == actor}
    assert by_kind["termination"]["reason"] == "Maximum number of messages 3 reached, current message count: 3"
    assert [m["content"] for m in by_kind["task"]["task"]] == ["write it"]
    assert {a["name"] for a in child["agents"]} >= {"drafter", "checker", actor}
    assert child["status"] == "ok"


async def test_each_run_of_the_inner_team_is_its_own_child(tmp_path: Path) -> None:
    plain = await _teams(lambda a: a, rounds=2).run(task="write it")
    collector = AER1AutoGenCollector(goal="nested team run twice")
    result = await collector.run(_teams(lambda a: AER1AgentWrapper(a, collector), rounds=2), task="write it",
                                 nested="link")
    assert _transcript(result) == _transcript(plain)
    receipt = collector.finalize(result)
    links = [s for s in receipt["steps"] if s["kind"] == "link"]
    assert len(links) == 2 and links[0]["target"] != links[1]["target"]
    collector.save_bundle(tmp_path / "bundle", receipt)
    code, doc = verify_bundle_cli(str(tmp_path / "bundle"))
    assert code == 0, doc["failures"]
    assert doc["links"]["followed"] == 2
    for child in collector.linked_children.values():
        kinds = [s["kind"] for s in child.receipt["steps"]]
        assert kinds.count("termination") == 1 and kinds.count("task") == 1


async def test_flatten_stays_the_default_and_records_the_inner_team() -> None:
    collector = AER1AutoGenCollector(goal="nested team, flattened")
    result = await collector.run(_teams(lambda a: AER1AgentWrapper(a, collector)), task="write it")
    receipt = collector.finalize(result)
    kinds = [(s["kind"], s["agent"]) for s in receipt["steps"]]
    assert not any(k == "link" for k, _ in kinds) and collector.linked_children == {}
    assert ("tool_call", "drafter") in kinds and ("message", "checker") in kinds
    inner = next(a for k, a in kinds if a.startswith("team:writers/"))
    assert [k for k, a in kinds if a == inner] == ["task", "speaker_selection", "speaker_selection", "termination"]
    assert collector.verify(receipt) == []


async def test_team_nested_two_deep_links_grandchildren(tmp_path: Path) -> None:
    def build(wrap: Wrap) -> RoundRobinGroupChat:
        drafter, checker, editor = _agents(wrap)
        innermost = RoundRobinGroupChat([drafter], name="solo", max_turns=1)
        middle = RoundRobinGroupChat([innermost, checker], name="writers", max_turns=2)
        return RoundRobinGroupChat([middle, editor], name="desk", max_turns=2)

    plain = await build(lambda a: a).run(task="write it")
    collector = AER1AutoGenCollector(goal="two deep")
    result = await collector.run(build(lambda a: AER1AgentWrapper(a, collector)), task="write it", nested="link")
    assert _transcript(result) == _transcript(plain)
    collector.save_bundle(tmp_path / "bundle", collector.finalize(result))
    code, doc = verify_bundle_cli(str(tmp_path / "bundle"))
    assert code == 0, doc["failures"]
    assert doc["links"]["followed"] == 2
    middle = doc["tree"]["links"][0]["child"]
    assert len(middle["links"]) == 1 and middle["links"][0]["result"] == "followed"
    (middle_child,) = collector.linked_children.values()
    (solo,) = middle_child.children
    assert ("tool_call", "drafter") in [(s["kind"], s["agent"]) for s in solo.receipt["steps"]]
    assert not any(s["agent"] == "drafter" for s in middle_child.receipt["steps"])


async def test_inner_team_failure_makes_an_error_child_and_link(tmp_path: Path) -> None:
    def build(wrap: Wrap) -> RoundRobinGroupChat:
        broken = AssistantAgent("drafter", model_client=scripted_client([]))  # no reply left: raises
        inner = RoundRobinGroupChat([wrap(broken)], name="writers", max_turns=1)
        return RoundRobinGroupChat([inner, wrap(AssistantAgent("editor", model_client=scripted_client(["x"])))],
                                   name="desk", max_turns=2)

    with pytest.raises(Exception) as plain_error:
        await build(lambda a: a).run(task="write it")
    collector = AER1AutoGenCollector(goal="inner team fails")
    with pytest.raises(type(plain_error.value)):
        await collector.run(build(lambda a: AER1AgentWrapper(a, collector)), task="write it", nested="link")
    receipt = collector.finalize()
    (link,) = [s for s in receipt["steps"] if s["kind"] == "link"]
    assert link["status"] == "error"
    (child,) = collector.linked_children.values()
    assert child.receipt["status"] == "error"
    assert [s["kind"] for s in child.receipt["steps"] if s["agent"].startswith("team:")][-1] == "termination"
    collector.save_bundle(tmp_path / "bundle", receipt)
    code, doc = verify_bundle_cli(str(tmp_path / "bundle"))
    assert code == 0, doc["failures"]


async def test_selector_inside_a_team_records_its_mechanism_in_the_child() -> None:
    def build(wrap: Wrap) -> RoundRobinGroupChat:
        drafter, checker, editor = _agents(wrap)
        inner = SelectorGroupChat([drafter, checker], name="writers", max_turns=1,
                                  model_client=scripted_client(["checker"]))
        return RoundRobinGroupChat([inner, editor], name="desk", max_turns=2)

    plain = await build(lambda a: a).run(task="write it")
    collector = AER1AutoGenCollector(goal="selector nested")
    result = await collector.run(build(lambda a: AER1AgentWrapper(a, collector)), task="write it", nested="link")
    assert _transcript(result) == _transcript(plain)
    collector.finalize(result)
    (child,) = collector.linked_children.values()
    selections = [s for s in child.receipt["steps"] if s["kind"] == "speaker_selection"]
    assert len(selections) == 1 and selections[0]["target"] == "checker"


async def test_unknown_nested_mode_is_refused() -> None:
    collector = AER1AutoGenCollector(goal="x")
    with pytest.raises(ValueError, match="nested must be 'flatten' or 'link', got 'deep'"):
        await collector.run(_teams(lambda a: a), task="write it", nested="deep")


async def test_run_stream_items_are_unchanged() -> None:
    plain = [(type(i).__name__, getattr(i, "source", None)) async for i in _teams(lambda a: a).run_stream(task="go")]
    collector = AER1AutoGenCollector(goal="stream")
    team = _teams(lambda a: AER1AgentWrapper(a, collector))
    recorded = [(type(i).__name__, getattr(i, "source", None))
                async for i in collector.run_stream(team, task="go", nested="link")]
    assert recorded == plain
    collector.finalize()
    assert len(collector.linked_children) == 1


async def test_inner_team_sharing_the_outer_runtime_still_records_its_agents_in_the_child() -> None:
    """With ``runtime=`` shared, the inner agents run in the outer runtime's context: still the child."""
    from autogen_core import SingleThreadedAgentRuntime

    async def run(wrap: Wrap) -> TaskResult:
        runtime = SingleThreadedAgentRuntime()
        runtime.start()
        drafter, checker, editor = _agents(wrap)
        inner = RoundRobinGroupChat([drafter, checker], name="writers", max_turns=2, runtime=runtime)
        outer = RoundRobinGroupChat([inner, editor], name="desk", max_turns=2, runtime=runtime)
        try:
            return await (collector.run(outer, task="go", nested="link") if wrap is not _plain
                          else outer.run(task="go"))
        finally:
            await runtime.stop_when_idle()

    def _plain(agent: Any) -> Any:
        return agent

    plain = await run(_plain)
    collector = AER1AutoGenCollector(goal="shared runtime")
    result = await run(lambda a: AER1AgentWrapper(a, collector))
    assert _transcript(result) == _transcript(plain)
    receipt = collector.finalize(result)
    assert not any(s["agent"] in ("drafter", "checker") for s in receipt["steps"])
    (child,) = collector.linked_children.values()
    assert {"drafter", "checker"} <= {s["agent"] for s in child.receipt["steps"]}


async def test_signed_tree_verifies_under_the_parent_key(tmp_path: Path) -> None:
    from aer1._signing import generate_key_pair

    private, public = generate_key_pair()
    (tmp_path / "ops.pub").write_bytes(public)
    collector = AER1AutoGenCollector(goal="signed nested team", signing_key=private)
    result = await collector.run(_teams(lambda a: AER1AgentWrapper(a, collector)), task="go", nested="link")
    collector.save_bundle(tmp_path / "bundle", collector.finalize(result))
    (child,) = collector.linked_children.values()
    assert "signature" in child.receipt
    code, doc = verify_bundle_cli(str(tmp_path / "bundle"), "--key", str(tmp_path / "ops.pub"))
    assert code == 0, doc["failures"]
    assert "signed by trusted key" in doc["basis"]


async def test_inner_team_outside_a_recorded_run_only_forwards() -> None:
    collector = AER1AutoGenCollector(goal="hook left behind")
    drafter, checker, editor = _agents(lambda a: a, rounds=2)  # replies left for a second inner run
    inner = RoundRobinGroupChat([drafter, checker], name="writers", termination_condition=MaxMessageTermination(3))
    await collector.run(RoundRobinGroupChat([inner, editor], name="desk", max_turns=2), task="go", nested="link")
    receipt = collector.finalize()
    again = await inner.run(task="again")  # the hook stays on the instance, and only forwards
    assert [(m.source, m.to_text()) for m in again.messages if type(m).__name__ == "TextMessage"] == [
        ("user", "again"), ("drafter", "draft 1"), ("checker", "checked 1")]
    assert len(collector.linked_children) == 1 and collector.step_count == len(receipt["steps"])
