"""C2SP signed notes (c2sp.org/signed-note@v1.0.0) with Ed25519 keys (signature type 0x01).

A note is its text (ending in a newline), one blank line, then signature lines
``"— <key name> <base64(4-byte key ID || signature)>\\n"``; the text ends at the LAST blank
line. A key is named and identified by (name, key ID); a verifier ignores signatures by
keys it does not know, rejects the note when a known key's signature fails, and rejects it
when no known key signed it. Key ID = the first 4 bytes (big-endian uint32) of
SHA-256(name || 0x0A || type byte || public key).

API:
    MAX_NOTE_BYTES, MAX_NOTE_SIGNATURES, MAX_NAME_CHARS, ED25519_TYPE (0x01)
    Signature(name, key_id, sig)           one signature line: key ID (uint32) and the bytes after it
    Note(text, signatures)                 a parsed note; .text is str, ending in "\\n"
    parse_note(data) -> Note               LogMalformed on a malformed note (never checks a signature)
    format_note(note) -> bytes             text, blank line, one line per signature
    Verifier (Protocol)                    .name, .key_id, .verify(text: bytes, sig: bytes) -> bool
    Signer (Protocol)                      .name, .key_id, .sign(text: bytes) -> Signature
    key_id_for(name, key_type, public) -> int
    check_key_name(name) -> None           LogMalformed unless a valid key name
    Ed25519Verifier(name, public_key)      type 0x01; .vkey is its verifier key string
    Ed25519Signer(name, private_key)       type 0x01; .verifier() -> Ed25519Verifier
    format_vkey(name, key_type, public) -> str        name+hex8+base64(type || key)
    split_key(text, what) -> (name, key ID, type, key bytes)   a key string's parts (parsers: ._keys)
    format_signer_key(name, key_type, seed) -> str    PRIVATE+KEY+name+hex8+base64(type || seed) (Go's format)
    sign_note(text, signers, existing=()) -> bytes    a note text signed by each signer (after existing lines)
    check_signatures(note, verifiers) -> list[(Verifier, Signature)]   those that verify; a known
        key's failing signature raises LogInvalid; unknown keys ignored
    open_note(data, verifiers) -> (Note, list[(Verifier, Signature)])
        raises LogMalformed (not a note), LogInvalid (a known key's signature fails, or none verifies)
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import LogInvalid, LogMalformed

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "ED25519_TYPE",
    "MAX_NAME_CHARS",
    "MAX_NOTE_BYTES",
    "MAX_NOTE_SIGNATURES",
    "SIGNER_PREFIX",
    "Ed25519Signer",
    "Ed25519Verifier",
    "Note",
    "Signature",
    "Signer",
    "Verifier",
    "check_key_name",
    "check_length",
    "check_signatures",
    "decode_text",
    "format_note",
    "format_signer_key",
    "format_vkey",
    "key_id_for",
    "open_note",
    "parse_note",
    "sign_note",
    "split_key",
]

ED25519_TYPE = 0x01
#: Largest note read (bytes): 16 post-quantum signatures of about 5 kB fit many times over.
MAX_NOTE_BYTES = 1024 * 1024
#: Most signature lines held from one note (the format asks for at least 16).
MAX_NOTE_SIGNATURES = 100
#: Longest key name (characters).
MAX_NAME_CHARS = 1024
#: Longest key string read (characters).
_MAX_KEY_CHARS = MAX_NAME_CHARS + 4096
_SIG_PREFIX = "\u2014 "
#: What a note's text may not hold: ASCII controls but newline, and lone surrogates.
_BAD_CHAR = re.compile("[\x00-\x09\x0b-\x1f\ud800-\udfff]")
#: What a signer key string starts with (the Go note package's form).
SIGNER_PREFIX = "PRIVATE+KEY+"


@dataclass(frozen=True)
class Signature:
    """One signature line: the key's name and ID, and the signature bytes after the ID."""

    name: str
    key_id: int
    sig: bytes

    def line(self) -> str:
        """The line as written in a note, with its newline."""
        blob = struct.pack(">I", self.key_id) + self.sig
        return f"{_SIG_PREFIX}{self.name} {base64.b64encode(blob).decode('ascii')}\n"


