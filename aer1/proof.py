"""Inclusion proofs for one step: show a single step to an auditor without the rest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .merkle import inclusion_proof, leaf_receipt_id

__all__ = ["PROOF_TYPE", "PROOF_VERSION", "build_step_proof"]

PROOF_TYPE = "aer1-inclusion-proof"
PROOF_VERSION = "1"


def build_step_proof(receipt: Mapping[str, Any], seq: int, content: Any = None) -> dict[str, Any]:
    """A proof document for step ``seq`` (1-based) of a ``receipt-id-v0`` receipt.

    ``content``: the step's evidence content, included so the auditor can also check
    its ``receipt_hash``.
    """
    steps = receipt.get("steps")
    if not isinstance(steps, list) or not steps:
        raise ValueError("receipt has no steps")
    if not 1 <= seq <= len(steps):
        raise ValueError(f"step {seq} out of range: the receipt has steps 1..{len(steps)}")
    version = receipt.get("merkle_version", "receipt-id-v0")
    if version != "receipt-id-v0":
        raise ValueError(f"proofs are built for receipt-id-v0 receipts, not {version}")
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
    if content is not None:
        proof["content"] = content
    return proof
