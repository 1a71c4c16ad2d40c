"""A step written on one line as an array (saved layout) must not hide its nesting from the depth limit.

The quick parse judged depth from indentation and only counted a one-line step one level
deeper when it opened with ``{``: a forged step ``[[[...]]]`` nested past the limit was
accepted without the value walk, where the strict parse refuses it.
"""

from __future__ import annotations

from typing import Any

import pytest

from aer1._layout import receipt_json
from aer1.verifier._parse import MAX_DEPTH, MalformedInput, _parse_exact, check_json_value, parse_strict

from ..helpers import make_receipt


def _nested(levels: int, bracket: str) -> Any:
    value: Any = [] if bracket == "[" else {}
    for _ in range(levels - 1):
        value = [value] if bracket == "[" else {"a": value}
    return value


def _reference(data: bytes) -> str:
    try:
        check_json_value(_parse_exact(data, "the receipt"))
    except MalformedInput as e:
        return str(e)
    return "accepted"


def _quick(data: bytes) -> str:
    try:
        parse_strict(data, what="the receipt")
    except MalformedInput as e:
        return str(e)
    return "accepted"


# the step sits at depth 2 (receipt, steps): MAX_DEPTH - 2 containers in it reach the limit exactly
@pytest.mark.parametrize("levels", [MAX_DEPTH - 3, MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH + 5])
@pytest.mark.parametrize("bracket", ["[", "{"])
def test_one_line_step_depth_judged_as_reference(levels: int, bracket: str) -> None:
    receipt = make_receipt()
    receipt["steps"][1] = _nested(levels, bracket)
    data = receipt_json(receipt)
    assert b"\n    " + bracket.encode() in data, "got a layout without the step on one line, want it there"
    quick, reference = _quick(data), _reference(data)
    assert quick == reference, f"got {quick!r} from the quick parse, want the reference's {reference!r}"


def test_array_step_past_limit_refused() -> None:
    receipt = make_receipt()
    receipt["steps"][1] = _nested(MAX_DEPTH + 5, "[")
    assert _quick(receipt_json(receipt)) == f"nesting deeper than {MAX_DEPTH} levels"
