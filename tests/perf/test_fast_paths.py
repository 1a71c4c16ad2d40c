"""The fast paths of the second performance round decide exactly what the slow paths decide.

* the profile step quick test (one round trip through ``bytes.fromhex`` instead of a regular
  expression over the digests and the id) never passes a step the detailed checks refuse,
  and passes every step our collector writes;
* ``check_json_value`` (scalars checked in place, not stacked) refuses what it refused;
* ``finalize`` hands over the steps kept while recording, not steps parsed from the hashed
  header: they are the header's members, in reading order, and each still hashes to its id.
"""

from __future__ import annotations

import math
from typing import Any

import orjson
import pytest

from aer1 import Collector
from aer1._chain import step_digest_hex, uuid8_from_hex
from aer1._member_rules import step_ok
from aer1._receipt import STEP_OPTIONAL_MEMBERS, STEP_REQUIRED_MEMBERS
from aer1.verifier import verify_receipt
from aer1.verifier._checks import check_step
from aer1.verifier._parse import MalformedInput, check_json_value
from aer1.verifier._report import CheckResult

from ..helpers import make_collector

#: One member of a valid step changed into a value the profile refuses (name, how).
_BAD_VALUES: list[tuple[str, Any]] = [
    ("receipt_hash", lambda v: v.upper()),
    ("receipt_hash", lambda v: v[:10] + " " + v[11:]),  # fromhex skips spaces: the round trip must catch it
    ("receipt_hash", lambda v: v[:10] + "\n" + v[11:]),
    ("receipt_hash", lambda v: v[:10] + "g" + v[11:]),
    ("receipt_hash", lambda v: v[:10] + "é" + v[11:]),
    ("prev_digest", lambda v: "A" + v[1:]),
    ("prev_digest", lambda v: v[:63] + " "),
    ("receipt_id", lambda v: v.upper()),
    ("receipt_id", lambda v: v[:9] + "-" + v[10:]),  # a fifth dash where a digit was
    ("receipt_id", lambda v: v[:7] + "-" + v[7] + v[9:]),  # the first dash moved one place left
    ("receipt_id", lambda v: " " + v[1:]),
    ("started_at", lambda v: "\u0662" + v[1:]),  # an Arabic-Indic digit
    ("started_at", lambda v: v.replace("T", "t")),
    ("started_at", lambda v: v[:5] + "13" + v[7:]),  # month 13
    ("ended_at", lambda v: v[:8] + "31" + v[10:] if v[5:7] in ("02", "04", "06", "09", "11") else v[:5] + "02-30"
     + v[10:]),
    ("ended_at", lambda v: v[:-1] + "+"),
]


def _steps() -> list[dict[str, Any]]:
    return list(make_collector().finalize("done")["steps"])


def test_every_step_we_write_takes_the_quick_path() -> None:
    for step in _steps():
        assert step_ok(step), f"got the slow path for {step}, want the quick one"


@pytest.mark.parametrize(("member", "change"), _BAD_VALUES)
def test_quick_test_never_passes_a_step_the_detailed_checks_refuse(member: str, change: Any) -> None:
    for step in _steps()[:-1]:  # the close step's members are covered by the others
        bad = {**step, member: change(step[member])}
        assert bad[member] != step[member]
        detailed = CheckResult(2, "members")
        refused = not check_step(bad, step["seq"] - 1, False, detailed) or not _detail_profile_ok(bad)
        quick = step_ok(bad)
        assert not (quick and refused), f"{member}={bad[member]!r}: got quick pass, want the detailed refusal"
        assert not quick, f"{member}={bad[member]!r}: got quick pass, want a refusal"


def _detail_profile_ok(step: dict[str, Any]) -> bool:
    """The detailed profile checks alone (the quick test is bypassed by a step it cannot take: a copy)."""
    result = CheckResult(2, "members")
    return bool(check_step(_NotQuick(step), step["seq"] - 1, True, result)) and not result.failures


class _NotQuick(dict):  # type: ignore[type-arg]
    """A dict the quick test refuses outright (it wants exactly dict), so the detailed checks run."""


@pytest.mark.parametrize(("member", "change"), _BAD_VALUES)
def test_tampered_receipt_fails_with_the_detailed_reason(member: str, change: Any) -> None:
    receipt = make_collector().finalize("done")
    step = receipt["steps"][2]
    step[member] = change(step[member])
    report = verify_receipt(receipt)
    assert report.failures, f"{member}={step[member]!r}: got a pass, want a failure"


@pytest.mark.parametrize("value", [
    [1, "x", float("nan")],
    [["x" * 10], [1.5, math.inf]],
    {"a": [None, True, {"b": [object()]}]},
    {"a": {1: "x"}},
    ["ok", b"bytes"],
])
def test_check_json_value_still_refuses_non_json(value: Any) -> None:
    with pytest.raises(MalformedInput):
        check_json_value(value)


def test_check_json_value_still_refuses_long_strings_and_deep_nesting() -> None:
    with pytest.raises(MalformedInput, match="exceeds the 4 limit"):
        check_json_value([1, ["abcde"]], max_string=4)
    with pytest.raises(MalformedInput, match="exceeds the 4 limit"):
        check_json_value({"k": [None, {"m": "abcde"}]}, max_string=4)
    deep: Any = "x"
    for _ in range(5):
        deep = [deep]
    with pytest.raises(MalformedInput, match="deeper than 4"):
        check_json_value(deep, max_depth=4)
    check_json_value(deep, max_depth=5)
    check_json_value({"a": [1, 2.5, None, True, "abcd", {"b": []}]}, max_string=4)


def test_finalized_steps_are_the_hashed_headers_in_reading_order() -> None:
    c = Collector("order", session_id="order")
    headers = [c.record("message", {"n": 1}, agent="a"),
               c.record("handoff", {"n": 2}, agent="a", reply_to="u", target="b", recipient="b", call_id="c1"),
               c.record("tool", {"n": 3}, agent="b", call_id="c2", status="error")]
    receipt = c.finalize("done")
    order = [*STEP_REQUIRED_MEMBERS, *STEP_OPTIONAL_MEMBERS]
    for header, step in zip(headers, receipt["steps"], strict=False):
        assert step == header, f"got {step}, want {header}"
        want = [k for k in order if k in header]
        assert list(step) == want, f"got member order {list(step)}, want {want}"
    for step in receipt["steps"]:
        assert step["receipt_id"] == uuid8_from_hex(step_digest_hex(step))
    again = c.finalize("done")
    assert orjson.dumps(again) == orjson.dumps(receipt)
    assert not verify_receipt(c.finalize("done")).failures
