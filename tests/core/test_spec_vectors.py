"""The spec's test vector: every intermediate value recomputes, and the receipt verifies."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from aer1._canonical import canonical_bytes
from aer1._chain import STEP_TAG, genesis_digest, uuid8_from_digest
from aer1._merkle import leaf_receipt_id, merkle_root
from aer1._receipt import close_content
from aer1._signing import key_id, load_public_key, signing_input
from aer1.verifier import verify_receipt

VECTOR = json.loads((Path(__file__).parents[2] / "spec" / "vectors" / "receipt-vector.json").read_text())


def test_vector_intermediate_values() -> None:
    r = VECTOR["receipt"]
    assert genesis_digest(r["workflow_id"]) == VECTOR["genesis_digest"]
    prev = VECTOR["genesis_digest"]
    for step, want in zip(r["steps"], VECTOR["steps"], strict=True):
        assert step["prev_digest"] == prev
        body = {k: v for k, v in step.items() if k != "receipt_id"}
        assert canonical_bytes(body).decode() == want["jcs_without_receipt_id"]
        digest = hashlib.sha256(STEP_TAG + canonical_bytes(body)).digest()
        assert digest.hex() == want["digest"]
        assert uuid8_from_digest(digest) == want["receipt_id"] == step["receipt_id"]
        prev = digest.hex()
    assert prev == VECTOR["chain_head"] == r["chain_head"]
    for content, jcs, step in zip(VECTOR["contents"], VECTOR["content_jcs"], r["steps"], strict=True):
        assert canonical_bytes(content).decode() == jcs
        assert hashlib.sha256(jcs.encode()).hexdigest() == step["receipt_hash"]
    assert VECTOR["contents"][-1] == close_content(r, len(r["steps"]))
    leaves = [leaf_receipt_id(s["receipt_id"]) for s in r["steps"]]
    assert [x.hex() for x in leaves] == VECTOR["merkle_leaves"]
    assert merkle_root(leaves).hex() == VECTOR["merkle_root"] == r["merkle_root"]
    sig_input = signing_input(r)
    assert hashlib.sha256(sig_input).hexdigest() == VECTOR["signing_input_sha256"]
    assert sig_input.hex().startswith(VECTOR["signing_input_prefix_hex"])


def test_vector_receipt_verifies_under_its_key() -> None:
    kid = key_id(load_public_key(VECTOR["private_key_pem"]))
    report = verify_receipt(VECTOR["receipt"], trusted_key_ids=[kid])
    assert report.valid, [f.reason for f in report.failures]
    assert report.check("signature").status == "PASS"
