"""observe_tools: FunctionTools, plain callables, workbenches and AssistantAgent, all real and offline."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import CreateResult
from autogen_core.tools import (
    BaseStreamTool,
    BaseTool,
    FunctionTool,
    StaticStreamWorkbench,
    StaticWorkbench,
    ToolOverride,
    Workbench,
)
from autogen_ext.models.replay import ReplayChatCompletionClient
from pydantic import BaseModel

from aer1 import Collector
from aer1.collectors.autogen_core import RUNTIME_ACTOR, observe_tools, was_call_recorded

from ...scripted_models import function_calls

SLOW_TOOL_SECONDS = 0.2
CLOSE = ("close", "aer1")


class ToolFailure(RuntimeError):
    """Raised by the failing tool."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def lookup_price(ticker: str) -> float:
    """Look up a price (slowly)."""
    await asyncio.sleep(SLOW_TOOL_SECONDS)
    return 42.5 if ticker == "NVDA" else 7.0


raised: list[BaseException] = []


def fail(reason: str) -> str:
    """Always fails."""
    exc = ToolFailure(reason)
    raised.append(exc)
    raise exc


def plain_tools() -> list[Any]:
    return [
        FunctionTool(add, description="Add two integers."),
        FunctionTool(lookup_price, description="Look up a price."),
        fail,  # a plain callable, as AssistantAgent accepts it
    ]


def kinds(receipt: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["kind"], s["agent"]) for s in receipt["steps"]]


def by_call(receipt: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["call_id"]: s for s in receipt["steps"] if "call_id" in s}


def when(stamp: str) -> dt.datetime:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def calls_result(calls: Sequence[FunctionCall], text: str = "done") -> list[str | CreateResult]:
    return [function_calls(*calls), text]


async def test_schemas_and_identity_are_preserved(collector: Collector) -> None:
    originals = plain_tools()
    observed = observe_tools(originals, collector, agent="alice")
    assert isinstance(observed, list) and len(observed) == 3
    expected = [*originals[:2], FunctionTool(fail, description=fail.__doc__ or "")]
    for tool, ref in zip(observed, expected, strict=True):
        assert isinstance(tool, BaseTool)
        assert tool.name == ref.name
        assert tool.description == ref.description
        assert tool.schema == ref.schema
        assert tool.args_type().model_json_schema() == ref.args_type().model_json_schema()
        assert tool.return_type() is ref.return_type()
        assert tool.state_type() is ref.state_type()
        assert tool.dump_component() == ref.dump_component()
    for tool, ref in zip(observed[:2], originals[:2], strict=True):
        assert tool.args_type() is ref.args_type()  # the very same argument model
    # Observing again for the same collector does not stack a second recorder.
    assert observe_tools(observed, collector, agent="alice") == observed
    assert collector.step_count == 0


async def test_direct_runs_record_one_step_each_with_own_timing(collector: Collector, finish: Any) -> None:
    add_tool, price_tool, _ = observe_tools(plain_tools(), collector, agent="alice")
    token = CancellationToken()
    assert await add_tool.run_json({"a": 2, "b": 3}, token, call_id="c-add") == 5
    assert await price_tool.run_json({"ticker": "NVDA"}, token, call_id="c-price") == 42.5
    assert await add_tool.run_json({"a": 1, "b": 1}, token) == 2  # no call id given

    receipt, evidence = finish(collector)
    assert kinds(receipt) == [("tool_call", "alice")] * 3 + [CLOSE]
    first, second, third = receipt["steps"][:3]
    assert (first["tool"], first["call_id"], first["status"]) == ("add", "c-add", "ok")
    assert (second["tool"], second["call_id"]) == ("lookup_price", "c-price")
    assert "call_id" not in third
    assert evidence[1] == {
        "vocabulary": "aer1-steps/1",
        "name": "add",
        "call_id": "c-add",
        "arguments": {"a": 2, "b": 3},
        "result": "5",
    }
    assert evidence[2]["result"] == "42.5"
    assert evidence[3]["call_id"] is None
    elapsed = when(second["ended_at"]) - when(second["started_at"])
    assert elapsed >= dt.timedelta(seconds=SLOW_TOOL_SECONDS)
    assert was_call_recorded(collector, "c-add", consume=False)
    assert was_call_recorded(collector, "c-add")
    assert not was_call_recorded(collector, "c-add")  # each recording answers once
    assert not was_call_recorded(collector, "never-made")


