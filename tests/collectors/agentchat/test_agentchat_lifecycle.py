"""Between runs: resets, saved and loaded state, configuration changes, and a second collector.

Real AgentChat teams on replay clients; every receipt is verified by ours (with evidence) and by
both peer verifiers (the ``check`` fixture), which read no ``kind`` and accept the new kinds.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.models import SystemMessage
from autogen_ext.models.openai import OpenAIChatCompletionClient

from aer1 import _steps_vocab as vocab
from aer1._vocabulary import VOCABULARY
from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector

from .conftest import CLOSE, Check, Scripted, pairs

SECRET = "sk-test-not-a-real-key-lifecycle-0123456789"
RUN = [("task", "team"), ("speaker_selection", "team"), ("message", "alice"), ("termination", "team")]


def _of_kind(receipt: dict[str, Any], contents: list[Any], kind: str) -> list[tuple[dict[str, Any], Any]]:
    return [(s, contents[i]) for i, s in enumerate(receipt["steps"]) if s["kind"] == kind]


async def test_team_reset_and_state_between_runs_are_recorded(collector: AER1AutoGenCollector, scripted: Scripted,
                                                              check: Check) -> None:
    alice = AER1AgentWrapper(AssistantAgent("alice", model_client=scripted(["one", "two"])), collector)
    team = RoundRobinGroupChat([alice], max_turns=1)
    await collector.run(team, task="first")
    state = await team.save_state()
    await team.reset()
    await team.load_state(state)
    second = await collector.run(team, task="second")
    assert second.messages[-1].to_text() == "two"  # the team ran as it would unobserved
    receipt, contents = check(collector, second)
    lifecycle = [("lifecycle", "alice"), ("lifecycle", "team")]
    assert pairs(receipt) == [*RUN, *lifecycle * 3, *RUN, CLOSE]
    steps = _of_kind(receipt, contents, "lifecycle")
    assert [(c["operation"], c["subject"]) for _, c in steps] == [
        ("save_state", "agent"), ("save_state", "team"), ("reset", "agent"), ("reset", "team"),
        ("load_state", "agent"), ("load_state", "team"),
    ]  # fmt: skip
    assert all(s["status"] == "ok" and c["vocabulary"] == VOCABULARY for s, c in steps)
    by_op = {(c["operation"], c["subject"]): c for _, c in steps}
    # The state saved and the state loaded are the same: their digests bind that, the state is not copied.
    assert by_op[("save_state", "team")]["state_digest"] == vocab.state_digest(state)
    assert by_op[("load_state", "team")]["state_digest"] == vocab.state_digest(state)
    assert by_op[("save_state", "team")]["state_members"] == sorted(state)
    assert by_op[("save_state", "agent")]["state_digest"] == by_op[("load_state", "agent")]["state_digest"]
    assert by_op[("reset", "team")]["state_digest"] is None and by_op[("reset", "team")]["state_members"] is None
    assert by_op[("reset", "team")]["agentchat"]["team_type"] == "RoundRobinGroupChat"
    assert "one" not in json.dumps([c for _, c in steps])  # the conversation in the state is not recorded
    assert receipt["status"] == "ok"


async def test_a_failing_load_is_recorded_and_raised(collector: AER1AutoGenCollector, scripted: Scripted,
                                                     check: Check) -> None:
    alice = AER1AgentWrapper(AssistantAgent("alice", model_client=scripted(["one"])), collector)
    with pytest.raises(Exception) as raised:
        await alice.load_state({"type": "AssistantAgentState", "llm_context": {"messages": "not a list"}})
    receipt, contents = check(collector)
    (step, content), = _of_kind(receipt, contents, "lifecycle")
    assert (step["status"], content["operation"], content["state_digest"]) == ("error", "load_state", None)
    assert content["error"]["type"] == type(raised.value).__qualname__


async def test_a_configuration_change_between_runs_is_recorded(collector: AER1AutoGenCollector, scripted: Scripted,
                                                               check: Check) -> None:
    inner = AssistantAgent("alice", model_client=scripted(["one", "two"]), system_message="Be brief.")
    team = RoundRobinGroupChat([AER1AgentWrapper(inner, collector)], max_turns=1)
    await collector.run(team, task="first")
    inner._system_messages = [SystemMessage(content="Be thorough.")]
    result = await collector.run(team, task="second")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [*RUN, ("config_change", "alice"), *RUN, CLOSE]
    (_, change), = _of_kind(receipt, contents, "config_change")
    listed = receipt["agents"][0]
    assert (change["agent"], change["subject"], change["changed"]) == ("alice", "agent", ["system_message"])
    assert change["old_digest"] == listed["config_digest"] != change["new_digest"]
    assert "thorough" not in json.dumps(change)


async def test_a_new_model_client_is_a_change_that_names_no_secret(collector: AER1AutoGenCollector,
                                                                   scripted: Scripted, check: Check) -> None:
    inner = AssistantAgent("alice", model_client=scripted(["one"]))
    team = RoundRobinGroupChat([AER1AgentWrapper(inner, collector)], max_turns=1)
    result = await collector.run(team, task="first")
    inner._model_client = OpenAIChatCompletionClient(model="gpt-4o-mini", api_key=SECRET)
    await team.reset()  # checked after each reset: the change is seen before the next run
    receipt, contents = check(collector, result)
    (_, change), = _of_kind(receipt, contents, "config_change")
    assert change["changed"] == ["model"]
    assert SECRET not in json.dumps(receipt) + json.dumps(contents)


async def test_a_team_configuration_change_is_recorded(collector: AER1AutoGenCollector, scripted: Scripted,
                                                       check: Check) -> None:
    alice = AER1AgentWrapper(AssistantAgent("alice", model_client=scripted(["one", "two"])), collector)
    team = RoundRobinGroupChat([alice], max_turns=1)
    await collector.run(team, task="first")
    team._max_turns = 2  # what RoundRobinGroupChat(max_turns=...) sets
    result = await collector.run(team, task="second")
    receipt, contents = check(collector, result)
    (step, change), = _of_kind(receipt, contents, "config_change")
    assert (change["subject"], change["changed"], step["agent"]) == ("team", ["max_turns"], change["agent"])
    assert step["agent"].startswith("team:RoundRobinGroupChat/")


async def test_two_collectors_wrapping_one_agent_both_say_so(scripted: Scripted, check: Check,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    inner = AssistantAgent("alice", model_client=scripted(["one", "two"]))
    first, second = AER1AutoGenCollector(goal="first"), AER1AutoGenCollector(goal="second")
    a = AER1AgentWrapper(inner, first)
    with caplog.at_level(logging.WARNING, logger="aer1"):
        b = AER1AgentWrapper(inner, second)
    assert any("recorded by another open collector" in r.getMessage() for r in caplog.records)
    AER1AgentWrapper(inner, second)  # the same pair again: said once
    one = await a.run(task="hi")
    two = await b.run(task="hi")
    assert (one.messages[-1].to_text(), two.messages[-1].to_text()) == ("one", "two")
    for mine, theirs in ((first, second), (second, first)):
        receipt, contents = check(mine)
        (step, content), = _of_kind(receipt, contents, "recording_conflict")
        assert (step["agent"], step["status"]) == ("alice", "ok")
        assert (content["subject"], content["name"], content["detected"]) == ("agent", "alice", "wrap")
        assert content["other_workflow_ids"] == [theirs.workflow_id]


async def test_a_team_run_by_another_collector_is_a_conflict(scripted: Scripted, check: Check) -> None:
    first, second = AER1AutoGenCollector(goal="first"), AER1AutoGenCollector(goal="second")
    alice = AER1AgentWrapper(AssistantAgent("alice", model_client=scripted(["one"])), first)
    team = RoundRobinGroupChat([alice], max_turns=1)
    result = await second.run(team, task="go")  # alice records into first, the team run into second
    assert result.messages[-1].to_text() == "one"
    ran, ran_contents = check(second, result)
    wrapped, wrapped_contents = check(first)
    for receipt, contents, other in ((ran, ran_contents, first), (wrapped, wrapped_contents, second)):
        (step, content), = _of_kind(receipt, contents, "recording_conflict")
        assert (content["subject"], content["detected"], content["other_workflow_ids"]) == (
            "team", "run", [other.workflow_id])
        assert content["name"] == step["agent"] and step["agent"].startswith("team:RoundRobinGroupChat/")
    assert ("message", "alice") in pairs(wrapped) and ("message", "alice") not in pairs(ran)


async def test_a_finalized_collector_is_no_conflict(scripted: Scripted, check: Check) -> None:
    inner = AssistantAgent("alice", model_client=scripted(["one"]))
    first, second = AER1AutoGenCollector(goal="first"), AER1AutoGenCollector(goal="second")
    AER1AgentWrapper(inner, first)
    check(first)
    result = await AER1AgentWrapper(inner, second).run(task="hi")
    receipt, contents = check(second, result)
    assert _of_kind(receipt, contents, "recording_conflict") == []
