"""Chain-head anchoring with RFC 3161 tokens from a real local TSA; Nostr and OpenTimestamps refused."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aer1._merkle import merkle_root_hex
from aer1.collectors import (
    VERDICT_FAIL,
    VERDICT_PASS,
    VERDICT_UNAVAILABLE,
    AnchorError,
    NostrBackend,
    OTSBackend,
    all_verdicts_pass,
    anchor_chain_head,
    proof_from_json,
    proof_to_json,
    verify_anchor,
    verify_receipt_verdicts,
)
from aer1.collectors._compat_anchor import NO_TSA_TRUST
from aer1.verifier import TsaTrust

from ..timestamp.tsa import LocalTSA
from .conftest import recorded_run


def _tsa_kwargs(*servers: LocalTSA) -> dict[str, dict[str, Any]]:
    return {"rfc3161": {"tsa": [s.url for s in servers]}}


@pytest.fixture
def receipt() -> dict[str, Any]:
    return recorded_run().finalize(final_answer="done")


@pytest.fixture
def proof(receipt: dict[str, Any], tsa: LocalTSA) -> dict[str, Any]:
    return anchor_chain_head(receipt, backend_kwargs=_tsa_kwargs(tsa))


def test_anchor_verifies_against_the_trusted_tsa(receipt: dict[str, Any], proof: dict[str, Any],
                                                 trust: TsaTrust) -> None:  # fmt: skip
    """The default backend is rfc3161; its proof verifies offline and the verdict passes."""
    assert proof["format"] == "aer1-anchor-proof/1"
    assert (proof["receipt_id"], proof["merkle_root"]) == (receipt["receipt_id"], receipt["merkle_root"])
    assert [(e["backend"], e["status"]) for e in proof["backends"]] == [("rfc3161", "confirmed")]
    assert verify_anchor(proof, receipt, tsa_trust=trust) == []
    result = verify_receipt_verdicts(receipt, anchor_proof=proof, tsa_trust=trust)
    assert result["anchor_verification"]["verdict"] == VERDICT_PASS, result["anchor_verification"]
    assert all_verdicts_pass(result, require_anchor=True)


def test_without_trust_the_anchor_is_unavailable_never_pass(receipt: dict[str, Any], proof: dict[str, Any]) -> None:
    """Offline checks pass, but who issued the tokens is unchecked: neither the verdict nor the list claims it."""
    assert verify_anchor(proof, receipt) == [NO_TSA_TRUST]
    result = verify_receipt_verdicts(receipt, anchor_proof=proof)
    assert result["anchor_verification"]["verdict"] == VERDICT_UNAVAILABLE
    assert "tsa_trust" in result["anchor_verification"]["detail"]
    embedded = verify_receipt_verdicts({**receipt, "anchor_proof": proof})  # the peer's embedded form is read
    assert embedded["anchor_verification"]["verdict"] in (VERDICT_UNAVAILABLE, VERDICT_FAIL)


@pytest.mark.unverified_receipts
def test_a_truncated_run_fails_the_anchor(receipt: dict[str, Any], proof: dict[str, Any], trust: TsaTrust) -> None:
    """Drop the last real step and re-root: the anchored root no longer matches the steps."""
    cut = copy.deepcopy(receipt)
    del cut["steps"][-2]
    for i, step in enumerate(cut["steps"], 1):
        step["seq"] = i
    cut["merkle_root"] = merkle_root_hex([s["receipt_id"] for s in cut["steps"]])
    failures = verify_anchor(proof, cut, tsa_trust=trust)
    assert any("does not verify: chain" in f for f in failures), failures  # the whole receipt is verified first
    result = verify_receipt_verdicts(cut, anchor_proof=proof, tsa_trust=trust)
    assert result["anchor_verification"]["verdict"] == VERDICT_FAIL


@pytest.mark.unverified_receipts
def test_a_proof_of_another_receipt_fails(proof: dict[str, Any], trust: TsaTrust) -> None:
    other = recorded_run().finalize(final_answer="done")
    failures = verify_anchor(proof, other, tsa_trust=trust)
    assert any("receipt_id does not match" in f for f in failures), failures
    # same ids and root claimed, but the tokens are over the first receipt's imprint
    forged = {**proof, "receipt_id": other["receipt_id"], "merkle_root": other["merkle_root"]}
    failures = verify_anchor(forged, other, tsa_trust=trust)
    assert any("imprint is not this receipt's digest" in f for f in failures), failures


def test_a_rogue_tsa_fails_with_trust_and_is_unavailable_without(receipt: dict[str, Any], rogue_tsa: LocalTSA,
                                                                  trust: TsaTrust) -> None:  # fmt: skip
    proof = anchor_chain_head(receipt, backend_kwargs=_tsa_kwargs(rogue_tsa))
    failures = verify_anchor(proof, receipt, tsa_trust=trust)
    assert any("trusted TSA root" in f for f in failures), failures
    assert verify_receipt_verdicts(receipt, anchor_proof=proof, tsa_trust=trust)["anchor_verification"]["verdict"] \
        == VERDICT_FAIL  # fmt: skip


def test_an_edited_token_fails(receipt: dict[str, Any], proof: dict[str, Any], trust: TsaTrust) -> None:
    bad = copy.deepcopy(proof)
    entry = bad["backends"][0]["proof"]["timestamps"][0]
    entry["nonce"] = str(int(entry["nonce"]) + 1)
    assert any("nonce" in f for f in verify_anchor(bad, receipt, tsa_trust=trust))
    entry["token"] = "not base64!"
    assert any("base64" in f for f in verify_anchor(bad, receipt, tsa_trust=trust))


def test_a_peer_proof_on_nostr_alone_is_unavailable_not_pass(receipt: dict[str, Any], trust: TsaTrust) -> None:
    """A proof whose only confirmed entry is a Nostr event cannot be checked offline: never valid, never failed."""
    peer_style = {"format": "aer1-anchor-proof/1", "receipt_id": receipt["receipt_id"],
                  "merkle_root": receipt["merkle_root"], "mode": "immediate",
                  "backends": [{"backend": "nostr", "status": "confirmed", "proof": {"event": {}}}]}  # fmt: skip
    failures = verify_anchor(peer_style, receipt, tsa_trust=trust)
    assert failures == ["backend 'nostr' cannot be checked offline (spec/compat.md)"], failures
    result = verify_receipt_verdicts(receipt, anchor_proof=peer_style, tsa_trust=trust)
    assert result["anchor_verification"]["verdict"] == VERDICT_UNAVAILABLE, result["anchor_verification"]


def test_a_checkable_entry_beside_an_uncheckable_one(receipt: dict[str, Any], proof: dict[str, Any],
                                                     trust: TsaTrust) -> None:  # fmt: skip
    """The rfc3161 entry carries the verdict; the detail names the backend left unchecked."""
    mixed = {**proof, "backends": [*proof["backends"], {"backend": "opentimestamps", "status": "confirmed"}]}
    assert verify_anchor(mixed, receipt, tsa_trust=trust) == []
    result = verify_receipt_verdicts(receipt, anchor_proof=mixed, tsa_trust=trust)["anchor_verification"]
    assert result["verdict"] == VERDICT_PASS and "not checked: backend 'opentimestamps'" in result["detail"]


@pytest.mark.parametrize("backend", ["nostr", "opentimestamps"])
def test_network_backends_are_refused_naming_why(receipt: dict[str, Any], backend: str) -> None:
    with pytest.raises(AnchorError, match=f"the {backend} anchor backend is refused: .*offline"):
        anchor_chain_head(receipt, backends=(backend,))


def test_refused_backend_classes_and_unknown_names() -> None:
    for cls in (NostrBackend, OTSBackend):
        with pytest.raises(AnchorError, match="refused"):
            cls()
    with pytest.raises(ValueError, match="unknown anchor backend 'carrier-pigeon'"):
        anchor_chain_head(recorded_run().finalize(), backends=("carrier-pigeon",))


def test_every_backend_failing_raises_listing_each(receipt: dict[str, Any]) -> None:
    def down(request: bytes) -> bytes:
        raise OSError("TSA down")

    with pytest.raises(AnchorError, match=r"all anchor backends failed: rfc3161: no TSA gave a token: .*TSA down"):
        anchor_chain_head(receipt, backend_kwargs={"rfc3161": {"tsa": down}})
    with pytest.raises(AnchorError, match="needs a TSA"):
        anchor_chain_head(receipt)


@pytest.mark.unverified_receipts
def test_a_receipt_whose_root_does_not_verify_is_not_anchored(receipt: dict[str, Any], tsa: LocalTSA) -> None:
    with pytest.raises(AnchorError, match="refusing to anchor a receipt that does not verify: merkle_root"):
        anchor_chain_head({**receipt, "merkle_root": "0" * 64}, backend_kwargs=_tsa_kwargs(tsa))
    with pytest.raises(AnchorError, match="not a JSON object"):
        anchor_chain_head([], backend_kwargs=_tsa_kwargs(tsa))  # type: ignore[arg-type]


def test_proof_json_round_trip_and_refusals(receipt: dict[str, Any], proof: dict[str, Any], trust: TsaTrust) -> None:
    again = proof_from_json(proof_to_json(proof))
    assert again == proof and verify_anchor(again, receipt, tsa_trust=trust) == []
    for text, why in (("[1]", "want a JSON object"), ("{", "not JSON"), ("x" * (1024 * 1024 + 1), "at most")):
        with pytest.raises(AnchorError, match=why):
            proof_from_json(text)


@pytest.mark.parametrize("bad", [None, [], "proof", {"format": "aer1-anchor-proof/1", "backends": "x"}])
def test_malformed_proofs_give_reasons_not_tracebacks(receipt: dict[str, Any], bad: Any) -> None:
    failures = verify_anchor(bad, receipt)
    assert failures and all(isinstance(f, str) for f in failures)
