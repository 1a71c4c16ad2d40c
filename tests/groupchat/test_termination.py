"""Every way a chat ends: is_termination_msg, max_round, a human's "exit", and errors."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aer1.groupchat import (
    AgentError,
    ChatResult,
    FunctionAgent,
    GroupChat,
    GroupChatError,
    HumanProxy,
    MessageValidationError,
    ScriptedAgent,
)

from .helpers import step_contents, step_pairs

M = "manager"


def ends(message: dict[str, Any]) -> bool:
    return "TERMINATE" in (message["content"] or "")


def last_content(result: ChatResult, folder: Path) -> Any:
    return step_contents(result, folder)[-2]  # the termination step (the close step is last)


def test_is_termination_msg(tmp_path: Path, check_receipt: Callable[[ChatResult], Path]) -> None:
    seen: list[dict[str, Any]] = []

    def check(message: dict[str, Any]) -> bool:
        seen.append(message)
        return ends(message)

    writer = ScriptedAgent("writer", ["draft", "final TERMINATE", "never said"])
    critic = ScriptedAgent("critic", ["fix it"])
    result = GroupChat([writer, critic], is_termination_msg=check, initiator="user").run("Write.")
    assert result.stop_reason == "is_termination_msg"
    assert [m["content"] for m in seen] == ["draft", "fix it", "final TERMINATE"]
    assert step_pairs(result) == [
        ("task", "user"),
        ("speaker_selection", M),
        ("message", "writer"),
        ("speaker_selection", M),
        ("message", "critic"),
        ("speaker_selection", M),
        ("message", "writer"),
        ("termination", M),
        ("close", "aer1"),
    ]
    assert last_content(result, tmp_path) == {
        "vocabulary": "aer1-steps/1",
        "outcome": "finished",
        "reason": "is_termination_msg",
        "observed": True,
        "messages": 4,
        "step_statuses": {"ok": 7, "error": 0, "cancelled": 0},
        "groupchat": {"detail": "message 3 from writer", "rounds": 3},
    }
    assert result.final_answer == "final TERMINATE"
    assert result.receipt["status"] == "ok"
    check_receipt(result)


def test_max_round(tmp_path: Path, check_receipt: Callable[[ChatResult], Path]) -> None:
    talker = ScriptedAgent("talker", [f"line {i}" for i in range(10)])
    result = GroupChat([talker], max_round=3, is_termination_msg=ends, initiator="user").run("Talk.")
    assert result.stop_reason == "max_round" and result.rounds == 3
    assert [m["content"] for m in result.messages] == ["Talk.", "line 0", "line 1", "line 2"]
    assert step_pairs(result) == [
        ("task", "user"),
        *[("speaker_selection", M), ("message", "talker")] * 3,
        ("termination", M),
        ("close", "aer1"),
    ]
    assert last_content(result, tmp_path) == {
        "vocabulary": "aer1-steps/1",
        "outcome": "finished",
        "reason": "max_round",
        "observed": True,
        "messages": 4,
        "step_statuses": {"ok": 7, "error": 0, "cancelled": 0},
        "groupchat": {"detail": "3 rounds done", "rounds": 3},
    }
    check_receipt(result)


def test_human_exit(tmp_path: Path, check_receipt: Callable[[ChatResult], Path]) -> None:
    answers = iter(["looks good, go on", "  EXIT "])
    prompts: list[str] = []

    async def type_in(prompt: str) -> str:
        prompts.append(prompt)
        await asyncio.sleep(0)
        return next(answers)

    human = HumanProxy("human", type_in)
    bot = ScriptedAgent("bot", ["step one done", "step two done"])
    result = GroupChat([human, bot], max_round=10).run("Build it.", sender="human")
    assert result.stop_reason == "human_exit"
    assert [m["content"] for m in result.messages] == [
        "Build it.",
        "step one done",
        "looks good, go on",
        "step two done",
    ]
    assert result.messages[2]["role"] == "user"
    assert prompts[0] == "bot: step one done\nReply as human (type 'exit' to end the chat): "
    assert step_pairs(result) == [
        ("task", "human"),
        ("speaker_selection", M),
        ("message", "bot"),
        ("speaker_selection", M),
        ("human_input", "human"),
        ("message", "human"),
        ("speaker_selection", M),
        ("message", "bot"),
        ("speaker_selection", M),
        ("human_input", "human"),
        ("termination", M),
        ("close", "aer1"),
    ]
    contents = step_contents(result, tmp_path)
    human_inputs = [contents[s["seq"] - 1] for s in result.receipt["steps"] if s["kind"] == "human_input"]
    assert human_inputs == [
        {"vocabulary": "aer1-steps/1", "prompt": prompts[0], "input": "looks good, go on", "request_id": None,
         "groupchat": {"exit": False}},
        {"vocabulary": "aer1-steps/1", "prompt": prompts[1], "input": "  EXIT ", "request_id": None,
         "groupchat": {"exit": True}},
    ]
    assert contents[-2] == {"vocabulary": "aer1-steps/1", "outcome": "finished", "reason": "human_exit",
                            "observed": True, "messages": 4, "step_statuses": {"ok": 10, "error": 0, "cancelled": 0},
                            "groupchat": {"detail": "human answered 'EXIT'", "rounds": 3}}
    check_receipt(result)


def test_human_proxy_without_input_refuses_when_not_interactive() -> None:
    chat = GroupChat([HumanProxy("human")], initiator="user")
    with pytest.raises(GroupChatError) as info:
        chat.run("Anyone there?")
    assert isinstance(info.value.__cause__, AgentError)
    assert "needs an input function: standard input is not interactive" in str(info.value)


def test_an_agent_that_raises_aborts_with_a_verifiable_error_receipt(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    def broken(history: Any) -> str:
        raise RuntimeError("model quota exceeded")

    chat = GroupChat([ScriptedAgent("ok", ["fine"]), FunctionAgent("broken", broken)], initiator="user")
    with pytest.raises(
        GroupChatError, match="aborted in reply \\(broken\\): RuntimeError: model quota exceeded"
    ) as info:
        chat.run("Try.")
    result = info.value.result
    assert step_pairs(result) == [
        ("task", "user"),
        ("speaker_selection", M),
        ("message", "ok"),
        ("speaker_selection", M),
        ("error", "broken"),
        ("termination", M),
        ("close", "aer1"),
    ]
    contents = step_contents(result, tmp_path)
    assert contents[4] == {"vocabulary": "aer1-steps/1", "phase": "reply",
                           "error": {"type": "RuntimeError", "module": "builtins", "message": "model quota exceeded"},
                           "groupchat": {"round": 2}}
    assert (contents[5]["outcome"], contents[5]["reason"], contents[5]["error"]["type"]) == (
        "error", "error", "RuntimeError")
    assert [s["status"] for s in result.receipt["steps"]][5] == "error"
    assert [s["status"] for s in result.receipt["steps"]][4] == "error"
    assert result.receipt["status"] == "error"
    check_receipt(result)


@pytest.mark.parametrize(
    ("reply", "path"),
    [
        ({"role": "assistant", "content": 5}, "content"),
        ({"role": "assistant", "content": "hi", "name": "someone_else"}, "name"),
        ({"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]}, "tool_calls[0]"),
        ("just text", "message"),
    ],
)
def test_a_malformed_reply_is_rejected_and_the_history_is_unchanged(
    reply: Any, path: str, tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    good = ScriptedAgent("good", ["hello"])

    def says(history: Any) -> Any:
        return {**reply, "name": reply.get("name", "bad")} if isinstance(reply, dict) else 42

    bad = FunctionAgent("bad", says)
    with pytest.raises(GroupChatError) as info:
        GroupChat([good, bad], initiator="user").run("Talk.")
    assert isinstance(info.value.__cause__, MessageValidationError)
    assert info.value.__cause__.path == path
    result = info.value.result
    assert [m["content"] for m in result.messages] == ["Talk.", "hello"]
    assert step_pairs(result)[-4:] == [
        ("speaker_selection", M),
        ("error", "bad"),
        ("termination", M),
        ("close", "aer1"),
    ]
    error = step_contents(result, tmp_path)[-3]
    assert (error["phase"], error["error"]["type"], error["groupchat"]["path"]) == (
        "validation", "MessageValidationError", path)
    check_receipt(result)


def test_a_failing_termination_check_is_the_managers_error() -> None:
    def check(message: dict[str, Any]) -> bool:
        raise KeyError("content")

    with pytest.raises(GroupChatError, match="termination_check \\(manager\\)") as info:
        GroupChat([ScriptedAgent("a", ["x"])], is_termination_msg=check, initiator="user").run("Go.")
    assert step_pairs(info.value.result)[-3] == ("error", M)


def test_run_arguments_and_event_loops() -> None:
    chat = GroupChat([ScriptedAgent("a", ["x", "y"])], max_round=1, initiator="user")
    with pytest.raises(ValueError, match="task must be a non-empty string"):
        chat.run("")

    async def inside() -> ChatResult:
        with pytest.raises(RuntimeError, match="await arun"):
            chat.run("Go.")
        return await chat.arun("Go.")

    assert asyncio.run(inside()).stop_reason == "max_round"
    for bad in ({"max_round": 0}, {"max_round": True}):
        with pytest.raises(ValueError, match="max_round"):
            GroupChat([ScriptedAgent("a", [])], **bad)
    for names, words in ((["a", "a"], "unique"), (["manager"], "reserved"), (["a b"], "letters")):
        with pytest.raises(ValueError, match=words):
            GroupChat([ScriptedAgent(n, []) for n in names])


async def test_a_cancelled_run_closes_its_receipt_as_incomplete() -> None:
    from aer1 import Collector

    waiting = asyncio.Event()

    async def never_answers(prompt: str) -> str:
        waiting.set()
        await asyncio.Event().wait()
        return "unreachable"

    collector = Collector(goal="Wait for a human.")
    chat = GroupChat([ScriptedAgent("bot", ["hello"]), HumanProxy("human", never_answers)], initiator="user")
    task = asyncio.ensure_future(chat.arun("Wait for a human.", collector=collector))
    await waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    receipt = collector.finalize("hello", status="incomplete")
    assert [(s["kind"], s["agent"], s["status"]) for s in receipt["steps"]][-4:] == [
        ("speaker_selection", M, "ok"),
        ("error", M, "cancelled"),
        ("termination", M, "cancelled"),
        ("close", "aer1", "ok"),
    ]
    assert receipt["status"] == "incomplete"
    assert collector.verify(receipt) == []
