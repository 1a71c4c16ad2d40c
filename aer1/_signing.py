"""Ed25519 receipt signatures over a type-tagged, length-prefixed encoding.

The signed bytes are never raw JSON: they are

    "aer1-sig-v1" || u64be(len(T)) || T || u64be(len(B)) || B

where T is :data:`PAYLOAD_TYPE` and B is the RFC 8785 encoding of the receipt without
its ``signature`` member. The ``signature`` member names the algorithm, the key id
(SHA-256 of the raw 32-byte public key, hex) and the public key, so integrity can be
checked with the receipt alone; authenticity needs a trusted key from elsewhere.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from ._canonical import CanonicalizationError, exact_bytes, member_order
from ._infile import NotRegularFile, open_regular
from .errors import CouldNotVerifyError, MalformedInputError, VerificationError

if TYPE_CHECKING:  # cryptography is loaded on first use: checking an unsigned receipt never needs it
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "ALGORITHM",
    "ENV_SIGNING_KEY",
    "PAYLOAD_TYPE",
    "SIG_DOMAIN",
    "KeyError_",
    "KeyFileError",
    "SignatureInvalid",
    "SignatureMalformed",
    "generate_key_pair",
    "key_id",
    "load_private_key",
    "load_public_key",
    "pae",
    "parse_signature",
    "sign_receipt",
    "signing_input",
    "signing_input_of_parts",
    "verify_signature",
]

ALGORITHM = "Ed25519"
SIG_DOMAIN = b"aer1-sig-v1"
PAYLOAD_TYPE = b"application/vnd.aer1.workflow-receipt+json"
ENV_SIGNING_KEY = "AER1_SIGNING_KEY"
_RAW_KEY_LEN = 32
_SIG_LEN = 64
MAX_KEY_FILE_BYTES = 64 * 1024
_U64 = struct.Struct(">Q")
#: Bytes of spilled step encodings copied at a time.
_COPY_BYTES = 4 * 1024 * 1024


class KeyFileError(MalformedInputError):
    """A key could not be loaded (wrong format, wrong type, unreadable)."""


#: The earlier name of :class:`KeyFileError`, kept for code written against it.
KeyError_ = KeyFileError


class SignatureInvalid(VerificationError):
    """The signature does not verify under its key."""


class SignatureMalformed(CouldNotVerifyError):
    """The ``signature`` member has the wrong shape, so it could not be checked at all."""


def pae(payload_type: bytes, body: bytes, *, domain: bytes = SIG_DOMAIN) -> bytes:
    """Pre-authentication encoding: domain, then type and body each length-prefixed."""
    return _pae_head(payload_type, len(body), domain) + body


def _pae_head(payload_type: bytes, body_len: int, domain: bytes) -> bytes:
    """What :func:`pae` writes before the body: the domain, the type with its length, the body's length."""
    return domain + _U64.pack(len(payload_type)) + payload_type + _U64.pack(body_len)


def signing_input(receipt: Mapping[str, Any], payload_type: bytes = PAYLOAD_TYPE) -> bytes:
    """The exact bytes signed for ``receipt`` (its ``signature`` member left out).

    ``payload_type``: the type tag; other signed documents (verification summaries) use their own.
    """
    body = {k: v for k, v in receipt.items() if k != "signature"}
    return pae(payload_type, exact_bytes(body))


