"""``aer1 diff``: two runs of one task aligned step by step; exit 0 same, 1 differ, 2 unreadable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aer1 import Collector
from tests.report.conftest import HOSTILE_ATTRIBUTE, HOSTILE_SCRIPT, save
from tests.report.test_page import Elements, run


def weather_run(city: str = "Rome", *, drop_message: bool = False, swap: bool = False) -> Collector:
    """A small run of one task; each argument changes it in one way."""
    c = Collector(goal="weather report")
    c.record("task", {"task": "weather in Paris and Rome"}, agent="user")
    calls = [("Paris", "sunny"), (city, "rainy")]
    for name, result in reversed(calls) if swap else calls:
        c.record("get_weather", {"name": "get_weather", "arguments": {"city": name}, "result": result,
                                 "is_error": False}, agent="alice", kind="tool_call")
    if not drop_message:
        c.record("message", {"type": "TextMessage", "content": "Paris sunny, Rome rainy"}, agent="alice")
    c.record("message", {"type": "TextMessage", "content": "TERMINATE"}, agent="bob")
    return c


def pair(tmp_path: Path, b: Collector, a: Collector | None = None) -> tuple[Path, Path]:
    return save(a or weather_run(), tmp_path / "a"), save(b, tmp_path / "b")


def diff_json(a: Path, b: Path) -> tuple[int, dict]:  # type: ignore[type-arg]
    code, out, err = run(["diff", "--json", str(a), str(b)])
    assert "Traceback" not in out + err
    return code, json.loads(out)


def test_a_receipt_against_itself_is_the_same(tmp_path: Path) -> None:
    a = save(weather_run(), tmp_path)
    code, out, _ = run(["diff", str(a), str(a)])
    assert code == 0, out
    assert out.splitlines()[-1] == "6 same, 0 changed, 0 removed, 0 added, 0 moved"
    code, doc = diff_json(a, a)
    assert code == 0 and doc["same"] is True and [s["op"] for s in doc["steps"]] == ["same"] * 6


def test_two_runs_of_one_task_with_the_same_steps_match(tmp_path: Path) -> None:
    code, doc = diff_json(*pair(tmp_path, weather_run()))
    assert code == 0 and doc["counts"]["same"] == 6, doc["counts"]


def test_one_tool_argument_differs(tmp_path: Path) -> None:
    a, b = pair(tmp_path, weather_run(city="Roma"))
    code, doc = diff_json(a, b)
    assert code == 1 and doc["same"] is False
    changed = [s for s in doc["steps"] if s["op"] != "same"]
    assert len(changed) == 1 and (changed[0]["a"], changed[0]["b"], changed[0]["op"]) == (3, 3, "changed")
    assert changed[0]["changes"] == [{"field": "arguments", "a": '{"city": "Rome"}', "b": '{"city": "Roma"}'}]
    code, out, _ = run(["diff", str(a), str(b)])
    assert code == 1
    assert "~     3     3  tool_call         alice [get_weather]" in out
    assert 'arguments: {"city": "Rome"}' in out and '-> {"city": "Roma"}' in out


def test_a_missing_step_is_removed(tmp_path: Path) -> None:
    code, doc = diff_json(*pair(tmp_path, weather_run(drop_message=True)))
    assert code == 1
    ops = [(s["op"], s["a"], s["b"]) for s in doc["steps"]]
    assert ops == [("same", 1, 1), ("same", 2, 2), ("same", 3, 3), ("removed", 4, None), ("same", 5, 4),
                   ("same", 6, 5)], ops
    code, doc = diff_json(*reversed(pair(tmp_path, weather_run(drop_message=True))))
    assert ("added", None, 4) in [(s["op"], s["a"], s["b"]) for s in doc["steps"]]


def test_steps_in_another_order_are_moved(tmp_path: Path) -> None:
    code, doc = diff_json(*pair(tmp_path, weather_run(swap=True)))
    assert code == 1
    ops = [(s["op"], s["a"], s["b"]) for s in doc["steps"] if s["op"] != "same"]
    assert ops == [("moved", 2, 3), ("moved", 3, 2)], ops
    assert doc["counts"]["same"] == 4
    _, out, _ = run(["diff", str(tmp_path / "a" / "receipt.json"), str(tmp_path / "b" / "receipt.json")])
    assert "(moved: step 2 of A is step 3 of B)" in out


def test_an_invalid_receipt_is_compared_and_its_verdict_shown(tmp_path: Path) -> None:
    a, b = pair(tmp_path, weather_run())
    doc = json.loads(b.read_text())
    doc["steps"][1]["agent"] = "mallory"  # the chain no longer holds
    b.write_text(json.dumps(doc))
    code, out, _ = run(["diff", str(a), str(b)])
    assert code == 1
    assert out.splitlines()[1].startswith(f"B: {b}: INVALID"), out
    assert "verdicts differ (VALID and INVALID)" in out.splitlines()[-1]
    code, doc2 = diff_json(a, b)
    assert doc2["b"]["verdict"] == "INVALID" and doc2["same"] is False


@pytest.mark.parametrize("content", [b"not json", b"{}", b'{"steps": 3}', b"\xff\xfe"])
def test_unreadable_input_exits_2_with_one_line(content: bytes, tmp_path: Path) -> None:
    a = save(weather_run(), tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    for argv in (["diff", str(a), str(bad)], ["diff", str(bad), str(a)], ["diff", str(a), str(tmp_path / "none")]):
        code, out, err = run(argv)
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        code, out, err = run([*argv[:1], "--json", *argv[1:]])
        assert code == 2 and json.loads(out)["exit_code"] == 2, out


def test_html_page_shows_the_differences_as_text(tmp_path: Path) -> None:
    hostile = HOSTILE_SCRIPT + HOSTILE_ATTRIBUTE
    a, b = pair(tmp_path, weather_run(city=hostile))
    page = tmp_path / "diff.html"
    code, _, _ = run(["diff", str(a), str(b), "--html", str(page)])
    html = page.read_text()
    assert code == 1 and 'id="verdict-text">DIFFER<' in html
    assert html.count('<tr class="op-changed"') == 1 and html.count('<tr class="op-same"') == 5
    assert HOSTILE_SCRIPT not in html and "&lt;script&gt;" in html
    elements = Elements()
    elements.feed(html)
    assert elements.tags.count("script") == 1 and "img" not in elements.tags and not elements.handlers


def test_evidence_that_does_not_hash_to_its_step_is_never_shown_as_what_was_recorded(tmp_path: Path) -> None:
    """New user: B's evidence edited after the run (a tool's result ``rainy`` turned into ``FORGED``) was diffed
    as B's recorded result (``result: rainy -> FORGED``), with nothing on the step saying the value is not what
    was recorded. A content that does not hash to its step is now not compared: the step says which side's
    content does not match its hash, and a preview from it is flagged, as ``aer1 show`` flags it."""
    a, b = pair(tmp_path, weather_run(city="Roma"), weather_run(drop_message=True))  # B's message is added
    evidence = b.with_name("receipt.evidence.jsonl")
    text = evidence.read_text(encoding="utf-8")
    assert text.count('"rainy"') == 1 and text.count("Paris sunny, Rome rainy") == 1
    evidence.write_text(text.replace('"rainy"', '"FORGED"').replace("Paris sunny, Rome rainy", "FORGED TOO"),
                        encoding="utf-8")
    code, doc = diff_json(a, b)
    assert code == 1 and doc["b"]["verdict"] == "INVALID"
    assert "FORGED" not in json.dumps([s["changes"] for s in doc["steps"]])
    changed = [s for s in doc["steps"] if s["op"] == "changed" and s["a"] == 3]
    assert len(changed) == 1 and [c["field"] for c in changed[0]["changes"]] == ["content"], changed
    assert "B: content does not match its hash, not compared" in changed[0]["changes"][0]["b"]
    flagged = [s for s in doc["steps"] if "FORGED" in s["preview"]]
    assert flagged and all(s["preview"].startswith("(content does not match its hash) ") for s in flagged), flagged