@dataclass(frozen=True)
class Note:
    """A parsed note: the signed text (ending in a newline) and its signature lines, in order."""

    text: str
    signatures: tuple[Signature, ...]


class Verifier(Protocol):
    """Checks signatures by one key: ``name`` and ``key_id`` say which lines are its own."""

    @property
    def name(self) -> str: ...
    @property
    def key_id(self) -> int: ...
    def verify(self, text: bytes, sig: bytes) -> bool: ...


class Signer(Protocol):
    """Signs a note text with one key."""

    @property
    def name(self) -> str: ...
    @property
    def key_id(self) -> int: ...
    def sign(self, text: bytes) -> Signature: ...


def check_key_name(name: Any) -> None:
    """Raise LogMalformed unless ``name`` is a key name: non-empty, no Unicode space, no ``+``."""
    if not isinstance(name, str) or not name:
        raise LogMalformed("key name: got an empty name, want a non-empty one")
    if len(name) > MAX_NAME_CHARS:
        raise LogMalformed(f"key name: got {len(name)} characters, want at most {MAX_NAME_CHARS}")
    if "+" in name or any(c.isspace() or unicodedata.category(c) == "Zs" for c in name):
        raise LogMalformed(f"key name {name[:80]!r}: want no spaces and no '+'")
    _check_text_chars(name, "key name")


def _check_text_chars(text: str, what: str) -> None:
    """No ASCII control character other than newline (and no lone surrogate)."""
    found = _BAD_CHAR.search(text)
    if found is not None:
        raise LogMalformed(f"{what}: got control character U+{ord(found.group()):04X}, want none but newline")


def key_id_for(name: str, key_type: int, public: bytes) -> int:
    """The key ID: SHA-256(name || 0x0A || type || public key), first 4 bytes, big-endian."""
    digest = hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([key_type]) + public).digest()
    return int(struct.unpack(">I", digest[:4])[0])


def _b64decode(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError) as e:
        raise LogMalformed(f"{what}: not standard base64: {e}") from e


def check_length(data: bytes, limit: int, what: str) -> None:
    """Refuse ``data`` (a ``what``) longer than ``limit`` bytes: one wording for every log format."""
    if len(data) > limit:
        raise LogMalformed(f"{what}: got {len(data)} bytes, want at most {limit}")


def decode_text(data: bytes, what: str, *, ascii_only: bool = False) -> str:
    """``data`` (a ``what``) as UTF-8 text, or ASCII where the format allows no more."""
    try:
        return data.decode("ascii" if ascii_only else "utf-8")
    except UnicodeDecodeError as e:
        raise LogMalformed(f"{what}: a non-ASCII byte at {e.start}" if ascii_only else
                           f"{what}: not UTF-8 at byte {e.start}") from e


def parse_note(data: bytes | str) -> Note:
    """Split a signed note into its text and signature lines; checks the format only."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    check_length(raw, MAX_NOTE_BYTES, "note")
    text = decode_text(raw, "note")
    _check_text_chars(text, "note")
    split = text.rfind("\n\n")
    if split < 0:
        raise LogMalformed("note: got no blank line, want the text, a blank line, then signatures")
    body, sig_block = text[: split + 1], text[split + 2 :]
    if not sig_block.endswith("\n"):
        raise LogMalformed("note: the last signature line does not end in a newline")
    lines = sig_block[:-1].split("\n")
    if len(lines) > MAX_NOTE_SIGNATURES:
        raise LogMalformed(f"note: got {len(lines)} signature lines, want at most {MAX_NOTE_SIGNATURES}")
    sigs = []
    for i, line in enumerate(lines, 1):
        if not line.startswith(_SIG_PREFIX):
            raise LogMalformed(f"note signature line {i}: want it to start with an em dash and a space")
        name, sep, blob64 = line[len(_SIG_PREFIX) :].rpartition(" ")
        if not sep:
            raise LogMalformed(f"note signature line {i}: want a key name, a space, then base64")
        check_key_name(name)
        blob = _b64decode(blob64, f"note signature line {i}")
        if len(blob) < 5:
            raise LogMalformed(f"note signature line {i}: got {len(blob)} bytes, want a 4-byte key ID and a signature")
        sigs.append(Signature(name, int(struct.unpack(">I", blob[:4])[0]), blob[4:]))
    return Note(body, tuple(sigs))


def _check_body(text: str) -> None:
    if not text.endswith("\n"):
        raise LogMalformed("note text: want it to end in a newline")
    _check_text_chars(text, "note text")


def format_note(note: Note) -> bytes:
    """The note's bytes: text, a blank line, its signature lines."""
    _check_body(note.text)
    if not note.signatures:
        raise LogMalformed("note: got no signatures, want at least one")
    return (note.text + "\n" + "".join(s.line() for s in note.signatures)).encode("utf-8")


