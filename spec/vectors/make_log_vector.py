"""Write spec/vectors/log-vector.json: the log entries of the receipt vector, a two-entry log, its proof.

    python spec/vectors/make_log_vector.py

The receipt is the one of receipt-vector.json; the log key is a published test key (seed
0x01 repeated: never use it). Ed25519 is deterministic, so every value here is fixed.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aer1._tlog import (
    Checkpoint,
    Ed25519Signer,
    TlogProof,
    format_tlog_proof,
    inclusion_proof,
    leaf_hash,
    levels_source,
    root_of,
    sign_note,
    tree_levels,
)
from aer1._tlog._entry import entry_for_receipt, opened_entry

HERE = Path(__file__).parent
SEED = b"\x01" * 32  # public test seed: never for real use
ORIGIN = "example.com/aer1-test-log"


def main() -> None:
    receipt = json.loads((HERE / "receipt-vector.json").read_text())["receipt"]
    closed = entry_for_receipt(receipt).encode()
    opened = opened_entry(receipt["workflow_id"], receipt["receipt_id"], receipt["steps"][0]["started_at"]).encode()
    entries = [opened, closed]
    leaves = [leaf_hash(e) for e in entries]
    root = root_of(leaves)
    signer = Ed25519Signer(ORIGIN, Ed25519PrivateKey.from_private_bytes(SEED))
    note = sign_note(Checkpoint(ORIGIN, 2, root).text(), [signer])
    proof = TlogProof(1, tuple(inclusion_proof(1, 2, levels_source(tree_levels(leaves)))), note)
    doc = {
        "about": "aer1 transparency log vector (spec/log.md): the entries of receipt-vector.json's receipt, "
                 "a log of the two, its signed checkpoint and the receipt's tlog-proof. Seed 0x01 x 32 is a "
                 "published test key.",
        "log_seed_hex": SEED.hex(),
        "origin": ORIGIN,
        "vkey": signer.verifier().vkey,
        "opened_entry": opened.decode("ascii"),
        "closed_entry": closed.decode("ascii"),
        "leaf_hashes": [h.hex() for h in leaves],
        "root": root.hex(),
        "root_base64": base64.b64encode(root).decode("ascii"),
        "checkpoint": note.decode("utf-8"),
        "tlog_proof": format_tlog_proof(proof).decode("utf-8"),
    }
    (HERE / "log-vector.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
