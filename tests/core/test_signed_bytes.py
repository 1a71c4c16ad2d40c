"""The signed bytes have one writer: the spilled form (steps' bytes held in files) gives the whole form's bytes.

The streaming and cut verifier paths keep each step's RFC 8785 bytes in a spill file and
never hold the steps as dicts; they build the signed bytes with ``signing_input_of_parts``.
If it wrote one byte differently, a signature would verify on one path and not another.
"""

from __future__ import annotations

import io
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aer1._canonical import CanonicalizationError, exact_bytes
from aer1._signing import PAYLOAD_TYPE, SIG_DOMAIN, pae, signing_input, signing_input_of_parts

from ..helpers import KEYS, make_collector


def _spilled(receipt: dict[str, Any], cuts: list[int]) -> bytearray:
    """The receipt's signed bytes from its steps' bytes, cut into files at ``cuts``."""
    steps = [exact_bytes(step) for step in receipt["steps"]]
    bounds = sorted({0, len(steps), *(c % (len(steps) + 1) for c in cuts)})
    files: list[tuple[io.BytesIO, int]] = []
    for lo, hi in pairwise(bounds):
        data = b",".join(steps[lo:hi])
        files.append((io.BytesIO(data), len(data)))
    files.insert(len(files) // 2, (io.BytesIO(b""), 0))  # an empty spill adds nothing
    rest = {k: v for k, v in receipt.items() if k != "steps"}
    return signing_input_of_parts(rest, files, None)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 50), max_size=4), st.sampled_from(["ok", "a\u00e9\U0001f600", "\u2028"]))
def test_the_spilled_form_writes_the_whole_forms_bytes(cuts: list[int], answer: str) -> None:
    receipt = make_collector(signing_key=KEYS / "trusted.key").finalize(final_answer=answer)
    assert "signature" in receipt
    assert bytes(_spilled(receipt, cuts)) == signing_input(receipt)


def test_a_receipt_with_no_steps_and_odd_member_names_is_written_alike() -> None:
    """``steps`` sorts among the other members by RFC 8785 order, whatever their names."""
    receipt: dict[str, Any] = {"\U0001f600": 1, "\uff61": 2, "steps": [], "signature": {"x": 1}, "a": "b", "z": None}
    rest = {k: v for k, v in receipt.items() if k != "steps"}
    assert bytes(signing_input_of_parts(rest, [], None)) == signing_input(receipt)


def test_pae_under_another_domain_only_changes_the_domain() -> None:
    body = b'{"a":1}'
    assert pae(PAYLOAD_TYPE, body, domain=b"other") == b"other" + pae(PAYLOAD_TYPE, body)[len(SIG_DOMAIN):]


def test_a_step_without_an_exact_form_leaves_no_signed_bytes() -> None:
    with pytest.raises(CanonicalizationError, match="lone surrogate"):
        signing_input_of_parts({"a": 1}, [], "a lone surrogate in step 3")
