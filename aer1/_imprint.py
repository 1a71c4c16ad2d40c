"""What an RFC 3161 timestamp token in a receipt covers, and the ``timestamps`` member's shape.

The producer (which obtains tokens at finalize) and the verifier (which checks them) both
import this module, so both hash exactly the same bytes. The token is over

    "aer1-tst-v1" || u64be(len(T)) || T || u64be(len(B)) || B

where T is :data:`IMPRINT_TYPE` and B is the RFC 8785 encoding of the receipt's workflow
members (those the close step binds), ``merkle_root``, ``chain_head`` and, in a signed
receipt, ``key_proof``: the signing key's Ed25519 signature over the same members, made
before the token is asked for, so the token dates the key's use and not only the content.
The steps are bound through ``chain_head`` and ``merkle_root``; ``signature`` and
``timestamps`` are left out, so the signature can then cover the tokens (spec/timestamp.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ._canonical import exact_bytes
from ._receipt import CLOSE_BOUND_MEMBERS
from ._signing import pae

__all__ = [
    "DEFAULT_TSA_TIMEOUT_S",
    "ENTRY_ERROR_MEMBERS",
    "ENTRY_TOKEN_MEMBERS",
    "IMPRINT_DOMAIN",
    "IMPRINT_TYPE",
    "KEY_PROOF_MEMBER",
    "KEY_PROOF_TYPE",
    "MAX_TIMESTAMPS",
    "MAX_TOKEN_BYTES",
    "MAX_TSA_ERROR_CHARS",
    "MAX_TSA_NAME_CHARS",
    "MAX_TSA_TIMEOUT_S",
    "TIMESTAMPS_MEMBER",
    "imprint_digest",
    "imprint_message",
    "key_proof_input",
]

#: The receipt member that holds the timestamp entries (a profile member).
TIMESTAMPS_MEMBER = "timestamps"
#: The receipt member with the signing key's signature made before the tokens (a profile member).
KEY_PROOF_MEMBER = "key_proof"
#: The payload type of the key proof's signed bytes (the signature's encoding, another type).
KEY_PROOF_TYPE = b"application/vnd.aer1.key-proof+json"
_BOUND = (*CLOSE_BOUND_MEMBERS, "merkle_root", "chain_head")
IMPRINT_DOMAIN = b"aer1-tst-v1"
IMPRINT_TYPE = b"application/vnd.aer1.timestamp-imprint+json"
#: Largest DER time-stamp response kept in a receipt (a reply with the signer certificate is ~1-3 KiB).
MAX_TOKEN_BYTES = 64 * 1024
#: Most entries in ``timestamps`` (one per TSA asked).
MAX_TIMESTAMPS = 8
#: Longest TSA name (its URL, or the name of the callable that reached it).
MAX_TSA_NAME_CHARS = 2048
#: Longest error text kept for a TSA that gave no token.
MAX_TSA_ERROR_CHARS = 512
#: How long finalize waits for one TSA, in seconds, unless told otherwise.
DEFAULT_TSA_TIMEOUT_S = 10.0
#: Longest timeout a caller may set (a run never waits longer than this for its TSAs).
MAX_TSA_TIMEOUT_S = 300.0
#: Members of an entry holding a token, and of an entry recording why there is none.
ENTRY_TOKEN_MEMBERS = frozenset(("tsa", "nonce", "token"))
ENTRY_ERROR_MEMBERS = frozenset(("tsa", "error"))


def key_proof_input(receipt: Mapping[str, Any]) -> bytes:
    """The bytes the key proof signs: the signature's encoding of the bound members, under its own type."""
    return pae(KEY_PROOF_TYPE, exact_bytes({k: receipt[k] for k in _BOUND if k in receipt}))


def imprint_message(receipt: Mapping[str, Any]) -> bytes:
    """The bytes a token is requested over (hashed with SHA-256 in the request)."""
    bound = {k: receipt[k] for k in (*_BOUND, KEY_PROOF_MEMBER) if k in receipt}
    return _pae(exact_bytes(bound))


def imprint_digest(receipt: Mapping[str, Any]) -> str:
    """SHA-256 of :func:`imprint_message`, hex: the "receipt digest" a token must carry."""
    return hashlib.sha256(imprint_message(receipt)).hexdigest()


def _pae(body: bytes) -> bytes:
    """The signature's pre-authentication encoding, under this module's own domain."""
    return pae(IMPRINT_TYPE, body, domain=IMPRINT_DOMAIN)
