"""Write spec/vectors/receipt-vector.json: a small signed receipt with every intermediate value.

    python spec/vectors/make_vectors.py

Ids, timestamps and the key are fixed (the key is a published test key: never use it),
except the close step's time, which is the time of running; the committed file is one run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aer1 import Collector
from aer1._canonical import canonical_bytes
from aer1._chain import STEP_TAG, genesis_digest
from aer1._merkle import leaf_receipt_id
from aer1._receipt import close_content
from aer1._signing import signing_input

HERE = Path(__file__).parent
SEED = bytes(range(32))  # the RFC-style all-counting test seed: public, never for real use


def main() -> None:
    key = Ed25519PrivateKey.from_private_bytes(SEED)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    c = Collector(goal="Vector workflow", session_id="session-1", signing_key=key,
                  _ids=("0f0e0d0c-0b0a-4908-8706-050403020100", "10203040-5060-4708-9090-a0b0c0d0e0f0"))
    c.register_agent("alice", type="AssistantAgent", description="planner", config={"model": "m"})
    t = 1_767_225_600.0  # 2026-01-01T00:00:00Z
    c.record("task", {"task": "plan"}, agent="user", started_at=t, ended_at=t)
    c.record("search", {"arguments": {"q": "é€😀"}, "result": [1, 2.5, -0.0, 1e21], "is_error": False},
             agent="alice", call_id="call_1", started_at=t + 0.25, ended_at=t + 0.5)
    c.record("message", {"content": "done"}, agent="alice", reply_to="user", started_at=t + 1, ended_at=t + 1)
    receipt = c.finalize(final_answer="done")
    steps = []
    for s in receipt["steps"]:
        body = {k: v for k, v in s.items() if k != "receipt_id"}
        jcs = canonical_bytes(body)
        steps.append({
            "seq": s["seq"],
            "jcs_without_receipt_id": jcs.decode(),
            "digest": hashlib.sha256(STEP_TAG + jcs).hexdigest(),
            "receipt_id": s["receipt_id"],
        })
    contents = [
        {"task": "plan"},
        {"arguments": {"q": "é€😀"}, "result": [1, 2.5, -0.0, 1e21], "is_error": False},
        {"content": "done"},
        close_content(receipt, len(receipt["steps"])),
    ]
    sig_input = signing_input(receipt)
    vector = {
        "about": "aer1-chain-v1 test vector: a signed 4-step receipt and every intermediate value. "
        "The private key is a public test key (seed 00 01 .. 1f): never use it.",
        "private_key_pem": pem,
        "receipt": receipt,
        "contents": contents,
        "content_jcs": [canonical_bytes(x).decode() for x in contents],
        "genesis_digest": genesis_digest(receipt["workflow_id"]),
        "steps": steps,
        "merkle_leaves": [leaf_receipt_id(s["receipt_id"]).hex() for s in receipt["steps"]],
        "merkle_root": receipt["merkle_root"],
        "chain_head": receipt["chain_head"],
        "signing_input_sha256": hashlib.sha256(sig_input).hexdigest(),
        "signing_input_prefix_hex": sig_input[: len(sig_input) - len(canonical_bytes(
            {k: v for k, v in receipt.items() if k != "signature"}))].hex(),
    }
    (HERE / "receipt-vector.json").write_text(json.dumps(vector, indent=2, ensure_ascii=False) + "\n")
    print("wrote", HERE / "receipt-vector.json")


if __name__ == "__main__":
    main()
