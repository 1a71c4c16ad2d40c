"""Trial: ``verify_receipt_verdicts`` without ``key=`` said ``not_checked`` for a signature that does not verify.

A flipped signature value, or a malformed signature member, fails check 6 whatever keys
are trusted (``verify_receipt`` says INVALID), yet the per-dimension verdict hid it as
"no trusted key given": no dimension said ``fail``, so a caller rejecting on any failure
accepted a receipt with a broken signature. Without a key, only a signature that verifies
under its own embedded key is ``not_checked``.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from aer1 import Collector, generate_key_pair, verify_receipt
from aer1.collectors import verify_receipt_verdicts


@pytest.fixture(scope="module")
def signed() -> dict[str, Any]:
    private, _ = generate_key_pair()
    c = Collector(goal="a signed run", signing_key=private, evidence=False)
    c.record("lookup", {"arguments": {"q": "x"}, "result": "y"}, agent="alice", kind="tool_call", call_id="c1")
    return c.finalize("done")


def _flip_value(r: dict[str, Any]) -> None:
    value = bytearray(base64.b64decode(r["signature"]["value"]))
    value[0] ^= 1
    r["signature"]["value"] = base64.b64encode(bytes(value)).decode()


def _other_alg(r: dict[str, Any]) -> None:
    r["signature"]["alg"] = "RS256"


def _key_id_of_another(r: dict[str, Any]) -> None:
    r["signature"]["key_id"] = "0" * 64


@pytest.mark.parametrize("broken", [_flip_value, _other_alg, _key_id_of_another])
def test_broken_signature_fails_issuer_authenticity_without_a_key(signed: dict[str, Any], broken: Any) -> None:
    receipt = copy.deepcopy(signed)
    broken(receipt)
    assert not verify_receipt(receipt).valid
    verdict = verify_receipt_verdicts(receipt)["issuer_authenticity"]
    assert verdict["verdict"] == "fail", f"got {verdict}, want fail: the signature does not verify"


def test_intact_signature_without_a_key_is_not_checked(signed: dict[str, Any]) -> None:
    verdicts = verify_receipt_verdicts(copy.deepcopy(signed))
    assert verdicts["issuer_authenticity"]["verdict"] == "not_checked"
    assert "fail" not in {v["verdict"] for v in verdicts.values()}
