"""Canonical JSON: RFC 8785 known answers, the fast/exact agreement, normalization rules."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import hashlib
import json
import math
import struct
import sys
import uuid
from decimal import Decimal
from fractions import Fraction
from pathlib import PurePosixPath

import orjson
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aer1 import Collector
from aer1._canonical import (
    MAX_DEPTH,
    MAX_SAFE_INTEGER,
    CanonicalizationError,
    _es6_number,
    canonical_bytes,
    exact_bytes,
    jcs_encode,
    normalize,
    restore,
    sorted_json,
)
from aer1._canonical import (
    is_plain as _is_plain,
)
from aer1._redact import default_redactor

# RFC 8785 Appendix B: IEEE 754 bit patterns and their JCS serialization.
ES6_VECTORS = {
    "0000000000000000": "0",
    "8000000000000000": "0",
    "0000000000000001": "5e-324",
    "8000000000000001": "-5e-324",
    "7fefffffffffffff": "1.7976931348623157e+308",
    "ffefffffffffffff": "-1.7976931348623157e+308",
    "4340000000000000": "9007199254740992",
    "c340000000000000": "-9007199254740992",
    "4430000000000000": "295147905179352830000",
    "44b52d02c7e14af5": "9.999999999999997e+22",
    "44b52d02c7e14af6": "1e+23",
    "444b1ae4d6e2ef4e": "999999999999999700000",
    "444b1ae4d6e2ef4f": "999999999999999900000",
    "444b1ae4d6e2ef50": "1e+21",
    "3eb0c6f7a0b5ed8c": "9.999999999999997e-7",
    "3eb0c6f7a0b5ed8d": "0.000001",
    "41b3de4355555553": "333333333.3333332",
    "41b3de4355555554": "333333333.33333325",
    "41b3de4355555555": "333333333.3333333",
    "41b3de4355555556": "333333333.3333334",
    "41b3de4355555557": "333333333.33333343",
    "becbf647612f3696": "-0.0000033333333333333333",
    "43143ff3c1cb0959": "1424953923781206.2",
}


@pytest.mark.parametrize(("bits", "want"), sorted(ES6_VECTORS.items()))
def test_es6_number_formatting_matches_rfc8785(bits: str, want: str) -> None:
    x = struct.unpack(">d", bytes.fromhex(bits))[0]
    assert _es6_number(x) == want


def test_rfc8785_main_example() -> None:
    text = (
        '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",'
        ' "literals": [null, true, false]}'
    )
    want = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert canonical_bytes(json.loads(text)).decode("utf-8") == want
    assert jcs_encode(json.loads(text)).decode("utf-8") == want


def test_rfc8785_key_sorting_by_utf16_code_units() -> None:
    value = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }
    keys = list(json.loads(canonical_bytes(value)))
    assert keys == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]
    assert not _is_plain(value)  # a key outside the BMP takes the exact path


json_scalars = st.one_of(
    st.none(), st.booleans(), st.text(), st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
    st.floats(allow_nan=False, allow_infinity=False),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(st.text(), children, max_size=5)),
    max_leaves=25,
)


def _no_surrogates(value: object) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


@settings(max_examples=400)
@given(json_values)
def test_orjson_fast_path_agrees_with_exact_encoder(value: object) -> None:
    """Wherever the fast path is taken, orjson's bytes are exactly the JCS bytes."""
    if not _no_surrogates(value):
        return
    exact = jcs_encode(normalize(value))
    assert canonical_bytes(value) == exact
    if _is_plain(value):
        assert orjson.dumps(value, option=orjson.OPT_SORT_KEYS) == exact


json_data_without_floats = st.recursive(
    st.one_of(st.none(), st.booleans(), st.text(), st.integers(-(2**63), 2**63 - 1),
              st.sampled_from(["\x00\x1f\x7f\"\\/\b\f\n\r\t", "\u2028\u2029\ufeff\U0001f600", "\ud800", "x\udfff"])),
    lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(st.text(), children, max_size=5)),
    max_leaves=25,
)


@settings(max_examples=400)
@given(json_data_without_floats)
def test_sorted_json_is_orjson_s_bytes_without_orjson(value: object) -> None:
    """The standard library's encoder (used while orjson is not loaded) writes exactly orjson's sorted bytes."""
    try:
        want: bytes | None = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # a lone surrogate
        want = None
    with pytest.MonkeyPatch.context() as m:
        m.delitem(sys.modules, "orjson")
        try:
            got: bytes | None = sorted_json(value)
        except (TypeError, ValueError):
            got = None
    assert got == want, f"got {got!r}, want orjson's {want!r}"
    if want is not None and _is_plain(value):
        assert got == jcs_encode(value)


@settings(max_examples=200)
@given(json_values)
def test_canonical_bytes_round_trip_is_stable(value: object) -> None:
    """Parsing canonical bytes and encoding them exactly gives the same bytes (what verifiers do)."""
    once = canonical_bytes(value)
    assert exact_bytes(json.loads(once)) == once


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: float


