"""One agent, one line: tool calls, model replies, failures, streaming, turns, on AG2's scripted model."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import pytest
from ag2 import Agent, MemoryStream, ToolResult, tool
from ag2.annotations import Context
from ag2.config.openai import OpenAIConfig
from ag2.events import ModelMessage, ModelMessageChunk, ModelReasoning, ModelResponse, Usage
from ag2.middleware import BaseMiddleware
from ag2.observers import observer
from ag2.testing import TestConfig

from aer1._canonical import canonical_bytes
from aer1.collectors.ag2 import AER1AG2Collector, agent_config

from .conftest import Check
from .support import call, of_kind, shape, steps


async def add(a: int, b: int) -> int:
    """Add two numbers (async: a batch's calls then settle in a fixed order)."""
    return a + b


async def boom(x: str) -> str:
    """Always fails."""
    raise ValueError(f"boom {x}")


def finish(summary: str) -> ToolResult:
    """Ends the turn with its summary."""
    return ToolResult(summary, final=True)


def _two_tools_script() -> TestConfig:
    return TestConfig([call("add", "c1", a=1, b=2), call("boom", "c2", x="y")], "both done", raise_tool_errors=False)


async def test_two_parallel_tools_one_raising(collector: AER1AG2Collector, check: Check) -> None:
    agent = collector.observe(Agent("alice", "You add.", config=_two_tools_script(), tools=[add, boom]))
    reply = await agent.ask("add and fail")
    assert reply.body == "both done"
    receipt, contents = check(collector)
    kinds = [(k, t) for k, t, *_ in steps(receipt, contents)]
    assert kinds[:2] == [("task", "task"), ("message", "message")]
    assert sorted(kinds[2:4]) == [("tool_call", "add"), ("tool_call", "boom")]  # the two ran concurrently
    assert kinds[4:] == [("message", "message"), ("termination", "turn_end")]
    task = contents[1]
    assert task["vocabulary"] == "aer1-steps/1" and task["task"] == "add and fail" and task["team"] is None
    assert task["ag2"]["input"] == [{"type": "text", "text": "add and fail"}] and task["ag2"]["turn"] == 1
    first = contents[2]
    assert [c["call_id"] for c in first["ag2"]["tool_calls"]] == ["c1", "c2"]
    assert first["ag2"]["tool_calls"][0] == {"call_id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}
    assert first["content"] is None and first["role"] == "assistant" and first["model"]["latency_ms"] >= 0
    assert first["model"]["provider"] == "ag2.testing.TestConfig"  # the config names no provider: its class
    calls = {s["call_id"]: (s, c) for s, c in of_kind(receipt, contents, "tool_call")}
    ok_step, ok = calls["c1"]
    assert ok_step["status"] == "ok" and ok["result"] == 3 and "error" not in ok
    assert ok["ag2"]["source"].startswith("function:") and ok["arguments"] == {"a": 1, "b": 2}
    bad_step, bad = calls["c2"]
    assert bad_step["status"] == "error" and bad["result"] is None
    assert bad["error"] == {"type": "ValueError", "module": "builtins", "message": "boom y"}
    assert "ValueError: boom y" in bad["ag2"]["model_saw"]  # what AG2 told the model: its traceback
    assert contents[5]["content"] == "both done"
    end = contents[6]
    assert (end["outcome"], end["observed"], end["reason"]) == ("finished", True, None)
    assert end["step_statuses"] == {"ok": 4, "error": 1, "cancelled": 0}
    assert end["ag2"]["final"] == "both done" and end["ag2"]["tool_calls"] == 2
    assert end["ag2"]["model_replies"] == 2 and end["ag2"]["run_id"] == task["ag2"]["run_id"]


async def test_a_tool_not_in_the_tool_set(collector: AER1AG2Collector, check: Check) -> None:
    config = TestConfig(call("missing", "c9", q="x"), "sorry", raise_tool_errors=False)
    agent = collector.observe(Agent("alice", config=config, tools=[add]))
    assert (await agent.ask("call something")).body == "sorry"
    receipt, contents = check(collector)
    [(step, content)] = of_kind(receipt, contents, "tool_call")
    assert step["tool"] == "missing" and step["status"] == "error" and step["call_id"] == "c9"
    assert content["ag2"]["outcome"] == "ToolNotFoundEvent" and content["result"] is None
    assert content["arguments"] == {"q": "x"}  # as the model proposed them
    assert content["error"]["type"] == "ToolNotFoundError"  # the exception AG2 put in the event


async def test_a_final_tool_ends_the_turn(collector: AER1AG2Collector, check: Check) -> None:
    config = TestConfig(call("finish", "f1", summary="all done"))
    agent = collector.observe(Agent("alice", config=config, tools=[finish]))
    assert (await agent.ask("finish")).body == "all done"
    receipt, contents = check(collector)
    assert [(k, t) for k, t, *_ in steps(receipt, contents)] == [
        ("task", "task"), ("message", "message"), ("tool_call", "finish"), ("termination", "turn_end")]
    assert contents[3]["ag2"]["final"] is True and contents[3]["result"] == "all done"
    end = contents[4]
    assert end["outcome"] == "finished" and end["reason"] == "final tool result"
    assert end["ag2"]["forced"] is True and end["ag2"]["final"] == "all done" and end["ag2"]["model_replies"] == 1


async def test_a_model_exception_is_a_failed_step_and_the_same_exception_out(
    collector: AER1AG2Collector, check: Check
) -> None:
    failure = ConnectionError("provider down")
    agent = collector.observe(Agent("alice", config=TestConfig(failure)))
    with pytest.raises(ConnectionError) as raised:
        await agent.ask("hello")
    assert raised.value is failure
    receipt, contents = check(collector)
    assert [(k, t, st) for k, t, _, st, _ in steps(receipt, contents)] == [
        ("task", "task", "ok"), ("error", "model_call", "error"), ("termination", "turn_end", "error")]
    assert contents[2]["error"] == {"type": "ConnectionError", "module": "builtins", "message": "provider down"}
    assert contents[2]["phase"] == "model_call"  # the turn's own error is this one: not recorded twice
    assert contents[3]["outcome"] == "error" and contents[3]["error"]["type"] == "ConnectionError"
    assert receipt["status"] == "error"


async def test_streamed_chunks_and_reasoning_are_not_extra_replies(collector: AER1AG2Collector, check: Check) -> None:
    config = TestConfig(ModelReasoning("thinking..."), ModelMessageChunk("Hel"), ModelMessageChunk("lo"), "Hello")
    stream = MemoryStream()
    seen: list[str] = []
    stream.subscribe(lambda event: seen.append(type(event).__name__))
    agent = collector.observe(Agent("alice", config=config))
    assert (await agent.ask("hi", stream=stream)).body == "Hello"
    assert seen.count("ModelMessageChunk") == 2 and "ModelReasoning" in seen  # the stream saw them
    receipt, contents = check(collector)
    replies = of_kind(receipt, contents, "message")
    assert len(replies) == 1 and replies[0][1]["content"] == "Hello"


async def test_a_multi_turn_conversation_on_one_stream(collector: AER1AG2Collector, check: Check) -> None:
    agent = collector.observe(Agent("alice", config=TestConfig("first answer", "second answer")))
    first = await agent.ask("one")
    second = await first.ask("two")
    assert second.body == "second answer"
    receipt, contents = check(collector)
    tasks = [c for _, c in of_kind(receipt, contents, "task")]
    assert [t["ag2"]["turn"] for t in tasks] == [1, 2]
    assert tasks[0]["ag2"]["run_id"] == tasks[1]["ag2"]["run_id"] == str(first.context.stream.id)
    assert [c["content"] for _, c in of_kind(receipt, contents, "message")] == ["first answer", "second answer"]
    assert len(of_kind(receipt, contents, "termination")) == 2


async def test_ctx_input_inside_a_tool(collector: AER1AG2Collector, check: Check) -> None:
    async def ask_human(question: str, ctx: Context) -> str:
        """Ask the human."""
        answer = await ctx.input(f"what is {question}?")
        return f"human said {answer}"

    config = TestConfig(call("ask_human", "h1", question="2+2"), "ok")
    agent = collector.observe(Agent("alice", config=config, tools=[ask_human], hitl_hook=lambda event: "four"))
    assert (await agent.ask("ask")).body == "ok"
    receipt, contents = check(collector)
    kinds = [(k, t) for k, t, *_ in steps(receipt, contents)]
    assert kinds.index(("human_input", "human_input")) < kinds.index(("tool_call", "ask_human"))
    [(_, asked)] = of_kind(receipt, contents, "human_input")
    assert asked["prompt"] == "what is 2+2?" and asked["input"] == "four" and asked["ag2"]["in_call"] == "h1"
    [(_, ran)] = of_kind(receipt, contents, "tool_call")
    assert ran["result"] == "human said four"


async def test_a_recorder_that_raises_leaves_the_agent_unaffected(collector: AER1AG2Collector, check: Check,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    plain = Agent("alice", config=_two_tools_script(), tools=[add, boom])
    expected = shape(await (await plain.ask("add and fail")).history.get_events())
    real_record = collector.record

    def flaky(tool: str, content: Any, **kwargs: Any) -> dict[str, Any]:
        if kwargs.get("kind") in ("message", "tool_call"):
            raise RuntimeError("the recorder broke")
        return real_record(tool, content, **kwargs)

    monkeypatch.setattr(collector, "record", flaky)
    agent = collector.observe(Agent("alice", config=_two_tools_script(), tools=[add, boom]))
    reply = await agent.ask("add and fail")
    assert reply.body == "both done"
    assert shape(await reply.history.get_events()) == expected
    receipt, _ = check(collector, failures=4)  # two replies, two calls
    assert receipt["status"] == "incomplete" and receipt["recording_failures"] == 4


async def test_the_users_middleware_and_observers_keep_their_order(collector: AER1AG2Collector, check: Check) -> None:
    def build(log: list[str]) -> Agent:
        def middleware(label: str) -> Any:
            class Logged(BaseMiddleware):
                async def on_turn(self, call_next: Any, event: Any, context: Any) -> Any:
                    log.append(f"{label}:turn")
                    return await call_next(event, context)

                async def on_tool_execution(self, call_next: Any, event: Any, context: Any) -> Any:
                    log.append(f"{label}:tool")
                    return await call_next(event, context)

            return Logged

        @observer()
        async def watch(event: Any) -> None:
            log.append(f"observed:{type(event).__name__}")

        def tool_hook(label: str) -> Any:
            async def hook(call_next: Any, event: Any, context: Any) -> Any:
                log.append(f"{label}:tool-mw")
                return await call_next(event, context)

            return hook

        gated = tool(add, middleware=[tool_hook("t1"), tool_hook("t2")])
        return Agent("alice", config=TestConfig(call("add", "c1", a=1, b=2), "3"), tools=[gated],
                     middleware=[middleware("m1"), middleware("m2")], observers=[watch])

    alone: list[str] = []
    await build(alone).ask("go")
    observed: list[str] = []
    agent = build(observed)
    before_mw = [e.middleware for e in agent.middleware]
    before_obs = list(agent.observers)
    assert collector.observe(agent) is agent
    assert collector.observe(agent) is agent  # once per collector
    assert [e.middleware for e in agent.middleware][1:] == before_mw and len(agent.middleware) == 3
    assert list(agent.observers) == before_obs
    await agent.ask("go")
    assert observed == alone and "m1:turn" in observed
    check(collector)


async def test_concurrent_asks_on_separate_streams(collector: AER1AG2Collector, check: Check) -> None:
    agent = collector.observe(Agent("alice", config=TestConfig(call("add", "c1", a=2, b=3), "five"), tools=[add]))
    replies = await asyncio.gather(*(agent.ask(f"question {i}") for i in range(4)))
    assert [r.body for r in replies] == ["five"] * 4
    receipt, contents = check(collector)
    tasks = [c["ag2"]["run_id"] for _, c in of_kind(receipt, contents, "task")]
    ends = [c["ag2"]["run_id"] for _, c in of_kind(receipt, contents, "termination")]
    assert len(set(tasks)) == 4 and sorted(tasks) == sorted(ends)
    assert {str(r.context.stream.id) for r in replies} == set(tasks)
    assert len(of_kind(receipt, contents, "tool_call")) == 4
    assert {c["ag2"]["final"] for _, c in of_kind(receipt, contents, "termination")} == {"five"}


async def test_no_secret_in_any_digest(collector: AER1AG2Collector, check: Check) -> None:
    secret = "sk-live-DO-NOT-LEAK-0123456789abcdef"
    agent = Agent("alice", "You add.", config=OpenAIConfig(model="gpt-x", api_key=secret), tools=[add])
    config = agent_config(agent)
    assert secret.encode() not in canonical_bytes(config)
    assert config["model"] == {"config_type": "ag2.config.openai.config.OpenAIConfig", "provider": "openai",
                               "model": "gpt-x"}
    other = Agent("alice", "You add.", config=OpenAIConfig(model="gpt-x", api_key="sk-another-key"), tools=[add])
    assert agent_config(other) == config  # the key changes nothing hashed
    collector.observe(agent)
    [listed] = collector.finalize("done")["agents"]
    assert listed["config_digest"] == hashlib.sha256(canonical_bytes(config)).hexdigest()
    assert secret not in str(listed)
    check(collector)


async def test_the_same_run_unobserved_gives_the_same_events_and_results(collector: AER1AG2Collector,
                                                                          check: Check) -> None:
    plain = Agent("alice", config=_two_tools_script(), tools=[add, boom])
    unobserved = await plain.ask("add and fail")
    agent = collector.observe(Agent("alice", config=_two_tools_script(), tools=[add, boom]))
    observed = await agent.ask("add and fail")
    assert observed.body == unobserved.body
    assert shape(await observed.history.get_events()) == shape(await unobserved.history.get_events())
    check(collector)


async def test_a_reply_names_its_model_provider_tokens_and_finish_reason(collector: AER1AG2Collector,
                                                                         check: Check) -> None:
    response = ModelResponse(ModelMessage("hi"), usage=Usage(prompt_tokens=7, completion_tokens=3),
                             model="gpt-x-2026-01", provider="openai", finish_reason="stop", response_id="resp-1")
    config = TestConfig(response, provider="openai", model="gpt-x")
    agent = collector.observe(Agent("alice", config=config))
    assert (await agent.ask("hello")).body == "hi"
    receipt, contents = check(collector)
    [(_, reply)] = of_kind(receipt, contents, "message")
    model = reply["model"]
    assert {k: model[k] for k in ("provider", "request_model", "response_model", "input_tokens", "output_tokens",
                                  "finish_reasons")} == {
        "provider": "openai", "request_model": "gpt-x", "response_model": "gpt-x-2026-01", "input_tokens": 7,
        "output_tokens": 3, "finish_reasons": ["stop"]}
    assert model["latency_ms"] >= 0 and reply["message_id"] == "resp-1" and reply["content"] == "hi"
    assert reply["ag2"]["usage"] == {"prompt_tokens": 7, "completion_tokens": 3}
