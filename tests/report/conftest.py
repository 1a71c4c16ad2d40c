"""Receipts for the report tests: honest, hostile, tampered, with a policy they break."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aer1 import Collector
from tests.helpers import make_collector

#: Content that would run if a page ever treated receipt or evidence text as markup.
HOSTILE_SCRIPT = "<script>window.__pwned = 1</script>"
HOSTILE_ATTRIBUTE = '"><img src=x onerror="window.__pwned = 2">'
#: A policy the helpers' run breaks: bob may not act; tool calls need an approval first.
POLICY = """format = "aer1-policy-v1"
name = "report test"
[allow]
agents = ["alice", "user", "team:*"]
[[rule]]
name = "tool calls approved first"
form = "approved_before"
kind = "tool_call"
"""


def save(c: Collector, folder: Path, name: str = "receipt") -> Path:
    """Finalize ``c`` and write its receipt and evidence into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    c.save(str(path), workflow=c.finalize(final_answer="ok TERMINATE"))
    return path


def hostile_collector(goal: str = HOSTILE_ATTRIBUTE) -> Collector:
    """A run whose goal, agent names and tool result carry markup and script."""
    c = Collector(goal=goal)
    c.record("task", {"task": HOSTILE_SCRIPT}, agent="user")
    c.record("lookup", {"arguments": {"q": HOSTILE_ATTRIBUTE}, "result": HOSTILE_SCRIPT + HOSTILE_ATTRIBUTE},
             agent=HOSTILE_ATTRIBUTE, call_id="c1")
    c.record("handoff", {"target": "<b>bob</b>"}, agent=HOSTILE_ATTRIBUTE, target="<b>bob</b>")
    c.record("message", {"content": "x" * 50_000, "api_key": "sk-not-a-real-key"}, agent="<b>bob</b>")
    c.record("approval", {"decision": "approved", "reason": "fine"}, agent="<b>bob</b>")
    c.record("code_execution", {"exit_code": 3, "output": "boom"}, agent="<b>bob</b>")
    return c


@pytest.fixture
def honest_receipt(tmp_path: Path) -> Path:
    return save(make_collector(), tmp_path / "honest")


@pytest.fixture
def hostile_receipt(tmp_path: Path) -> Path:
    return save(hostile_collector(), tmp_path / "hostile")


@pytest.fixture
def tampered_receipt(tmp_path: Path) -> Path:
    """The helpers' run with step 3's end time edited after the fact."""
    path = save(make_collector(), tmp_path / "tampered")
    doc = json.loads(path.read_text())
    doc["steps"][2]["ended_at"] = "2030-01-01T00:00:00.000000Z"
    path.write_text(json.dumps(doc, indent=2))
    return path


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    return path


#: A team id as long as AgentChat's (its actor is ``team:<name>:<uuid>``): shown shortened, whole on hover and copy.
LONG_TEAM = "team:research:" + "0f3c9a2e-5b7d-4e11-9c3a-" + "7d2f1e0b9a8c" * 3


def shapes_collector(hostile: str = "") -> Collector:
    """One step of every content shape the views read: AgentChat, legacy and Agent Framework tool calls (one
    failed each way), a message, a handoff, a speaker selection and an approval. ``hostile`` is put in every
    field a view shows (names, tools, arguments, results, errors, targets, choices, mechanisms)."""
    h = hostile
    c = Collector(goal=f"compare weather{h}")
    c.record("task", {"task": f"weather in Paris and Rome{h}"}, agent="user")
    c.record(f"get_weather{h}", {"name": f"get_weather{h}", "call_id": "c1", "arguments": {"city": f"Paris{h}"},
                                 "result": f"sunny, 21C{h}", "is_error": False},
             agent=f"alice{h}", kind="tool_call", call_id="c1")
    c.record(f"get_weather{h}", {"name": f"get_weather{h}", "arguments": f'{{"city": "Atlantis{h}"}}',
                                 "result": f"no such city{h}", "success": False},
             agent=f"alice{h}", kind="tool_call", status="error", call_id="c2")
    c.record(f"forecast{h}", {"arguments": {"city": "Rome", "days": 3}, "executed": True,
                              "result": [{"type": "text", "text": f"rain{h}"}, {"type": "text", "text": "then sun"}]},
             agent=f"bob{h}", kind="tool_call", call_id="c3")
    c.record(f"forecast{h}", {"arguments": {"city": "Oslo"}, "executed": True,
                              "error": {"type": "TimeoutError", "message": f"upstream timed out{h}"}},
             agent=f"bob{h}", kind="tool_call", status="error", call_id="c4")
    c.record("message", {"type": "TextMessage", "content": f"Paris is sunny, Rome rainy{h}"}, agent=f"bob{h}")
    c.record("handoff", {"target": f"carol{h}", "content": "over to you"}, agent=f"bob{h}", target=f"carol{h}")
    c.record("speaker_selection", {"method": f"round_robin{h}", "selected": f"carol{h}", "round": 3},
             agent=LONG_TEAM + h, kind="speaker_selection", target=f"carol{h}")
    c.record("approval", {"decision": "approved", "reason": f"fine{h}"}, agent=f"carol{h}")
    return c
