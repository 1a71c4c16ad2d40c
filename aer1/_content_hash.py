"""The content hash, defined once: SHA-256 of a value's canonical bytes (RFC 8785), in lowercase hex.

A step's ``receipt_hash`` is the content hash of its content, the close step's of the
workflow members it binds, a link step's of its child's summary, a commitment's of
``[salt, path, value]``; every producer and verifier path computes it here.
"""

from __future__ import annotations

from hashlib import sha256
from typing import Any

from ._canonical import exact_bytes

__all__ = ["content_hash", "hash_of_canonical"]


def content_hash(value: Any) -> str:
    """The content hash of a JSON value (raises CanonicalizationError when it has no canonical bytes)."""
    return sha256(exact_bytes(value)).hexdigest()


def hash_of_canonical(data: bytes) -> str:
    """The content hash of the value whose canonical bytes ``data`` are (the caller encoded them once for more uses)."""
    return sha256(data).hexdigest()
