"""The chain rules' batch forms give exactly what their single forms give, step by step.

A verifier path that checks many steps at once uses the batch forms; the reference checker
and the producers use the single forms. If the two ever disagreed, one path would accept
what another refuses.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aer1._canonical import exact_bytes
from aer1._chain import (
    derived_ids_hex,
    is_derived_id,
    step_digest,
    step_digest_hex,
    step_digests,
    step_link,
    uuid8_from_digest,
    uuid8_from_hex,
)
from aer1._merkle import leaf_receipt_id, leaves_of_ids, merkle_root_hex, root_of_leaves
from aer1._receipt import STEP_OPTIONAL_MEMBERS, STEP_REQUIRED_MEMBERS

#: Text a step may hold on the batch path (no lone surrogate: the batch encoders refuse those).
_text = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40)
_required = st.fixed_dictionaries(
    {name: _text for name in STEP_REQUIRED_MEMBERS if name != "seq"} | {"seq": st.integers(1, 2**53 - 1)})
_with_optional = st.fixed_dictionaries(
    {name: _text for name in STEP_REQUIRED_MEMBERS if name != "seq"} | {"seq": st.integers(1, 2**53 - 1)},
    optional={name: _text for name in STEP_OPTIONAL_MEMBERS},
)


@contextmanager
def _without_orjson() -> Iterator[None]:
    """The batch writers look orjson up in ``sys.modules``: here it is not loaded."""
    held = sys.modules.pop("orjson")
    try:
        yield
    finally:
        sys.modules["orjson"] = held


def _columns(steps: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [tuple(step[name] for step in steps) for name in STEP_REQUIRED_MEMBERS]


def _singles(steps: list[dict[str, Any]]) -> bytes:
    return b"".join(step_digest(step) for step in steps)


@settings(max_examples=150)
@given(st.lists(_with_optional, min_size=1, max_size=8))
def test_the_batch_digests_are_the_single_digests(steps: list[dict[str, Any]]) -> None:
    assert sys.modules["orjson"] is orjson  # loaded: the orjson writer is the one taken
    assert step_digests(steps) == _singles(steps)


@settings(max_examples=150)
@given(st.lists(_required, min_size=1, max_size=8))
def test_the_column_template_writes_the_single_digests(steps: list[dict[str, Any]]) -> None:
    """Without orjson, steps of the required members only are written into one template."""
    with _without_orjson():
        assert step_digests(steps, _columns(steps)) == _singles(steps)
        assert step_digests(steps) == _singles(steps)  # the standard library's sorted writer


def test_the_batch_digests_refuse_what_is_not_exactly_a_string_or_an_integer() -> None:
    class Text(str):
        pass

    step = {name: "x" for name in STEP_REQUIRED_MEMBERS} | {"seq": 1, "tool": Text("t")}
    with pytest.raises(TypeError):
        step_digests([step])
    with _without_orjson():
        with pytest.raises(TypeError):
            step_digests([step], _columns([step]))
        with pytest.raises(TypeError):
            step_digests([step])


@settings(max_examples=200)
@given(st.lists(st.binary(min_size=32, max_size=32), min_size=1, max_size=20))
def test_the_batch_ids_are_the_single_ids(digests: list[bytes]) -> None:
    want = "".join(uuid8_from_digest(d).replace("-", "") for d in digests)
    assert derived_ids_hex(b"".join(digests)) == want
    assert all(is_derived_id(uuid8_from_digest(d)) for d in digests)


@settings(max_examples=150)
@given(_with_optional)
def test_a_link_is_the_digest_and_the_id_it_derives(step: dict[str, Any]) -> None:
    body = {k: v for k, v in step.items() if k != "receipt_id"}
    digest_hex, rid = step_link(exact_bytes(body))
    assert digest_hex == step_digest_hex(step) == step_digest_hex(step, flat=True) == step_digest(step).hex()
    assert rid == uuid8_from_hex(digest_hex) == uuid8_from_digest(step_digest(step))


@settings(max_examples=100)
@given(st.lists(st.text(max_size=40), max_size=600))
def test_the_batch_leaves_are_the_single_leaves_and_give_one_root(ids: list[str]) -> None:
    leaves = leaves_of_ids(ids)
    assert leaves == [leaf_receipt_id(r) for r in ids]
    assert merkle_root_hex(ids, chunk=4) == merkle_root_hex(ids) == root_of_leaves(leaves).hex()


def test_only_a_version_8_variant_10_id_is_derived() -> None:
    rid = uuid8_from_digest(bytes(range(32)))
    assert is_derived_id(rid)
    assert not is_derived_id(rid[:14] + "4" + rid[15:])
    assert not is_derived_id(rid.upper())
    assert not is_derived_id(None)