async def test_raising_tool_records_and_reraises_unchanged(collector: Collector, finish: Any) -> None:
    failing = observe_tools([fail], collector, agent="alice")[0]
    raised.clear()
    with pytest.raises(ToolFailure) as info:
        await failing.run_json({"reason": "boom"}, CancellationToken(), call_id="c-fail")
    assert info.value is raised[0]

    receipt, evidence = finish(collector)
    assert kinds(receipt) == [("tool_call", "alice"), CLOSE]
    assert receipt["steps"][0]["status"] == "error"
    assert receipt["status"] == "ok"  # a tool that raised is its step's error, not the run's (spec/steps.md)
    assert evidence[1] == {
        "vocabulary": "aer1-steps/1",
        "name": "fail",
        "call_id": "c-fail",
        "arguments": {"reason": "boom"},
        "result": None,
        "error": {"type": "ToolFailure", "module": __name__, "message": "boom"},
    }


async def test_cancelled_tool_is_recorded_as_cancelled(collector: Collector, finish: Any) -> None:
    started = asyncio.Event()

    async def wait_forever(topic: str) -> str:
        started.set()
        await asyncio.Event().wait()
        return topic

    tool = observe_tools([FunctionTool(wait_forever, description="Never returns.")], collector, agent="bob")[0]
    token = CancellationToken()
    task = asyncio.ensure_future(tool.run_json({"topic": "x"}, token, call_id="c-wait"))
    token.link_future(task)
    await started.wait()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    receipt, evidence = finish(collector)
    assert kinds(receipt) == [("tool_call", "bob"), CLOSE]
    assert receipt["steps"][0]["status"] == "cancelled"
    assert evidence[1]["error"]["type"] == "CancelledError"
    assert evidence[1]["result"] is None


def shape(result: TaskResult) -> list[tuple[str, str, Any]]:
    return [(type(m).__name__, m.source, getattr(m, "content", None)) for m in result.messages]


async def run_agent(client: ReplayChatCompletionClient, **options: Any) -> TaskResult:
    agent = AssistantAgent("alice", model_client=client, **options)
    return await agent.run(task="work out the numbers")


PARALLEL_CALLS = [
    FunctionCall(id="call-1", name="add", arguments='{"a": 2, "b": 3}'),
    FunctionCall(id="call-2", name="lookup_price", arguments='{"ticker": "NVDA"}'),
    FunctionCall(id="call-3", name="lookup_price", arguments='{"ticker": "MSFT"}'),
    FunctionCall(id="call-4", name="fail", arguments='{"reason": "boom"}'),
    FunctionCall(id="call-5", name="missing_tool", arguments="{}"),
    FunctionCall(id="call-6", name="add", arguments="{not json"),
]


