"""Default redaction: secrets never reach a receipt or its evidence.

Applied to step content before it is hashed. The default replaces every value under a
secret-looking key by :data:`REDACTED` (keys are checked once and cached, so this is
cheap). :func:`credential_redactor` also scans every string for well-known credential
shapes (bearer tokens, OpenAI, GitHub, Slack and AWS key formats); it reads every byte
of every string, so it is opt-in: ``Collector(redact=credential_redactor)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ._canonical import MAX_SAFE_INTEGER, TAG_PREFIX
from ._limits import MAX_CONTENT_DEPTH

__all__ = ["REDACTED", "Redactor", "credential_redactor", "default_redactor", "is_secret_key", "redact_plain"]

#: The placeholder that replaces a redacted value.
REDACTED = "[REDACTED]"
#: A redaction function: takes a value to record, returns what is recorded instead.
Redactor = Callable[[Any], Any]

_SECRET_WORDS = frozenset(
    {"password", "passwd", "passphrase", "secret", "authorization", "cookie", "credential",
     "credentials", "token", "apikey", "privatekey", "signature"}
)
_SECRET_PAIRS = (("api", "key"), ("private", "key"), ("access", "key"), ("secret", "key"))
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_KEY_CACHE_LIMIT = 4096
_PLAIN_DEPTH = MAX_CONTENT_DEPTH
_key_cache: dict[str, bool] = {}
_SECRET_VALUE = re.compile(
    r"(?:\bBearer\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|\bsk-[A-Za-z0-9_-]{16,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"
    r"|\bAKIA[0-9A-Z]{16}\b)"
)
_VALUE_HINTS = ("Bearer", "sk-", "gh", "xox", "AKIA")


def is_secret_key(key: str) -> bool:
    """True for keys such as ``api_key``, ``Authorization``, ``password``, ``access_token``.

    ``max_tokens`` or ``prompt_tokens`` are counts, not secrets: plural ``tokens`` is kept.
    """
    cached = _key_cache.get(key)
    if cached is not None:
        return cached
    words = [w.lower() for w in _WORD.findall(key)]
    joined = "".join(words)
    secret = (
        any(w in _SECRET_WORDS for w in words)
        or joined in _SECRET_WORDS
        or any(a in words and b in words for a, b in _SECRET_PAIRS)
        or joined.endswith(("apikey", "secretkey", "privatekey"))
    )
    if len(_key_cache) < _KEY_CACHE_LIMIT:
        _key_cache[key] = secret
    return secret


def _scrub_text(s: str) -> str:
    if not any(h in s for h in _VALUE_HINTS):
        return s
    return _SECRET_VALUE.sub(REDACTED, s)


def _redact(value: Any, scrub: bool) -> Any:
    t = type(value)
    if t is dict:
        out = None
        for k, v in value.items():
            if type(k) is str and (_key_cache.get(k) if k in _key_cache else is_secret_key(k)):
                new: Any = REDACTED if v is not None else None
            elif type(v) is str:
                new = _scrub_text(v) if scrub else v
            else:
                new = _redact(v, scrub)
            if new is not v:
                if out is None:
                    out = dict(value)
                out[k] = new
        return value if out is None else out
    if t is str:
        return _scrub_text(value) if scrub else value
    if t is list or t is tuple:
        items = [_redact(v, scrub) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items
    return value


NOT_PLAIN = object()
#: Keys known to be plain (str, BMP-only, not tag-prefixed), each with whether it is secret: one lookup a key.
_plain_keys: dict[str, bool] = {}


def plain_redacted(value: Any, depth: int) -> Any:
    t = type(value)
    if t is dict:
        if depth >= _PLAIN_DEPTH:  # a container this deep: the exact path decides (as canonical_bytes)
            return NOT_PLAIN
        out = None
        for k, v in value.items():
            secret = _plain_keys.get(k)
            if secret is None:
                if type(k) is not str or not (k.isascii() or max(k) <= "\uffff") or k.startswith(TAG_PREFIX):
                    return NOT_PLAIN
                secret = is_secret_key(k)
                if len(_plain_keys) < _KEY_CACHE_LIMIT:
                    _plain_keys[k] = secret
            tv = type(v)
            if secret:
                new: Any = REDACTED if v is not None else None
                if tv is not str and v is not None and plain_redacted(v, depth + 1) is NOT_PLAIN:
                    return NOT_PLAIN
            elif tv is str:
                continue
            else:
                new = plain_redacted(v, depth + 1)
                if new is NOT_PLAIN:
                    return NOT_PLAIN
            if new is not v:
                if out is None:
                    out = dict(value)
                out[k] = new
        return value if out is None else out
    if t is str or value is None or t is bool:
        return value
    if t is int:
        return value if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else NOT_PLAIN
    if t is list:
        if depth >= _PLAIN_DEPTH:  # a container this deep: the exact path decides (as canonical_bytes)
            return NOT_PLAIN
        items = None
        for i, v in enumerate(value):
            if type(v) is str:
                continue
            new = plain_redacted(v, depth + 1)
            if new is NOT_PLAIN:
                return NOT_PLAIN
            if new is not v:
                if items is None:
                    items = list(value)
                items[i] = new
        return value if items is None else items
    return NOT_PLAIN


def redact_plain(value: Any) -> tuple[bool, Any]:
    """One walk for the hot path: (True, redacted value) for plain JSON data, else (False, None).

    Plain data is what orjson encodes exactly as RFC 8785: strings, safe integers, bools,
    null, lists and objects with BMP-only string keys. Anything else needs normalizing.
    """
    out = plain_redacted(value, 0)
    return (False, None) if out is NOT_PLAIN else (True, out)


def default_redactor(value: Any) -> Any:
    """Replace values under secret-looking keys; unchanged objects are returned as they are."""
    return _redact(value, False)


def credential_redactor(value: Any) -> Any:
    """:func:`default_redactor`, and credential shapes inside every string replaced too."""
    return _redact(value, True)
