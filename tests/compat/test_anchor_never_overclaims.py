"""An anchor holds only when the receipt it anchors verifies in full and a token chains to a trusted TSA.

The trials found ``verify_anchor`` saying "holds" ([]) for a receipt whose step was edited
after anchoring (only the Merkle root was recomputed, and the root binds the step ids
alone) and, without ``tsa_trust``, for a token from any TSA. Every edit a receipt's own
checks catch must also break its anchor, and a missing trust anchor is said, not passed.
Real RFC 3161 tokens from a local TSA (tests/timestamp/tsa.py).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aer1.collectors import (
    VERDICT_FAIL,
    VERDICT_PASS,
    VERDICT_UNAVAILABLE,
    AnchorError,
    anchor_chain_head,
    verify_anchor,
    verify_receipt_verdicts,
)
from aer1.collectors._compat_anchor import NO_TSA_TRUST
from aer1.verifier import TsaTrust

from ..timestamp.tsa import LocalTSA
from .conftest import recorded_run


@pytest.fixture
def receipt() -> dict[str, Any]:
    return recorded_run().finalize(final_answer="done")


@pytest.fixture
def proof(receipt: dict[str, Any], tsa: LocalTSA) -> dict[str, Any]:
    return anchor_chain_head(receipt, backend_kwargs={"rfc3161": {"tsa": [tsa.url]}})


#: Edits after anchoring that keep every step id, so the Merkle root is unchanged: only the chain sees them.
_EDITS = {
    "step agent renamed": lambda r: r["steps"][0].__setitem__("agent", "mallory"),
    "step tool renamed": lambda r: r["steps"][0].__setitem__("tool", "wire_money"),
    "step status flipped": lambda r: r["steps"][0].__setitem__("status", "error"),
    "step receipt_hash replaced": lambda r: r["steps"][0].__setitem__("receipt_hash", "0" * 64),
    "step time moved": lambda r: r["steps"][0].__setitem__("ended_at", r["steps"][-1]["ended_at"]),
}


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("edit", sorted(_EDITS))
def test_a_step_edited_after_anchoring_breaks_the_anchor(receipt: dict[str, Any], proof: dict[str, Any],
                                                         trust: TsaTrust, edit: str) -> None:
    assert verify_anchor(proof, receipt, tsa_trust=trust) == []
    edited = copy.deepcopy(receipt)
    _EDITS[edit](edited)
    assert edited["merkle_root"] == receipt["merkle_root"]  # the root alone does not see the edit
    failures = verify_anchor(proof, edited, tsa_trust=trust)
    assert any("does not verify" in f for f in failures), failures
    verdict = verify_receipt_verdicts(edited, anchor_proof=proof, tsa_trust=trust)["anchor_verification"]
    assert verdict["verdict"] == VERDICT_FAIL, verdict


@pytest.mark.unverified_receipts
def test_anchoring_refuses_a_receipt_that_does_not_verify(receipt: dict[str, Any], tsa: LocalTSA) -> None:
    edited = copy.deepcopy(receipt)
    edited["steps"][0]["agent"] = "mallory"
    with pytest.raises(AnchorError, match="refusing to anchor a receipt that does not verify: chain"):
        anchor_chain_head(edited, backend_kwargs={"rfc3161": {"tsa": [tsa.url]}})


def test_without_tsa_trust_the_anchor_never_holds(receipt: dict[str, Any], proof: dict[str, Any]) -> None:
    """Any TSA can sign a token over a receipt: without trusted roots, the list says what was not checked."""
    failures = verify_anchor(proof, receipt)
    assert failures == [NO_TSA_TRUST]
    assert failures[0].startswith("not checked:") and "tsa_trust" in failures[0]
    assert verify_receipt_verdicts(receipt, anchor_proof=proof)["anchor_verification"]["verdict"] \
        == VERDICT_UNAVAILABLE  # fmt: skip


def test_a_rogue_tsa_never_holds_with_or_without_trust(receipt: dict[str, Any], rogue_tsa: LocalTSA,
                                                       trust: TsaTrust) -> None:  # fmt: skip
    rogue = anchor_chain_head(receipt, backend_kwargs={"rfc3161": {"tsa": [rogue_tsa.url]}})
    assert verify_anchor(rogue, receipt) != []
    assert verify_anchor(rogue, receipt, tsa_trust=trust) != []


def test_it_holds_only_with_a_trusted_tsa_and_a_verified_receipt(receipt: dict[str, Any], proof: dict[str, Any],
                                                                 trust: TsaTrust) -> None:  # fmt: skip
    assert verify_anchor(proof, receipt, tsa_trust=trust) == []
    verdict = verify_receipt_verdicts(receipt, anchor_proof=proof, tsa_trust=trust)["anchor_verification"]
    assert verdict["verdict"] == VERDICT_PASS