@pytest.mark.parametrize("reflect", [False, True])
async def test_assistant_agent_parallel_calls_are_invisible_and_recorded(
    collector: Collector,
    finish: Any,
    scripted: Callable[[Sequence[str | CreateResult]], ReplayChatCompletionClient],
    reflect: bool,
) -> None:
    plain_client = scripted(calls_result(PARALLEL_CALLS))
    plain = await run_agent(plain_client, tools=plain_tools(), reflect_on_tool_use=reflect)

    observed_client = scripted(calls_result(PARALLEL_CALLS))
    observed = await run_agent(
        observed_client,
        tools=observe_tools(plain_tools(), collector, agent="alice"),
        reflect_on_tool_use=reflect,
    )

    # The model saw the same tools and the agent produced the same messages.
    assert observed_client.create_calls[0]["tools"] == plain_client.create_calls[0]["tools"]
    assert shape(observed) == shape(plain)
    assert observed.stop_reason == plain.stop_reason

    receipt, evidence = finish(collector)
    # Four calls reached a tool; the unknown tool and the malformed arguments never did.
    assert kinds(receipt) == [("tool_call", "alice")] * 4 + [CLOSE]
    calls = by_call(receipt)
    assert sorted(calls) == ["call-1", "call-2", "call-3", "call-4"]
    assert {cid: s["status"] for cid, s in calls.items()} == {
        "call-1": "ok",
        "call-2": "ok",
        "call-3": "ok",
        "call-4": "error",
    }
    results = {evidence[s["seq"]]["call_id"]: evidence[s["seq"]]["result"] for s in receipt["steps"][:4]}
    assert results == {"call-1": "5", "call-2": "42.5", "call-3": "7.0", "call-4": None}
    # Each slow call carries its own timing, and the two overlapped (they ran in parallel).
    slow = [calls["call-2"], calls["call-3"]]
    for step in slow:
        assert when(step["ended_at"]) - when(step["started_at"]) >= dt.timedelta(seconds=SLOW_TOOL_SECONDS)
    assert max(when(s["started_at"]) for s in slow) < min(when(s["ended_at"]) for s in slow)
    # What the AgentChat wrapper's event pairing skips (recorded here), and what it records itself.
    assert [was_call_recorded(collector, f"call-{n}") for n in range(1, 7)] == [True] * 4 + [False] * 2


async def test_assistant_agent_config_is_unchanged(
    collector: Collector, scripted: Callable[[Sequence[str | CreateResult]], ReplayChatCompletionClient]
) -> None:
    client = scripted(["ok"])
    plain = AssistantAgent("alice", model_client=client, tools=plain_tools())
    observed = AssistantAgent(
        "alice", model_client=client, tools=observe_tools(plain_tools(), collector, agent="alice")
    )
    assert observed.dump_component() == plain.dump_component()


async def test_static_workbench_keeps_class_overrides_and_records(
    collector: Collector,
    finish: Any,
    scripted: Callable[[Sequence[str | CreateResult]], ReplayChatCompletionClient],
) -> None:
    def make() -> StaticWorkbench:
        return StaticWorkbench(
            [FunctionTool(add, description="Add two integers.")],
            tool_overrides={"add": ToolOverride(name="plus", description="Sum.")},
        )

    original = make()
    observed = observe_tools(original, collector, agent="bob")
    assert type(observed) is StaticWorkbench
    assert await observed.list_tools() == await original.list_tools()
    assert observed.dump_component() == original.dump_component()

    calls = [FunctionCall(id="wb-1", name="plus", arguments='{"a": 4, "b": 5}')]
    plain_result = await AssistantAgent("bob", model_client=scripted(calls_result(calls)), workbench=make()).run(
        task="sum"
    )
    result = await AssistantAgent("bob", model_client=scripted(calls_result(calls)), workbench=observed).run(task="sum")
    assert shape(result) == shape(plain_result)

    receipt, evidence = finish(collector)
    assert kinds(receipt) == [("tool_call", "bob"), CLOSE]
    step = receipt["steps"][0]
    assert (step["tool"], step["call_id"], step["status"]) == ("plus", "wb-1", "ok")
    assert evidence[1]["arguments"] == {"a": 4, "b": 5}
    assert evidence[1]["result"] == "9"


class CountArgs(BaseModel):
    n: int


class Progress(BaseModel):
    done: int


class CountResult(BaseModel):
    total: int


class Counter(BaseStreamTool[CountArgs, Progress, CountResult]):
    """A streaming tool: reports progress, then its result."""

    def __init__(self) -> None:
        super().__init__(CountArgs, CountResult, "count", "Counts up, reporting progress.")

    async def run(self, args: CountArgs, cancellation_token: CancellationToken) -> CountResult:
        return CountResult(total=args.n)

    async def run_stream(
        self, args: CountArgs, cancellation_token: CancellationToken
    ) -> AsyncGenerator[Progress | CountResult, None]:
        for i in range(args.n):
            yield Progress(done=i + 1)
        yield CountResult(total=args.n)


