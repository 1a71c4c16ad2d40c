"""The text report never hides a failure: it prints each, or the exact count of the rest and how to see them.

The trials' case: with ``examples/policies/strict.toml`` every payment-limit violation but
the first few was cut from the text report with no "and N more"; ``-v`` did not help and
only ``--json`` listed them. Held here for policy violations (one failure per step), for
many failures of one check, and for the bundle and summary texts that share the rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from aer1 import Collector
from aer1._vocabulary import VOCABULARY
from aer1.verifier._report import MAX_FAILURES_SHOWN, SEE_ALL, CheckResult, Report

from .conftest import POLICIES

Run = Callable[..., tuple[int, str, str]]

_PAYMENTS = 31  # more than MAX_FAILURES_SHOWN, so the text must cut and count


def _many_payments(path: Path) -> Path:
    c = Collector(goal="pay every invoice")
    for i in range(_PAYMENTS):
        c.record("pay", {"vocabulary": VOCABULARY, "call_id": f"c{i}", "name": "pay",
                         "arguments": {"amount": 5000 + i, "payee": "acct_00112233"}, "result": "paid"},
                 agent="payments", call_id=f"c{i}")
    c.save(path)
    return path


def _policy(tmp_path: Path) -> Path:
    p = tmp_path / "cap.toml"
    p.write_text('format = "aer1-policy-v1"\nname = "cap"\n[[rule]]\nname = "payments at most 1000"\n'
                 'form = "argument"\ntool = "pay"\nargument = "amount"\nmax = 1000\n')
    return p


def _violation_lines(out: str) -> list[str]:
    """The report's lines naming a cap violation (the verdict line repeats the first: not counted)."""
    return [line for line in out.splitlines()
            if "payments at most 1000" in line and "too large" in line and not line.startswith("verdict:")]


def test_every_violation_is_printed_or_counted(tmp_path: Path, run_cli: Run) -> None:
    receipt = _many_payments(tmp_path / "r.json")
    code, out, _ = run_cli(receipt, "--policy", _policy(tmp_path))
    assert code == 1
    shown = _violation_lines(out)
    assert len(shown) == MAX_FAILURES_SHOWN, out
    assert f"... and {_PAYMENTS - MAX_FAILURES_SHOWN} more policy failures ({SEE_ALL})" in out, out


def test_verbose_prints_every_violation_also_for_one_receipt(tmp_path: Path, run_cli: Run) -> None:
    receipt = _many_payments(tmp_path / "r.json")
    code, out, _ = run_cli(receipt, "--policy", _policy(tmp_path), "-v")
    assert code == 1 and len(_violation_lines(out)) == _PAYMENTS and "more policy failures" not in out, out
    code, out, _ = run_cli(receipt, "--policy", _policy(tmp_path), "--json")
    assert len([f for f in json.loads(out)["failures"] if f["check"] == "policy"]) == _PAYMENTS


def test_the_strict_example_policy_hides_no_payment_violation(tmp_path: Path, run_cli: Run) -> None:
    """The example policy itself: every payment over the cap is named or counted, with -v every one named."""
    receipt = _many_payments(tmp_path / "r.json")
    for flags, want in (((), MAX_FAILURES_SHOWN), (("-v",), _PAYMENTS)):
        code, out, _ = run_cli(receipt, "--policy", POLICIES / "strict.toml", *flags)
        lines = _violation_lines(out)
        counted = [line for line in out.splitlines() if "more policy failures" in line]
        assert code == 1 and len(lines) <= want, out
        if flags:  # every violation named, none counted away
            assert len(lines) == _PAYMENTS and not counted, out
        else:  # named or counted: the count is the exact number of policy failures left out
            doc = json.loads(run_cli(receipt, "--policy", POLICIES / "strict.toml", "--json")[1])
            total = sum(f["check"] == "policy" for f in doc["failures"])
            assert len(counted) == 1 and f"and {total - MAX_FAILURES_SHOWN} more" in counted[0], out


def test_a_step_list_cut_in_the_text_is_whole_in_json(tmp_path: Path, run_cli: Run) -> None:
    """A rule violated by many steps names 20 in its text, the count of the rest, and every seq in --json."""
    receipt = _many_payments(tmp_path / "r.json")
    p = tmp_path / "few.toml"
    p.write_text('format = "aer1-policy-v1"\n[[rule]]\nname = "no payments"\nform = "at_most"\n'
                 'kind = "tool_call"\ntool = "pay"\ncount = 0\n')
    code, out, _ = run_cli(receipt, "--policy", p, "--json")
    assert code == 1
    (violation,) = [f for f in json.loads(out)["failures"] if f["check"] == "policy"]
    assert violation["seqs"] == list(range(1, _PAYMENTS + 1))
    assert f"(and {_PAYMENTS - 20} more: --json lists every step)" in violation["message"]


def test_the_count_is_exact_for_any_number_of_failures() -> None:
    for n in (1, 2, MAX_FAILURES_SHOWN, MAX_FAILURES_SHOWN + 1, 57):
        c = CheckResult(2, "members")
        for i in range(n):
            c.fail(f"failure {i}", seq=i + 1)
        report = Report("r.json", [CheckResult(1, "parse", "PASS", "ok"), c])
        text = report.to_text()
        named = sum(f"step {i + 1}: failure {i}" in text for i in range(n))
        left = n - min(n, MAX_FAILURES_SHOWN)
        assert named == min(n, MAX_FAILURES_SHOWN)
        if left:
            assert f"... and {left} more members failure{'s' if left > 1 else ''} ({SEE_ALL})" in text
        else:
            assert "more members" not in text
        every = report.to_text(every=True)
        assert all(f"step {i + 1}: failure {i}" in every for i in range(n)) and "more members" not in every