def sign_note(text: str, signers: Iterable[Signer], existing: Sequence[Signature] = ()) -> bytes:
    """The note of ``text`` with ``existing`` signature lines, then one by each signer."""
    _check_body(text)
    body = text.encode("utf-8")
    sigs = list(existing) + [s.sign(body) for s in signers]
    return format_note(Note(text, tuple(sigs)))


def check_signatures(note: Note, verifiers: Iterable[Verifier]) -> list[tuple[Verifier, Signature]]:
    """The (verifier, signature) pairs of ``note`` that verify, each key once, in note order.

    Lines by unknown keys (name or ID differs) are ignored; a known key's signature that
    fails raises LogInvalid. None verifying is not an error here (see :func:`open_note`).
    """
    known: dict[tuple[str, int], Verifier] = {}
    for v in verifiers:
        known.setdefault((v.name, v.key_id), v)
    body = note.text.encode("utf-8")
    good: list[tuple[Verifier, Signature]] = []
    seen: set[tuple[str, int]] = set()
    for s in note.signatures:
        found = known.get((s.name, s.key_id))
        if found is None:
            continue
        v = found
        if not v.verify(body, s.sig):
            raise LogInvalid(f"note signature by {s.name}+{s.key_id:08x}: got a signature that does not verify")
        if (s.name, s.key_id) not in seen:
            seen.add((s.name, s.key_id))
            good.append((v, s))
    return good


def open_note(data: bytes | str | Note, verifiers: Iterable[Verifier]) -> tuple[Note, list[tuple[Verifier, Signature]]]:
    """Parse a note and check it: :func:`check_signatures`, and at least one trusted key signed it.

    Raises LogMalformed for a malformed note, LogInvalid when a known key's signature
    fails or when no known key signed the note.
    """
    note = data if isinstance(data, Note) else parse_note(data)
    keys = list(verifiers)
    good = check_signatures(note, keys)
    if not good:
        names = ", ".join(sorted(f"{v.name}+{v.key_id:08x}" for v in keys)) or "none"
        raise LogInvalid(f"note: got no signature by a trusted key, want one of: {names}")
    return note, good


# ------------------------------------------------------------------ Ed25519 keys


def public_from_raw(raw: bytes) -> Ed25519PublicKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if len(raw) != 32:
        raise LogMalformed(f"Ed25519 public key: got {len(raw)} bytes, want 32")
    try:
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError as e:
        raise LogMalformed(f"Ed25519 public key: {e}") from e


def raw_public(key: Ed25519PublicKey) -> bytes:
    """The 32 raw bytes of an Ed25519 public key."""
    from cryptography.hazmat.primitives import serialization

    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def raw_seed(key: Ed25519PrivateKey) -> bytes:
    """The 32-byte seed of an Ed25519 private key."""
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                             serialization.NoEncryption())


def ed25519_verify(public: Ed25519PublicKey, sig: bytes, message: bytes) -> bool:
    """True when ``sig`` is a valid Ed25519 signature of ``message``."""
    from cryptography.exceptions import InvalidSignature

    if len(sig) != 64:
        return False
    try:
        public.verify(sig, message)
    except InvalidSignature:
        return False
    return True