def test_normalization_rules() -> None:
    aware = dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    value = {
        "bytes": b"\x00\xff",
        "set": {3, 1, 2},
        "tuple": (1, "a"),
        "when": aware,
        "day": dt.date(2026, 1, 2),
        "enum": Color.RED,
        "uuid": uuid.UUID(int=1),
        "decimal": Decimal("1.10"),
        "path": PurePosixPath("/a/b"),
        "point": Point(1, 2.5),
        "big": 2**64,
        "bigger": 2**64 + 1,
        "nan": float("nan"),
        "inf": float("-inf"),
        "error": ValueError("boom"),
        1: "int key",
        None: "null key",
        "surrogate": "a\ud800b",
    }
    assert normalize(value) == {
        "bytes": "AP8=",
        "set": [1, 2, 3],
        "tuple": [1, "a"],
        "when": "2026-01-02T01:04:05.000006Z",
        "day": "2026-01-02",
        "enum": "red",
        "uuid": "00000000-0000-0000-0000-000000000001",
        "decimal": "1.10",
        "path": "/a/b",
        "point": {"x": 1, "y": 2.5},
        "big": {"$aer1:int": "18446744073709551616"},
        "bigger": {"$aer1:int": "18446744073709551617"},
        "nan": {"$aer1:float": "NaN"},
        "inf": {"$aer1:float": "-Infinity"},
        "error": {"type": "ValueError", "message": "boom"},
        "1": "int key",
        "null": "null key",
        "surrogate": {"$aer1:str": ["a", 0xD800, "b"]},
    }


def test_pydantic_models_are_dumped_in_json_mode() -> None:
    class Msg(pydantic.BaseModel):
        source: str
        when: dt.datetime

    m = Msg(source="alice", when=dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    assert normalize(m) == {"source": "alice", "when": "2026-01-01T00:00:00Z"}


def test_cycles_depth_and_key_clashes_are_refused() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(CanonicalizationError, match="cycle"):
        canonical_bytes(loop)
    deep: list[object] = []
    node = deep
    for _ in range(MAX_DEPTH + 5):
        child: list[object] = []
        node.append(child)
        node = child
    with pytest.raises(CanonicalizationError, match="deeper"):
        canonical_bytes(deep)
    with pytest.raises(CanonicalizationError, match="same text"):
        canonical_bytes({1: "a", "1": "b"})


def test_normalization_is_deterministic_for_sets_of_mixed_values() -> None:
    a = canonical_bytes({"s": {"b", "a", 3}})
    b = canonical_bytes({"s": {3, "a", "b"}})
    assert a == b


# ------------------------------------------------- one-to-one: tags for values JSON cannot hold

_TAG_KEYS = st.sampled_from(["$aer1:int", "$aer1:float", "$aer1:str", "$aer1:object", "$aer1:", "$aer1:x"])
any_text = st.lists(st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr)), max_size=6).map("".join)
wide_scalars = st.one_of(
    st.none(), st.booleans(), any_text, st.integers(), st.integers(-(2**70), 2**70), st.floats(),
    st.sampled_from([2**53, -(2**53), 2**64 + 1, 2.0**53, 1e20, "NaN", "Infinity", "18446744073709551617"]),
)
wide_values = st.recursive(
    wide_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=6), _TAG_KEYS), children, max_size=4),
    ),
    max_leaves=20,
)


def _key(v: object) -> object:
    """What a content is, up to RFC 8785's own equivalences (1 == 1.0, -0 == 0): equal keys, same content."""
    if v is None or isinstance(v, bool):
        return ("lit", v)
    if isinstance(v, float) and not math.isfinite(v):
        return ("nonfinite", "nan" if math.isnan(v) else v > 0)
    if isinstance(v, int) and abs(v) > MAX_SAFE_INTEGER:
        return ("bigint", v)  # tagged by the producer: never the same content as a double of equal value
    if isinstance(v, (int, float)):
        return ("num", Fraction(v))
    if isinstance(v, str):
        return ("str", v)
    if isinstance(v, list):
        return ("list", tuple(_key(i) for i in v))
    assert isinstance(v, dict)
    return ("dict", frozenset((k, _key(i)) for k, i in v.items()))


@settings(max_examples=400)
@given(wide_values)
def test_canonical_bytes_are_one_to_one(value: object) -> None:
    """The bytes give back what was recorded: two different contents never share bytes (or a hash)."""
    data = canonical_bytes(value)
    assert _key(restore(json.loads(data))) == _key(value)
    assert exact_bytes(json.loads(data)) == data  # a verifier re-encodes the evidence exactly


@pytest.mark.parametrize(("a", "b"), [
    ("caf\udead", "caf\ufffd"),
    ("\ud800", {"$aer1:str": [0xD800]}),
    ("\udead\ud800\udc00", "\udead\U00010000"),
    (2**64 + 1, "18446744073709551617"),
    (2**64 + 1, {"$aer1:int": "18446744073709551617"}),
    (2**64, 2.0**64),
    (float("nan"), "NaN"),
    (float("-inf"), "-Infinity"),
    ({"$aer1:int": "5"}, 5),
    ({"$aer1:object": {}}, {}),
])
def test_known_collisions_are_gone(a: object, b: object) -> None:
    assert canonical_bytes(a) != canonical_bytes(b)
    assert canonical_bytes({"k": [a]}) != canonical_bytes({"k": [b]})


