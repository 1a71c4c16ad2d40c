"""Key strings of either type parsed into their verifier or signer: 0x01 (note signatures), 0x04 (cosignatures).

Kept apart from :mod:`._note` and :mod:`._cosig`: it is the one place that knows both key
types, so neither of those modules imports the other back.
"""

from __future__ import annotations

from ..errors import LogMalformed
from ._cosig import COSIGNATURE_TYPE, CosignatureSigner, CosignatureVerifier
from ._note import ED25519_TYPE, SIGNER_PREFIX, Ed25519Signer, Ed25519Verifier, Signer, Verifier, split_key

__all__ = ["parse_signer_key", "parse_vkey"]


def parse_vkey(text: str) -> Verifier:
    """A verifier from its key string: type 0x01 (note signatures) or 0x04 (cosignatures)."""
    name, kid, key_type, public = split_key(text, "verifier key")
    verifier: Ed25519Verifier | CosignatureVerifier
    if key_type == ED25519_TYPE:
        verifier = Ed25519Verifier(name, public)
    elif key_type == COSIGNATURE_TYPE:
        verifier = CosignatureVerifier(name, public)
    else:
        raise LogMalformed(f"verifier key: got type 0x{key_type:02x}, want 0x01 (Ed25519) or 0x04 (cosignature)")
    if verifier.key_id != kid:
        raise LogMalformed(f"verifier key {name}: got key ID {kid:08x}, want {verifier.key_id:08x}")
    return verifier


def parse_signer_key(text: str) -> Signer:
    """A signer from its key string: type 0x01 (note signatures) or 0x04 (cosignatures)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    text = text.strip() if isinstance(text, str) else text
    if not isinstance(text, str) or not text.startswith(SIGNER_PREFIX):
        raise LogMalformed(f"signer key: want it to start with {SIGNER_PREFIX!r}")
    name, kid, key_type, seed = split_key(text[len(SIGNER_PREFIX) :], "signer key")
    if len(seed) != 32:
        raise LogMalformed(f"signer key: got a {len(seed)}-byte seed, want 32")
    private = Ed25519PrivateKey.from_private_bytes(seed)
    signer: Ed25519Signer | CosignatureSigner
    if key_type == ED25519_TYPE:
        signer = Ed25519Signer(name, private)
    elif key_type == COSIGNATURE_TYPE:
        signer = CosignatureSigner(name, private)
    else:
        raise LogMalformed(f"signer key: got type 0x{key_type:02x}, want 0x01 (Ed25519) or 0x04 (cosignature)")
    if signer.key_id != kid:
        raise LogMalformed(f"signer key {name}: got key ID {kid:08x}, want {signer.key_id:08x}")
    return signer
