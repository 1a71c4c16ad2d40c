"""The keyring file (spec/keys.md): which signing keys were valid when, and which were revoked.

One JSON object: ``{"type": "aer1-keyring", "version": "1", "keys": [entry, ...]}``; each
entry names a key (id, raw public key), the window it may sign in (``valid_from``, optional
``valid_until``) and, once revoked, ``revoked_at`` with a ``revocation_reason``. This module
reads, checks and writes the format and answers "was this key valid at time T"; the
verifier and ``aer1 keygen`` / ``aer1 key revoke`` both use it.
"""

from __future__ import annotations

import base64
import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ._receipt import is_hex64
from ._signing import key_id
from ._timefmt import is_utc_time_form
from .errors import MalformedInputError

__all__ = [
    "KEYRING_TYPE",
    "KEYRING_VERSION",
    "MAX_KEYRING_KEYS",
    "MAX_REASON_CHARS",
    "KeyEntry",
    "KeyringError",
    "dump_keyring",
    "format_time",
    "new_entry",
    "parse_keyring",
    "parse_time",
]

KEYRING_TYPE = "aer1-keyring"
KEYRING_VERSION = "1"
#: Most keys one keyring holds.
MAX_KEYRING_KEYS = 10_000
#: Longest revocation reason.
MAX_REASON_CHARS = 512
_RAW_KEY_LEN = 32
_REQUIRED = frozenset(("key_id", "alg", "public_key", "valid_from"))
_OPTIONAL = frozenset(("valid_until", "revoked_at", "revocation_reason"))


class KeyringError(MalformedInputError):
    """A keyring file or entry is malformed, or an edit to it is impossible."""


def parse_time(text: Any, what: str) -> _dt.datetime:
    """An RFC 3339 UTC time ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` as an aware datetime."""
    if not is_utc_time_form(text):
        raise KeyringError(f"{what}: got {str(text)[:60]!r}, want an RFC 3339 UTC time like 2026-01-31T12:00:00Z")
    try:
        return _dt.datetime.fromisoformat(text[:-1]).replace(tzinfo=_dt.timezone.utc)
    except ValueError as e:
        raise KeyringError(f"{what}: {text!r} is not a real date and time") from e


