"""One reader of content shapes (aer1/_report/_content.py): every collector's shape maps onto the same fields."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aer1._report._content import essentials
from aer1._timeline import evidence_contents
from tests.report.conftest import save, shapes_collector


def fields_of(kind: str, content: Any, **step: Any) -> tuple[dict[str, str], bool]:
    found = essentials(kind, content, **step)
    return found.as_dict(), found.failed


@pytest.mark.parametrize(("content", "want", "failed"), [
    ({"name": "f", "arguments": {"x": 1}, "result": "ok", "is_error": False},  # AgentChat, autogen-core
     {"tool": "f", "arguments": '{"x": 1}', "result": "ok"}, False),
    ({"name": "f", "arguments": {"x": 1}, "result": "boom", "is_error": True},
     {"tool": "f", "arguments": '{"x": 1}', "error": "boom"}, True),
    ({"name": "f", "arguments": '{"x": 1}', "result": "fine", "success": True},  # legacy: the model's JSON text
     {"tool": "f", "arguments": '{"x": 1}', "result": "fine"}, False),
    ({"name": "f", "arguments": "{}", "result": "no", "success": False}, {"tool": "f", "arguments": "{}",
                                                                          "error": "no"}, True),
    ({"arguments": {"x": 1}, "executed": True,
      "result": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
     {"tool": "step-tool", "arguments": '{"x": 1}', "result": "a\nb"}, False),  # Agent Framework
    ({"arguments": {}, "executed": True, "error": {"type": "ValueError", "message": "bad"}},
     {"tool": "step-tool", "arguments": "{}", "error": "bad"}, True),
    ({"arguments": {}, "executed": False}, {"tool": "step-tool", "arguments": "{}"}, True),  # cancelled
])
def test_tool_call_shapes(content: dict[str, Any], want: dict[str, str], failed: bool) -> None:
    assert fields_of("tool_call", content, tool="step-tool") == (want, failed)


def test_message_handoff_selection_approval_and_code() -> None:
    assert fields_of("message", {"type": "TextMessage", "content": "hi"}) == ({"text": "hi"}, False)
    assert fields_of("message", "plain") == ({"text": "plain"}, False)
    assert fields_of("handoff", {"content": "go"}, target="bob")[0] == {"target": "bob", "text": "go"}
    assert fields_of("speaker_selection", {"method": "selector", "selected": ["carol"]})[0] == {
        "choice": '["carol"]', "mechanism": "selector"}
    assert fields_of("speaker_selection", {"participant": "x", "round": 1})[0] == {"choice": "x"}
    assert fields_of("speaker_selection", {"selected": "y", "observed_by": "turn_order"})[0] == {
        "choice": "y", "mechanism": "turn_order"}
    assert fields_of("approval", {"approved": False})[0] == {"decision": "denied"}
    assert fields_of("code_execution", {"exit_code": 3, "output": "boom"})[0] == {"exit_code": "3", "output": "boom"}
    assert fields_of("error", {"error": {"type": "E", "message": "m"}}) == ({"error": "m"}, True)
    assert fields_of("message", None) == ({}, False)


def test_tagged_values_are_restored_before_they_are_shown() -> None:
    assert fields_of("message", {"content": {"$aer1:int": str(2**70)}})[0] == {"text": str(2**70)}


def test_a_recorded_run_reports_failure_exactly_where_its_steps_say_error(tmp_path: Path) -> None:
    path = save(shapes_collector(), tmp_path)
    steps = json.loads(path.read_text())["steps"]
    contents, unread = evidence_contents(str(path.with_suffix(".evidence.jsonl")), 100)
    assert unread is None
    for s in steps[:-1]:  # the close step aside
        found = essentials(s["kind"], contents[s["seq"]], tool=s["tool"], target=s.get("target"))
        assert found.fields, f"got no fields for step {s['seq']} ({s['kind']})"
        assert found.failed == (s["status"] == "error"), f"step {s['seq']}: got failed={found.failed}"


def test_vocabulary_contents_are_read_by_their_members() -> None:
    """aer1-steps/1 contents (spec/steps.md): fields from the vocabulary's names, failure from its error member."""
    v = {"vocabulary": "aer1-steps/1"}
    call = {**v, "name": "lookup", "call_id": "c1", "arguments": {"id": 7}, "result": None,
            "error": {"type": "KeyError", "module": None, "message": "no such id"}, "otel": {"result": "decoy"}}
    assert fields_of("tool_call", call) == ({"tool": "lookup", "arguments": '{"id": 7}', "error": "no such id"}, True)
    ok = {**v, "name": "add", "call_id": None, "arguments": {"a": 1}, "result": [{"type": "text", "text": "3"}]}
    assert fields_of("tool_call", ok) == ({"tool": "add", "arguments": '{"a": 1}', "result": "3"}, False)
    # a member only an old shape used is not read from a vocabulary content
    assert fields_of("message", {**v, "content": None, "message_id": None, "role": None, "model": None,
                                 "text": "not a vocabulary member"}) == ({}, False)
    assert fields_of("handoff", {**v, "target": "bob", "content": "over to you", "message_id": None,
                                 "call_id": None})[0] == {"target": "bob", "text": "over to you"}
    assert fields_of("speaker_selection", {**v, "selected": ["carol"], "mechanism": "model", "candidates": None,
                                           "model_replies": None})[0] == {"choice": "carol", "mechanism": "model"}
    assert fields_of("approval", {**v, "decision": "denied", "approved": False, "name": "pay", "call_id": "p",
                                  "arguments": {}, "responder": "ann"})[0] == {
        "tool": "pay", "arguments": "{}", "decision": "denied"}
    assert fields_of("human_input", {**v, "prompt": "ok?", "input": None, "request_id": None})[0] == {"text": "ok?"}
    assert fields_of("termination", {**v, "outcome": "timeout", "reason": None, "observed": True, "messages": 3,
                                     "step_statuses": {}}) == ({"text": "timeout", "decision": "timeout"}, False)
    assert fields_of("code_execution", {**v, "language": "py", "code_blocks": [], "exit_code": 1, "output": "x",
                                        "error": {"type": "exit_code", "module": None, "message": "exit code 1"}}) \
        == ({"error": "exit code 1", "exit_code": "1", "output": "x"}, True)


