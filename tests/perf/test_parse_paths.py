"""The quick JSON parse (orjson, kept only when it writes the bytes back exactly) decides as the strict one.

For every text, ``parse_strict`` must give the value the standard library's strict parser
gives, or refuse it with the same message: duplicate keys, NaN, lone surrogates, integers
orjson would turn into floats, other layouts and deep nesting all go to the strict parser.
Our own files (a saved receipt, its evidence lines) must take the quick path.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aer1._receipt import evidence_path_for
from aer1.verifier._parse import _MISS, MalformedInput, _parse_exact, _parse_quick, check_json_value, parse_strict

from ..helpers import make_collector

#: Texts on which orjson and the strict parser could disagree; each must decide as the strict parser.
_TRICKY: list[bytes] = [
    b'{"a":1,"a":2}',  # a duplicate key: orjson keeps the last one
    b'{\n  "a": 1,\n  "a": 1\n}\n',  # the same, in our saved layout, equal values
    b'{"a":{"b":1,"b":1}}',
    b'[NaN]', b'[Infinity]', b'[-Infinity]',
    b'"\\ud800"',  # a lone surrogate
    b'"\\udc00x"',
    b'100000000000000000000',  # orjson reads it as a float
    b'-9223372036854775809',
    b'18446744073709551616',
    b'1E5', b'1e5', b'1.0', b'-0', b'-0.0', b'1e400', b'0.1e1',
    b'"\\u0041"',  # an escape spelled another way
    b'"\\/"',
    b'\xef\xbb\xbf{}',  # a byte order mark
    b'{"a":"\xff"}',  # invalid UTF-8
    b'', b' ', b'\n',
    b' {}', b'{} ', b'{}\n\n', b'{}\r\n',
    b'{"a":1}\n',
    b'{"a":1}x',
    b'{"a" :1}',
    b'{"a":"\x01"}',  # a raw control character
    b'[' * 70 + b']' * 70,  # deeper than the receipt limit
    b'[' * 300 + b']' * 300,  # deeper than orjson writes
    b'{"a":[]}', b'[]', b'{}', b'"x"', b'null', b'true',
    b'{\n  "a": [\n    1,\n    2\n  ]\n}',
    b'{\n  "a": [1, 2]\n}',  # another indented layout
    b'{"a":1.5e+300}', b'{"a":1.5e300}',
]


def _strict(data: bytes, **limits: int) -> tuple[str, Any]:
    """What the strict parser alone decides: ("ok", value) or ("refused", message)."""
    try:
        value = _parse_exact(data, "input")
        check_json_value(value, **limits)
    except MalformedInput as e:
        return "refused", str(e)
    return "ok", value


def _decided(data: bytes, **limits: int) -> tuple[str, Any]:
    try:
        return "ok", parse_strict(data, **limits)
    except MalformedInput as e:
        return "refused", str(e)


def _same(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    """Equal decisions; values compared with their types (1 and 1.0 differ, as do 0.0 and -0.0)."""
    if a[0] != b[0]:
        return False
    if a[0] == "refused":
        return bool(a[1] == b[1])
    return _typed(a[1]) == _typed(b[1])


def _typed(v: Any) -> Any:
    if isinstance(v, dict):
        return ("dict", [(k, _typed(x)) for k, x in v.items()])
    if isinstance(v, list):
        return ("list", [_typed(x) for x in v])
    if isinstance(v, float):
        return ("float", math.copysign(1.0, v), repr(v))
    return (type(v).__name__, v)


@pytest.mark.parametrize("data", _TRICKY)
def test_tricky_texts_decide_as_the_strict_parser(data: bytes) -> None:
    got, want = _decided(data), _strict(data)
    assert _same(got, want), f"got {got!r}, want {want!r} for {data[:80]!r}"


#: Short texts near small limits: the quick parse skips the value walk only when the text itself
#: proves it cannot fail (no string longer than the text, no nesting deeper than its brackets).
_NEAR_LIMITS: list[bytes] = [b'"abc"', b'"abcd"', b'["ab","abcd"]', b'{"abcd":1}', b'{"a":"\\u00e9\\u00e9\\u00e9"}',
                             b'[[[]]]', b'[[["x"]]]', b'{"a":{"b":{}}}', b'[{},{},{}]', b'[[],[],[]]', b'"[[[[[["',
                             b'{"a":[1,[2,[3]]]}', b'[1.5]', b'{"k":"\xc3\xa9\xc3\xa9"}',
                             b'{"a":[[],{}]}', b'[[[{}]]]', b'[[["abcd"]]]']  # the deepest containers empty


def _indented(text: bytes) -> bytes:
    return orjson.dumps(orjson.loads(text), option=orjson.OPT_INDENT_2) + b"\n"


_DEEP_ITEMS = b'{"a":[{"b":[1,{"c":"' + b"x" * 30 + b'"}]}],"d":"' + b"y" * 40 + b'"}'


@pytest.mark.parametrize("data", [*_NEAR_LIMITS, *map(_indented, _NEAR_LIMITS), _DEEP_ITEMS, _indented(_DEEP_ITEMS)])
@pytest.mark.parametrize(("max_depth", "max_string"),
                         [(0, 100), (1, 3), (2, 4), (3, 2), (3, 8), (4, 100), (4, 29), (4, 30), (4, 39), (4, 40),
                          (5, 30), (5, 40), (5, 41), (6, 100)])
def test_small_limits_decide_as_the_strict_parser(data: bytes, max_depth: int, max_string: int) -> None:
    got = _decided(data, max_depth=max_depth, max_string=max_string)
    want = _strict(data, max_depth=max_depth, max_string=max_string)
    assert _same(got, want), f"got {got!r}, want {want!r} for {data!r} at depth {max_depth}, string {max_string}"


@pytest.mark.parametrize("data", [b'{"a":1,"a":2}', b'{\n  "a": 1,\n  "a": 1\n}\n', b'[NaN]', b'"\\ud800"',
                                  b'100000000000000000000', b'"\\u0041"', b'{"a" :1}'])
def test_quick_parse_does_not_vouch_for_texts_it_would_misread(data: bytes) -> None:
    assert _parse_quick(data) is _MISS, f"got a quick parse of {data!r}, want the strict parser"


def test_our_receipt_and_evidence_lines_take_the_quick_path(tmp_path: Any) -> None:
    c = make_collector()
    path = c.save(str(tmp_path / "run.json"))
    data = (tmp_path / "run.json").read_bytes()
    assert _parse_quick(data) is not _MISS, "got the strict parser for our saved receipt, want the quick one"
    assert _typed(parse_strict(data)) == _typed(_strict(data)[1])
    lines = open(evidence_path_for(path), "rb").read().splitlines(keepends=True)
    assert len(lines) > 2
    for line in lines:
        assert _parse_quick(line) is not _MISS, f"got the strict parser for evidence line {line[:60]!r}"
        assert _typed(parse_strict(line)) == _typed(_strict(line)[1])


def test_a_saved_receipt_with_a_member_repeated_is_refused(tmp_path: Any) -> None:
    data = orjson.dumps(make_collector().finalize("done"), option=orjson.OPT_INDENT_2) + b"\n"
    twice = data.replace(b'"status": "ok",', b'"status": "ok",\n  "status": "ok",', 1)
    assert twice != data
    with pytest.raises(MalformedInput, match="duplicate key 'status'"):
        parse_strict(twice)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


def _variants(value: Any) -> list[bytes]:
    """The value in several layouts, and with one byte changed or a member doubled."""
    out = [json.dumps(value).encode(), json.dumps(value, indent=2).encode(),
           json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")]
    try:
        compact = orjson.dumps(value)
        out += [compact, orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"]
    except orjson.JSONEncodeError:
        return out
    if compact.startswith(b"{") and len(compact) > 2:
        first = compact[1:compact.index(b":", 1)]
        out.append(b"{" + first + b":null," + compact[1:])  # the first key twice
    for i in (1, len(compact) // 2, len(compact) - 1):
        if 0 <= i < len(compact):
            for b in (b"\\", b'"', b",", b"\xff", b"0"):
                out.append(compact[:i] + b + compact[i + 1:])
    return out


@settings(max_examples=150, deadline=None)
@given(_json)
def test_any_value_in_any_layout_decides_as_the_strict_parser(value: Any) -> None:
    for data in _variants(value):
        got, want = _decided(data), _strict(data)
        assert _same(got, want), f"got {got!r}, want {want!r} for {data[:120]!r}"


def test_a_large_saved_receipt_needs_no_value_walk(tmp_path: Any) -> None:
    from aer1 import Collector
    from aer1.verifier._parse import MAX_DEPTH, MAX_STRING_CHARS, _limits_shown

    c = Collector("large")
    for i in range(4_000):
        c.record("message", {"content": f"turn {i} " + "x" * 200}, agent="alice", kind="message")
    c.save(str(tmp_path / "large.json"))
    data = (tmp_path / "large.json").read_bytes()
    assert len(data) > MAX_STRING_CHARS
    assert _limits_shown(data, MAX_DEPTH, MAX_STRING_CHARS), "got the value walk for our saved layout, want none"
    deep = data.replace(b'"status": "ok"', b'"status": ' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH, 1)
    assert not _limits_shown(orjson.dumps(orjson.loads(deep), option=orjson.OPT_INDENT_2), MAX_DEPTH,
                             MAX_STRING_CHARS), "got no walk for a receipt nested past the limit"


def _tampered(data: bytes) -> list[bytes]:
    """A saved receipt edited the ways an attacker or a broken tool would, in our layout and others."""
    return [
        data,
        data.replace(b'"status": "ok"', b'"status": "error"', 1),
        data.replace(b'"seq": 2', b'"seq": 3', 1),
        data.replace(b'"goal": ', b'"goal": "x",\n  "goal": ', 1),  # a member twice
        data.replace(b'"seq": 1,', b'"seq": 1,\n      "seq": 1,', 1),
        data.replace(b'"seq": 1', b'"seq": 1.0', 1),
        data.replace(b'"seq": 1', b'"seq": NaN', 1),
        data.replace(b'"seq": 1', b'"seq": 100000000000000000000', 1),
        data.replace(b'"goal": "', b'"goal": "\\ud800', 1),
        data.replace(b'"goal": "', b'"goal": "\\u0041', 1),
        data.replace(b'"status": "ok"', b'"status": ' + b"[" * 70 + b"]" * 70, 1),
        orjson.dumps(orjson.loads(data)),  # compact
        json.dumps(orjson.loads(data), indent=4).encode(),
        data[:-40],
        data + b"{}",
    ]


def test_a_tampered_receipt_gets_the_same_report_from_either_parser(tmp_path: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from aer1.verifier import _parse, verify_receipt

    c = make_collector()
    c.save(str(tmp_path / "run.json"))
    data = (tmp_path / "run.json").read_bytes()
    for i, text in enumerate(_tampered(data)):
        path = tmp_path / f"t{i}.json"
        path.write_bytes(text)
        quick = verify_receipt(path).to_dict()
        with monkeypatch.context() as m:
            m.setattr(_parse, "_parse_quick", lambda _data: _MISS)
            exact = verify_receipt(path).to_dict()
        assert quick == exact, f"got {quick['verdict']}, want {exact['verdict']} for edit {i}"


def test_a_step_line_nested_past_the_limit_is_walked(tmp_path: Any) -> None:
    from aer1._layout import receipt_json
    from aer1.verifier._parse import MAX_DEPTH, MAX_STRING_CHARS, _limits_shown

    wf = make_collector().finalize("done")
    nested: Any = []
    for _ in range(MAX_DEPTH):
        nested = [nested]
    wf["steps"][0]["extra"] = nested
    data = receipt_json(wf)
    assert _parse_quick(data) is not _MISS, "got the strict parser for a text in our layout"
    assert not _limits_shown(data, MAX_DEPTH, MAX_STRING_CHARS), "got no walk for a step line nested past the limit"
    with pytest.raises(MalformedInput, match="deep"):
        parse_strict(data)
    flat = receipt_json(make_collector().finalize("done"))
    assert not _limits_shown(flat, 3, MAX_STRING_CHARS), "a step's members sit at depth 3: a limit of 3 must walk"