class NamedKey:
    """A named Ed25519 key of one type (``key_type``), known by its name and key ID (one rule for every type)."""

    key_type = ED25519_TYPE

    def __init__(self, name: str, public: bytes) -> None:
        """``name`` is checked by the subclass first (its error comes before any about the key)."""
        self.public = public
        self._name = name
        self._key_id = key_id_for(name, self.key_type, public)

    @property
    def name(self) -> str:
        return self._name

    @property
    def key_id(self) -> int:
        return self._key_id


class NamedVerifier(NamedKey):
    """A named Ed25519 public key of one type: its key ID and verifier key string."""

    def __init__(self, name: str, public_key: Ed25519PublicKey | bytes) -> None:
        check_key_name(name)
        self._public = public_from_raw(public_key) if isinstance(public_key, bytes) else public_key
        super().__init__(name, raw_public(self._public))

    @property
    def vkey(self) -> str:
        """The verifier key string."""
        return format_vkey(self._name, self.key_type, self.public)


class NamedSigner(NamedKey):
    """A named Ed25519 private key of one type: its key ID and signer key string."""

    def __init__(self, name: str, private_key: Ed25519PrivateKey) -> None:
        check_key_name(name)
        self._private = private_key
        super().__init__(name, raw_public(private_key.public_key()))

    @property
    def signer_key(self) -> str:
        """The signer key string (secret)."""
        return format_signer_key(self._name, self.key_type, raw_seed(self._private))


class Ed25519Verifier(NamedVerifier):
    """Verifies note signatures of type 0x01 by one named Ed25519 key."""

    def verify(self, text: bytes, sig: bytes) -> bool:
        return ed25519_verify(self._public, sig, text)


class Ed25519Signer(NamedSigner):
    """Signs note texts with one named Ed25519 key (type 0x01)."""

    def verifier(self) -> Ed25519Verifier:
        """The matching verifier."""
        return Ed25519Verifier(self._name, self.public)

    def sign(self, text: bytes) -> Signature:
        return Signature(self._name, self._key_id, self._private.sign(text))


def format_vkey(name: str, key_type: int, public: bytes) -> str:
    """``name+hex(key ID)+base64(type || public key)``."""
    check_key_name(name)
    blob = bytes([key_type]) + public
    return f"{name}+{key_id_for(name, key_type, public):08x}+{base64.b64encode(blob).decode('ascii')}"


def split_key(text: str, what: str) -> tuple[str, int, int, bytes]:
    """(name, key ID, type, key bytes) of ``name+hex8+base64(type || key)``; the ID is checked."""
    if not isinstance(text, str) or len(text) > _MAX_KEY_CHARS:
        raise LogMalformed(f"{what}: want a string of at most {_MAX_KEY_CHARS} characters")
    parts = text.strip().split("+", 2)  # the name has no '+'; the base64 key may
    if len(parts) != 3:
        raise LogMalformed(f"{what}: got {len(parts)} '+'-separated parts, want 3 (name+keyid+key)")
    name, hex_id, blob64 = parts
    check_key_name(name)
    if len(hex_id) != 8 or any(c not in "0123456789abcdef" for c in hex_id):
        raise LogMalformed(f"{what}: key ID {hex_id[:20]!r}: want 8 lowercase hex digits")
    blob = _b64decode(blob64, what)
    if len(blob) < 2:
        raise LogMalformed(f"{what}: got {len(blob)} key bytes, want a type byte and a key")
    return name, int(hex_id, 16), blob[0], blob[1:]


def format_signer_key(name: str, key_type: int, seed: bytes) -> str:
    """``PRIVATE+KEY+name+hex(key ID)+base64(type || 32-byte seed)`` (the Go note package's form)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    public = raw_public(Ed25519PrivateKey.from_private_bytes(seed).public_key())
    blob = bytes([key_type]) + seed
    return f"{SIGNER_PREFIX}{name}+{key_id_for(name, key_type, public):08x}+{base64.b64encode(blob).decode('ascii')}"
