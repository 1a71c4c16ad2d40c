"""The core API: SingleThreadedAgentRuntime, the intervention handler, ToolUseAgent and ToolAgent."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from autogen_core import (
    AgentId,
    CancellationToken,
    DefaultInterventionHandler,
    FunctionCall,
    MessageContext,
    RoutedAgent,
    SingleThreadedAgentRuntime,
    TopicId,
    TypeSubscription,
    message_handler,
)
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tool_agent import ToolAgent, tool_agent_caller_loop
from autogen_core.tools import FunctionTool, Tool
from autogen_ext.models.replay import ReplayChatCompletionClient

from aer1 import Collector
from aer1.collectors.autogen_core import AER1InterventionHandler, observe_tools, was_call_recorded

from ...scripted_models import function_calls

Scripted = Callable[[Sequence[str | CreateResult]], ReplayChatCompletionClient]
CLOSE = ("close", "aer1")
RUNTIME = "runtime"


@dataclass
class Ask:
    content: str
    context: Any = None


@dataclass
class Answer:
    content: str


@dataclass
class Finished:
    answer: str


class ToolFailure(RuntimeError):
    """Raised by the failing tool."""


async def get_stock_price(ticker: str, date: str) -> float:
    """A deterministic stock price."""
    return {"NVDA": 140.05}.get(ticker, 1.0)


def broken_feed(ticker: str) -> float:
    """A price feed that is down."""
    raise ToolFailure(f"feed down for {ticker}")


def stock_tools() -> list[Tool]:
    return [
        FunctionTool(get_stock_price, description="Get the stock price."),
        FunctionTool(broken_feed, description="A broken price feed."),
    ]


def kinds(receipt: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["kind"], s["agent"]) for s in receipt["steps"]]


class ToolUseAgent(RoutedAgent):
    """The tool-using agent of the autogen-core tools documentation."""

    def __init__(self, model_client: ChatCompletionClient, tool_schema: list[Tool]) -> None:
        super().__init__("An agent with tools")
        self._system_messages: list[LLMMessage] = [SystemMessage(content="You are a helpful AI assistant.")]
        self._model_client = model_client
        self._tools = tool_schema

    @message_handler
    async def handle_user_message(self, message: Ask, ctx: MessageContext) -> Answer:
        session: list[LLMMessage] = [
            *self._system_messages,
            UserMessage(content=message.content, source="user"),
        ]
        create_result = await self._model_client.create(
            messages=session, tools=self._tools, cancellation_token=ctx.cancellation_token
        )
        if isinstance(create_result.content, str):
            return Answer(content=create_result.content)
        assert isinstance(create_result.content, list)
        calls = [c for c in create_result.content if isinstance(c, FunctionCall)]
        session.append(AssistantMessage(content=calls, source="assistant"))
        results = await asyncio.gather(*[self._execute_tool_call(c, ctx.cancellation_token) for c in calls])
        session.append(FunctionExecutionResultMessage(content=list(results)))
        create_result = await self._model_client.create(messages=session, cancellation_token=ctx.cancellation_token)
        assert isinstance(create_result.content, str)
        return Answer(content=create_result.content)

    async def _execute_tool_call(
        self, call: FunctionCall, cancellation_token: CancellationToken
    ) -> FunctionExecutionResult:
        tool = next(tool for tool in self._tools if tool.name == call.name)
        try:
            arguments = json.loads(call.arguments)
            result = await tool.run_json(arguments, cancellation_token)  # as documented: no call id
            return FunctionExecutionResult(
                call_id=call.id, content=tool.return_value_as_string(result), is_error=False, name=tool.name
            )
        except Exception as e:
            return FunctionExecutionResult(call_id=call.id, content=str(e), is_error=True, name=tool.name)


async def run_tool_use_agent(
    client: ReplayChatCompletionClient, tools: list[Tool], handlers: list[Any] | None
) -> Answer:
    runtime = SingleThreadedAgentRuntime(intervention_handlers=handlers)
    await ToolUseAgent.register(runtime, "tool_use_agent", lambda: ToolUseAgent(client, tools))
    runtime.start()
    answer = await runtime.send_message(
        Ask("What is the stock price of NVDA on 2024/06/01?"), AgentId("tool_use_agent", "default")
    )
    await runtime.stop_when_idle()
    assert isinstance(answer, Answer)
    return answer


TOOL_USE_SCRIPT: list[str | CreateResult] = [
    function_calls(
        FunctionCall(id="c1", name="get_stock_price", arguments='{"ticker": "NVDA", "date": "2024/06/01"}'),
        FunctionCall(id="c2", name="broken_feed", arguments='{"ticker": "NVDA"}'),
    ),
    "NVDA was about 140.05.",
]


async def test_documented_tool_use_agent_with_handler(collector: Collector, finish: Any, scripted: Scripted) -> None:
    plain_client = scripted(TOOL_USE_SCRIPT)
    plain = await run_tool_use_agent(plain_client, stock_tools(), handlers=None)

    client = scripted(TOOL_USE_SCRIPT)
    observed = await run_tool_use_agent(
        client, observe_tools(stock_tools(), collector), handlers=[AER1InterventionHandler(collector)]
    )

    # Same answer, and the model saw the same tools and the same tool results.
    assert observed == plain == Answer("NVDA was about 140.05.")
    seen_tools = [[t.schema for t in c.create_calls[0]["tools"]] for c in (client, plain_client)]
    assert seen_tools[0] == seen_tools[1]
    assert client.create_calls[1]["messages"] == plain_client.create_calls[1]["messages"]

    receipt, evidence = finish(collector, observed.content)
    agent = "tool_use_agent/default"  # the runtime agent running the tools (no agent= given)
    assert kinds(receipt) == [
        ("message", RUNTIME),
        ("tool_call", agent),
        ("tool_call", agent),
        ("message", agent),
        CLOSE,
    ]
    send, price, feed, response = receipt["steps"][:4]
    assert (send["tool"], send["recipient"]) == ("send", agent)
    assert (price["tool"], price["status"]) == ("get_stock_price", "ok")
    assert (feed["tool"], feed["status"]) == ("broken_feed", "error")
    assert "call_id" not in price  # the documented pattern passes no call id to run_json
    assert (response["tool"], response["status"]) == ("response", "ok")
    assert "recipient" not in response  # answered to the application, outside any agent
    assert evidence[1]["content"] == {
        "content": "What is the stock price of NVDA on 2024/06/01?",
        "context": None,
    }
    assert evidence[1]["autogen_core"]["message_type"] == f"{__name__}.Ask"
    assert evidence[1]["autogen_core"]["sender"] is None
    assert evidence[3]["error"] == {"type": "ToolFailure", "module": __name__, "message": "feed down for NVDA"}
    assert evidence[4]["content"] == {"content": "NVDA was about 140.05."}


class Caller(RoutedAgent):
    """Drives a ToolAgent with tool_agent_caller_loop, then publishes what it found."""

    def __init__(self, model_client: ChatCompletionClient, tools: list[Tool]) -> None:
        super().__init__("Calls tools through a tool agent")
        self._model_client = model_client
        self._tools = tools

    @message_handler
    async def handle(self, message: Ask, ctx: MessageContext) -> Answer:
        generated = await tool_agent_caller_loop(
            self,
            tool_agent_id=AgentId("tool_agent", self.id.key),
            model_client=self._model_client,
            input_messages=[UserMessage(content=message.content, source="user")],
            tool_schema=self._tools,
            cancellation_token=ctx.cancellation_token,
        )
        final = generated[-1].content
        assert isinstance(final, str)
        await self.publish_message(Finished(answer=final), topic_id=TopicId("audit", self.id.key))
        return Answer(content=final)


class Auditor(RoutedAgent):
    """Receives the published outcome."""

    def __init__(self, seen: list[Finished]) -> None:
        super().__init__("Keeps the outcomes")
        self._seen = seen

    @message_handler
    async def on_finished(self, message: Finished, ctx: MessageContext) -> None:
        self._seen.append(message)


class Spy(DefaultInterventionHandler):
    """A second handler after ours: sees exactly what ours passed on."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    async def on_send(self, message: Any, *, message_context: MessageContext, recipient: AgentId) -> Any:
        self.seen.append(("send", message))
        return message

    async def on_publish(self, message: Any, *, message_context: MessageContext) -> Any:
        self.seen.append(("publish", message))
        return message

    async def on_response(self, message: Any, *, sender: AgentId, recipient: AgentId | None) -> Any:
        self.seen.append(("response", message))
        return message


