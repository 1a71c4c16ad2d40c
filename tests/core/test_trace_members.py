"""Steps carry the W3C ids of their OpenTelemetry span: checked alike on every path that reads steps.

The ids are optional profile members (spec/otel.md): hashed like the others, both or neither,
exactly 32 and 16 lowercase ASCII hex digits, not all zero. An honest receipt with them
verifies in memory, cut over two processes (a file over 1 MiB) and streamed, and passes
both peer verifiers; a malformed id is refused on each of those paths and by recovery.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider

import aer1.verifier as verifier
from aer1 import Collector, _limits
from aer1._layout import receipt_json
from aer1._recover import recover_journal
from aer1.verifier import _split, _verify, verify_receipt

from ..perf.test_quick_steps import _rechained

_TRACER = TracerProvider().get_tracer("tests")
#: Steps enough for a saved receipt over SPLIT_MIN_BYTES (1 MiB), so jobs=2 takes the cut path.
_BIG = 3600


def _traced_receipt(n: int = 6, *, journal: Path | None = None) -> dict[str, Any]:
    """A receipt whose every other step was recorded under a span (its first step under none)."""
    c = Collector("traced", journal=journal)
    c.record("task", {"task": "t"}, agent="user")
    with _TRACER.start_as_current_span("invoke_agent a"):
        for k in range(n - 2):
            if k % 2:
                with _TRACER.start_as_current_span("execute_tool lookup"):
                    c.record("lookup", {"k": k}, agent="a", call_id=f"call_{k}")
            else:
                c.record("message", {"k": k}, agent="a")
    return c.finalize("done")


def test_a_step_under_a_span_carries_its_ids_and_a_step_under_none_does_not() -> None:
    c = Collector("g")
    plain = c.record("task", {"t": 1})
    with _TRACER.start_as_current_span("outer") as span:
        step = c.record("message", {"m": 1}, call_id="c1")
    ctx = span.get_span_context()
    assert "trace_id" not in plain and "span_id" not in plain
    assert step["trace_id"] == format(ctx.trace_id, "032x") and step["span_id"] == format(ctx.span_id, "016x")
    assert list(step)[-3:] == ["call_id", "trace_id", "span_id"], list(step)  # STEP_OPTIONAL_MEMBERS order
    assert c.verify() == []


def test_the_ids_are_hashed_a_changed_id_breaks_the_chain() -> None:
    receipt = _traced_receipt()
    traced = next(s for s in receipt["steps"] if "trace_id" in s)
    traced["span_id"] = "1" * 16
    report = verify_receipt(receipt)
    assert not report.valid and report.failures[0].check == "chain", report.failures


@pytest.fixture
def answered_by_cut(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Per verification: whether the cut path (several processes) gave the report."""
    answers: list[bool] = []
    real = _split.verify_split

    def spy(*args: Any, **kwargs: Any) -> Any:
        report = real(*args, **kwargs)
        answers.append(report is not None)
        return report

    monkeypatch.setattr(_split, "verify_split", spy)
    yield answers


def _streamed(path: Path, monkeypatch: pytest.MonkeyPatch) -> verifier.Report:
    with monkeypatch.context() as m:
        m.setattr(_limits, "STREAM_MIN_BYTES", 0)
        return verify_receipt(path)


def test_an_honest_traced_receipt_verifies_on_every_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         answered_by_cut: list[bool]) -> None:
    receipt = _traced_receipt(_BIG)
    assert sum("trace_id" in s for s in receipt["steps"]) == _BIG - 2
    path = tmp_path / "r.json"
    path.write_bytes(receipt_json(receipt))
    assert path.stat().st_size > _verify.SPLIT_MIN_BYTES
    in_memory = verify_receipt(receipt)
    assert in_memory.valid, in_memory.failures
    cut = verify_receipt(path, jobs=2)
    assert answered_by_cut == [True], "the cut path must answer an honest file over 1 MiB"
    assert cut.valid and cut.to_dict()["checks"] == verify_receipt(path).to_dict()["checks"]
    streamed = _streamed(path, monkeypatch)
    assert streamed.valid, streamed.failures


def _upper(step: dict[str, Any]) -> None:
    step["trace_id"] = step["trace_id"].upper()


def _short(step: dict[str, Any]) -> None:
    step["span_id"] = step["span_id"][:15]


def _non_ascii(step: dict[str, Any]) -> None:
    step["trace_id"] = step["trace_id"][:31] + "\uff11"  # FULLWIDTH DIGIT ONE: a digit, not an ASCII one


def _all_zero(step: dict[str, Any]) -> None:
    step["trace_id"] = "0" * 32


def _alone(step: dict[str, Any]) -> None:
    del step["span_id"]


def _number(step: dict[str, Any]) -> None:
    step["span_id"] = 12345


_MALFORMED: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "uppercase": (_upper, "trace_id is not 32 lowercase hex digits"),
    "wrong length": (_short, "span_id is not 16 lowercase hex digits"),
    "non-ASCII digit": (_non_ascii, "trace_id is not 32 lowercase hex digits"),
    "all zero": (_all_zero, "trace_id is all zero"),
    "trace_id alone": (_alone, "trace_id without span_id"),
    "not a string": (_number, "span_id is not a non-empty string"),
}


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("what", list(_MALFORMED))
def test_a_malformed_id_is_refused_on_every_path(what: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 answered_by_cut: list[bool]) -> None:
    change, reason = _MALFORMED[what]
    receipt = _traced_receipt(_BIG)
    change(receipt["steps"][_BIG // 2])
    _rechained(receipt)  # every link, id and the root made to fit: only the member itself is wrong
    path = tmp_path / "r.json"
    path.write_bytes(receipt_json(receipt))
    reports = {"in memory": verify_receipt(receipt), "cut, 2 processes": verify_receipt(path, jobs=2),
               "streamed": _streamed(path, monkeypatch)}
    for name, report in reports.items():
        assert not report.valid, name
        first = report.failures[0]
        assert (first.check, first.seq) == ("members", _BIG // 2 + 1), (name, report.failures)
        assert reason in first.reason, (name, first.reason)
    assert answered_by_cut == [False], "a malformed step is handed back to the reference checker"


def test_peer_verifiers_accept_traced_receipts(tmp_path: Path, peer_verify_cli: Any,
                                               peer_verify_workflow: Any) -> None:
    receipt = _traced_receipt()
    path = tmp_path / "r.json"
    path.write_bytes(receipt_json(receipt))
    code, out = peer_verify_cli(path)
    assert code == 0 and "VERDICT: PASS" in out, out
    assert peer_verify_workflow(receipt) == []


def test_recovery_keeps_the_ids_and_refuses_a_malformed_one(tmp_path: Path) -> None:
    journal = tmp_path / "run.journal"
    receipt = _traced_receipt(journal=journal)
    result = recover_journal(journal, tmp_path / "r.json")
    assert result.problems == [] and result.receipt["steps"][:-1] == receipt["steps"][:-1]
    assert verify_receipt(tmp_path / "r.json").valid
    lines = journal.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"trace_id"' in line)
    line = json.loads(lines[at])
    line["step"]["trace_id"] = line["step"]["trace_id"].upper()
    lines[at] = json.dumps(line)
    journal.write_text("\n".join(lines) + "\n")
    result = recover_journal(journal, tmp_path / "r2.json")
    assert [p.message for p in result.problems][:1] == ["trace_id is not 32 lowercase hex digits"], result.problems
    assert verify_receipt(tmp_path / "r2.json").valid  # what recovery kept, it kept whole