def signing_input_of_parts(rest: Mapping[str, Any], spills: Sequence[tuple[IO[bytes], int]],
                           unencodable: str | None) -> bytearray:
    """:func:`signing_input` of a receipt whose steps' RFC 8785 bytes are held in files, not as dicts.

    ``rest``: the receipt's members but ``steps``; ``spills``: files holding the steps' JCS
    bytes, comma-separated, in order, each with its length (joined here by commas). The
    bytes are written into one buffer, the steps' bytes copied into place a chunk at a time.
    CanonicalizationError (``unencodable``'s message) when a step has no exact JCS form:
    the receipt then has no signed bytes.
    """
    if unencodable is not None:
        raise CanonicalizationError(unencodable)
    body = {k: v for k, v in rest.items() if k != "signature"}
    keys = sorted([*body, "steps"], key=member_order)
    cut = keys.index("steps")

    def members(names: list[str]) -> bytes:
        return b",".join(exact_bytes(k) + b":" + exact_bytes(body[k]) for k in names)

    before, after = members(keys[:cut]), members(keys[cut + 1:])
    front = b"{" + before + (b"," if before else b"") + b'"steps":['
    back = b"]" + (b"," if after else b"") + after + b"}"
    parts = [(spill, n) for spill, n in spills if n]
    steps_len = sum(n for _, n in parts) + max(len(parts) - 1, 0)
    head = _pae_head(PAYLOAD_TYPE, len(front) + steps_len + len(back), SIG_DOMAIN)
    msg = bytearray(len(head) + len(front) + steps_len + len(back))
    view = memoryview(msg)
    at = len(head) + len(front)
    view[:at] = head + front
    for k, (spill, n) in enumerate(parts):
        if k:
            view[at:at + 1] = b","
            at += 1
        spill.seek(0)
        end = at + n
        while at < end:
            chunk = spill.read(min(_COPY_BYTES, end - at))
            if not chunk:
                raise OSError("the spilled step bytes ended early")
            view[at:at + len(chunk)] = chunk
            at += len(chunk)
    view[at:] = back
    view.release()
    return msg


def _raw_public(key: Ed25519PublicKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(public_key: Ed25519PublicKey | bytes) -> str:
    """SHA-256 of the raw public key, lowercase hex."""
    raw = public_key if isinstance(public_key, bytes) else _raw_public(public_key)
    return hashlib.sha256(raw).hexdigest()


def generate_key_pair() -> tuple[bytes, bytes]:
    """A new key pair as (PKCS#8 PEM private key, SubjectPublicKeyInfo PEM public key)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    private = Ed25519PrivateKey.generate()
    pem_private = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    pem_public = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return pem_private, pem_public


def _read_key_bytes(source: str | os.PathLike[str] | bytes) -> bytes:
    if isinstance(source, bytes):
        return source
    text = os.fspath(source)
    if text.lstrip().startswith("-----BEGIN"):
        return text.encode("ascii")
    path = Path(text)
    try:  # only a regular file is read: never a FIFO, /dev/zero or a device
        with open_regular(path) as f:
            data = f.read(MAX_KEY_FILE_BYTES + 1)
    except NotRegularFile as e:
        raise KeyFileError(f"key file {path} is not a regular file") from e
    except OSError as e:
        raise KeyFileError(f"cannot read key file {path}: {e.strerror or e}") from e
    except ValueError as e:  # a path no file can have (a NUL byte in it): e.g. from a hand-edited log-config.json
        raise KeyFileError(f"cannot read key file {text!r}: {e}") from e
    if len(data) > MAX_KEY_FILE_BYTES:
        raise KeyFileError(f"key file {path} is larger than {MAX_KEY_FILE_BYTES} bytes")
    return data


def load_private_key(source: Any = None) -> Ed25519PrivateKey:
    """An Ed25519 private key from a key object, PEM bytes/text, a path, or $AER1_SIGNING_KEY."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if source is None:
        source = os.environ.get(ENV_SIGNING_KEY)
        if not source:
            raise KeyFileError(f"no signing key given and ${ENV_SIGNING_KEY} is not set")
    if isinstance(source, Ed25519PrivateKey):
        return source
    data = _read_key_bytes(source)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as e:
        raise KeyFileError(f"not an unencrypted PEM private key: {e}") from e
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"signing key must be Ed25519, got {type(key).__name__}")
    return key