CALLER_SCRIPT: list[str | CreateResult] = [
    function_calls(FunctionCall(id="t1", name="get_stock_price", arguments='{"ticker": "NVDA", "date": "2024/06/01"}')),
    function_calls(FunctionCall(id="t2", name="broken_feed", arguments='{"ticker": "NVDA"}')),
    "NVDA: 140.05; the feed is down.",
]


async def run_caller(
    client: ReplayChatCompletionClient, tools: list[Tool], handlers: list[Any], context: Any = None
) -> tuple[Answer, list[Finished]]:
    seen: list[Finished] = []
    runtime = SingleThreadedAgentRuntime(intervention_handlers=handlers)
    await ToolAgent.register(runtime, "tool_agent", lambda: ToolAgent("Runs the stock tools", tools))
    await Caller.register(runtime, "caller", lambda: Caller(client, tools))
    await Auditor.register(runtime, "auditor", lambda: Auditor(seen))
    await runtime.add_subscription(TypeSubscription(topic_type="audit", agent_type="auditor"))
    runtime.start()
    answer = await runtime.send_message(Ask("price of NVDA?", context), AgentId("caller", "default"))
    await runtime.stop_when_idle()
    assert isinstance(answer, Answer)
    return answer, seen


async def test_tool_agent_caller_loop_sends_publishes_and_responses(
    collector: Collector, finish: Any, scripted: Scripted
) -> None:
    plain_spy = Spy()
    plain, plain_seen = await run_caller(scripted(CALLER_SCRIPT), stock_tools(), [plain_spy])

    spy = Spy()
    tools = observe_tools(stock_tools(), collector)
    answer, seen = await run_caller(scripted(CALLER_SCRIPT), tools, [AER1InterventionHandler(collector), spy])

    assert answer == plain == Answer("NVDA: 140.05; the feed is down.")
    assert seen == plain_seen == [Finished("NVDA: 140.05; the feed is down.")]
    # The handler after ours saw the same deliveries with the same values.
    assert [(d, m) for d, m in spy.seen] == [(d, m) for d, m in plain_spy.seen]

    receipt, evidence = finish(collector, answer.content)
    caller, tool_agent = "caller/default", "tool_agent/default"
    assert kinds(receipt) == [
        ("message", RUNTIME),  # send Ask -> caller
        ("message", caller),  # send FunctionCall t1 -> tool agent
        ("tool_call", tool_agent),  # get_stock_price
        ("message", tool_agent),  # response FunctionExecutionResult -> caller
        ("message", caller),  # send FunctionCall t2 -> tool agent
        ("tool_call", tool_agent),  # broken_feed raised: no response, ToolAgent raised instead
        ("message", caller),  # publish Finished on topic audit
        ("message", caller),  # response Answer -> the application
        CLOSE,
    ]
    steps = receipt["steps"]
    assert [s["tool"] for s in steps[:8]] == [
        "send", "send", "get_stock_price", "response", "send", "broken_feed", "publish", "response",
    ]  # fmt: skip
    assert [s.get("call_id") for s in steps[:8]] == [None, None, "t1", None, None, "t2", None, None]
    assert steps[3]["reply_to"] == caller and steps[3]["recipient"] == caller
    assert steps[5]["status"] == "error"
    assert evidence[2]["content"] == {"id": "t1", "name": "get_stock_price", "arguments": json.dumps(
        {"ticker": "NVDA", "date": "2024/06/01"})}  # fmt: skip
    assert evidence[3]["result"] == "140.05"
    assert evidence[4]["content"]["content"] == "140.05"
    assert evidence[7]["autogen_core"]["topic"] == {"type": "audit", "source": "default"}
    assert evidence[7]["content"] == {"answer": "NVDA: 140.05; the feed is down."}
    assert was_call_recorded(collector, "t1") and was_call_recorded(collector, "t2")


