"""Key strings of either type parsed into their verifier or signer: 0x01 (note signatures), 0x04 (cosignatures).

Kept apart from :mod:`._note` and :mod:`._cosig`: it is the one place that knows both key
types, so neither of those modules imports the other back.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from ..errors import LogMalformed
from ._cosig import COSIGNATURE_TYPE, CosignatureSigner, CosignatureVerifier
from ._note import (
    ED25519_TYPE,
    SIGNER_PREFIX,
    Ed25519Signer,
    Ed25519Verifier,
    NamedKey,
    Signer,
    Verifier,
    split_key,
)

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = ["not_a_key_path", "parse_signer_key", "parse_vkey"]


_Key = TypeVar("_Key", bound=NamedKey)
_Material = TypeVar("_Material")

#: Each key type and the class of its verifier, then of its signer.
_VERIFIERS: dict[int, Callable[[str, bytes], Ed25519Verifier | CosignatureVerifier]] = {
    ED25519_TYPE: Ed25519Verifier,
    COSIGNATURE_TYPE: CosignatureVerifier,
}
_SIGNERS: dict[int, Callable[[str, Ed25519PrivateKey], Ed25519Signer | CosignatureSigner]] = {
    ED25519_TYPE: Ed25519Signer,
    COSIGNATURE_TYPE: CosignatureSigner,
}


def _key_of_type(
    what: str,
    classes: Mapping[int, Callable[[str, _Material], _Key]],
    name: str,
    kid: int,
    key_type: int,
    material: _Material,
) -> _Key:
    """The key of ``key_type`` made from ``material``, refused unless its key ID is ``kid`` (the one in its string)."""
    make = classes.get(key_type)
    if make is None:
        raise LogMalformed(f"{what}: got type 0x{key_type:02x}, want 0x01 (Ed25519) or 0x04 (cosignature)")
    key = make(name, material)
    if key.key_id != kid:
        raise LogMalformed(f"{what} {name}: got key ID {kid:08x}, want {key.key_id:08x}")
    return key


def not_a_key_path(text: str) -> str | None:
    """Why ``text``, given where a key or a file holding one is wanted and not a regular file, is neither; None
    when it has a key's form (its '+' separators), so that parsing it says what is wrong with the key."""
    if "+" in text:
        return None
    found = "a directory" if os.path.isdir(text) else "not a regular file" if os.path.lexists(text) else "no such file"
    return f"want a key (name+keyid+key) or a file holding one; got {found}"


def parse_vkey(text: str) -> Verifier:
    """A verifier from its key string: type 0x01 (note signatures) or 0x04 (cosignatures)."""
    name, kid, key_type, public = split_key(text, "verifier key")
    return _key_of_type("verifier key", _VERIFIERS, name, kid, key_type, public)


def parse_signer_key(text: str) -> Signer:
    """A signer from its key string: type 0x01 (note signatures) or 0x04 (cosignatures)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    text = text.strip() if isinstance(text, str) else text
    if not isinstance(text, str) or not text.startswith(SIGNER_PREFIX):
        raise LogMalformed(f"signer key: want it to start with {SIGNER_PREFIX!r}")
    name, kid, key_type, seed = split_key(text[len(SIGNER_PREFIX) :], "signer key")
    if len(seed) != 32:
        raise LogMalformed(f"signer key: got a {len(seed)}-byte seed, want 32")
    return _key_of_type("signer key", _SIGNERS, name, kid, key_type, Ed25519PrivateKey.from_private_bytes(seed))
