"""AER1AgentWrapper on single agents: tools, code execution, errors, invisibility, identity."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat.agents import (
    ApprovalRequest,
    ApprovalResponse,
    AssistantAgent,
    CodeExecutorAgent,
    UserProxyAgent,
)
from autogen_agentchat.base import Response
from autogen_agentchat.messages import TextMessage
from autogen_agentchat.teams import RoundRobinGroupChat, Swarm
from autogen_core import CancellationToken
from autogen_ext.code_executors.local import LocalCommandLineCodeExecutor
from autogen_ext.models.openai import OpenAIChatCompletionClient

from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector, observe_tools

from .conftest import CLOSE, Check, Scripted, calls, pairs

pytestmark = pytest.mark.filterwarnings(
    "ignore:Using LocalCommandLineCodeExecutor:UserWarning",
    "ignore:No approval function set:UserWarning",
)

TERM = ("termination", "team")
#: The task of agent.run(): it reaches the wrapped agent from outside, recorded once.
TASK_IN = ("message", "user")
SECRET = "sk-test-not-a-real-key-0123456789"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def explode(reason: str) -> str:
    """Always raises."""
    raise ValueError(f"exploded: {reason}")


PARALLEL = calls(
    ("c1", "add", '{"a": 1, "b": 2}'),
    ("c2", "add", '{"a": 1, '),  # malformed JSON
    ("c3", "subtract", '{"a": 1}'),  # unknown tool
    ("c4", "explode", '{"reason": "test"}'),  # raising tool
)


def tool_results(contents: list[Any]) -> list[tuple[str, str, Any, Any, bool]]:
    # what the model was told: the result, or for a failed call the error's message
    return [(c["call_id"], c["name"], c["arguments"], c["error"]["message"] if "error" in c else c["result"],
             "error" in c) for c in contents if "call_id" in c]


EXPECTED_CALLS = [
    ("c1", "add", {"a": 1, "b": 2}, "3", False),
    (
        "c2",
        "add",
        '{"a": 1, ',
        "Error: Expecting property name enclosed in double quotes: line 1 column 10 (char 9)",
        True,
    ),
    ("c3", "subtract", {"a": 1}, "Error: tool 'subtract' not found in any workbench", True),
    ("c4", "explode", {"reason": "test"}, "exploded: test", True),
]


async def test_tools_parallel_malformed_unknown_raising(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    agent = AER1AgentWrapper(
        AssistantAgent("alice", model_client=scripted([PARALLEL]), tools=[add, explode]), collector
    )
    result = await agent.run(task="use your tools")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [TASK_IN] + [("tool_call", "alice")] * 4 + [("message", "alice"), TERM, CLOSE]
    assert tool_results(contents) == EXPECTED_CALLS
    assert [s["tool"] for s in receipt["steps"][1:5]] == ["add", "add", "subtract", "explode"]
    assert [s["call_id"] for s in receipt["steps"][1:5]] == ["c1", "c2", "c3", "c4"]
    assert [s["status"] for s in receipt["steps"][1:5]] == ["ok", "error", "error", "error"]
    assert contents[2]["arguments_malformed"] is True
    # Without reflection the final message is AutoGen's tool call summary.
    assert contents[5]["agentchat"]["message_type"] == "ToolCallSummaryMessage"
    assert contents[5]["content"] == result.messages[-1].content


async def test_tools_with_reflection(collector: AER1AutoGenCollector, scripted: Scripted, check: Check) -> None:
    client = scripted([calls(("c1", "add", '{"a": 2, "b": 2}')), "the sum is 4"])
    agent = AER1AgentWrapper(
        AssistantAgent("alice", model_client=client, tools=[add], reflect_on_tool_use=True), collector
    )
    result = await agent.run(task="add")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [TASK_IN, ("tool_call", "alice"), ("message", "alice"), TERM, CLOSE]
    assert contents[2] == {
        "vocabulary": "aer1-steps/1",
        "content": "the sum is 4",
        "message_id": result.messages[-1].id,
        "role": "assistant",
        "model": contents[2]["model"],
        "agentchat": {"message_type": "TextMessage"},
    }
    # which model produced the reply, and its tokens (the client does not time its request)
    model = contents[2]["model"]
    assert (model["provider"], model["response_model"], model["finish_reasons"], model["latency_ms"]) == (
        "autogen_ext.models.replay._replay_chat_completion_client.ReplayChatCompletionClient", None, None, None), model
    assert isinstance(model["input_tokens"], int) and isinstance(model["output_tokens"], int), model


async def test_observed_tools_are_recorded_once(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    tools = observe_tools([add, explode], collector, agent="alice")
    agent = AER1AgentWrapper(AssistantAgent("alice", model_client=scripted([PARALLEL]), tools=tools), collector)
    result = await agent.run(task="use your tools")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [TASK_IN] + [("tool_call", "alice")] * 4 + [("message", "alice"), TERM, CLOSE]
    # The observed tools ran (c1, c4) and recorded themselves; the calls the agent
    # answered without running a tool (c2, c3) come from the event pairing.
    observed = {c["call_id"]: c for c in contents[1:5]}
    assert sorted(observed) == ["c1", "c2", "c3", "c4"]
    assert sorted(tool_results(contents))[:3] == EXPECTED_CALLS[:3]
    # The raising tool is recorded where it raised: the exception, not the workbench's text.
    assert observed["c4"]["error"] == {"type": "ValueError", "module": "builtins", "message": "exploded: test"}
    assert observed["c4"]["result"] is None


async def test_agent_exception_propagates_unchanged(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    inner = AssistantAgent("alice", model_client=scripted([]))
    agent = AER1AgentWrapper(inner, collector)
    messages = [TextMessage(content="hi", source="user")]
    with pytest.raises(ValueError, match="No more mock responses available") as on_messages:
        await agent.on_messages(messages, CancellationToken())
    with pytest.raises(ValueError) as stream:
        async for _ in agent.on_messages_stream(messages, CancellationToken()):
            pass
    assert type(on_messages.value) is type(stream.value) is ValueError
    receipt, contents = check(collector)
    assert pairs(receipt) == [TASK_IN, ("error", "alice"), ("error", "alice"), TERM, CLOSE]
    assert contents[1] == {"vocabulary": "aer1-steps/1", "phase": "reply", "error": {
        "type": "ValueError", "module": "builtins", "message": "No more mock responses available"}}
    assert all("reply_to" not in s for s in receipt["steps"])


@pytest.mark.parametrize("call_id", ["w1", ""], ids=["with-id", "empty-id"])
async def test_cancelled_turn(collector: AER1AutoGenCollector, scripted: Scripted, check: Check, call_id: str) -> None:
    started = asyncio.Event()

    async def wait_forever(seconds: int) -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    client = scripted([calls((call_id, "wait_forever", '{"seconds": 5}'))])
    agent = AER1AgentWrapper(AssistantAgent("alice", model_client=client, tools=[wait_forever]), collector)
    turn = asyncio.create_task(agent.on_messages([TextMessage(content="wait", source="user")], CancellationToken()))
    await started.wait()
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    receipt, contents = check(collector)
    assert pairs(receipt) == [TASK_IN, ("tool_call", "alice"), ("error", "alice"), TERM, CLOSE]
    assert [s["status"] for s in receipt["steps"][1:3]] == ["cancelled", "cancelled"]
    assert contents[1]["call_id"] == call_id and contents[1]["result"] is None
    assert receipt["steps"][1].get("call_id") == (call_id or None)
    assert contents[2]["error"]["type"] == "CancelledError"
    assert contents[1]["error"]["type"] == "CancelledError"


async def test_on_messages_and_stream_record_each_turn_once(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check
) -> None:
    client = scripted([calls(("c1", "add", '{"a": 1, "b": 1}')), calls(("c2", "add", '{"a": 2, "b": 2}'))])
    agent = AER1AgentWrapper(AssistantAgent("alice", model_client=client, tools=[add]), collector)
    response = await agent.on_messages([TextMessage(content="one", source="user")], CancellationToken())
    items = [i async for i in agent.on_messages_stream([TextMessage(content="two", source="bob")], CancellationToken())]
    assert isinstance(response, Response) and isinstance(items[-1], Response)
    assert [type(i).__name__ for i in items] == ["ToolCallRequestEvent", "ToolCallExecutionEvent", "Response"]
    receipt, _ = check(collector)
    assert pairs(receipt) == [TASK_IN, ("tool_call", "alice"), ("message", "alice"),
                              ("message", "bob"), ("tool_call", "alice"), ("message", "alice"), TERM, CLOSE]
    assert [s.get("reply_to") for s in receipt["steps"][:6]] == [None, None, "user", None, None, "bob"]


def _executor(tmp_path: Path) -> LocalCommandLineCodeExecutor:
    return LocalCommandLineCodeExecutor(work_dir=tmp_path / "work")


def _decisions(*approved: bool) -> Any:
    answers = iter(approved)

    def decide(request: ApprovalRequest) -> ApprovalResponse:
        ok = next(answers)
        return ApprovalResponse(approved=ok, reason="looks safe" if ok else "not today")

    return decide


async def test_code_executor_approved_and_denied(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check, tmp_path: Path
) -> None:
    writer = AER1AgentWrapper(
        AssistantAgent(
            "writer", model_client=scripted(["```python\nprint(6 * 7)\n```", "```python\nimport sys; sys.exit(3)\n```"])
        ),
        collector,
    )
    runner = AER1AgentWrapper(
        CodeExecutorAgent("runner", code_executor=_executor(tmp_path), approval_func=_decisions(True, False)), collector
    )
    team = RoundRobinGroupChat([writer, runner], max_turns=4)
    result = await collector.run(team, task="compute")
    receipt, contents = check(collector, result)
    sel = ("speaker_selection", "team")
    assert pairs(receipt) == [
        ("task", "team"),
        sel, ("message", "writer"), sel, ("approval", "runner"), ("code_execution", "runner"), ("message", "runner"),
        sel, ("message", "writer"), sel, ("approval", "runner"), ("message", "runner"),
        TERM, CLOSE,
    ]  # fmt: skip
    assert (contents[4]["approved"], contents[4]["autogen_core"]["reason"]) == (True, "looks safe")
    assert (contents[5]["language"], contents[5]["exit_code"], contents[5]["output"]) == ("python", 0, "42\n")
    assert contents[6]["content"] == "42\n"
    assert (contents[10]["approved"], contents[10]["autogen_core"]["reason"]) == (False, "not today")
    assert contents[11]["content"] == "Code execution was not approved. Reason: not today"


async def test_code_executor_raw_result_before_rewrite(
    collector: AER1AutoGenCollector, check: Check, tmp_path: Path
) -> None:
    runner = AER1AgentWrapper(CodeExecutorAgent("runner", code_executor=_executor(tmp_path)), collector)
    result = await runner.run(task="```python\nimport sys; print('bad'); sys.exit(3)\n```")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [TASK_IN, ("code_execution", "runner"), ("message", "runner"), TERM, CLOSE]
    # The executor's own exit code and output; the agent rewrites the text it sends on.
    assert (contents[1]["exit_code"], contents[1]["output"]) == (3, "bad\n")
    assert contents[2]["content"].startswith("The script ran, then exited with an error (POSIX exit code: 3)")


async def test_code_executor_with_model_client(
    collector: AER1AutoGenCollector, scripted: Scripted, check: Check, tmp_path: Path
) -> None:
    client = scripted(["```python\nprint('hi')\n```", "it printed hi"])
    runner = AER1AgentWrapper(
        CodeExecutorAgent("runner", code_executor=_executor(tmp_path), model_client=client,
                          approval_func=_decisions(True)),
        collector,
    )  # fmt: skip
    result = await runner.run(task="say hi in python")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [
        TASK_IN, ("approval", "runner"), ("code_execution", "runner"), ("message", "runner"), TERM, CLOSE,
    ]  # fmt: skip
    assert contents[2]["output"] == "hi\n"
    assert contents[3]["content"] == "it printed hi"


async def test_wrapping_twice_loses_nothing(collector: AER1AutoGenCollector, check: Check, tmp_path: Path) -> None:
    approve = _decisions(True, True, True)
    inner = CodeExecutorAgent("runner", code_executor=_executor(tmp_path), approval_func=approve)
    first = AER1AutoGenCollector(goal="the first wrapper's collector")
    earlier = AER1AgentWrapper(inner, first)
    runner = AER1AgentWrapper(inner, collector)
    result = await runner.run(task="```python\nprint('second')\n```")
    # Each wrapper records the turns it runs, hooks included, whichever was made last.
    await earlier.run(task="```python\nprint('first')\n```")
    unwrapped = await inner.run(task="```python\nprint('nobody')\n```")  # no wrapper: nothing recorded
    assert "nobody" in unwrapped.messages[-1].to_text()
    receipt, contents = check(collector, result)
    # Both receipts say that the other records the agent too (spec/steps.md, recording_conflict).
    conflict = ("recording_conflict", "runner")
    assert pairs(receipt) == [
        conflict, TASK_IN, ("approval", "runner"), ("code_execution", "runner"), ("message", "runner"), TERM, CLOSE,
    ]  # fmt: skip
    assert contents[3]["output"] == "second\n"
    other, other_contents = check(first)
    assert pairs(other) == [
        conflict, TASK_IN, ("approval", "runner"), ("code_execution", "runner"), ("message", "runner"), TERM, CLOSE,
    ]  # fmt: skip
    assert other_contents[3]["output"] == "first\n"
    assert contents[0]["other_workflow_ids"] == [first.workflow_id]
    assert other_contents[0]["other_workflow_ids"] == [collector.workflow_id]
    # The identity is the agent's, not its hooks': equal in both collectors.
    assert receipt["agents"][0] == other["agents"][0]


async def test_wrapping_again_keeps_the_identity(collector: AER1AutoGenCollector) -> None:
    def ask(prompt: str) -> str:
        return "yes"

    human = UserProxyAgent("human", input_func=ask)
    runner = CodeExecutorAgent("runner", code_executor=LocalCommandLineCodeExecutor(), approval_func=_decisions(True))
    before = [AER1AutoGenCollector(goal="g") for _ in range(3)]
    for c in before:
        AER1AgentWrapper(human, c)
        AER1AgentWrapper(runner, c)
    AER1AgentWrapper(human, collector)
    AER1AgentWrapper(human, collector)  # the same agent again, same collector: same identity, no error
    AER1AgentWrapper(runner, collector)
    fresh = AER1AutoGenCollector(goal="g")
    AER1AgentWrapper(UserProxyAgent("human", input_func=ask), fresh)
    AER1AgentWrapper(
        CodeExecutorAgent("runner", code_executor=LocalCommandLineCodeExecutor(), approval_func=_decisions(True)),
        fresh,
    )
    digests = [{a["name"]: a["config_digest"] for a in c.finalize()["agents"]} for c in (*before, collector, fresh)]
    assert all(d == digests[-1] for d in digests), digests


async def test_wrapper_is_invisible(collector: AER1AutoGenCollector, scripted: Scripted) -> None:
    inner = AssistantAgent("alice", model_client=scripted(["hello"]), handoffs=["bob"], description="Alice plans.")
    agent = AER1AgentWrapper(inner, collector)
    assert (agent.name, agent.description) == ("alice", "Alice plans.")
    assert agent.produced_message_types == inner.produced_message_types
    assert agent.wrapped_agent is inner and agent.model_context is inner.model_context
    await agent.on_messages([TextMessage(content="hi", source="user")], CancellationToken())
    state = await agent.save_state()
    assert state == await inner.save_state()
    await agent.on_reset(CancellationToken())
    assert await inner.model_context.get_messages() == []
    await agent.load_state(state)
    assert await inner.save_state() == state
    await agent.on_pause(CancellationToken())
    await agent.on_resume(CancellationToken())
    await agent.close()
    # Swarm checks the first participant can hand off: the wrapper passes.
    Swarm([agent, AER1AgentWrapper(AssistantAgent("bob", model_client=scripted([])), collector)])
    with pytest.raises(ValueError, match="already wrapped"):
        AER1AgentWrapper(agent, collector)


async def test_dump_component(collector: AER1AutoGenCollector, scripted: Scripted, tmp_path: Path) -> None:
    inner = AssistantAgent("alice", model_client=scripted(["x"]))
    team = RoundRobinGroupChat([AER1AgentWrapper(inner, collector)], max_turns=1)
    dumped = team.dump_component()
    assert dumped.config["participants"][0] == inner.dump_component().model_dump()
    loaded = RoundRobinGroupChat.load_component(dumped)
    assert type(loaded._participants[0]).__name__ == "AssistantAgent"
    # The observed executor dumps as the executor it wraps.
    runner = CodeExecutorAgent("runner", code_executor=_executor(tmp_path))
    assert AER1AgentWrapper(runner, collector).dump_component() == runner.dump_component()
    # What AutoGen raises for an agent it cannot serialize is what the wrapper raises.
    guarded = CodeExecutorAgent("guarded", code_executor=_executor(tmp_path), approval_func=_decisions(True))
    with pytest.raises(ValueError) as plain:
        guarded.dump_component()
    with pytest.raises(ValueError) as wrapped:
        AER1AgentWrapper(guarded, collector).dump_component()
    assert (type(wrapped.value), str(wrapped.value)) == (type(plain.value), str(plain.value))
    assert "approval_func" in str(wrapped.value)


async def test_identity_without_secrets(collector: AER1AutoGenCollector, scripted: Scripted, check: Check) -> None:
    real = OpenAIChatCompletionClient(model="gpt-4o-mini", api_key=SECRET)
    planner = AER1AgentWrapper(
        AssistantAgent("planner", model_client=real, tools=[add], handoffs=["critic"], system_message="Plan."),
        collector,
    )
    same = AER1AgentWrapper(AssistantAgent("planner", model_client=real, tools=[add], handoffs=["critic"],
                                           system_message="Plan."), collector)  # fmt: skip
    with pytest.raises(ValueError, match="different identity"):
        AER1AgentWrapper(AssistantAgent("planner", model_client=real, system_message="Other."), collector)
    critic = AER1AgentWrapper(AssistantAgent("critic", model_client=scripted(["fine"])), collector)
    result = await critic.run(task="review")
    receipt, contents = check(collector, result)
    assert pairs(receipt) == [TASK_IN, ("message", "critic"), TERM, CLOSE]
    assert [(a["name"], a["type"]) for a in receipt["agents"]] == [
        ("planner", "AssistantAgent"), ("critic", "AssistantAgent"), ("team:(unobserved)", "GroupChatManager"),
    ]  # fmt: skip
    assert same.name == planner.name
    assert len({a.get("config_digest") for a in receipt["agents"][:2]}) == 2
    saved = json.dumps(receipt) + json.dumps(contents)
    assert SECRET not in saved


async def test_user_proxy_wrapped_for_two_collectors_records_in_each(
    collector: AER1AutoGenCollector, check: Check
) -> None:
    answers = iter(["first answer", "second answer", "unrecorded answer"])
    human = UserProxyAgent("human", input_func=lambda prompt: next(answers))
    other = AER1AutoGenCollector(goal="the other collector")
    for_other = AER1AgentWrapper(human, other)
    for_this = AER1AgentWrapper(human, collector)
    await for_other.run(task="question one")
    await for_this.run(task="question two")
    await human.run(task="question three")  # no wrapper: nothing recorded anywhere
    receipt, contents = check(collector)
    conflict = ("recording_conflict", "human")  # each receipt says the other records the agent too
    assert pairs(receipt) == [conflict, TASK_IN, ("human_input", "human"), ("message", "human"), TERM, CLOSE]
    assert contents[2]["input"] == "second answer"
    other_receipt, other_contents = check(other)
    assert pairs(other_receipt) == [conflict, TASK_IN, ("human_input", "human"), ("message", "human"), TERM, CLOSE]
    assert other_contents[2]["input"] == "first answer"
