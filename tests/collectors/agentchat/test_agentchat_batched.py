"""Steps chained in batches (``BatchedCollector.defer``) are exactly the steps recorded at once.

The wrapper hands its steps to the collector to chain with the next batch; these tests
hold the batched path to the one it replaces: same steps, same order, same bytes, same
failures counted, nothing waiting past any read of the chain, and no waiting at all with
a journal (its promise is per ``record()``) or a custom redactor.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import RoundRobinGroupChat

from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector, agentchat
from aer1.collectors._batched import DEFER_BATCH

from .conftest import Check, Scripted, calls

_IDS = ("0b7d8b52-3c57-4a8e-9e50-2f6f7f7e4f11", "5e0f5a6e-8d1a-4c59-b1b4-0b8c0e1b2c33")
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_T0 = 1_700_000_000.0


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _script(collector: AER1AutoGenCollector, record: Callable[..., Any]) -> None:
    """More than a batch of hook steps, with direct records, a failing step and reads in between."""
    for i in range(DEFER_BATCH + 10):
        t = _T0 + i
        record("message", {"message_type": "TextMessage", "message_id": f"m{i}", "content": f"reply {i}"},
               agent="alice" if i % 2 else "bob", kind="message", started_at=t, ended_at=t + 0.5,
               reply_to="bob" if i % 2 else None)
        if i == 3:
            collector.record("lookup", {"q": "x"}, agent="alice", started_at=t + 0.6, ended_at=t + 0.7, call_id="c1")
        if i == 5:  # no agent may be named "": counted as a recording failure, the run goes on
            record("message", {"content": "lost"}, agent="", kind="message", started_at=t, ended_at=t)
        if i == 7:
            assert collector.step_count == i + 2, f"got {collector.step_count} steps, want {i + 2}: all chained"


def _steps_and_evidence(collector: AER1AutoGenCollector, tmp_path: Path, name: str) -> tuple[Any, ...]:
    """Status, failures, the steps before the close step and their evidence lines (the close step has its time)."""
    receipt = collector.finalize("done")
    path = collector.save(str(tmp_path / f"{name}.json"), workflow=receipt)
    evidence = Path(path.replace(".json", ".evidence.jsonl")).read_bytes().splitlines()
    return receipt["status"], receipt["recording_failures"], orjson.dumps(receipt["steps"][:-1]), evidence[:-1]


def test_batched_steps_are_byte_identical_to_steps_recorded_at_once(tmp_path: Path) -> None:
    batched = AER1AutoGenCollector(goal="batch", session_id="s", _ids=_IDS)
    _script(batched, batched.defer)
    # With a journal nothing waits: the reference, recorded step by step (the journal changes no byte).
    at_once = AER1AutoGenCollector(goal="batch", session_id="s", _ids=_IDS, journal=tmp_path / "run.journal")
    _script(at_once, at_once.safe_record)
    got, want = _steps_and_evidence(batched, tmp_path, "batched"), _steps_and_evidence(at_once, tmp_path, "ref")
    assert got[:2] == want[:2] == ("incomplete", 1), f"got status and failures {got[:2]}, want {want[:2]}"
    assert got[2] == want[2], "got other steps from the batched path"
    assert got[3] == want[3], "got other evidence lines from the batched path"
    assert len(want[3]) == DEFER_BATCH + 11 + 1  # header, the script's steps


async def test_a_journal_has_every_step_of_a_turn_when_the_turn_ends(tmp_path: Path, scripted: Scripted) -> None:
    journal = tmp_path / "run.journal"
    collector = AER1AutoGenCollector(goal="journaled", journal=journal)
    team = RoundRobinGroupChat([AER1AgentWrapper(AssistantAgent(n, model_client=scripted(["hi"] * 3)), collector)
                                for n in ("alice", "bob")], max_turns=4)  # fmt: skip
    async for item in team.run_stream(task="go"):
        # the task (received by alice) and every turn's message: journaled when its item is forwarded
        kinds = [orjson.loads(line)["step"]["kind"] for line in journal.read_bytes().splitlines()
                 if line.startswith(b'{"type":"step"')]  # fmt: skip
        if getattr(item, "source", None) in ("alice", "bob"):
            assert kinds and kinds[-1] == "message", f"got journaled kinds {kinds}, want the turn's message last"
    assert len(kinds) == 5, f"got {len(kinds)} journaled steps before finalize, want 5 (task + 4 turns)"
    collector.finalize()


def test_a_custom_redactor_runs_when_each_step_is_handed_over() -> None:
    seen: list[Any] = []

    def redact(content: Any) -> Any:
        seen.append(content)
        return content

    collector = AER1AutoGenCollector(goal="custom", redact=redact)
    collector.defer("message", {"content": "a"}, agent="alice", kind="message")
    assert seen == [{"content": "a"}], f"got {seen}, want the step redacted when handed over"
    collector.finalize()


def test_steps_from_two_threads_are_all_chained_each_thread_in_its_order(check: Check) -> None:
    collector = AER1AutoGenCollector(goal="threads")
    per_thread = 3 * DEFER_BATCH

    def hand_over() -> None:
        for i in range(per_thread):
            collector.defer("message", {"n": i}, agent="alice", kind="message")

    def record() -> None:
        for i in range(per_thread):
            collector.record("lookup", {"n": i}, agent="bob")

    threads = [threading.Thread(target=hand_over), threading.Thread(target=record)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    receipt, contents = check(collector)
    for agent in ("alice", "bob"):
        got = [c["n"] for s, c in zip(receipt["steps"], contents, strict=True) if s["agent"] == agent]
        assert got == list(range(per_thread)), f"got {agent}'s steps in the order {got[:8]}..., want 0, 1, 2, ..."


def test_a_step_handed_over_after_finalize_is_a_late_record() -> None:
    collector = AER1AutoGenCollector(goal="late")
    collector.defer("message", {"content": "a"}, agent="alice", kind="message")
    receipt = collector.finalize()
    collector.defer("message", {"content": "b"}, agent="alice", kind="message")
    assert collector.late_records == 1, f"got {collector.late_records} late records, want 1"
    assert [s["kind"] for s in receipt["steps"]] == ["message", "close"]


def _shape(receipt: dict[str, Any], contents: list[Any]) -> list[bytes]:
    """Steps and contents with times, digests and ids left out: what one run shares with another."""
    numbered: dict[bytes, bytes] = {}

    def number(match: re.Match[bytes]) -> bytes:
        return numbered.setdefault(match.group(0), b"id%d" % len(numbered))

    shapes = []
    for step, content in zip(receipt["steps"][:-1], contents[:-1], strict=True):
        kept = {k: v for k, v in step.items() if k not in ("receipt_id", "receipt_hash", "prev_digest", "started_at",
                                                            "ended_at")}  # fmt: skip
        shapes.append(_UUID.sub(number, orjson.dumps([kept, content], option=orjson.OPT_SORT_KEYS)))
    return shapes


@pytest.mark.parametrize("turns", [6, 2 * DEFER_BATCH + 3])
async def test_a_team_run_records_the_same_steps_batched_or_not(
    tmp_path: Path, scripted: Scripted, check: Check, turns: int
) -> None:
    """A team with tool calls, through collector.run: batched and step-by-step runs agree."""
    shapes = []
    for journal in (None, tmp_path / "run.journal"):
        collector = AER1AutoGenCollector(goal="same steps", journal=journal)
        alice = AssistantAgent("alice", model_client=scripted([calls((f"c{i}", "add", '{"a": 1, "b": 2}'))
                                                                for i in range(turns)]), tools=[add])
        bob = AssistantAgent("bob", model_client=scripted([f"bob {i}" for i in range(turns)]))
        team = RoundRobinGroupChat([AER1AgentWrapper(alice, collector), AER1AgentWrapper(bob, collector)],
                                   max_turns=turns)
        assert collector._batching is (journal is None), "got the wrong path under test"
        result = await collector.run(team, task="add numbers")
        receipt, contents = check(collector, result)
        assert receipt["status"] == "ok", f"got status {receipt['status']!r}, want 'ok'"
        shapes.append(_shape(receipt, contents))
    assert len(shapes[0]) > (DEFER_BATCH if turns > DEFER_BATCH else 0)
    assert shapes[0] == shapes[1], "got other steps from the batched run than from the step-by-step run"


def test_steps_handed_over_with_a_span_processor_bound_are_recorded_at_once_as_safe_record_would(
        tmp_path: Path) -> None:
    """With a bound processor ``defer`` records each step at once (its own direct path): same bytes, same failure."""
    from aer1._trace import unwatch, watch

    class Watcher:
        def tool_span(self, call_id: str) -> Any:
            return None

        def step_recorded(self, span: Any, step: dict[str, Any]) -> None:
            return None

    watcher = Watcher()
    watched = AER1AutoGenCollector(goal="batch", session_id="s", _ids=_IDS)
    watch(watched, watcher)
    try:
        _script(watched, watched.defer)
        assert not watched._batch, "got steps waiting for a batch while a processor is bound, want none"
    finally:
        unwatch(watched, watcher)
    at_once = AER1AutoGenCollector(goal="batch", session_id="s", _ids=_IDS, journal=tmp_path / "run.journal")
    _script(at_once, at_once.safe_record)
    got, want = _steps_and_evidence(watched, tmp_path, "watched"), _steps_and_evidence(at_once, tmp_path, "ref")
    assert got == want, "got other steps, failures or evidence with a processor bound"
    late = AER1AutoGenCollector(goal="bound mid-run")
    late.defer("message", {"n": 0}, agent="bob", kind="message")  # waits for a batch
    watch(late, watcher)
    try:
        late.defer("message", {"n": 1}, agent="bob", kind="message")  # at once, the waiting step first
        assert not late._batch, "got a step still waiting after a step recorded at once, want it chained first"
    finally:
        unwatch(late, watcher)
    plain = AER1AutoGenCollector(goal="bound mid-run")
    for n in (0, 1):
        plain.safe_record("message", {"n": n}, agent="bob", kind="message")
    got_hashes = [s["receipt_hash"] for s in late.finalize()["steps"][:2]]
    assert got_hashes == [s["receipt_hash"] for s in plain.finalize()["steps"][:2]], "got the steps out of order"


@pytest.mark.parametrize("batching", [True, False], ids=["batched", "at once"])
def test_a_subclass_recording_its_own_way_sees_every_batched_step(batching: bool) -> None:
    """Batches, and steps recorded at once (a journal, a custom redactor, a bound span processor), go through a
    subclass's own ``record``: only the plain collector takes the direct paths."""
    seen: list[Any] = []

    class Counting(AER1AutoGenCollector):
        def record(self, tool: str, content: Any, **kwargs: Any) -> dict[str, Any]:
            seen.append(content["n"])
            return super().record(tool, content, **kwargs)

    collector = Counting(goal="subclass")
    collector._batching = batching
    for i in range(DEFER_BATCH + 3):
        collector.defer("message", {"n": i}, agent="alice", kind="message")
    receipt = collector.finalize()
    assert seen == list(range(DEFER_BATCH + 3)), f"got {len(seen)} steps through the subclass, want every one"
    assert len(receipt["steps"]) == DEFER_BATCH + 4



