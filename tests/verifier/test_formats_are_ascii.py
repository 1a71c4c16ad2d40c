"""Every format the verifier accepts is ASCII by rule: another script's digit or letter never passes.

``\\d`` and ``str.isdigit``/``int()`` take any Unicode digit (an Arabic-Indic zero, U+0660), so a
step time written with one passed check 2 and then sorted as text before the step's start.
These tests hold every checked format member (times, hex digests, UUIDs, key ids, nonces)
and every place that orders times or matches a policy pattern to ASCII.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aer1._keyring import KeyringError, parse_time
from aer1._timefmt import is_rfc3339, parse_step_time
from aer1._vocabulary import VOCABULARY
from aer1.verifier import FAIL, verify_receipt
from aer1.verifier._policy import PolicyError, Rule, _argument_rule, _Check, _decided_before, _rule
from aer1.verifier._report import CheckResult
from aer1.verifier._timestamp import nonce_ok

_GOOD = Path(__file__).parent.parent / "fixtures" / "adversarial" / "receipt_good.json"
_RECEIPT: dict[str, Any] = json.loads(_GOOD.read_text(encoding="utf-8"))

#: (where, member) of every format-checked member of a profile receipt: hex, UUIDs, times.
_WORKFLOW_MEMBERS = ("workflow_id", "receipt_id", "merkle_root", "output_hash", "chain_head")
_STEP_MEMBERS = ("receipt_id", "receipt_hash", "prev_digest", "started_at", "ended_at")

#: A character that is a digit or a letter in some script, but not ASCII.
_NON_ASCII_ALNUM = st.characters(categories=("Nd", "Nl", "No", "Lu", "Ll", "Lt", "Lm", "Lo"),
                                 min_codepoint=0x80).filter(lambda c: c.isalnum())
#: Well-known look-alikes, tried on every run: Arabic-Indic, Devanagari and fullwidth digits, Cyrillic a.
_KNOWN = ("\u0660", "\u0966", "\uff10", "\u0430", "\u00e9", "\u2460")


def _swap(text: str, index: int, char: str) -> str:
    """``text`` with its ``index``-th ASCII digit or letter (modulo their count) replaced by ``char``."""
    places = [i for i, c in enumerate(text) if c.isascii() and c.isalnum()]
    i = places[index % len(places)]
    return text[:i] + char + text[i + 1:]


def _members_fail(receipt: dict[str, Any]) -> bool:
    return verify_receipt(receipt).check("members").status == FAIL


def _with_optional_formats() -> dict[str, Any]:
    """The good receipt plus the optional format members check 2 reads: an agent's config_digest,
    a key_proof's key_id and a link step's target (check 2 passes it; later checks need not)."""
    r = copy.deepcopy(_RECEIPT)
    r["agents"][0]["config_digest"] = "ab" * 32
    r["key_proof"] = {"key_id": "cd" * 32, "value": "AAAA"}
    r["steps"][1]["kind"], r["steps"][1]["target"] = "link", "0f0e0d0c-0b0a-4908-8706-050403020100"
    return r


_OPTIONAL = _with_optional_formats()
#: Where each optional format member is, from the receipt down.
_OPTIONAL_PATHS = (("agents", 0, "config_digest"), ("key_proof", "key_id"), ("steps", 1, "target"))


@settings(max_examples=150)
@given(member=st.sampled_from([("workflow", m) for m in _WORKFLOW_MEMBERS]
                              + [("step", m) for m in _STEP_MEMBERS]),
       step=st.integers(min_value=0, max_value=len(_RECEIPT["steps"]) - 1),
       index=st.integers(min_value=0, max_value=200), char=st.one_of(st.sampled_from(_KNOWN), _NON_ASCII_ALNUM))
def test_any_non_ascii_digit_or_letter_in_a_format_member_fails_check_2(
        member: tuple[str, str], step: int, index: int, char: str) -> None:
    where, name = member
    receipt = copy.deepcopy(_RECEIPT)
    target = receipt if where == "workflow" else receipt["steps"][step]
    target[name] = _swap(target[name], index, char)
    assert _members_fail(receipt), f"{where} {name} = {target[name]!r} passed check 2"


def test_the_optional_format_members_pass_check_2_as_written() -> None:
    assert verify_receipt(_OPTIONAL).check("members").status == "PASS"


@settings(max_examples=60)
@given(where=st.sampled_from(_OPTIONAL_PATHS), index=st.integers(min_value=0, max_value=100),
       char=st.one_of(st.sampled_from(_KNOWN), _NON_ASCII_ALNUM))
def test_any_non_ascii_character_in_an_optional_format_member_fails_check_2(
        where: tuple[Any, ...], index: int, char: str) -> None:
    receipt = copy.deepcopy(_OPTIONAL)
    node: Any = receipt
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = _swap(node[where[-1]], index, char)
    assert _members_fail(receipt), f"{where} = {node[where[-1]]!r} passed check 2"


@settings(max_examples=40)
@given(member=st.sampled_from(["key_id", "public_key", "value"]), index=st.integers(min_value=0, max_value=100),
       char=st.one_of(st.sampled_from(_KNOWN), _NON_ASCII_ALNUM))
def test_any_non_ascii_character_in_the_signature_never_verifies(member: str, index: int, char: str) -> None:
    """The signature member is check 6's format: a changed character is never a valid signature."""
    receipt = copy.deepcopy(_RECEIPT)
    receipt["signature"][member] = _swap(receipt["signature"][member], index, char)
    assert verify_receipt(receipt).check("signature").status == FAIL