def load_public_key(source: Any) -> Ed25519PublicKey:
    """An Ed25519 public key from a key object, PEM, 64-char hex of the raw key, or a path."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

    if isinstance(source, Ed25519PublicKey):
        return source
    if isinstance(source, Ed25519PrivateKey):
        return source.public_key()
    data = _read_key_bytes(source).strip()
    if len(data) == 2 * _RAW_KEY_LEN:
        try:
            return Ed25519PublicKey.from_public_bytes(bytes.fromhex(data.decode("ascii")))
        except ValueError as e:
            raise KeyFileError(f"not a raw hex Ed25519 public key: {e}") from e
    try:
        if b"PRIVATE KEY" in data:
            key: Any = serialization.load_pem_private_key(data, password=None).public_key()
        else:
            key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError, UnicodeDecodeError) as e:
        raise KeyFileError(f"not a PEM or hex Ed25519 public key: {e}") from e
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"public key must be Ed25519, got {type(key).__name__}")
    return key


def sign_receipt(receipt: Mapping[str, Any], private_key: Ed25519PrivateKey,
                 payload_type: bytes = PAYLOAD_TYPE) -> dict[str, str]:
    """The ``signature`` member for ``receipt`` (or another document of type ``payload_type``)."""
    public = private_key.public_key()
    raw = _raw_public(public)
    sig = private_key.sign(signing_input(receipt, payload_type))
    return {
        "alg": ALGORITHM,
        "key_id": key_id(raw),
        "public_key": base64.b64encode(raw).decode("ascii"),
        "value": base64.b64encode(sig).decode("ascii"),
    }


def _strict_b64(text: Any, length: int, what: str) -> bytes:
    if not isinstance(text, str):
        raise SignatureMalformed(f"signature {what} is not a string")
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError as e:
        raise SignatureMalformed(f"signature {what} is not base64: {e}") from e
    if base64.b64encode(raw).decode("ascii") != text:
        raise SignatureMalformed(f"signature {what} is not canonical base64")
    if len(raw) != length:
        raise SignatureMalformed(f"signature {what}: got {len(raw)} bytes, want {length}")
    return raw


def parse_signature(member: Any) -> tuple[bytes, bytes, str]:
    """Check the ``signature`` member's shape: returns (raw public key, signature, key id).

    Raises :class:`SignatureMalformed` (a ValueError) when the member is malformed ("could not verify").
    """
    if not isinstance(member, dict):
        raise SignatureMalformed("signature is not an object")
    expected = {"alg", "key_id", "public_key", "value"}
    if set(member) != expected:
        raise SignatureMalformed(f"signature members: got {sorted(member)}, want {sorted(expected)}")
    if member["alg"] != ALGORITHM:
        raise SignatureMalformed(f"signature alg: got {member['alg']!r}, want {ALGORITHM!r}")
    raw = _strict_b64(member["public_key"], _RAW_KEY_LEN, "public_key")
    sig = _strict_b64(member["value"], _SIG_LEN, "value")
    kid = key_id(raw)
    if member["key_id"] != kid:
        raise SignatureMalformed(f"signature key_id: got {member['key_id']!r}, want {kid} (hash of public_key)")
    return raw, sig, kid


def verify_signature(receipt: Mapping[str, Any], message: bytes | bytearray | None = None,
                     payload_type: bytes = PAYLOAD_TYPE) -> str:
    """Verify the receipt's signature under its embedded key; returns the key id.

    ``message``: the signed bytes, when the caller already built them (the streaming
    verifier does, step by step); by default ``signing_input(receipt)``.
    Raises :class:`SignatureMalformed` if the member is malformed, :class:`SignatureInvalid`
    if the signature does not verify.
    """
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    raw, sig, kid = parse_signature(receipt.get("signature"))
    try:
        signed = signing_input(receipt, payload_type) if message is None else message
        Ed25519PublicKey.from_public_bytes(raw).verify(sig, signed)
    except InvalidSignature as e:
        raise SignatureInvalid(f"signature does not verify under key {kid}") from e
    return kid
