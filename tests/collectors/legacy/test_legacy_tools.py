"""Function and tool calls: sync and async paths, each call once, with its call id."""

from __future__ import annotations

import asyncio
from typing import Any

import autogen
import pytest

from aer1 import _steps_vocab as vocab
from aer1.collectors import AER1AutoGenCollector, attach_legacy_hooks

from .support import (
    CLOSE,
    Finish,
    ended,
    make_client,
    of_kind,
    rows,
    says_terminate,
    scripted_llm_config,
    tool_call,
    tool_calls_reply,
    two_agent,
)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def add_async(a: int, b: int) -> int:
    """Add two integers, asynchronously."""
    await asyncio.sleep(0)
    return a + b


def add_text(a: int, b: int) -> str:
    """Add two integers; the sum as text (a plain function_map entry is not serialized)."""
    return str(a + b)


def boom(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


CALLS = [
    tool_call("call_add", "add", {"a": 1, "b": 2}),
    tool_call("call_missing", "missing", {"x": 1}),
    tool_call("call_badjson", "add", "{not json"),
    tool_call("call_boom", "boom", {"reason": "always"}),
]


def _pair(
    collector: AER1AutoGenCollector,
    replies: list[Any],
    functions: dict[str, Any] | None = None,
    function_map: dict[str, Any] | None = None,
) -> tuple[autogen.ConversableAgent, autogen.ConversableAgent]:
    """(executor, assistant), both hooked: the assistant's scripted model asks, the executor runs."""
    assistant = autogen.ConversableAgent("assistant", llm_config=scripted_llm_config(), human_input_mode="NEVER")
    executor = autogen.ConversableAgent(
        "executor",
        llm_config=False,
        human_input_mode="NEVER",
        function_map=function_map,
        is_termination_msg=says_terminate,
    )
    for name, function in (functions or {}).items():
        doc = function.__doc__
        autogen.register_function(function, caller=assistant, executor=executor, name=name, description=doc)
    # register_function rebuilds the caller's client: register the model client last.
    assistant.register_model_client(make_client(replies))
    attach_legacy_hooks(assistant, collector)
    attach_legacy_hooks(executor, collector)
    return executor, assistant


def _chat(function: Any, collector: AER1AutoGenCollector) -> tuple[autogen.ConversableAgent, Any]:
    return _pair(collector, [tool_calls_reply(*CALLS), "TERMINATE"], {"add": function, "boom": boom})


@pytest.mark.parametrize("chat", ["sync", "async"])
@pytest.mark.parametrize("function", [add, add_async], ids=["sync_function", "async_function"])
def test_tool_calls(chat: str, function: Any, collector: AER1AutoGenCollector, finish: Finish) -> None:
    executor, assistant = _chat(function, collector)
    if chat == "sync":
        result = executor.initiate_chat(assistant, message="Add 1 and 2")
    else:
        result = asyncio.run(executor.a_initiate_chat(assistant, message="Add 1 and 2"))
    receipt, contents = finish(collector)

    assert rows(receipt) == [
        *two_agent(
            "executor",
            "assistant",
            ("message", "executor", "assistant"),
            ("message", "assistant", "executor"),
            ("tool_call", "executor", None),
            ("tool_call", "executor", None),
            ("tool_call", "executor", None),
            ("tool_call", "executor", None),
            ("message", "executor", "assistant"),
            ("message", "assistant", "executor"),
        ),
        CLOSE,
    ]
    assert ended(receipt, contents) == ("ok", "finished", "is_termination_msg")
    # Steps are in the order the calls ended: an async chat runs its calls concurrently,
    # and the async `add` awaits once, so it ends after the three that never wait.
    order = ["call_add", "call_missing", "call_badjson", "call_boom"]
    if chat == "async" and function is add_async:
        order = ["call_missing", "call_badjson", "call_boom", "call_add"]
    tools = [s for s in receipt["steps"] if s["kind"] == "tool_call"]
    assert [s["call_id"] for s in tools] == order
    by_id = {s["call_id"]: (s, contents[s["seq"]]) for s in tools}
    names = {"call_add": "add", "call_missing": "missing", "call_badjson": "add", "call_boom": "boom"}
    for call in CALLS:
        step, content = by_id[call["id"]]
        assert step["tool"] == names[call["id"]] == content["name"]
        # the model's text is an object whenever it parses as one; malformed text is kept and marked
        parsed, malformed = vocab.parse_arguments(call["function"]["arguments"])
        assert (content["arguments"], content.get("arguments_malformed", False)) == (parsed, malformed)
        assert content["call_id"] == call["id"]
        assert step["status"] == ("ok" if call["id"] == "call_add" else "error")
        assert ("error" in content) is (call["id"] != "call_add")
        assert (content["result"] is None) is (call["id"] != "call_add")
    assert by_id["call_add"][1]["result"] == "3"
    assert by_id["call_missing"][1]["error"]["message"] == "Error: Function missing not found."
    bad = by_id["call_badjson"][1]["error"]["message"]
    assert bad.startswith("Error: ") and "JSON" in bad
    assert by_id["call_boom"][1]["error"]["message"] == "Error: boom: always"
    # Which executor method ran: the async one for async chats and async functions.
    uses_async = chat == "async" or function is add_async
    assert by_id["call_add"][1]["legacy"]["path"] == ("async" if uses_async else "sync")
    assert by_id["call_missing"][1]["legacy"]["path"] == ("async" if chat == "async" else "sync")
    # The tool results reached the assistant unchanged.
    responses = result.chat_history[2]["tool_responses"]
    told = [c["result"] if "error" not in c else c["error"]["message"] for c in (by_id[k["id"]][1] for k in CALLS)]
    assert [r["content"] for r in responses] == told
    assert receipt["status"] == "ok"  # handled tool errors are their steps' errors, not the run's (spec/steps.md)


def test_each_call_once_in_async_chats(collector: AER1AutoGenCollector, finish: Finish) -> None:
    """Async chats also offer the sync tool reply function; a call still executes and records once."""
    executed: list[int] = []

    def count(n: int) -> int:
        """Count a call."""
        executed.append(n)
        return n

    calls = [tool_call(f"call_{n}", "count", {"n": n}) for n in range(3)]
    executor, assistant = _pair(collector, [tool_calls_reply(*calls), "TERMINATE"], {"count": count})
    asyncio.run(executor.a_initiate_chat(assistant, message="count"))
    receipt, contents = finish(collector)

    assert executed == [0, 1, 2]
    tools = [s for s in receipt["steps"] if s["kind"] == "tool_call"]
    assert [s["call_id"] for s in tools] == ["call_0", "call_1", "call_2"]
    assert [c["result"] for c in of_kind(receipt, contents, "tool_call")] == ["0", "1", "2"]


@pytest.mark.parametrize("chat", ["sync", "async"])
def test_function_call_path(chat: str, collector: AER1AutoGenCollector, finish: Finish) -> None:
    """The deprecated ``function_call`` message: no call id, still one step."""
    reply = {"content": None, "function_call": {"name": "add", "arguments": '{"a": 20, "b": 22}'}}
    executor, assistant = _pair(collector, [reply, "TERMINATE"], function_map={"add": add_text})
    if chat == "sync":
        executor.initiate_chat(assistant, message="Add 20 and 22")
    else:
        asyncio.run(executor.a_initiate_chat(assistant, message="Add 20 and 22"))
    receipt, contents = finish(collector)

    assert [r[0] for r in rows(receipt)] == [
        "task", "message", "message", "tool_call", "message", "message", "termination", "close",
    ]  # fmt: skip
    step = next(s for s in receipt["steps"] if s["kind"] == "tool_call")
    assert step["tool"] == "add" and step["agent"] == "executor" and "call_id" not in step
    (call,) = of_kind(receipt, contents, "tool_call")
    assert call["result"] == "42" and "error" not in call and call["call_id"] is None
