"""Properties: honest receipts verify; any single edit, reorder, drop, duplicate or swap is caught."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aer1.signing import key_id, load_public_key
from aer1.verifier import verify_receipt

from .helpers import KEYS, make_receipt

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


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(LEAVES))
def test_any_single_member_edit_is_caught(leaf: tuple[tuple[Any, ...], Any]) -> None:
    path, value = leaf
    bad = copy.deepcopy(BASE)
    _set(bad, path, _edited(value))
    check = _first_check(bad)
    assert check is not None, f"edit of {path} not caught"
    # the edit is caught by the check responsible for that member
    if path[0] == "merkle_root":
        assert check == "merkle_root"
    elif path[0] in ("steps", "chain_head", "goal", "session_id", "status", "output_hash", "verify_url",
                     "agents", "workflow_id", "receipt_id", "profile", "version", "type", "merkle_version"):
        assert check in ("members", "sequence", "merkle_root", "chain")


def test_every_member_edit_is_caught_exhaustively() -> None:
    for path, value in LEAVES:
        bad = copy.deepcopy(BASE)
        _set(bad, path, _edited(value))
        assert _first_check(bad) is not None, path


def test_every_edit_is_caught_even_when_the_attacker_recomputes_hashes_with_a_trusted_key() -> None:
    """With a trusted key, a re-chained, re-rooted, re-signed forgery fails the signature check."""
    from tests.fixtures.generate_adversarial import _rechain

    for path, value in SIGNED_LEAVES:
        if path[0] == "signature":
            continue
        bad = copy.deepcopy(SIGNED)
        _set(bad, path, _edited(value))
        forged = _rechain(bad, KEYS / "attacker.key")
        check = _first_check(forged, trusted_key_ids=[TRUSTED_ID])
        assert check is not None, path


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
