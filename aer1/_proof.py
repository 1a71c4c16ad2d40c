"""Inclusion proofs for one step: show a single step to an auditor without the rest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._merkle import inclusion_proof, leaf_receipt_id
from ._receipt import CLOSE_KIND, MERKLE_VERSION, PROOF_MEMBERS, PROOF_TYPE, PROOF_VERSION

__all__ = ["PROOF_MEMBERS", "PROOF_TYPE", "PROOF_VERSION", "build_step_proof"]



def build_step_proof(receipt: Mapping[str, Any], seq: int, content: Any = None) -> dict[str, Any]:
    """A proof document for step ``seq`` (1-based) of an aer1-chain-v1 receipt.

    The proof carries the step (whose id derives from its members) and, unless the step
    is the close step itself, the close step with its own audit path: a close step at the
    last index with ``seq`` equal to the tree size fixes the number of steps, so no index
    beyond the real tree (a duplicated odd node) can be proved. ``content``: the step's
    evidence content, included so the auditor can also check its ``receipt_hash``.
    """
    steps = receipt.get("steps")
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise ValueError("receipt has no steps")
    if not 1 <= seq <= len(steps):
        raise ValueError(f"step {seq} out of range: the receipt has steps 1..{len(steps)}")
    version = receipt.get("merkle_version", MERKLE_VERSION)
    if version != MERKLE_VERSION:
        raise ValueError(f"proofs are built for {MERKLE_VERSION} receipts, not {version}")
    if "prev_digest" not in steps[seq - 1] or steps[-1].get("kind") != CLOSE_KIND:
        raise ValueError("proofs are built for aer1-chain-v1 receipts (step ids derived from the steps, "
                         "a close step last); this receipt is not one")
    leaves = [leaf_receipt_id(s["receipt_id"]) for s in steps]
    proof: dict[str, Any] = {
        "type": PROOF_TYPE,
        "version": PROOF_VERSION,
        "workflow_id": receipt.get("workflow_id"),
        "merkle_version": version,
        "merkle_root": receipt.get("merkle_root"),
        "tree_size": len(steps),
        "leaf_index": seq - 1,
        "step": dict(steps[seq - 1]),
        "audit_path": [h.hex() for h in inclusion_proof(leaves, seq - 1)],
    }
    if seq != len(steps):
        last = len(steps) - 1
        proof["close"] = {"step": dict(steps[last]), "audit_path": [h.hex() for h in inclusion_proof(leaves, last)]}
    if content is not None:
        proof["content"] = content
    return proof
