"""Real AgentChat teams (scripted models) recorded through AER1AutoGenCollector.run()."""

from __future__ import annotations

import asyncio
import hashlib
import json
import warnings
from collections.abc import Sequence

import pytest
from autogen_agentchat.agents import AssistantAgent, UserProxyAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage
from autogen_agentchat.teams import (
    DiGraphBuilder,
    GraphFlow,
    MagenticOneGroupChat,
    RoundRobinGroupChat,
    SelectorGroupChat,
    Swarm,
)
from autogen_core import CancellationToken

from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector

from .conftest import CLOSE, Check, Scripted, calls, pairs

TASK = ("task", "team")
TERM = ("termination", "team")


def wrap(collector: AER1AutoGenCollector, name: str, client: object, **kwargs: object) -> AER1AgentWrapper:
    return AER1AgentWrapper(AssistantAgent(name, model_client=client, **kwargs), collector)  # type: ignore[arg-type]


async def test_documented_peer_usage_works_unchanged(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    client = scripted(["draft: research, build, ship", "review: looks good TERMINATE"])
    alice = AER1AgentWrapper(AssistantAgent("alice", model_client=client), collector)
    bob = AER1AgentWrapper(AssistantAgent("bob", model_client=client), collector)
    team = RoundRobinGroupChat([alice, bob], max_turns=6, termination_condition=TextMentionTermination("TERMINATE"))
    result = await team.run(task="Plan the product launch")
    # The peer's documented line, verbatim (hence the type ignore).
    receipt, contents = check(collector, final_answer=result.messages[-1].content)  # type: ignore[union-attr]
    # The task reached alice from outside the wrapped agents: recorded once, under its source.
    assert pairs(receipt) == [("message", "user"), ("message", "alice"), ("message", "bob"), TERM, CLOSE]
    assert contents[0] == {
        "vocabulary": "aer1-steps/1", "content": "Plan the product launch", "message_id": result.messages[0].id,
        "role": None, "model": None,
        "agentchat": {"message_type": "TextMessage", "observed_by": "inbound", "received_by": "alice"},
    }  # fmt: skip
    assert receipt["output_hash"] == hashlib.sha256(b"review: looks good TERMINATE").hexdigest()
    assert receipt["steps"][2]["reply_to"] == "alice"
    assert receipt["steps"][1]["reply_to"] == "user"
    assert contents[2] == {
        "vocabulary": "aer1-steps/1",
        "content": "review: looks good TERMINATE",
        "message_id": result.messages[-1].id,
        "role": "assistant",
        "model": contents[2]["model"],
        "agentchat": {"message_type": "TextMessage"},
    }
    assert contents[2]["model"]["output_tokens"] is not None
    # Without collector.run() the team's stop reason is not seen: the step says so, under an
    # actor that names no team (none was observed) and that no participant can take.
    assert contents[3]["observed"] is False and contents[3]["reason"] is None
    assert receipt["steps"][3]["agent"] == "team:(unobserved)"
    assert [a["name"] for a in receipt["agents"]] == ["alice", "bob", "team:(unobserved)"]


async def test_round_robin(collector: AER1AutoGenCollector, scripted: Scripted, check: Check) -> None:
    client = scripted(["one", "two", "three"])
    team = RoundRobinGroupChat([wrap(collector, "alice", client), wrap(collector, "bob", client)], max_turns=3)
    result = await collector.run(team, task="count")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [
        TASK,
        ("speaker_selection", "team"), ("message", "alice"),
        ("speaker_selection", "team"), ("message", "bob"),
        ("speaker_selection", "team"), ("message", "alice"),
        TERM, CLOSE,
    ]  # fmt: skip
    assert contents[0]["task"] == "count" and contents[0]["agentchat"]["team_type"] == "RoundRobinGroupChat"
    selections = [c for c in contents if "selected" in c]
    assert [(c["selected"], c["mechanism"], c["agentchat"]["position"]) for c in selections] == [
        (["alice"], "round_robin", 0), (["bob"], "round_robin", 1), (["alice"], "round_robin", 0),
    ]  # fmt: skip
    assert [s.get("target") for s in receipt["steps"] if s["kind"] == "speaker_selection"] == ["alice", "bob", "alice"]
    assert contents[-2]["reason"] == "Maximum number of turns 3 reached."
    assert contents[-2]["observed"] is True
    # finalize(result) hashes the last chat message's text.
    assert receipt["output_hash"] == hashlib.sha256(b"three").hexdigest()


async def test_selector_function_model_and_single_candidate(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    def first_alice(thread: Sequence[BaseAgentEvent | BaseChatMessage]) -> str | None:
        return "alice" if len(thread) == 1 else None

    team = SelectorGroupChat(
        [wrap(collector, "alice", scripted(["a1", "a2"])), wrap(collector, "bob", scripted(["b1"]))],
        model_client=scripted(["bob"]),
        selector_func=first_alice,
        max_turns=3,
    )
    result = await collector.run(team, task="go")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [
        TASK,
        ("speaker_selection", "team"), ("message", "alice"),
        ("speaker_selection", "team"), ("message", "bob"),
        ("speaker_selection", "team"), ("message", "alice"),
        TERM, CLOSE,
    ]  # fmt: skip
    selections = [c for c in contents if "selected" in c]
    assert [(c["selected"], c["mechanism"]) for c in selections] == [
        (["alice"], "function"), (["bob"], "model"), (["alice"], "single_candidate"),
    ]  # fmt: skip
    assert selections[0]["agentchat"]["selector_func"]["returned"] == "alice"
    assert selections[1]["agentchat"]["selector_func"]["returned"] is None
    assert selections[1]["model_replies"] == ["bob"]
    assert selections[2]["agentchat"]["previous_speaker"] == "bob"


async def test_selector_candidate_func_retries_and_fallback(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    async def not_alice(thread: Sequence[BaseAgentEvent | BaseChatMessage]) -> list[str]:
        return ["bob", "carol"]

    selector = scripted(["nobody", "carol it is", "?", "??", "???"])
    team = SelectorGroupChat(
        [wrap(collector, n, scripted([f"{n}-1", f"{n}-2"])) for n in ("alice", "bob", "carol")],
        model_client=selector,
        candidate_func=not_alice,
        max_selector_attempts=3,
        max_turns=2,
    )
    result = await collector.run(team, task="go")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [
        TASK, ("speaker_selection", "team"), ("message", "carol"),
        ("speaker_selection", "team"), ("message", "carol"), TERM, CLOSE,
    ]  # fmt: skip
    first, second = [c for c in contents if "selected" in c]
    assert first["agentchat"]["candidate_func"]["returned"] == ["bob", "carol"]
    assert (first["mechanism"], first["model_replies"]) == ("model", ["nobody", "carol it is"])
    # Three replies naming nobody: AutoGen falls back to the previous speaker.
    assert (second["mechanism"], second["model_replies"], second["selected"]) == (
        "model_fallback", ["?", "??", "???"], ["carol"],
    )  # fmt: skip


async def test_swarm_handoff_recorded_once(collector: AER1AutoGenCollector, scripted: Scripted, check: Check) -> None:
    def lookup(city: str) -> str:
        """Look a city up."""
        return f"{city}: sunny"

    alice_model = scripted([
        calls(("c1", "lookup", '{"city": "Oslo"}'), ("h1", "transfer_to_bob", "{}"), ("h2", "transfer_to_carol", "{}")),
    ])  # fmt: skip
    alice = wrap(collector, "alice", alice_model, tools=[lookup], handoffs=["bob", "carol"])
    bob = wrap(collector, "bob", scripted(["bob answers TERMINATE"]))
    carol = wrap(collector, "carol", scripted(["never"]))
    team = Swarm([alice, bob, carol], termination_condition=TextMentionTermination("TERMINATE"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # AutoGen warns: several handoffs, first one used
        result = await collector.run(team, task="weather?")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [
        TASK,
        ("speaker_selection", "team"), ("tool_call", "alice"), ("handoff", "alice"),
        ("speaker_selection", "team"), ("message", "bob"),
        TERM, CLOSE,
    ]  # fmt: skip
    handoff = receipt["steps"][3]
    assert (handoff["tool"], handoff["target"], handoff["reply_to"]) == ("handoff", "bob", "user")
    assert contents[3]["target"] == "bob"
    assert [(c["name"], c["call_id"], c["target"]) for c in contents[3]["agentchat"]["handoff_calls"]] == [
        ("transfer_to_bob", "h1", "bob"), ("transfer_to_carol", "h2", "carol"),
    ]  # fmt: skip
    assert contents[3]["agentchat"]["selected_call_id"] == "h1"
    # The handoff context carries the tool call made before handing off.
    assert [m["type"] for m in contents[3]["agentchat"]["context"]] == [
        "AssistantMessage",
        "FunctionExecutionResultMessage",
    ]
    assert contents[2]["result"] == "Oslo: sunny"
    assert (contents[1]["mechanism"], contents[1]["agentchat"]["current_speaker"]) == ("current_speaker", "alice")
    assert contents[4]["mechanism"] == "handoff"
    assert contents[4]["agentchat"]["handoff"]["from"] == "alice"


async def test_graph_flow_fan_out_and_join(collector: AER1AutoGenCollector, scripted: Scripted, check: Check) -> None:
    a, b, c, d = (wrap(collector, n, scripted([n.upper()])) for n in ("a", "b", "c", "d"))
    builder = DiGraphBuilder()
    builder.add_node(a).add_node(b).add_node(c).add_node(d)
    builder.add_edge(a, b).add_edge(a, c).add_edge(b, d).add_edge(c, d)
    team = GraphFlow(participants=builder.get_participants(), graph=builder.build())
    result = await collector.run(team, task="go")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [
        TASK,
        ("speaker_selection", "team"), ("message", "a"),
        ("speaker_selection", "team"), ("message", "b"), ("message", "c"),
        ("speaker_selection", "team"), ("message", "d"),
        TERM, CLOSE,
    ]  # fmt: skip
    selections = [c for c in contents if "selected" in c]
    assert [(s["selected"], s["mechanism"], s["agentchat"]["after"], s["agentchat"]["parallel"])
            for s in selections] == [
        (["a"], "graph", "user", False), (["b", "c"], "graph", "a", True), (["d"], "graph", "c", False),
    ]  # fmt: skip
    # A parallel selection names no single target.
    assert [s.get("target") for s in receipt["steps"] if s["kind"] == "speaker_selection"] == ["a", None, "d"]
    assert contents[-2]["reason"] == "Digraph execution is complete"


def _ledger(done: bool, speaker: str, instruction: str) -> str:
    def item(answer: object) -> dict[str, object]:
        return {"reason": f"because {answer}", "answer": answer}

    return json.dumps({
        "is_request_satisfied": item(done),
        "is_progress_being_made": item(True),
        "is_in_loop": item(False),
        "instruction_or_question": item(instruction),
        "next_speaker": item(speaker),
    })  # fmt: skip


async def test_magentic_one_offline(collector: AER1AutoGenCollector, scripted: Scripted, check: Check) -> None:
    orchestrator = scripted([
        "facts", "plan", _ledger(False, "bob", "bob, summarise"), _ledger(False, "alice", "alice, check"),
        _ledger(True, "alice", "done"), "the final answer",
    ])  # fmt: skip
    team = MagenticOneGroupChat(
        [wrap(collector, "alice", scripted(["checked"])), wrap(collector, "bob", scripted(["summary"]))],
        model_client=orchestrator,
    )
    result = await collector.run(team, task="research")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [
        TASK,
        ("lifecycle", "alice"), ("lifecycle", "bob"),  # the orchestrator resets its agents as it plans
        ("message", "team"),  # the task ledger
        ("message", "team"), ("speaker_selection", "team"), ("message", "bob"),
        ("message", "team"), ("speaker_selection", "team"), ("message", "alice"),
        ("message", "team"),  # the final answer
        TERM, CLOSE,
    ]  # fmt: skip
    assert [contents[i]["operation"] for i in (1, 2)] == ["reset", "reset"]
    first, second = [c for c in contents if "selected" in c]
    assert (first["selected"], first["mechanism"], first["agentchat"]["observed_by"]) == (
        ["bob"],
        "orchestrator_ledger",
        "request",
    )
    assert first["agentchat"]["next_speaker"] == {"reason": "because bob", "answer": "bob"}
    assert first["agentchat"]["instruction_message_id"] == result.messages[2].id
    assert contents[4]["content"] == "bob, summarise"  # two places on: the resets come first
    assert contents[4]["agentchat"]["manager"] == "MagenticOneOrchestrator"
    assert second["selected"] == ["alice"]
    assert contents[10]["content"] == "the final answer"
    assert contents[-2]["reason"] == "because True"
    assert receipt["output_hash"] == hashlib.sha256(b"the final answer").hexdigest()


async def test_user_proxy_human_input(collector: AER1AutoGenCollector, scripted: Scripted, check: Check) -> None:
    prompts: list[str] = []

    def typed(prompt: str) -> str:
        prompts.append(prompt)
        return "ship it TERMINATE"

    human = AER1AgentWrapper(UserProxyAgent("human", input_func=typed), collector)
    team = RoundRobinGroupChat(
        [wrap(collector, "alice", scripted(["shall we ship?"])), human],
        termination_condition=TextMentionTermination("TERMINATE"),
    )
    result = await collector.run(team, task="decide")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [
        TASK, ("speaker_selection", "team"), ("message", "alice"),
        ("speaker_selection", "team"), ("human_input", "human"), ("message", "human"), TERM, CLOSE,
    ]  # fmt: skip
    request_id = next(m.request_id for m in result.messages if type(m).__name__ == "UserInputRequestedEvent")
    assert contents[4] == {"vocabulary": "aer1-steps/1", "prompt": "Enter your response: ",
                           "input": "ship it TERMINATE",
                           "request_id": request_id}
    assert receipt["steps"][5]["reply_to"] == "alice"
    assert prompts == ["Enter your response: "]


async def test_user_proxy_async_input_and_failure(collector: AER1AutoGenCollector, check: Check) -> None:
    async def fails(prompt: str, token: CancellationToken | None) -> str:
        raise OSError("no terminal")

    human = AER1AgentWrapper(UserProxyAgent("human", input_func=fails), collector)
    with pytest.raises(RuntimeError, match="Failed to get user input: no terminal"):
        await human.run(task="hello")
    receipt, contents = check(collector)
    assert pairs(receipt) == [("message", "user"), ("human_input", "human"), ("error", "human"), TERM, CLOSE]
    assert receipt["steps"][1]["status"] == "error" and receipt["status"] == "error"
    assert contents[1]["error"] == {"type": "OSError", "module": "builtins", "message": "no terminal"}
    assert contents[2]["error"]["type"] == "RuntimeError"


async def test_run_stream_forwards_every_item_including_chunks(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    def team_of(agents: list[AssistantAgent | AER1AgentWrapper]) -> RoundRobinGroupChat:
        return RoundRobinGroupChat(agents, max_turns=2)

    def agents() -> list[AssistantAgent]:
        return [
            AssistantAgent(n, model_client=scripted([f"{n} streams several words"]), model_client_stream=True)
            for n in ("alice", "bob")
        ]

    plain = [type(i).__name__ async for i in team_of(list(agents())).run_stream(task="go")]
    wrapped = team_of([AER1AgentWrapper(a, collector) for a in agents()])
    seen = [item async for item in collector.run_stream(wrapped, task="go")]
    assert [type(i).__name__ for i in seen] == plain
    assert plain.count("ModelClientStreamingChunkEvent") == 8
    result = seen[-1]
    assert isinstance(result, TaskResult)
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [
        TASK, ("speaker_selection", "team"), ("message", "alice"),
        ("speaker_selection", "team"), ("message", "bob"), TERM, CLOSE,
    ]  # fmt: skip
    assert contents[2]["content"] == "alice streams several words"


async def test_two_teams_share_a_collector(collector: AER1AutoGenCollector, scripted: Scripted, check: Check) -> None:
    def team(name: str, first: str, second: str) -> RoundRobinGroupChat:
        client = scripted(["x", "y"])
        members = [wrap(collector, first, client), wrap(collector, second, client)]
        return RoundRobinGroupChat(members, name=name, max_turns=2)

    red, blue = team("red", "r1", "r2"), team("blue", "b1", "b2")
    await collector.run(red, task="red task")
    await collector.run(blue, task="blue task")
    # Both at once: each team's steps keep their own order.
    red2, blue2 = team("red2", "r3", "r4"), team("blue2", "b3", "b4")
    results = await asyncio.gather(collector.run(red2, task="a"), collector.run(blue2, task="b"))
    receipt, contents = check(collector, results[1])
    one_team = [
        TASK, ("speaker_selection", "team"), ("message", "{0}"),
        ("speaker_selection", "team"), ("message", "{1}"), TERM,
    ]  # fmt: skip

    def expected(first: str, second: str) -> list[tuple[str, str]]:
        return [(k, a.format(first, second)) for k, a in one_team]

    steps = pairs(receipt)
    assert steps[:12] == expected("r1", "r2") + expected("b1", "b2")
    assert steps[-1] == CLOSE
    teams = {t.name: t for t in (red, blue, red2, blue2)}
    actors = {name: f"team:{name}/{t._team_id}" for name, t in teams.items()}
    assert len(set(actors.values())) == 4
    for name, first, second in (("red2", "r3", "r4"), ("blue2", "b3", "b4")):
        # Concurrent teams: the team-level steps are told apart by their actor (name and team id).
        mine = [
            pair for pair, step, content in zip(steps[12:-1], receipt["steps"][12:-1], contents[12:-1], strict=True)
            if pair[1] in (first, second) or step["agent"] == actors[name]
        ]  # fmt: skip
        assert mine == expected(first, second)
        assert all(c["agentchat"]["team_id"] == teams[name]._team_id
                   for c, st in zip(contents, receipt["steps"], strict=False)
                   if st["agent"] == actors[name])  # fmt: skip
    assert len(steps) == 12 + 12 + 1
    listed = {a["name"]: a["type"] for a in receipt["agents"]}
    assert listed == {
        **{n: "AssistantAgent" for n in ("r1", "r2", "b1", "b2", "r3", "r4", "b3", "b4")},
        **{actor: "RoundRobinGroupChatManager" for actor in actors.values()},
    }


async def test_agent_that_raises(collector: AER1AutoGenCollector, scripted: Scripted, check: Check) -> None:
    # The second agent's model has no reply left: AutoGen's ValueError inside its turn.
    alice, bob = wrap(collector, "alice", scripted(["hi"])), wrap(collector, "bob", scripted([]))
    team = RoundRobinGroupChat([alice, bob], max_turns=4)
    with pytest.raises(RuntimeError, match="ValueError: No more mock responses available") as raised:
        await collector.run(team, task="go")
    receipt, contents = check(collector)
    assert pairs(receipt) == [
        TASK, ("speaker_selection", "team"), ("message", "alice"),
        ("speaker_selection", "team"), ("error", "bob"), TERM, CLOSE,
    ]  # fmt: skip
    assert contents[4] == {"vocabulary": "aer1-steps/1", "phase": "reply", "error": {
        "type": "ValueError", "module": "builtins", "message": "No more mock responses available"}}
    assert [s["status"] for s in receipt["steps"][4:6]] == ["error", "error"]
    assert (contents[5]["outcome"], contents[5]["reason"]) == ("error", None)
    assert contents[5]["error"]["type"] == "RuntimeError"
    assert str(raised.value) in contents[5]["error"]["message"]
    assert receipt["status"] == "error"


async def test_termination_condition_stop_reason(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    team = RoundRobinGroupChat(
        [wrap(collector, "alice", scripted(["a", "b"]))], termination_condition=MaxMessageTermination(2)
    )
    result = await collector.run(team, task="go")
    receipt, contents = check(collector, final_answer="custom answer", result=result)
    assert pairs(receipt) == [TASK, ("speaker_selection", "team"), ("message", "alice"), TERM, CLOSE]
    assert contents[3]["reason"] == "Maximum number of messages 2 reached, current message count: 2"
    assert receipt["output_hash"] == hashlib.sha256(b"custom answer").hexdigest()
    # finalize again: the same receipt, nothing recorded twice.
    assert collector.finalize(final_answer="custom answer", result=result) == receipt


async def test_unobserved_termination_when_caller_stops_reading(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    team = RoundRobinGroupChat([wrap(collector, "alice", scripted(["a", "b", "c"]))], max_turns=3)
    stream = collector.run_stream(team, task="go")
    async for item in stream:
        if isinstance(item, BaseChatMessage) and item.source == "alice":
            break
    await stream.aclose()
    receipt, contents = check(collector)
    # The runtime may run ahead of the reader: up to the two remaining turns are recorded too.
    turn = [("speaker_selection", "team"), ("message", "alice")]
    turns = (len(receipt["steps"]) - 3) // 2
    assert 1 <= turns <= 3
    assert pairs(receipt) == [TASK, *turn * turns, TERM, CLOSE]
    term = contents[-2]
    assert (term["outcome"], term["reason"]) == ("cancelled", None)
    assert term["agentchat"]["note"] == "the caller stopped reading the stream before the team ended"
    assert receipt["steps"][-2]["status"] == "cancelled"
