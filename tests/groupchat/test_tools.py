"""Tool calls through the manager: good, unknown, bad JSON, invalid, raising, parallel, async."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import CreateResult, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

from aer1.groupchat import ChatResult, GroupChat, ModelAgent, ScriptedAgent, ToolExecutor

from .helpers import step_contents, step_pairs

M = "manager"
DONE = "done TERMINATE"


def ends(message: dict[str, Any]) -> bool:
    return "TERMINATE" in (message["content"] or "")


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


async def slow_upper(text: str) -> str:
    """Upper-case text, asynchronously."""
    await asyncio.sleep(0)
    return text.upper()


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def calls_message(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def run_calls(*calls: dict[str, Any]) -> ChatResult:
    planner = ScriptedAgent("planner", [calls_message(*calls), DONE])
    tools = ToolExecutor("tools", {"add": add, "divide": divide, "upper": slow_upper})
    chat = GroupChat([planner, tools], is_termination_msg=ends, initiator="user")
    return chat.run("Do some arithmetic.")


def expected_pairs(tool_steps: int, caller: str = "planner") -> list[tuple[str, str]]:
    return [
        ("task", "user"),
        ("speaker_selection", M),
        ("message", caller),
        ("speaker_selection", M),
        *[("tool_call", "tools")] * tool_steps,
        ("message", "tools"),
        ("speaker_selection", M),
        ("message", caller),
        ("termination", M),
        ("close", "aer1"),
    ]


def tool_steps(result: ChatResult, folder: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    contents = step_contents(result, folder)
    return [(s, contents[s["seq"] - 1]) for s in result.receipt["steps"] if s["kind"] == "tool_call"]


def test_good_call(tmp_path: Path, check_receipt: Callable[[ChatResult], Path]) -> None:
    result = run_calls(call("c1", "add", '{"a": 2, "b": 3}'))
    assert step_pairs(result) == expected_pairs(1)
    answer = result.messages[2]
    assert answer == {
        "role": "tool",
        "content": "5",
        "name": "tools",
        "tool_responses": [{"tool_call_id": "c1", "role": "tool", "content": "5"}],
    }
    [(header, content)] = tool_steps(result, tmp_path)
    assert (header["tool"], header["call_id"], header["status"]) == ("add", "c1", "ok")
    assert content == {
        "vocabulary": "aer1-steps/1",
        "name": "add",
        "call_id": "c1",
        "arguments": {"a": 2, "b": 3},
        "arguments_digest": hashlib.sha256(b'{"a":2,"b":3}').hexdigest(),
        "result": "5",
        "groupchat": {"approval_id": None, "error_kind": None, "model_result": None},
    }
    assert result.stop_reason == "is_termination_msg"
    assert result.receipt["status"] == "ok"
    check_receipt(result)


def test_unknown_bad_json_not_an_object_invalid_and_raising(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    result = run_calls(
        call("c1", "subtract", '{"a": 1}'),
        call("c2", "add", '{"a": 1, "b": '),
        call("c3", "add", "[1, 2]"),
        call("c4", "add", '{"a": "one", "b": 2, "c": 0}'),
        call("c5", "divide", '{"a": 1, "b": 0}'),
    )
    assert step_pairs(result) == expected_pairs(5)
    responses = result.messages[2]["tool_responses"]
    assert [r["tool_call_id"] for r in responses] == ["c1", "c2", "c3", "c4", "c5"]
    errors = [json.loads(r["content"])["error"] for r in responses]
    assert [e["kind"] for e in errors] == [
        "unknown-tool",
        "tool-args-invalid",
        "tool-args-invalid",
        "tool-args-invalid",
        "tool-failed",
    ]
    assert errors[0]["message"] == "unknown tool 'subtract' (known: add, divide, upper)"
    assert errors[1]["message"].startswith("arguments are not valid JSON: ")
    assert errors[2]["message"] == "arguments must be a JSON object, got array"
    assert errors[3]["message"] == ("arguments.a: expected integer, got string; arguments: unexpected member 'c'")
    assert errors[4]["message"] == "ZeroDivisionError: division by zero"
    steps = tool_steps(result, tmp_path)
    assert [(h["tool"], h["call_id"], h["status"]) for h, _ in steps] == [
        ("subtract", "c1", "error"),
        ("add", "c2", "error"),
        ("add", "c3", "error"),
        ("add", "c4", "error"),
        ("divide", "c5", "error"),
    ]
    assert [c["error"]["type"] for _, c in steps] == [
        "unknown_tool", "arguments_invalid", "arguments_invalid", "arguments_invalid", "tool_error"]
    assert all(c["result"] is None for _, c in steps)
    assert [c["error"]["message"] for _, c in steps] == [r["content"] for r in responses]
    assert [c["groupchat"]["model_result"] for _, c in steps] == [r["content"] for r in responses]
    # the model's text is the arguments object whenever it parses as one; else kept and marked
    assert [(c["arguments"], c.get("arguments_malformed")) for _, c in steps] == [
        ({"a": 1}, None), ('{"a": 1, "b": ', True), ("[1, 2]", True), ({"a": "one", "b": 2, "c": 0}, None),
        ({"a": 1, "b": 0}, None)]
    # failed tool calls do not make the chat itself a failure
    assert result.receipt["status"] == "ok"
    check_receipt(result)


def test_parallel_calls_get_one_message_in_call_order(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    result = run_calls(
        call("c1", "add", '{"a": 1, "b": 1}'),
        call("c2", "upper", '{"text": "hi"}'),
        call("c3", "divide", '{"a": 9, "b": 3}'),
    )
    assert step_pairs(result) == expected_pairs(3)
    message = result.messages[2]
    assert message["content"] == "2\n\nHI\n\n3.0"
    assert message["tool_responses"] == [
        {"tool_call_id": "c1", "role": "tool", "content": "2"},
        {"tool_call_id": "c2", "role": "tool", "content": "HI"},
        {"tool_call_id": "c3", "role": "tool", "content": "3.0"},
    ]
    steps = tool_steps(result, tmp_path)
    assert [h["call_id"] for h, _ in steps] == ["c1", "c2", "c3"]
    starts = [h["started_at"] for h, _ in steps]
    assert starts == sorted(starts)
    check_receipt(result)


def test_executor_without_calls_says_so() -> None:
    tools = ToolExecutor("tools", {"add": add})
    planner = ScriptedAgent("planner", ["no tools needed", DONE])
    result = GroupChat(
        [planner, tools, planner.__class__("closer", [DONE])], is_termination_msg=ends, initiator="user"
    ).run("Chat.")
    assert result.messages[2] == {"role": "user", "content": "No tool calls to execute.", "name": "tools"}


def test_model_agent_drives_tool_calls(tmp_path: Path, check_receipt: Callable[[ChatResult], Path]) -> None:
    usage = RequestUsage(prompt_tokens=0, completion_tokens=0)
    client = ReplayChatCompletionClient(
        [
            CreateResult(
                finish_reason="function_calls",
                content=[
                    FunctionCall(id="call_a", name="add", arguments='{"a": 40, "b": 2}'),
                    FunctionCall(id="", name="upper", arguments='{"text": "ok"}'),
                ],
                usage=usage,
                cached=False,
            ),
            "The answer is 42. TERMINATE",
        ]
    )
    tools = ToolExecutor("tools", {"add": add, "upper": slow_upper})
    assistant = ModelAgent("assistant", client, tools=tools, description="Does math.")
    result = GroupChat([assistant, tools], is_termination_msg=ends, initiator="user").run("What is 40 + 2?")
    assert step_pairs(result) == expected_pairs(2, caller="assistant")
    ask = result.messages[1]
    assert ask["content"] is None and ask["name"] == "assistant"
    generated_id = ask["tool_calls"][1]["id"]
    assert generated_id.startswith("call_") and len(generated_id) > len("call_")
    assert result.messages[-1]["content"] == "The answer is 42. TERMINATE"
    # the model saw its own call answered as function results, and got the tool schemas
    second = client.create_calls[1]
    kinds = [type(m).__name__ for m in second["messages"]]
    assert kinds == ["SystemMessage", "UserMessage", "AssistantMessage", "FunctionExecutionResultMessage"]
    results = second["messages"][3].content
    assert [(r.call_id, r.name, r.content) for r in results] == [("call_a", "add", "42"), (generated_id, "upper", "OK")]
    assert [t["name"] for t in second["tools"]] == ["add", "upper"]
    check_receipt(result)


def test_the_model_sees_values_json_cannot_hold_as_text_not_as_receipt_tags() -> None:
    from aer1.groupchat._tools import result_content

    assert result_content({"id": 2**64 + 1}) == '{"id": 18446744073709551617}'
    assert result_content([float("nan")]) == "[NaN]"
    assert result_content({"$aer1:int": "1"}) == '{"$aer1:int": "1"}'
    assert result_content(["caf\udead"]) == '["caf?"]'