def test_the_between_runs_kinds_show_what_happened() -> None:
    from aer1 import _steps_vocab as vocab

    failed_load = vocab.lifecycle("agentchat", operation="load_state", subject="agent",
                                  error=vocab.error_code("tool_error", "bad state"))
    assert fields_of("lifecycle", failed_load) == ({"error": "bad state", "text": "load_state"}, True)
    change = vocab.config_change("agentchat", agent="a", subject="agent", old_digest=None, new_digest="1" * 64,
                                 changed=["tools", "model"])
    assert fields_of("config_change", change) == ({"text": '["model", "tools"]'}, False)
    conflict = vocab.recording_conflict("agentchat", subject="team", name="team:t", other_workflow_ids=["w2", "w1"],
                                        detected="run")
    assert fields_of("recording_conflict", conflict) == ({"text": '["w1", "w2"]'}, False)


def test_the_totals_count_a_step_whose_content_reports_a_failure_as_not_ok(tmp_path: Path) -> None:
    """Trial: the totals' "not ok" counted by status only, so a call whose result says it failed was ok there."""
    import re

    from aer1 import Collector
    from aer1._cli import main

    c = Collector(goal="totals")
    c.record("lookup", {"name": "lookup", "arguments": {}, "result": "found", "is_error": False},
             agent="alice", kind="tool_call", call_id="c1")
    c.record("lookup", {"name": "lookup", "arguments": {}, "result": "boom", "is_error": True},
             agent="alice", kind="tool_call", call_id="c2")  # status ok, content reporting the failure
    c.record("lookup", {"name": "lookup", "arguments": {}, "result": "late"}, agent="alice", kind="tool_call",
             status="error", call_id="c3")
    path = save(c, tmp_path)
    out = tmp_path / "page.html"
    assert main(["report", str(path), "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    tool = re.search(r'<table id="totals-tool">.*?</table>', page, re.S)
    assert tool is not None
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", tool.group(0).split('data-name="lookup"', 1)[1])
    assert cells[1:3] == ["3", "2"], cells  # lookup: 3 calls, 2 not ok: the error status and the reported failure

    index = tmp_path / "site" / "index.html"  # the archive's index counts the same as the receipt's page
    assert main(["report", str(tmp_path), "-o", str(index)]) == 0
    table = re.search(r'<table id="totals-tool">.*?</table>', index.read_text(encoding="utf-8"), re.S)
    assert table is not None
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", table.group(0).split('data-name="lookup"', 1)[1])
    assert cells[1:4] == ["1", "3", "2"], cells  # lookup: 1 receipt, 3 calls, 2 not ok
