"""The five orchestrations, built from scripted agents, and what their events look like."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from agent_framework import Agent, AgentResponse, AgentResponseUpdate, Message, Workflow, WorkflowEvent, tool
from agent_framework.orchestrations import (
    ConcurrentBuilder,
    GroupChatBuilder,
    GroupChatState,
    HandoffBuilder,
    MagenticBuilder,
    SequentialBuilder,
)

from .scripted import Call, ScriptedChatClient, Turn


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent(name: str, script: Sequence[Turn], **kwargs: Any) -> Agent[Any]:
    return Agent(client=ScriptedChatClient(script), name=name, description=f"{name} helps", **kwargs)


def sequential() -> tuple[Workflow, list[Agent[Any]]]:
    alice = agent("alice", [Call("add", {"a": 1, "b": 2}, "c1"), "three"], tools=[add])
    bob = agent("bob", ["bob agrees"])
    return SequentialBuilder(participants=[alice, bob]).build(), [alice, bob]


def concurrent() -> tuple[Workflow, list[Agent[Any]]]:
    alice = agent("alice", ["alice answers"])
    bob = agent("bob", ["bob answers"])
    return ConcurrentBuilder(participants=[alice, bob]).build(), [alice, bob]


def group_chat() -> tuple[Workflow, list[Agent[Any]]]:
    alice = agent("alice", ["a1", "a2"])
    bob = agent("bob", ["b1"])

    def select(state: GroupChatState) -> str:
        return ["alice", "bob", "alice"][state.current_round % 3]

    return GroupChatBuilder(participants=[alice, bob], selection_func=select, max_rounds=3).build(), [alice, bob]


def bob_spoke(conversation: list[Message]) -> bool:
    return any(m.author_name == "bob" for m in conversation)


def handoff() -> tuple[Workflow, list[Agent[Any]]]:
    flag = {"require_per_service_call_history_persistence": True}
    alice = agent("alice", [Call("handoff_to_bob", {}, "h1")], **flag)
    bob = agent("bob", [Call("add", {"a": 2, "b": 2}, "c2"), "four"], tools=[add], **flag)
    workflow = HandoffBuilder(participants=[alice, bob], termination_condition=bob_spoke).with_start_agent(alice)
    return workflow.build(), [alice, bob]


def ledger(done: bool, speaker: str, instruction: str) -> str:
    def item(answer: object) -> dict[str, object]:
        return {"reason": "scripted", "answer": answer}

    return json.dumps({"is_request_satisfied": item(done), "is_in_loop": item(False),
                       "is_progress_being_made": item(True), "next_speaker": item(speaker),
                       "instruction_or_question": item(instruction)})


def magentic() -> tuple[Workflow, list[Agent[Any]]]:
    alice = agent("alice", ["a1"])
    bob = agent("bob", ["b1"])
    manager = agent("manager", ["facts", "plan", ledger(False, "alice", "go a"), ledger(False, "bob", "go b"),
                                ledger(True, "alice", "done"), "final answer"])
    workflow = MagenticBuilder(participants=[alice, bob], manager_agent=manager, max_round_count=5).build()
    return workflow, [alice, bob, manager]


ORCHESTRATIONS = {"sequential": sequential, "concurrent": concurrent, "group_chat": group_chat,
                  "handoff": handoff, "magentic": magentic}


def _data(data: Any) -> Any:
    if isinstance(data, (AgentResponse, AgentResponseUpdate)):
        return (type(data).__name__, data.text)
    if isinstance(data, list):
        return [_data(d) for d in data]
    if isinstance(data, Message):
        return (data.role, data.author_name, data.text)
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        return (type(data).__name__, {f.name: _data(getattr(data, f.name)) for f in dataclasses.fields(data)})
    if data is None or isinstance(data, (str, int, float, bool)):
        return data
    return type(data).__name__


def signature(event: WorkflowEvent[Any]) -> tuple[Any, ...]:
    """What a caller sees of an event: type, executor, state, iteration and payload."""
    return (event.type, event.executor_id, event.state, event.iteration, _data(event.data))