def test_keys_without_an_exact_form_are_refused() -> None:
    with pytest.raises(CanonicalizationError, match="lone surrogate"):
        canonical_bytes({"caf\udead": 1})


@pytest.mark.parametrize("value", ["caf\udead", 2**64 + 1, -(2**60), float("nan"), float("inf"), [{"x": "\udfff"}]])
def test_exact_bytes_refuses_what_has_no_exact_form(value: object) -> None:
    with pytest.raises(CanonicalizationError):
        exact_bytes(value)


@pytest.mark.parametrize("value", [2**53, 10**20, -(2**60)])
def test_exact_bytes_accepts_integers_that_are_a_doubles_text(value: int) -> None:
    """2^53, 1e20: how RFC 8785 writes those doubles; a JSON parser hands them back as integers."""
    if float(value) == value and _es6_number(float(value)) == str(value):
        assert exact_bytes(value) == str(value).encode()
    else:
        with pytest.raises(CanonicalizationError):
            exact_bytes(value)


@settings(max_examples=300)
@given(wide_values)
def test_fast_path_and_exact_encoder_agree_on_normalized_data(value: object) -> None:
    """Differential: orjson (when the data is plain) and the pure-Python encoder give the same bytes."""
    data = normalize(value)
    exact = jcs_encode(data)
    assert exact_bytes(data) == exact
    if _is_plain(data):
        assert orjson.dumps(data, option=orjson.OPT_SORT_KEYS) == exact


@settings(max_examples=300)
@given(wide_values, wide_values)
def test_record_never_gives_two_contents_the_same_receipt_hash(a: object, b: object) -> None:
    """Through the collector (no redaction: it maps secrets onto one value on purpose)."""
    c = Collector(goal="one-to-one", redact=False, evidence=False)
    ha, hb = c.record("t", a)["receipt_hash"], c.record("t", b)["receipt_hash"]
    assert (ha == hb) == (_key(a) == _key(b))


@settings(max_examples=300)
@given(wide_values)
def test_collector_fast_path_agrees_with_normalize_redact_encode(value: object) -> None:
    """Differential: the record() hot path (orjson on plain data) against the documented three stages."""
    c = Collector(goal="differential", evidence=False)
    want = hashlib.sha256(exact_bytes(default_redactor(normalize(value)))).hexdigest()
    assert c.record("t", value)["receipt_hash"] == want


@pytest.mark.parametrize("tag", [{"$aer1:int": "12x"}, {"$aer1:int": 5}, {"$aer1:str": ["a", 65]},
                                 {"$aer1:float": "nan"}, {"$aer1:object": [1]}, {"$aer1:int": "9" * 5000}])
def test_restore_leaves_malformed_tags_as_they_are(tag: dict[str, object]) -> None:
    assert restore(tag) == tag


_member_text = st.text(min_size=1, max_size=12).filter(_no_surrogates)


@settings(max_examples=300)
@given(agent=_member_text, tool=_member_text,
       extras=st.dictionaries(st.sampled_from(["reply_to", "target", "recipient", "call_id"]), _member_text))
def test_a_step_header_with_optional_members_is_hashed_as_its_canonical_bytes(
    agent: str, tool: str, extras: dict[str, str]
) -> None:
    """The header bytes a step is chained over, optional members sorted in, are the step's RFC 8785 bytes."""
    collector = Collector(goal="headers")
    collector.record("first", {}, agent=agent)  # the agent's name is known (its JSON text remembered) from here
    step = collector.record(tool, {"n": 1}, agent=agent, **extras)
    body = {k: v for k, v in step.items() if k != "receipt_id"}
    digest = hashlib.sha256(b"aer1-chain-v1/step\x00" + jcs_encode(body)).hexdigest()
    assert collector._head == digest, f"got a chain digest over other bytes for members {sorted(body)}"
    assert list(step)[10:] == [m for m in ("reply_to", "target", "recipient", "call_id") if m in extras]


@settings(max_examples=200)
@given(start=st.floats(min_value=0, max_value=4e9), length=st.floats(min_value=0, max_value=1e6),
       content=json_values)
def test_a_step_recorded_from_float_times_is_the_step_of_their_exact_conversion(
    start: float, length: float, content: object
) -> None:
    """record() converts time.time() floats in line: the same instants, the same content bytes, as the helpers give."""
    from aer1._timefmt import format_ns, to_ns

    end = start + length
    collector = Collector(goal="times")
    try:
        step = collector.record("t", content, started_at=start, ended_at=end)
    except ValueError:  # content with no exact form at all, or over a limit: refused by the helpers too
        with pytest.raises(ValueError):
            collector._content_bytes(content)
        return
    assert (step["started_at"], step["ended_at"]) == (format_ns(to_ns(start)), format_ns(to_ns(end)))
    assert step["receipt_hash"] == hashlib.sha256(collector._content_bytes(content)).hexdigest()
