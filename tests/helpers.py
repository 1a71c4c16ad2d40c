"""Receipts for tests: a small honest workflow recorded through the public API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aer1 import Collector

KEYS = Path(__file__).parent / "fixtures" / "keys"


def make_collector(**options: Any) -> Collector:
    """A collector with a short scripted multi-agent run recorded (not finalized)."""
    c = Collector(goal="Plan the product launch", **options)
    c.register_agent("alice", type="AssistantAgent", description="planner", config={"model": "m1"})
    c.register_agent("bob", type="AssistantAgent", description="reviewer", config={"model": "m1"})
    c.record("task", {"task": "Plan the product launch"}, agent="user")
    c.record("message", {"type": "TextMessage", "content": "draft"}, agent="alice", reply_to="user")
    c.record("lookup", {"arguments": {"q": "dates"}, "result": [1, 2.5], "is_error": False}, agent="alice",
             call_id="call_1")
    c.record("handoff", {"target": "bob"}, agent="alice", target="bob")
    c.record("message", {"type": "TextMessage", "content": "ok TERMINATE"}, agent="bob", reply_to="alice")
    return c


def make_receipt(**options: Any) -> dict[str, Any]:
    """A finalized honest receipt."""
    return make_collector(**options).finalize(final_answer="ok TERMINATE")
