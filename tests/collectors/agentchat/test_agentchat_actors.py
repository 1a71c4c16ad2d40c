"""Who did what: team-level actors no participant can take, messages from outside the
wrapped agents recorded once, and a turn's reasoning in its step."""

from __future__ import annotations

from autogen_agentchat.agents import AssistantAgent, UserProxyAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import TextMessage
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core.models import CreateResult, RequestUsage

from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector

from ...scripted_models import ollama_calls, scripted_client
from .conftest import CLOSE, Check, Scripted, pairs


def transcript(result: TaskResult) -> list[tuple[str, str, str]]:
    return [(type(m).__name__, m.source, m.to_text()) for m in result.messages]


async def test_participant_named_manager_cannot_take_team_steps(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    manager = AER1AgentWrapper(AssistantAgent("manager", model_client=scripted(["I manage", "still"])), collector)
    aer1 = AER1AgentWrapper(AssistantAgent("aer1", model_client=scripted(["I close"])), collector)
    team = RoundRobinGroupChat([manager, aer1], max_turns=3)
    result = await collector.run(team, task="who is in charge")
    receipt, contents = check(collector, result)
    actor = f"team:{team.name}/{team._team_id}"
    kinds = [(s["kind"], s["agent"]) for s in receipt["steps"]]
    team_steps = [(k, a) for k, a in kinds if k in ("task", "speaker_selection", "termination")]
    assert {a for _, a in team_steps} == {actor}
    assert [(k, a) for k, a in kinds if a in ("manager", "aer1")] == [
        ("message", "manager"), ("message", "aer1"), ("message", "manager"), ("close", "aer1"),
    ]  # fmt: skip
    listed = {a["name"]: a["type"] for a in receipt["agents"]}
    assert listed == {"manager": "AssistantAgent", "aer1": "AssistantAgent", actor: "RoundRobinGroupChatManager"}
    assert contents[0]["agentchat"]["team_id"] == team._team_id and contents[0]["message_ids"] == [
        result.messages[0].id
    ]


async def test_messages_from_outside_the_wrapped_agents_are_recorded_once(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    def team(wrap: bool) -> RoundRobinGroupChat:
        alice = AssistantAgent("alice", model_client=scripted(["alice asks"]))
        bob = AssistantAgent("bob", model_client=scripted(["bob answers"]))
        human = UserProxyAgent("human", input_func=lambda prompt: "the human says go")
        if wrap:
            alice, bob = AER1AgentWrapper(alice, collector), AER1AgentWrapper(bob, collector)  # type: ignore[assignment]
        return RoundRobinGroupChat([alice, human, bob], max_turns=3)

    plain = await team(False).run(task="start")
    result = await team(True).run(task="start")  # wrappers only: no collector.run
    assert transcript(result) == transcript(plain)
    receipt, contents = check(collector)
    assert pairs(receipt) == [
        ("message", "user"), ("message", "alice"), ("message", "human"), ("message", "bob"),
        ("termination", "team"), CLOSE,
    ]  # fmt: skip
    task, _, reply, _ = contents[:4]
    assert (task["content"], task["agentchat"]["received_by"], task["message_id"]) == (
        "start", "alice", result.messages[0].id)
    # The unwrapped human's reply reached bob (and would reach every later wrapped agent): once.
    said = next(m for m in result.messages if m.source == "human" and type(m).__name__ == "TextMessage")
    assert (reply["content"], reply["agentchat"]["received_by"], reply["message_id"]) == (
        "the human says go", "bob", said.id)


async def test_collector_run_records_the_task_once(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    alice = AER1AgentWrapper(AssistantAgent("alice", model_client=scripted(["done"])), collector)
    result = await collector.run(RoundRobinGroupChat([alice], max_turns=1), task="only once")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [("task", "team"), ("speaker_selection", "team"), ("message", "alice"),
                              ("termination", "team"), CLOSE]  # fmt: skip
    assert contents[0]["task"] == "only once" and contents[0]["message_ids"] == [result.messages[0].id]


_USAGE = RequestUsage(prompt_tokens=1, completion_tokens=1)


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_thoughts_go_into_the_turns_step(collector: AER1AutoGenCollector, check: Check) -> None:
    def agent() -> AssistantAgent:
        return AssistantAgent("alice", model_client=scripted_client([
            ollama_calls(0, ("add", '{"a": 1, "b": 2}'), thought="I should add first"),
            CreateResult(finish_reason="stop", content="it is 3", usage=_USAGE, cached=False,
                         thought="the tool said 3"),
        ]), tools=[add], reflect_on_tool_use=True)  # fmt: skip

    plain = await agent().run(task="add")
    result = await AER1AgentWrapper(agent(), collector).run(task="add")
    assert transcript(result) == transcript(plain)
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [("message", "user"), ("tool_call", "alice"), ("message", "alice"),
                              ("termination", "team"), CLOSE]  # fmt: skip
    assert contents[2]["content"] == "it is 3"
    assert contents[2]["agentchat"]["thoughts"] == ["I should add first", "the tool said 3"]


async def test_empty_sources_and_targets_still_verify(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    alice = AER1AgentWrapper(AssistantAgent("alice", model_client=scripted(["fine"])), collector)
    result = await alice.run(task=TextMessage(content="from nowhere", source=""))
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [("message", "(no source)"), ("message", "alice"), ("termination", "team"), CLOSE]
    assert contents[0]["content"] == "from nowhere" and "reply_to" not in receipt["steps"][1]
