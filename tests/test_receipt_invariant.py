"""The receipt invariant's own check: it passes good receipts and names broken ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from aer1 import Collector
from aer1._recover import recover_journal

from .receipt_invariant import ReceiptLog, noting_receipts, unverified


def _collector() -> Collector:
    collector = Collector(goal="exercise the receipt invariant")
    collector.register_agent("alice", type="Agent")
    collector.record("message", {"content": "hello"}, agent="alice", kind="message")
    return collector


def test_good_receipts_pass_and_are_noted_once(tmp_path: Path) -> None:
    collector = _collector()
    with noting_receipts() as log:
        first = collector.finalize("done")
        again = collector.finalize("done")
    assert first == again and len(log.finalized) == 2
    assert unverified(log, tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["receipt-0000.evidence.jsonl", "receipt-0000.json"]


def test_a_broken_receipt_is_named(tmp_path: Path) -> None:
    collector = _collector()
    receipt = collector.finalize("done")
    broken = {**receipt, "steps": [{**receipt["steps"][0], "call_id": ""}, *receipt["steps"][1:]]}
    log = ReceiptLog()
    log.note(collector, broken)
    problems = unverified(log, tmp_path)
    assert len(problems) == 1 and "got INVALID" in problems[0] and "want VALID" in problems[0], problems


def test_record_refuses_empty_optional_members() -> None:
    # The verifier rejects an empty reply_to, target, recipient or call_id: record never writes one.
    collector = Collector(goal="empty members")
    for member in ("reply_to", "target", "recipient", "call_id"):
        with pytest.raises(ValueError, match=f"{member} must be a non-empty string or None"):
            collector.record("message", {"content": "x"}, agent="alice", **{member: ""})
    assert collector.step_count == 0


def test_recovered_receipts_are_noted_as_written(tmp_path: Path) -> None:
    journal = tmp_path / "run.journal"
    collector = Collector(goal="a run that never finalizes", journal=journal)
    collector.record("message", {"content": "hello"}, agent="alice", kind="message")
    with noting_receipts() as log:
        recover_journal(journal, tmp_path / "recovered.json")
    assert len(log.finalized) == 1
    (tmp_path / "recovered.json").write_text("tampered after the fact")  # the snapshot is what counts
    (tmp_path / "checked").mkdir()
    assert unverified(log, tmp_path / "checked") == []


def test_every_test_notes_its_receipts() -> None:
    # The autouse fixture wraps finalize for the duration of each test.
    assert Collector.finalize.__qualname__ == "noting_receipts.<locals>.finalize"


@pytest.mark.unverified_receipts
def test_the_opt_out_marker_turns_the_check_off() -> None:
    assert Collector.finalize.__qualname__ == "Collector.finalize"
