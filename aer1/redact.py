"""Default redaction: secrets never reach a receipt or its evidence.

Applied to step content before it is hashed. A value under a secret-looking key is
replaced by :data:`REDACTED`; inside strings, well-known credential shapes (bearer
tokens, OpenAI, GitHub, Slack and AWS key formats) are replaced too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["REDACTED", "Redactor", "default_redactor", "is_secret_key"]

#: The placeholder that replaces a redacted value.
REDACTED = "[REDACTED]"
Redactor = Callable[[Any], Any]

_SECRET_WORDS = frozenset(
    {"password", "passwd", "passphrase", "secret", "authorization", "cookie", "credential",
     "credentials", "token", "apikey", "privatekey", "signature"}
)
_SECRET_PAIRS = (("api", "key"), ("private", "key"), ("access", "key"), ("secret", "key"))
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_KEY_CACHE_LIMIT = 4096
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


def default_redactor(value: Any) -> Any:
    """Return ``value`` with secrets replaced; unchanged objects are returned as they are."""
    t = type(value)
    if t is str:
        return _scrub_text(value)
    if t is dict:
        out = None
        for k, v in value.items():
            if isinstance(k, str) and is_secret_key(k):
                new = REDACTED if v is not None else None
            else:
                new = default_redactor(v)
            if new is not v:
                if out is None:
                    out = dict(value)
                out[k] = new
        return value if out is None else out
    if t is list or t is tuple:
        items = [default_redactor(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items
    return value