async def test_handler_returns_each_message_itself(collector: Collector) -> None:
    handler = AER1InterventionHandler(collector)
    message = Ask("hi")
    context = MessageContext(
        sender=None, topic_id=None, is_rpc=True, cancellation_token=CancellationToken(), message_id="m-1"
    )
    assert await handler.on_send(message, message_context=context, recipient=AgentId("a", "k")) is message
    publish_context = MessageContext(
        sender=AgentId("a", "k"),
        topic_id=TopicId("t", "s"),
        is_rpc=False,
        cancellation_token=CancellationToken(),
        message_id="m-2",
    )
    assert await handler.on_publish(message, message_context=publish_context) is message
    assert await handler.on_response(message, sender=AgentId("a", "k"), recipient=None) is message
    assert collector.step_count == 3


async def test_handler_never_breaks_a_run(
    collector: Collector, finish: Any, scripted: Scripted, caplog: pytest.LogCaptureFixture
) -> None:
    # Two keys with the same JSON text: no canonical form, so recording this content fails.
    clashing = {1: "one", "1": "uno"}
    plain, _ = await run_caller(scripted(CALLER_SCRIPT), stock_tools(), [], context=clashing)

    spy = Spy()
    with caplog.at_level(logging.WARNING, logger="aer1"):
        answer, _ = await run_caller(
            scripted(CALLER_SCRIPT),
            stock_tools(),
            [AER1InterventionHandler(collector), spy],
            context=clashing,
        )
    assert answer == plain
    assert spy.seen[0][1].context is clashing  # passed on, unchanged, despite the failed recording
    assert collector.recording_failures == 1
    assert "failed to record step 'send'" in caplog.text

    receipt, _ = finish(collector, answer.content)
    assert receipt["status"] == "incomplete"
    assert receipt["recording_failures"] == 1
    # The unrecordable send is missing; everything else is there.
    assert kinds(receipt)[0] == ("message", "caller/default")


class UnreliableCollector(Collector):
    """A collector whose safe_record breaks its promise, to exercise the handler's own guard."""

    def safe_record(self, tool: str, content: Any, **kwargs: Any) -> dict[str, Any] | None:
        raise RuntimeError("recorder is broken")


async def test_handler_guard_and_late_records(scripted: Scripted, caplog: pytest.LogCaptureFixture) -> None:
    plain, _ = await run_caller(scripted(CALLER_SCRIPT), stock_tools(), [])
    broken = UnreliableCollector(goal="broken")
    with caplog.at_level(logging.WARNING, logger="aer1"):
        answer, seen = await run_caller(scripted(CALLER_SCRIPT), stock_tools(), [AER1InterventionHandler(broken)])
    assert answer == plain and len(seen) == 1
    assert "could not record a runtime publish" in caplog.text

    closed = Collector(goal="already finalized")
    closed.finalize()
    answer, seen = await run_caller(scripted(CALLER_SCRIPT), stock_tools(), [AER1InterventionHandler(closed)])
    assert answer == plain and len(seen) == 1
    assert closed.late_records == 6  # 3 sends, 1 publish, 2 responses: logged, counted, not recorded