async def test_a_turn_ending_in_its_text_message_records_the_step_the_turn_would(
    scripted: Scripted, check: Check, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Turns whose first handled item is their final text message skip the turn's state: same steps."""
    shapes = []
    for quick in (True, False):
        if not quick:
            monkeypatch.setattr(agentchat, "_quick_response", lambda *args: False)
        collector = AER1AutoGenCollector(goal="quick turns")
        alice = AssistantAgent("alice", model_client=scripted([calls(("c1", "add", '{"a": 1, "b": 2}')), "a2", "a3"]),
                               tools=[add])  # fmt: skip
        bob = AssistantAgent("bob", model_client=scripted(["b1", "b2", "b3"]))
        team = RoundRobinGroupChat([AER1AgentWrapper(alice, collector), AER1AgentWrapper(bob, collector)],
                                   max_turns=6)
        result = await team.run(task="add numbers")
        receipt, contents = check(collector, result)
        assert receipt["status"] == "ok", f"got status {receipt['status']!r}, want 'ok'"
        steps = receipt["steps"]
        # the task, alice's call and its summary, then five plain text turns
        assert [s["kind"] for s in steps] == ["message", "tool_call", *["message"] * 6, "termination", "close"], (
            f"got {[s['kind'] for s in steps]}")
        assert all(s["started_at"] <= s["ended_at"] for s in steps), "got a step ending before it started"
        shapes.append(_shape(receipt, contents))
    assert shapes[0] == shapes[1], "got other steps from turns recorded without their state"