class TracingStreamWorkbench(StaticStreamWorkbench):
    """A StaticStreamWorkbench subclass: observed by delegation, streaming kept."""


async def stream(workbench: Any, call_id: str) -> list[Any]:
    return [item async for item in workbench.call_tool_stream("count", {"n": 2}, call_id=call_id)]


async def test_stream_tools_and_stream_workbenches(collector: Collector, finish: Any) -> None:
    expected = await stream(StaticStreamWorkbench([Counter()]), "plain")
    assert [type(i).__name__ for i in expected] == ["Progress", "Progress", "ToolResult"]

    rebuilt = observe_tools(StaticStreamWorkbench([Counter()]), collector, agent="carol")
    assert type(rebuilt) is StaticStreamWorkbench
    assert await stream(rebuilt, "st-1") == expected
    delegated = observe_tools(TracingStreamWorkbench([Counter()]), collector, agent="carol")
    assert type(delegated) is not TracingStreamWorkbench
    assert await stream(delegated, "st-2") == expected

    receipt, evidence = finish(collector)
    assert kinds(receipt) == [("tool_call", "carol")] * 2 + [CLOSE]
    # The rebuilt workbench observes the tool's own stream (two progress items and the result);
    # the delegating one observes the workbench's stream (two progress items and the ToolResult).
    assert [evidence[n]["autogen_core"]["streamed"] for n in (1, 2)] == [3, 3]
    assert [evidence[n]["result"] for n in (1, 2)] == ['{"total": 2}'] * 2
    assert [was_call_recorded(collector, c) for c in ("st-1", "st-2")] == [True, True]


class TracingWorkbench(StaticWorkbench):
    """A StaticWorkbench subclass: observed by delegation, not rebuilt."""

    def __init__(self, tools: list[BaseTool[Any, Any]]) -> None:
        super().__init__(tools)
        self.calls: list[str] = []

    async def call_tool(
        self,
        name: str,
        arguments: Any = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> Any:
        self.calls.append(name)
        return await super().call_tool(name, arguments, cancellation_token, call_id)


async def test_other_workbenches_are_observed_by_delegation(collector: Collector, finish: Any) -> None:
    inner = TracingWorkbench([FunctionTool(add, description="Add two integers."), FunctionTool(fail, "Fails.")])
    observed = observe_tools(inner, collector, agent=None)
    assert isinstance(observed, Workbench) and observed is not inner
    assert await observed.list_tools() == await inner.list_tools()
    async with observed as entered:
        assert entered is observed
        ok = await observed.call_tool("add", {"a": 1, "b": 2}, call_id="d-1")
        bad = await observed.call_tool("fail", {"reason": "no"}, call_id="d-2")
        missing = await observed.call_tool("nope", {}, call_id="d-3")
    assert (ok.to_text(), ok.is_error) == ("3", False)
    assert (bad.to_text(), bad.is_error) == ("no", True)
    assert missing.is_error
    assert inner.calls == ["add", "fail", "nope"]  # the subclass's own code ran
    delegated: Any = observed
    assert delegated.calls is inner.calls  # other attributes are delegated

    receipt, evidence = finish(collector)
    # No agent given and no runtime handler running: the runtime actor.
    assert kinds(receipt) == [("tool_call", RUNTIME_ACTOR)] * 3 + [CLOSE]
    assert [s["status"] for s in receipt["steps"][:3]] == ["ok", "error", "error"]
    assert [evidence[n]["result"] for n in (1, 2, 3)] == ["3", None, None]
    assert [evidence[n]["error"] for n in (2, 3)] == [
        {"type": "tool_error", "module": None, "message": "no"},
        {"type": "tool_error", "module": None, "message": "Tool nope not found."}]


def test_observe_tools_rejects_other_things(collector: Collector) -> None:
    not_a_tool: Any = 42
    with pytest.raises(TypeError, match="observe_tools expects"):
        observe_tools(not_a_tool, collector)
    with pytest.raises(TypeError, match="cannot observe"):
        observe_tools([not_a_tool], collector)
