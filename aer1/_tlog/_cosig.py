"""Witness cosignatures (c2sp.org/tlog-cosignature, Ed25519 type 0x04).

A cosignature is a note signature line whose bytes are an 8-byte big-endian POSIX
timestamp then an Ed25519 signature over ``"cosignature/v1\\ntime <timestamp>\\n"``
followed by the checkpoint's whole note text. Its key ID hashes the type byte 0x04, so a
witness key never verifies as a log key (type 0x01) or the other way round.

API:
    COSIGNATURE_TYPE (0x04), COSIGNATURE_HEADER, MAX_TIMESTAMP
    cosignature_message(text, timestamp) -> bytes     the signed bytes
    cosignature_timestamp(sig) -> int                 LogMalformed unless 72 bytes with a valid time
    CosignatureSigner(name, private_key)              .sign(text) (now) / .sign_at(text, timestamp) -> Signature
                                                      .verifier() -> CosignatureVerifier
    CosignatureVerifier(name, public_key)             .verify(text, sig) -> bool; .vkey
    Both plug into aer1._tlog._note.open_note / sign_note like the Ed25519 note keys.
"""

from __future__ import annotations

import struct
import time

from ..errors import LogMalformed
from ._note import NamedSigner, NamedVerifier, Signature, ed25519_verify

__all__ = [
    "COSIGNATURE_HEADER",
    "COSIGNATURE_TYPE",
    "MAX_TIMESTAMP",
    "CosignatureSigner",
    "CosignatureVerifier",
    "cosignature_message",
    "cosignature_timestamp",
]

COSIGNATURE_TYPE = 0x04
COSIGNATURE_HEADER = b"cosignature/v1\n"
#: Largest timestamp a cosignature may carry (2**63 - 1).
MAX_TIMESTAMP = 2**63 - 1
_SIG_BYTES = 8 + 64


def cosignature_message(text: bytes, timestamp: int) -> bytes:
    """The bytes an Ed25519 cosignature signs: header, time line, then the checkpoint text."""
    if isinstance(timestamp, bool) or not isinstance(timestamp, int) or not 0 <= timestamp <= MAX_TIMESTAMP:
        raise LogMalformed(f"cosignature timestamp: got {timestamp!r}, want 0..{MAX_TIMESTAMP}")
    return COSIGNATURE_HEADER + b"time %d\n" % timestamp + text


def cosignature_timestamp(sig: bytes) -> int:
    """The timestamp of a cosignature's bytes (after the key ID)."""
    if len(sig) != _SIG_BYTES:
        raise LogMalformed(f"cosignature: got {len(sig)} bytes, want {_SIG_BYTES} (timestamp and signature)")
    ts = int(struct.unpack(">Q", sig[:8])[0])
    if ts > MAX_TIMESTAMP:
        raise LogMalformed(f"cosignature timestamp: got {ts}, want at most {MAX_TIMESTAMP}")
    return ts


class CosignatureVerifier(NamedVerifier):
    """Verifies the Ed25519 cosignatures of one named witness key."""

    key_type = COSIGNATURE_TYPE

    def verify(self, text: bytes, sig: bytes) -> bool:
        try:
            ts = cosignature_timestamp(sig)
        except LogMalformed:
            return False
        return ed25519_verify(self._public, sig[8:], cosignature_message(text, ts))


class CosignatureSigner(NamedSigner):
    """Cosigns checkpoint texts with one named Ed25519 witness key."""

    key_type = COSIGNATURE_TYPE

    def verifier(self) -> CosignatureVerifier:
        """The matching verifier."""
        return CosignatureVerifier(self._name, self.public)

    def sign_at(self, text: bytes, timestamp: int) -> Signature:
        """The cosignature of ``text`` at ``timestamp`` (POSIX seconds)."""
        sig = self._private.sign(cosignature_message(text, timestamp))
        return Signature(self._name, self._key_id, struct.pack(">Q", timestamp) + sig)

    def sign(self, text: bytes) -> Signature:
        """The cosignature of ``text`` now."""
        return self.sign_at(text, int(time.time()))
