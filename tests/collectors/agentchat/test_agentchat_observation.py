"""Where selections come from when the manager cannot be reached; imports without AutoGen."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import SingleThreadedAgentRuntime

from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector, agentchat

from .conftest import CLOSE, Check, Scripted, pairs

TASK, TERM, SEL = ("task", "team"), ("termination", "team"), ("speaker_selection", "team")


async def test_team_on_a_runtime_of_its_own(collector: AER1AutoGenCollector, scripted: Scripted, check: Check) -> None:
    runtime = SingleThreadedAgentRuntime()
    runtime.start()
    try:
        members = [AER1AgentWrapper(AssistantAgent(n, model_client=scripted([n])), collector) for n in ("a", "b")]
        result = await collector.run(RoundRobinGroupChat(members, max_turns=2, runtime=runtime), task="go")
    finally:
        await runtime.stop()
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [TASK, SEL, ("message", "a"), SEL, ("message", "b"), TERM, CLOSE]
    assert {c["agentchat"].get("observed_by") for c in contents[1::2][:2]} == {"select_speaker"}


@pytest.fixture
def unreachable_manager(monkeypatch: pytest.MonkeyPatch) -> None:
    """A runtime that cannot hand out its manager (as a distributed worker runtime)."""

    async def no_manager(team: object) -> None:
        return None

    monkeypatch.setattr(agentchat, "_find_manager", no_manager)


@pytest.mark.usefixtures("unreachable_manager")
async def test_turn_order_when_the_manager_is_unreachable(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    members = [AER1AgentWrapper(AssistantAgent(n, model_client=scripted([n])), collector) for n in ("a", "b")]
    result = await collector.run(RoundRobinGroupChat(members, max_turns=2), task="go")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [TASK, SEL, ("message", "a"), SEL, ("message", "b"), TERM, CLOSE]
    assert [
        (contents[i]["selected"], contents[i]["agentchat"]["observed_by"], contents[i]["mechanism"]) for i in (1, 3)
    ] == [
        (["a"], "turn_order", None),
        (["b"], "turn_order", None),
    ]


@pytest.mark.usefixtures("unreachable_manager")
async def test_team_events_when_no_participant_is_wrapped(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    members = [AssistantAgent(n, model_client=scripted([n])) for n in ("a", "b")]
    team = RoundRobinGroupChat(members, max_turns=2, emit_team_events=True)  # type: ignore[arg-type]
    result = await collector.run(team, task="go")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [TASK, SEL, SEL, TERM, CLOSE]
    assert [(c["selected"], c["agentchat"]["observed_by"], c["agentchat"]["manager"]) for c in contents[1:3]] == [
        (["a"], "SelectSpeakerEvent", "RoundRobinGroupChatManager"),
        (["b"], "SelectSpeakerEvent", "RoundRobinGroupChatManager"),
    ]


async def test_manager_hook_only_forwards_outside_a_run(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    members = [AER1AgentWrapper(AssistantAgent(n, model_client=scripted([n, n])), collector) for n in ("a", "b")]
    team = RoundRobinGroupChat(members, max_turns=2)
    first = await collector.run(team, task="go")
    second = await team.run(task="again")  # not through the collector: no team-level steps
    assert second.stop_reason == first.stop_reason
    receipt, contents = check(collector, final_answer="done")
    assert pairs(receipt) == [
        TASK, SEL, ("message", "a"), SEL, ("message", "b"), TERM,
        ("message", "user"), ("message", "a"), ("message", "b"), TERM, CLOSE,
    ]  # fmt: skip
    # The second task reached "a" from outside the wrapped agents: recorded once, as received.
    assert contents[6]["content"] == "again" and contents[6]["agentchat"]["received_by"] == "a"


def test_collector_needs_no_autogen() -> None:
    script = textwrap.dedent(
        """
        import asyncio, sys

        class NoAutoGen:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("autogen_agentchat", "autogen_core", "autogen_ext", "autogen"):
                    raise ImportError(f"blocked: {name}")
                return None

        sys.meta_path.insert(0, NoAutoGen())
        from aer1.collectors import AER1AutoGenCollector
        collector = AER1AutoGenCollector(goal="legacy run")
        collector.record("message", {"content": "hi"}, agent="alice")
        receipt = collector.finalize()
        assert collector.verify(receipt) == [], collector.verify(receipt)
        assert [s["kind"] for s in receipt["steps"]] == ["message", "close"]
        try:
            asyncio.run(collector.run(object(), task="x"))
        except ImportError as e:
            print("ImportError:", e)
        assert not [m for m in sys.modules if m.startswith("autogen")]
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "need autogen-agentchat: pip install 'aer1[agentchat]'" in done.stdout


async def test_second_run_of_a_running_team(collector: AER1AutoGenCollector, scripted: Scripted, check: Check) -> None:
    members = [AER1AgentWrapper(AssistantAgent(n, model_client=scripted([n])), collector) for n in ("a", "b")]
    team = RoundRobinGroupChat(members, max_turns=2)
    stream = collector.run_stream(team, task="first")
    first_item = await stream.__anext__()
    with pytest.raises(ValueError, match="The team is already running"):
        await collector.run(team, task="second")
    rest = [item async for item in stream]
    receipt, contents = check(collector, rest[-1])
    assert getattr(first_item, "content", None) == "first"
    # The runtime runs ahead of the reader: the first turn is recorded before the first item is read.
    assert pairs(receipt) == [
        TASK, SEL, ("message", "a"), TASK, TERM, SEL, ("message", "b"), TERM, CLOSE,
    ]  # fmt: skip
    assert [contents[i].get("task") for i in (0, 3)] == ["first", "second"]
    assert contents[4]["error"]["type"] == "ValueError" and receipt["steps"][4]["status"] == "error"
    # The first run keeps its observation: its selections come from the manager.
    assert [contents[i]["agentchat"]["observed_by"] for i in (1, 5)] == ["select_speaker", "select_speaker"]
    assert contents[-2]["reason"] == "Maximum number of turns 2 reached."
