"""The member rules' forms agree, and the rules are written at one site.

``aer1._member_rules`` words every problem of a step (the verifier reports them, recovery
the first), says yes or no fast for one step, and in a batch over many. If two forms ever
disagreed, one path would accept what another refuses; if a second copy of a rule grew
elsewhere, the two copies could drift apart.
"""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aer1._member_rules import STEP_COLUMNS, columns_ok, step_ok, step_problems, steps_ok
from aer1._receipt import KINDS, STEP_OPTIONAL_MEMBERS, STEP_REQUIRED_MEMBERS, STEP_STATUSES, is_hex64, is_uuid
from aer1._recover import BadLine, check_step_members
from aer1.verifier._checks import check_step
from aer1.verifier._report import CheckResult

ROOT = Path(__file__).resolve().parents[2]

_hex64 = st.text("0123456789abcdef", min_size=64, max_size=64)
_uuid = st.uuids().map(str)
_label = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12)
_time = st.datetimes(dt.datetime(1, 1, 1), dt.datetime(9999, 12, 30)).map(
    lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.%fZ").rjust(27, "0"))
_trace = st.fixed_dictionaries({
    "trace_id": st.text("0123456789abcdef", min_size=32, max_size=32).filter(lambda v: v.strip("0")),
    "span_id": st.text("0123456789abcdef", min_size=16, max_size=16).filter(lambda v: v.strip("0")),
})


@st.composite
def valid_steps(draw: st.DrawFn) -> dict[str, Any]:
    """A step of our profile that every rule accepts (its chain links are not the member rules' concern)."""
    times = sorted([draw(_time), draw(_time)])
    step: dict[str, Any] = {
        "seq": draw(st.integers(1, 2**53 - 1)), "receipt_id": draw(_uuid), "tool": draw(_label),
        "kind": draw(st.sampled_from(KINDS)), "agent": draw(_label), "receipt_hash": draw(_hex64),
        "started_at": times[0], "ended_at": times[1], "status": draw(st.sampled_from(STEP_STATUSES)),
        "prev_digest": draw(_hex64),
    }
    for name in draw(st.sets(st.sampled_from(("reply_to", "recipient", "call_id")))):
        step[name] = draw(_label)
    if step["kind"] == "link" or draw(st.booleans()):
        step["target"] = draw(_uuid) if step["kind"] == "link" else draw(_label)
    if draw(st.booleans()):
        step.update(draw(_trace))
    return step


class _Text(str):
    """A string that is not exactly a ``str``."""


#: Values a member may be given that break some rule (or, for some members, none).
_ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.just(""), st.just([]), st.just({}), st.just(1.5),
    st.just("2026-02-30T00:00:00.000000Z"), st.just("2026-01-01T24:00:00.000000Z"),
    st.just("2026-01-01T00:00:00Z"), st.just("2026-01-01T00:00:00.000000+01:00"),
    st.just("\u0662026-01-01T00:00:00.000000Z"), st.just("A" * 64), st.just("a" * 63 + " "),
    st.just("00000000-0000-0000-0000-00000000000G"), st.just("0" * 32), st.just("close"), st.just("link"),
    st.just("oops"), st.just(_Text("message")), st.just(2**53), _label, _hex64, _uuid, _time,
)


@st.composite
def any_steps(draw: st.DrawFn) -> Any:
    """A valid step with some members changed, added or removed (many break a rule, some do not)."""
    step = draw(valid_steps())
    for _ in range(draw(st.integers(0, 3))):
        how = draw(st.sampled_from(("change", "drop", "add")))
        name = draw(st.sampled_from((*STEP_REQUIRED_MEMBERS, *STEP_OPTIONAL_MEMBERS, "extra")))
        if how == "drop":
            step.pop(name, None)
        elif how == "add" and name == "extra":
            step["extra"] = draw(_label)
        else:
            step[name] = draw(_ODD_VALUES)
    return step


def _exact(step: Any) -> bool:
    """Every value exactly a ``str``/``int`` (what JSON parsing gives): where the chained batch form may skip types."""
    return isinstance(step, dict) and all(type(v) in (str, int) for v in step.values())


@settings(max_examples=300)
@given(valid_steps())
def test_every_form_passes_a_valid_step(step: dict[str, Any]) -> None:
    assert step_problems(step, True) == []
    assert step_ok(step)
    assert steps_ok([step])
    assert check_step(step, 0, True, CheckResult(2, "members"))
    check_step_members(dict(step), step["seq"])  # raises BadLine on a problem


@settings(max_examples=600)
@given(any_steps())
def test_the_single_forms_agree(step: Any) -> None:
    """step_ok says yes exactly when step_problems finds none; the verifier and recovery report them."""
    problems = step_problems(step, True)
    assert step_ok(step) == (problems == [])
    result = CheckResult(2, "members")
    assert check_step(step, 0, True, result) == (problems == [])
    assert [f.message for f in result.failures] == [p.message for p in problems]
    if isinstance(step, dict):
        if problems:
            with pytest.raises(BadLine):
                check_step_members(dict(step), 1)
        else:
            check_step_members(dict(step), 1)


