"""Write spec/vectors/erasure-vector.json: one committed field, its disclosure and a signed erasure record.

    python spec/vectors/make_erasure_vector.py

Everything is fixed (salt, ids, time, and the published test key of make_vectors.py: never
use it), so the file is the same on every run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aer1._canonical import exact_bytes
from aer1._commit import COMMIT_TAG, commitment, disclosure_line
from aer1._erasure import ERASURE_PAYLOAD_TYPE, erasure_record
from aer1._signing import signing_input

HERE = Path(__file__).parent
SEED = bytes(range(32))  # the all-counting test seed of make_vectors.py: public, never for real use
SALT = "AAECAwQFBgcICQoLDA0ODw"  # base64url of the bytes 0..15, unpadded


def main() -> None:
    path, value = "/arguments/email", "alice@example.com"
    preimage = exact_bytes([SALT, path, value])
    digest = commitment(SALT, path, value)
    before = {"arguments": {"email": value, "limit": 3}}
    after = {"arguments": {"email": {COMMIT_TAG: digest}, "limit": 3}}
    receipt = {"workflow_id": "0f0e0d0c-0b0a-4908-8706-050403020100",
               "receipt_id": "10203040-5060-4708-9090-a0b0c0d0e0f0", "chain_head": "ab" * 32}
    record = erasure_record(receipt, 1, path, digest, "erasure request 1", Ed25519PrivateKey.from_private_bytes(SEED),
                            "2026-01-01T00:00:00.000000Z")
    vector = {
        "salt": SALT, "path": path, "value": value,
        "commitment_preimage": preimage.decode(), "commitment": digest,
        "content": before, "committed_content_jcs": exact_bytes(after).decode(),
        "receipt_hash": hashlib.sha256(exact_bytes(after)).hexdigest(),
        "disclosure_line": disclosure_line(1, [SALT, path, value]).decode(),
        "erasure_binding": receipt,
        "erasure_signing_input_sha256": hashlib.sha256(signing_input(record, ERASURE_PAYLOAD_TYPE)).hexdigest(),
        "erasure_record_jcs": exact_bytes(record).decode(),
    }
    (HERE / "erasure-vector.json").write_text(json.dumps(vector, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