def format_time(t: _dt.datetime) -> str:
    """``t`` in UTC as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""
    return t.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class KeyEntry:
    """One key of a keyring."""

    key_id: str
    public_key: bytes
    valid_from: _dt.datetime
    valid_until: _dt.datetime | None = None
    revoked_at: _dt.datetime | None = None
    revocation_reason: str | None = None

    def invalid_at(self, latest: _dt.datetime) -> str | None:
        """Why this key may not have signed by ``latest`` (the TSA time plus its accuracy), or None.

        Revocation and the window's end are checked against the latest time the token may
        stand for: a signature that may be after them fails. The window's start is checked
        against it too: signing before a key existed is no threat a token must rule out,
        while a key made and used at once must pass.
        """
        if latest < self.valid_from:
            return f"before the key's window (valid from {format_time(self.valid_from)})"
        if self.valid_until is not None and latest > self.valid_until:
            return f"after the key's window (valid until {format_time(self.valid_until)})"
        if self.revoked_at is not None and latest >= self.revoked_at:
            return f"after the key was revoked at {format_time(self.revoked_at)} ({self.revocation_reason})"
        return None

    def to_json(self) -> dict[str, str]:
        """The entry as written in the file."""
        out = {
            "key_id": self.key_id,
            "alg": "Ed25519",
            "public_key": base64.b64encode(self.public_key).decode("ascii"),
            "valid_from": format_time(self.valid_from),
        }
        if self.valid_until is not None:
            out["valid_until"] = format_time(self.valid_until)
        if self.revoked_at is not None:
            out["revoked_at"] = format_time(self.revoked_at)
            out["revocation_reason"] = self.revocation_reason or ""
        return out


def new_entry(public_raw: bytes, valid_from: _dt.datetime, valid_until: _dt.datetime | None = None) -> KeyEntry:
    """A fresh, unrevoked entry for a raw Ed25519 public key."""
    if valid_until is not None and valid_until <= valid_from:
        raise KeyringError(f"valid until {format_time(valid_until)} is not after valid from {format_time(valid_from)}")
    return KeyEntry(key_id(public_raw), public_raw, valid_from, valid_until)


def _entry(item: Any, i: int) -> KeyEntry:
    where = f"keys[{i}]"
    if not isinstance(item, dict):
        raise KeyringError(f"{where} is not an object")
    missing, extra = _REQUIRED - set(item), set(item) - _REQUIRED - _OPTIONAL
    if missing or extra:
        raise KeyringError(f"{where} members: missing {sorted(missing)}, unknown {sorted(extra)}")
    if item["alg"] != "Ed25519":
        raise KeyringError(f"{where}.alg: got {str(item['alg'])[:40]!r}, want 'Ed25519'")
    pk = item["public_key"]
    try:
        raw = base64.b64decode(pk, validate=True) if isinstance(pk, str) else b""
    except ValueError as e:
        raise KeyringError(f"{where}.public_key is not base64") from e
    if len(raw) != _RAW_KEY_LEN or base64.b64encode(raw).decode("ascii") != pk:
        raise KeyringError(f"{where}.public_key: want canonical base64 of a {_RAW_KEY_LEN}-byte Ed25519 key")
    kid = item["key_id"]
    if not is_hex64(kid) or kid != key_id(raw):
        raise KeyringError(f"{where}.key_id: got {str(kid)[:70]!r}, want {key_id(raw)} (hash of public_key)")
    valid_from = parse_time(item["valid_from"], f"{where}.valid_from")
    until = parse_time(item["valid_until"], f"{where}.valid_until") if "valid_until" in item else None
    if until is not None and until <= valid_from:
        raise KeyringError(f"{where}: valid_until is not after valid_from")
    revoked = parse_time(item["revoked_at"], f"{where}.revoked_at") if "revoked_at" in item else None
    reason = item.get("revocation_reason")
    if (revoked is None) != (reason is None):
        raise KeyringError(f"{where}: revoked_at and revocation_reason go together")
    if reason is not None and (not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON_CHARS):
        raise KeyringError(f"{where}.revocation_reason: want non-empty text of at most {MAX_REASON_CHARS} characters")
    return KeyEntry(kid, raw, valid_from, until, revoked, reason)


def parse_keyring(doc: Any) -> dict[str, KeyEntry]:
    """The entries of a parsed keyring document, by key id; raises KeyringError naming the problem."""
    if not isinstance(doc, Mapping):
        raise KeyringError("a keyring is a JSON object")
    if set(doc) != {"type", "version", "keys"}:
        raise KeyringError(f"keyring members: got {sorted(doc)[:10]}, want ['keys', 'type', 'version']")
    if doc["type"] != KEYRING_TYPE or doc["version"] != KEYRING_VERSION:
        raise KeyringError(f"keyring type/version: got {str(doc['type'])[:40]!r}/{str(doc['version'])[:10]!r}, "
                           f"want {KEYRING_TYPE!r}/{KEYRING_VERSION!r}")
    keys = doc["keys"]
    if not isinstance(keys, list) or len(keys) > MAX_KEYRING_KEYS:
        raise KeyringError(f"keyring keys: want an array of at most {MAX_KEYRING_KEYS} entries")
    out: dict[str, KeyEntry] = {}
    for i, item in enumerate(keys):
        entry = _entry(item, i)
        if entry.key_id in out:
            raise KeyringError(f"keys[{i}]: key {entry.key_id} is listed twice")
        out[entry.key_id] = entry
    return out


def dump_keyring(entries: Mapping[str, KeyEntry]) -> bytes:
    """The keyring file's bytes (indented JSON, entries in the given order)."""
    doc = {"type": KEYRING_TYPE, "version": KEYRING_VERSION, "keys": [e.to_json() for e in entries.values()]}
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
