"""The step hash chain: domain-separated digests and the UUIDv8 step ids derived from them.

Each step's digest is SHA-256 over a domain tag and the RFC 8785 bytes of the step
without its ``receipt_id``; the step's ``prev_digest`` is the digest of the step before
(for step 1, a genesis digest binding the workflow id). The step ``receipt_id`` is an
RFC 9562 version-8 UUID made from the first 16 bytes of the digest, so the Section 8.1
Merkle root over receipt ids commits to every member of every step and to their order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ._canonical import exact_bytes, sorted_json

__all__ = [
    "GENESIS_TAG",
    "PROFILE",
    "STEP_TAG",
    "genesis_digest",
    "sha256_hex",
    "step_digest",
    "step_digest_from_bytes",
    "step_digest_hex",
    "uuid8_from_digest",
    "uuid8_from_hex",
]

#: Names this construction and its version in the receipt's ``profile`` member.
PROFILE = "aer1-chain-v1"
#: Domain tag of the genesis digest (step 1's ``prev_digest``).
GENESIS_TAG = b"aer1-chain-v1/genesis\x00"
#: Domain tag of every step digest.
STEP_TAG = b"aer1-chain-v1/step\x00"
_DIGEST_LEN = 32


def sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data`` as 64 lowercase hex characters."""
    return hashlib.sha256(data).hexdigest()


def genesis_digest(workflow_id: str) -> str:
    """The ``prev_digest`` of step 1: binds the chain to its workflow."""
    return hashlib.sha256(GENESIS_TAG + workflow_id.encode("utf-8")).hexdigest()


def step_digest_from_bytes(step_bytes: bytes) -> bytes:
    """Digest of a step given the canonical bytes of the step without ``receipt_id``."""
    return hashlib.sha256(STEP_TAG + step_bytes).digest()


def step_digest(step: Mapping[str, Any]) -> bytes:
    """Digest of a step: SHA-256(STEP_TAG || JCS(step without receipt_id))."""
    body = {k: v for k, v in step.items() if k != "receipt_id"}
    return step_digest_from_bytes(exact_bytes(body))


def step_digest_hex(step: Mapping[str, Any], *, flat: bool = False) -> str:
    """``hex(step_digest(step))``: what the next step's ``prev_digest`` must be.

    ``flat=True`` promises what a verified profile step guarantees (ASCII member names,
    string values, an integer seq within 2**53): then the sorted output is already
    the JCS encoding and the plainness walk is skipped. Raises
    :class:`~aer1._canonical.CanonicalizationError` if the step is not JSON data.
    """
    body = dict(step)
    body.pop("receipt_id", None)
    if flat:
        try:
            return hashlib.sha256(STEP_TAG + sorted_json(body)).hexdigest()
        except (TypeError, ValueError):
            pass  # e.g. a lone surrogate: the exact encoder names the problem
    return hashlib.sha256(STEP_TAG + exact_bytes(body)).hexdigest()


def uuid8_from_digest(digest: bytes) -> str:
    """RFC 9562 version-8 UUID from the first 16 bytes of a digest, lowercase.

    Byte 6's high nibble becomes the version (8) and byte 8's top two bits the
    variant (10); the other 122 bits are the digest's.
    """
    if len(digest) != _DIGEST_LEN:
        raise ValueError(f"digest length: got {len(digest)} bytes, want {_DIGEST_LEN}")
    return uuid8_from_hex(digest.hex())


def uuid8_from_hex(digest_hex: str) -> str:
    """:func:`uuid8_from_digest` given the digest as lowercase hex (the hot path)."""
    h = digest_hex
    return f"{h[:8]}-{h[8:12]}-8{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


# hex digit -> the same digit with its top two bits set to the RFC 9562 variant 10
_VARIANT = {f"{i:x}": f"{(i & 0x3) | 0x8:x}" for i in range(16)}