@pytest.mark.parametrize("char", _KNOWN)
def test_a_time_with_another_scripts_digit_cannot_sort_before_its_start(char: str) -> None:
    """The trial's case: ended_at's last second digit an Arabic-Indic zero, so as text it sorts first."""
    receipt = copy.deepcopy(_RECEIPT)
    s = receipt["steps"][0]
    s["ended_at"] = s["ended_at"][:18] + char + s["ended_at"][19:]
    report = verify_receipt(receipt)
    assert report.check("members").status == FAIL and report.verdict == "INVALID"
    assert any("ended_at" in f.reason for f in report.failures)


@given(index=st.integers(min_value=0, max_value=100), char=st.one_of(st.sampled_from(_KNOWN), _NON_ASCII_ALNUM),
       form=st.sampled_from(["2026-01-31T12:00:00Z", "2026-01-31T12:00:00.5+01:00", "2026-01-31T12:00:00.123456Z"]))
def test_other_producers_times_are_ascii_too(index: int, char: str, form: str) -> None:
    """Receipts of other producers take any RFC 3339 form, still of ASCII digits only."""
    assert is_rfc3339(form)
    assert not is_rfc3339(_swap(form, index, char))


def test_rfc3339_takes_no_trailing_line_break() -> None:
    """``$`` matches before a final newline: every format is matched whole."""
    for text in ("2026-01-31T12:00:00Z\n", "2026-01-31T12:00:00.000000Z\n"):
        assert not is_rfc3339(text)
        assert parse_step_time(text) is None


@given(index=st.integers(min_value=0, max_value=100), char=st.one_of(st.sampled_from(_KNOWN), _NON_ASCII_ALNUM))
def test_step_times_parse_only_from_ascii(index: int, char: str) -> None:
    good = "2026-01-31T12:00:00.000001Z"
    assert parse_step_time(good) is not None
    assert parse_step_time(_swap(good, index, char)) is None


def test_step_times_order_as_times() -> None:
    earlier, later = "2026-01-31T23:59:59.999999Z", "2026-02-01T00:00:00.000000Z"
    assert parse_step_time(earlier) < parse_step_time(later)  # type: ignore[operator]
    assert parse_step_time(later) - parse_step_time(earlier) == 1  # type: ignore[operator]
    assert parse_step_time("1970-01-01T00:00:00.000000Z") == 0
    assert parse_step_time("2026-02-29T00:00:00.000000Z") is None  # not a real date


@pytest.mark.parametrize("char", _KNOWN)
def test_approved_before_compares_parsed_times(char: str) -> None:
    """A policy's "approved before" never orders a text that is not a time: it approves nothing."""
    approval = {"ended_at": "2026-01-01T00:00:00.000000Z"}
    call = {"started_at": "2026-01-01T00:00:01.000000Z"}
    assert _decided_before(approval, call)
    fooled = {"ended_at": "2026-01-01T00:00:0" + char + ".000000Z"}
    assert not _decided_before(fooled, call)
    assert not _decided_before(approval, {"started_at": "2026-01-01T00:00:0" + char + ".000000Z"})


@pytest.mark.parametrize("char", _KNOWN)
def test_keyring_times_and_nonces_are_ascii(char: str) -> None:
    assert parse_time("2026-01-31T12:00:00Z", "valid_from").year == 2026
    with pytest.raises(KeyringError):
        parse_time("2026-01-31T12:00:0" + char + "Z", "valid_from")
    assert nonce_ok("12345678901234567890")
    assert not nonce_ok("1234" + char)
    assert not nonce_ok("")


@pytest.mark.parametrize("char", ["\u0660", "\u0966", "\uff11"])
def test_policy_patterns_match_ascii_only(char: str) -> None:
    """A policy's ``\\d`` means 0 to 9: an argument of another script's digits does not match."""
    rule = _rule({"name": "iban", "form": "argument", "tool": "pay", "argument": "code", "pattern": r"\d{4}"}, 1)
    result = CheckResult(11, "policy")
    out = _Check(result)
    steps = [{"seq": 1, "kind": "tool_call", "tool": "pay"}, {"seq": 2, "kind": "tool_call", "tool": "pay"}]
    v = {"vocabulary": VOCABULARY, "name": "pay"}
    contents = {1: {**v, "arguments": {"code": "1234"}}, 2: {**v, "arguments": {"code": "123" + char}}}
    _argument_rule(rule, steps, contents, out)
    assert [f.seqs for f in result.failures] == [(2,)], [f.reason for f in result.failures]  # type: ignore[attr-defined]


def test_a_policy_pattern_cannot_ask_for_unicode_classes() -> None:
    with pytest.raises(PolicyError, match="not a regular expression"):
        _rule({"name": "u", "form": "argument", "tool": "*", "argument": "a", "pattern": r"(?u)\d+"}, 1)
    assert isinstance(Rule(name="r", form="at_most"), Rule)