@settings(max_examples=400)
@given(st.lists(any_steps(), min_size=1, max_size=6))
def test_the_batch_form_is_the_single_form_over_every_step(steps: list[Any]) -> None:
    want = all(step_ok(s) for s in steps)
    assert steps_ok(steps) == want
    if all(type(s) is dict and set(STEP_REQUIRED_MEMBERS) <= s.keys() for s in steps):
        columns = [tuple(map(get, steps)) for get in STEP_COLUMNS]
        assert columns_ok(steps, columns) == want
        if all(map(_exact, steps)):
            # chained: the caller's digests prove each prev_digest after the first and each receipt_id
            chained = columns_ok(steps, columns, chained=True)
            assert chained >= want
            if all(is_uuid(s["receipt_id"]) and is_hex64(s["prev_digest"]) for s in steps):
                assert chained == want


def test_the_batch_form_refuses_an_overlong_string_the_json_walk_refuses() -> None:
    """The batch form stands for the JSON-value walk too: a string over the limit is a no there."""
    from aer1._limits import MAX_STRING_CHARS

    step = {
        "seq": 1, "receipt_id": "00000000-0000-4000-8000-000000000000", "tool": "t" * (MAX_STRING_CHARS + 1),
        "kind": "message", "agent": "a", "receipt_hash": "0" * 64, "started_at": "2026-01-01T00:00:00.000000Z",
        "ended_at": "2026-01-01T00:00:00.000000Z", "status": "ok", "prev_digest": "0" * 64,
    }
    assert step_ok(step)
    assert not steps_ok([step])


# ------------------------------------------------------------------ one site

#: Where each rule is written (every other module takes it from there).
_RULE_SITES = {
    # the step and workflow member schema
    "STEP_OPTIONAL_MEMBERS": {"aer1._receipt", "aer1._member_rules", "aer1._recover"},  # recovery: the length limit
    "trace_members_problem": {"aer1._receipt", "aer1._member_rules"},
    "AGENT_MEMBERS": {"aer1._receipt", "aer1._member_rules"},
    # the formats: each pattern compiled once, next to the function that tests it
    "UUID_PATTERN": {"aer1._receipt", "aer1._tlog._entry"},
    "HEX64_PATTERN": {"aer1._receipt", "aer1._tlog._entry"},
    "TIMESTAMP_PATTERN": {"aer1._receipt", "aer1._timefmt", "aer1._tlog._entry"},
    "RFC3339_PATTERN": {"aer1._receipt", "aer1._timefmt"},
}
#: Sites left, each with why: the transparency log's entry composes the patterns into one expression
#: over a whole entry's bytes (its members are tested with is_uuid, is_hex64 and the time form).
KNOWN_OTHER_SITES = {("UUID_PATTERN", "aer1._tlog._entry"), ("HEX64_PATTERN", "aer1._tlog._entry"),
                     ("TIMESTAMP_PATTERN", "aer1._tlog._entry")}


def _names_used() -> dict[str, set[str]]:
    """Each rule name of :data:`_RULE_SITES`: the product modules that mention it (defined or imported)."""
    found: dict[str, set[str]] = {name: set() for name in _RULE_SITES}
    for package, folder in {"aer1": "aer1", "aer1.collectors": "collectors", "aer1.verifier": "verifier"}.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            module = ".".join([package, *parts])
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Name) and node.id in found:
                    found[node.id].add(module)
                elif isinstance(node, ast.alias) and node.name in found:
                    found[node.name].add(module)
    return found


def test_each_member_rule_is_written_at_its_one_site() -> None:
    used = _names_used()
    assert used["STEP_OPTIONAL_MEMBERS"], "the walk saw the tree"
    for name, sites in _RULE_SITES.items():
        assert used[name] <= sites, f"{name}: got {sorted(used[name] - sites)} beyond {sorted(sites)}"
    for name, module in KNOWN_OTHER_SITES:
        assert module in used[name], f"{name} is gone from {module}: drop it from KNOWN_OTHER_SITES"


def test_no_module_but_the_rules_compiles_a_format_pattern() -> None:
    """A ``re.compile`` of a format pattern, or a time form written out, is a second copy of its test.

    Take is_uuid and is_hex64 (``aer1._receipt``) and the time forms (``aer1._timefmt``).
    """
    compiles, times = set(), set()
    for folder, package in (("aer1", "aer1"), ("collectors", "aer1.collectors"), ("verifier", "aer1.verifier")):
        for path in sorted((ROOT / folder).rglob("*.py")):
            module = ".".join([package, *path.relative_to(ROOT / folder).with_suffix("").parts])
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "compile"
                        and node.args and "_PATTERN" in ast.unparse(node.args[0])):
                    compiles.add(module)
                if (isinstance(node, ast.Constant) and isinstance(node.value, str) and "[0-9]{2}:" in node.value
                        and module not in ("aer1._receipt", "aer1._timefmt")):
                    times.add(module)
    # the schema's formats, the time forms, the derived id (the chain's own)
    assert compiles == {"aer1._receipt", "aer1._timefmt", "aer1._chain"}, sorted(compiles)
    assert times == set(), f"a time form written outside aer1._timefmt: {sorted(times)}"
