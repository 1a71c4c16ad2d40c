"""The agents of the distributed tests: a planner (worker w1) that looks something up and asks
a calculator (worker w2) to add; the calculator also has a handler that stalls after a tool
call, so that its worker can be killed mid-run."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from autogen_core import AgentId, MessageContext, RoutedAgent, message_handler, try_get_known_serializers_for_type
from autogen_core.tools import FunctionTool

from aer1 import Collector
from aer1.collectors import observe_tools

#: Guard on every RPC between agents: the worker runtime never times one out by itself.
RPC_GUARD_S = 30.0


@dataclass
class Plan:
    task: str


@dataclass
class Answer:
    text: str


@dataclass
class Add:
    a: int
    b: int


@dataclass
class Sum:
    value: int


@dataclass
class Stall:
    note: str


MESSAGE_TYPES = (Plan, Answer, Add, Sum, Stall)


def serializers() -> list[Any]:
    """Serializers for every message and result type: every process registers them all."""
    return [s for t in MESSAGE_TYPES for s in try_get_known_serializers_for_type(t)]


def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"{topic}: two numbers, 20 and 22"


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Planner(RoutedAgent):
    """Looks the task up (a tool), then asks the calculator on the other worker."""

    def __init__(self, collector: Collector) -> None:
        super().__init__("plans")
        self._tool = observe_tools([FunctionTool(lookup, description="look up")], collector, agent="planner")[0]

    @message_handler
    async def on_plan(self, message: Plan, ctx: MessageContext) -> Answer:
        found = await self._tool.run_json({"topic": message.task}, ctx.cancellation_token, call_id="p1")
        reply = await asyncio.wait_for(self.send_message(Add(20, 22), AgentId("calculator", "default")), RPC_GUARD_S)
        return Answer(f"{found} -> {reply.value}")


class Calculator(RoutedAgent):
    """Adds with a tool; on Stall, makes one tool call and then never answers."""

    def __init__(self, collector: Collector) -> None:
        super().__init__("adds")
        self._tool = observe_tools([FunctionTool(add, description="add")], collector, agent="calculator")[0]

    @message_handler
    async def on_add(self, message: Add, ctx: MessageContext) -> Sum:
        value = await self._tool.run_json({"a": message.a, "b": message.b}, ctx.cancellation_token, call_id="c1")
        return Sum(int(value))

    @message_handler
    async def on_stall(self, message: Stall, ctx: MessageContext) -> Sum:
        await self._tool.run_json({"a": 1, "b": 1}, ctx.cancellation_token, call_id="c2")
        print("stalling", flush=True)  # the test kills this worker now
        await asyncio.Event().wait()
        return Sum(0)
