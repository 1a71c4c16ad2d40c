"""Sub-agents: ``Agent.as_tool`` runs a child agent inside a parent's tool call, tied by its call id."""

from __future__ import annotations

from ag2 import Agent
from ag2.testing import TestConfig

from aer1.collectors.ag2 import AER1AG2Collector

from .conftest import Check
from .support import call, of_kind


async def test_a_sub_agent_is_tied_to_its_parents_call(collector: AER1AG2Collector, check: Check) -> None:
    child = collector.observe(Agent("researcher", config=TestConfig("the answer is 42")))
    parent_config = TestConfig(call("task_researcher", "p1", objective="find the answer"), "it is 42")
    parent = collector.observe(Agent("lead", config=parent_config,
                                     tools=[child.as_tool(description="Research a question.")]))
    reply = await parent.ask("what is the answer?")
    assert reply.body == "it is 42"
    receipt, contents = check(collector)
    order = [(s["agent"], s["kind"], s["tool"]) for s in receipt["steps"][:-1]]
    assert order == [
        ("lead", "task", "task"), ("lead", "message", "message"),
        ("researcher", "task", "task"), ("researcher", "message", "message"),
        ("researcher", "message", "turn_end"),  # the child's run is its parent's turn: no termination of its own
        ("lead", "tool_call", "task_researcher"), ("lead", "message", "message"), ("lead", "termination", "turn_end"),
    ]
    tasks = {s["agent"]: c for s, c in of_kind(receipt, contents, "task")}
    assert tasks["researcher"]["ag2"]["parent"] == {"agent": "lead", "call_id": "p1"}
    assert "parent" not in tasks["lead"]["ag2"]
    assert tasks["researcher"]["ag2"]["run_id"] != tasks["lead"]["ag2"]["run_id"]
    child_steps = [contents[s["seq"]] for s in receipt["steps"][:-1] if s["agent"] == "researcher"]
    assert all(c["nested_in"] == "lead" for c in child_steps)
    assert not any("nested_in" in contents[s["seq"]] for s in receipt["steps"][:-1] if s["agent"] == "lead")
    assert child_steps[-1]["content"] == "the answer is 42" and child_steps[-1]["ag2"]["turn_end"] is True
    [(_, delegated)] = of_kind(receipt, contents, "tool_call")
    assert delegated["result"] == "the answer is 42"
    assert {a["name"] for a in receipt["agents"]} == {"lead", "researcher"}
