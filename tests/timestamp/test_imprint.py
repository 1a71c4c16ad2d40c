"""The bytes a token covers, fixed by the spec's vector (another implementation must hash the same)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from aer1._imprint import IMPRINT_DOMAIN, IMPRINT_TYPE, imprint_digest, imprint_message

VECTOR = Path(__file__).resolve().parents[2] / "spec" / "vectors" / "receipt-vector.json"
#: The values spec/timestamp.md states for the vector receipt.
SPEC_LENGTH = 817
SPEC_DIGEST = "92ab521108441fc39f9c14f4bf36f5a5b8ebbc34c8d993b1945e7f2b1e5365b2"


def test_vector_imprint_is_the_one_the_spec_states() -> None:
    receipt = json.loads(VECTOR.read_text(encoding="utf-8"))["receipt"]
    message = imprint_message(receipt)
    prefix = IMPRINT_DOMAIN + struct.pack(">Q", len(IMPRINT_TYPE)) + IMPRINT_TYPE
    assert message.startswith(prefix) and struct.unpack(">Q", message[len(prefix):len(prefix) + 8])[0] == (
        len(message) - len(prefix) - 8)
    assert (len(message), imprint_digest(receipt)) == (SPEC_LENGTH, SPEC_DIGEST)
    assert SPEC_DIGEST in (VECTOR.parent.parent / "timestamp.md").read_text(encoding="utf-8")


def test_imprint_leaves_out_only_signature_timestamps_and_steps() -> None:
    receipt = json.loads(VECTOR.read_text(encoding="utf-8"))["receipt"]
    base = imprint_digest(receipt)
    for member in ("signature", "steps"):
        assert imprint_digest({**receipt, member: "changed"}) == base, member
    assert imprint_digest({**receipt, "timestamps": []}) == base
    for member in ("goal", "status", "merkle_root", "chain_head", "output_hash", "session_id", "workflow_id"):
        assert imprint_digest({**receipt, member: "changed"}) != base, member
