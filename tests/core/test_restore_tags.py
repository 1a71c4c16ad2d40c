"""Trial: restore() reads evidence back: only the exact tags normalization writes are inverted, so it never
crashes on a malformed tag and two different contents never restore to the same value."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aer1._canonical import MAX_SAFE_INTEGER, exact_bytes, normalize, restore

TAG_KEYS = ["$aer1:int", "$aer1:str", "$aer1:float", "$aer1:object"]


@pytest.mark.parametrize("tag", [
    {"$aer1:int": "¹"}, {"$aer1:int": "--5"}, {"$aer1:float": ["NaN"]},  # crashed with ValueError / TypeError
    {"$aer1:int": "5"}, {"$aer1:int": "007"}, {"$aer1:int": "-0"}, {"$aer1:int": "٣"},  # restored to 5, 7, 0, 3
    {"$aer1:int": "09007199254740993"}, {"$aer1:str": ["ab"]}, {"$aer1:str": []}, {"$aer1:str": ["a", "b", 0xDC00]},
    {"$aer1:str": ["", 0xDC00]}, {"$aer1:object": {"a": 1}},  # restored to "ab", "", {"a": 1}...
])  # fmt: skip
def test_non_canonical_tag_is_left_as_it_is(tag: dict[str, Any]) -> None:
    got = restore(tag)
    assert got == tag, f"got {got!r}, want the object left as it is"


def _typed(v: Any) -> Any:
    """A comparison key that tells 5 from 5.0 and True from 1, NaN equal to NaN."""
    if isinstance(v, dict):
        return ("dict", tuple(sorted((k, _typed(x)) for k, x in v.items())))
    if isinstance(v, list):
        return ("list", tuple(_typed(x) for x in v))
    if isinstance(v, float) and math.isnan(v):
        return ("float", "nan")
    return (type(v).__name__, v)


_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=6)
_ints = st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
_scalars = st.none() | st.booleans() | _ints | st.floats(allow_nan=False, allow_infinity=False) | _text
_tag_items = (st.from_regex(r"-?[0-9٣¹]{1,20}", fullmatch=True) | _text
              | st.lists(_text | st.integers(0xD7F0, 0xE010), max_size=4) | st.sampled_from(["NaN", "Infinity"]))
_tags = st.builds(lambda k, v: {k: v}, st.sampled_from(TAG_KEYS), _tag_items)
_exact = st.recursive(_scalars | _tags, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    _text | st.sampled_from(TAG_KEYS), inner, max_size=3), max_leaves=8)


@settings(max_examples=400, deadline=None)
@given(_exact, _exact)
def test_different_evidence_contents_never_restore_alike(a: Any, b: Any) -> None:
    """Evidence holds exact JSON data: restore is one-to-one on it (it gave 5 for 5 and {"$aer1:int": "5"})."""
    exact_bytes(a), exact_bytes(b)  # both are what an evidence file can hold
    if _typed(restore(a)) == _typed(restore(b)):
        assert exact_bytes(a) == exact_bytes(b), f"{a!r} and {b!r} both restore to {restore(a)!r}"


@settings(max_examples=200, deadline=None)
@given(_exact)
def test_restore_inverts_normalize(value: Any) -> None:
    assert _typed(restore(normalize(value))) == _typed(value)
