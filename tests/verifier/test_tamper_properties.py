"""Properties: honest receipts verify; any single edit, reorder, drop, duplicate or swap is caught."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aer1._signing import key_id, load_public_key
from aer1.verifier import verify_receipt

from ..helpers import KEYS, make_receipt

BASE = make_receipt()
SIGNED = make_receipt(signing_key=KEYS / "trusted.key")
TRUSTED_ID = key_id(load_public_key(KEYS / "trusted.pub"))


def _first_check(receipt: Any, **kw: Any) -> str | None:
    report = verify_receipt(receipt, **kw)
    return report.failures[0].check if report.failures else None


def test_honest_receipts_verify() -> None:
    assert verify_receipt(BASE).valid
    report = verify_receipt(SIGNED, trusted_key_ids=[TRUSTED_ID])
    assert report.valid, report.failures
    assert "trusted key" in report.check("signature").detail


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, (*path, i))]
    return [(path, value)]


def _edited(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        if len(value) == 64 and all(c in "0123456789abcdef" for c in value):
            return ("0" if value[0] != "0" else "1") + value[1:]
        if len(value) == 36 and value.count("-") == 4:
            return ("0" if value[0] != "0" else "1") + value[1:]
        if value.endswith("Z") and "T" in value:
            return value[:-2] + ("1" if value[-2] != "1" else "2") + "Z"
        return value + "x"
    return "edited"


LEAVES = _leaves(BASE)
SIGNED_LEAVES = _leaves(SIGNED)


def _set(receipt: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    node: Any = receipt
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


#: Workflow members whose values are enumerated: an edit makes them malformed.
ENUMERATED = ("type", "version", "profile", "merkle_version", "status")


def _responsible(path: tuple[Any, ...]) -> set[str]:
    """The check that must catch an edit of the member at ``path`` first."""
    if path[0] == "merkle_root":
        return {"merkle_root"}
    if path[0] == "type":  # the document no longer says it is a receipt: MALFORMED (spec/verifier.md)
        return {"parse"}
    if path[0] in ENUMERATED:
        return {"members"}
    if path[0] == "steps":
        member = path[2]
        if member == "seq":
            return {"sequence"}
        if member == "receipt_id":
            return {"merkle_root"}  # the root over the ids is recomputed before the chain
        if member in ("kind", "status"):
            return {"members"}
        if member in ("started_at", "ended_at"):
            return {"members", "chain"}  # a reversed interval is malformed; a moved one breaks the chain
    return {"chain"}  # everything else is bound by the chain and the close step


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(LEAVES))
def test_any_single_member_edit_is_caught(leaf: tuple[tuple[Any, ...], Any]) -> None:
    path, value = leaf
    bad = copy.deepcopy(BASE)
    _set(bad, path, _edited(value))
    assert _first_check(bad) in _responsible(path), path


def test_every_member_edit_is_caught_exhaustively() -> None:
    caught = {}
    for path, value in LEAVES:
        bad = copy.deepcopy(BASE)
        _set(bad, path, _edited(value))
        caught[path] = _first_check(bad)
    assert {path for path, check in caught.items() if check not in _responsible(path)} == set()
    assert set(caught.values()) == {"parse", "members", "sequence", "merkle_root", "chain"}


def test_every_edit_is_caught_even_when_the_attacker_recomputes_hashes_with_a_trusted_key() -> None:
    """A re-chained, re-rooted, re-signed forgery verifies without a key; a trusted key catches it."""
    from tests.fixtures.generate_adversarial import _rechain

    consistent = 0
    for path, value in SIGNED_LEAVES:
        if path[0] == "signature":
            continue
        bad = copy.deepcopy(SIGNED)
        _set(bad, path, _edited(value))
        forged = _rechain(bad, KEYS / "attacker.key")
        without_key = _first_check(forged)
        check = _first_check(forged, trusted_key_ids=[TRUSTED_ID])
        if without_key is None:
            consistent += 1
            assert check == "signature", path
        else:  # an edit the attacker cannot make consistent is caught without any key
            assert check == without_key and check in ("parse", "members", "chain"), path
            assert check != "parse" or path == ("type",), path
    assert consistent > len(SIGNED_LEAVES) // 2


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_reorder_drop_duplicate_and_swap_are_caught(data: st.DataObject) -> None:
    n = len(BASE["steps"])
    op = data.draw(st.sampled_from(["reorder", "drop", "duplicate", "swap"]))
    i = data.draw(st.integers(0, n - 1))
    j = data.draw(st.integers(0, n - 1).filter(lambda x: x != i))
    bad = copy.deepcopy(BASE)
    steps = bad["steps"]
    if op == "reorder":
        steps[i], steps[j] = steps[j], steps[i]
        want = {"merkle_root"}
    elif op == "drop":
        del steps[i]
        want = {"merkle_root"}
    elif op == "duplicate":
        steps.insert(j, copy.deepcopy(steps[i]))
        want = {"sequence"}
    else:
        keep = ("seq", "receipt_id", "prev_digest")
        a, b = steps[i], steps[j]
        for k in set(a) | set(b):
            if k not in keep:
                a[k], b[k] = b.get(k), a.get(k)
        for s in (a, b):
            for k in [k for k, v in s.items() if v is None]:
                del s[k]
        want = {"chain", "members"}
    for pos, s in enumerate(steps):
        s["seq"] = pos + 1
    assert _first_check(bad) in want
