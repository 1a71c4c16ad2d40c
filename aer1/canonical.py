"""Canonical JSON: deterministic normalization of observed values and RFC 8785 (JCS).

Two layers:

* :func:`normalize` turns any Python value into plain JSON data (dict with str keys,
  list, str, int, float, bool, None) by the rules in ``spec/canonical.md``.
* :func:`canonical_bytes` encodes normalized data as RFC 8785 canonical JSON. Plain
  data (strings, safe integers, BMP-only keys) goes through orjson, which produces the
  same bytes as JCS for that subset; anything else (floats, keys outside the Basic
  Multilingual Plane, values that needed normalizing) goes through the exact encoder
  :func:`jcs_encode`. A property test shows the two agree on their common domain.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import decimal
import enum
import math
import uuid
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

import orjson

from .limits import MAX_CONTENT_DEPTH

__all__ = [
    "MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "CanonicalizationError",
    "canonical_bytes",
    "check_exact",
    "exact_bytes",
    "jcs_encode",
    "normalize",
]

#: Largest integer that an IEEE 754 double (and so every JCS verifier) holds exactly.
MAX_SAFE_INTEGER = 2**53 - 1
#: Deepest nesting accepted in observed content (orjson's own limit is 255).
MAX_DEPTH = MAX_CONTENT_DEPTH

_ORJSON_OPTS = orjson.OPT_SORT_KEYS


class CanonicalizationError(ValueError):
    """A value cannot be turned into canonical JSON (cycle, too deep, key clash)."""


# --------------------------------------------------------------------------- encoder


def _es6_number(x: float) -> str:
    """Format a finite float as ECMAScript Number.prototype.toString does (RFC 8785 3.2.2.3)."""
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    text = repr(abs(x))  # shortest round-trip digits, like ES6
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    if frac_part == "0":
        frac_part = ""
    digits = (int_part + frac_part).lstrip("0")
    # value = int(digits) * 10 ** (exponent - len(frac_part)); strip trailing zeros
    scale = exponent - len(frac_part)
    stripped = digits.rstrip("0")
    scale += len(digits) - len(stripped)
    digits = stripped
    k = len(digits)
    n = k + scale  # value = 0.digits * 10 ** n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        e_text = ("+" if e >= 0 else "-") + str(abs(e))
        body = digits + "e" + e_text if k == 1 else digits[0] + "." + digits[1:] + "e" + e_text
    return sign + body


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
for _c in range(0x20):
    _ESCAPES.setdefault(chr(_c), f"\\u{_c:04x}")


def _jcs_string(s: str) -> str:
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return '"' + s + '"'
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in s) + '"'


def _utf16_key(s: str) -> bytes:
    return s.encode("utf-16-be", "surrogatepass")


def _jcs_parts(value: Any, out: list[str], depth: int) -> None:
    if depth > MAX_DEPTH:
        raise CanonicalizationError(f"nesting deeper than {MAX_DEPTH} levels")
    t = type(value)
    if t is str:
        out.append(_jcs_string(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif t is int:
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            # JCS numbers are doubles: only the double's value can be written.
            out.append(_es6_number(float(value)))
        else:
            out.append(str(value))
    elif t is float:
        if not math.isfinite(value):
            raise CanonicalizationError(f"non-finite number {value!r} has no JSON form")
        out.append(_es6_number(value))
    elif t is dict:
        out.append("{")
        first = True
        for key in sorted(value, key=_utf16_key):
            if type(key) is not str:
                raise CanonicalizationError(f"object key {key!r} is not a string")
            if not first:
                out.append(",")
            first = False
            out.append(_jcs_string(key))
            out.append(":")
            _jcs_parts(value[key], out, depth + 1)
        out.append("}")
    elif t is list:
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _jcs_parts(item, out, depth + 1)
        out.append("]")
    else:
        raise CanonicalizationError(f"{t.__name__} is not JSON data; normalize it first")


def jcs_encode(value: Any) -> bytes:
    """Encode plain JSON data exactly per RFC 8785 (the reference path, pure Python)."""
    out: list[str] = []
    _jcs_parts(value, out, 0)
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError as e:
        raise CanonicalizationError("string holds a lone surrogate; normalize it first") from e


# ---------------------------------------------------------------------- fast path


def _is_plain(value: Any, depth: int = 0) -> bool:
    """True when orjson's output for ``value`` is already exact JCS."""
    t = type(value)
    if t is dict:
        if depth >= MAX_DEPTH:
            return False
        for k, v in value.items():
            # Sorting by code point equals sorting by UTF-16 code units for BMP-only keys.
            if type(k) is not str or not (k.isascii() or max(k) <= "\uffff"):
                return False
            if type(v) is not str and not _is_plain(v, depth + 1):
                return False
        return True
    if t is str or value is None or t is bool:
        return True
    if t is int:
        return bool(-MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER)
    if t is list:
        if depth >= MAX_DEPTH:
            return False
        for v in value:
            if type(v) is not str and not _is_plain(v, depth + 1):
                return False
        return True
    return False


def canonical_bytes(value: Any) -> bytes:
    """Return the RFC 8785 canonical bytes of ``normalize(value)``."""
    if _is_plain(value):
        try:
            return orjson.dumps(value, option=_ORJSON_OPTS)
        except orjson.JSONEncodeError:
            pass  # e.g. a lone surrogate: normalization repairs it
    data = normalize(value)
    if _is_plain(data):
        return orjson.dumps(data, option=_ORJSON_OPTS)
    return jcs_encode(data)


# ------------------------------------------------------------------ exact JSON data


def check_exact(value: Any, _depth: int = 0) -> None:
    """Raise :class:`CanonicalizationError` unless ``value`` is JSON data RFC 8785 holds exactly.

    Exact means: ``dict`` with ``str`` keys, ``list``, ``str`` with no lone surrogate,
    ``bool``, ``None``, ``int`` within ±(2^53 − 1) and finite ``float``, nested at most
    :data:`MAX_DEPTH` deep. Such a value and its canonical bytes determine each other (up
    to JCS's own equivalences, ``1 == 1.0`` and ``-0 == 0``); nothing is mapped or replaced.
    """
    if _depth > MAX_DEPTH:
        raise CanonicalizationError(f"nesting deeper than {MAX_DEPTH} levels")
    t = type(value)
    if t is str:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as e:
                raise CanonicalizationError("string holds a lone surrogate") from e
    elif value is None or t is bool:
        return
    elif t is int:
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise CanonicalizationError("integer outside ±(2^53 − 1) has no exact JSON number form")
    elif t is float:
        if not math.isfinite(value):
            raise CanonicalizationError(f"non-finite number {value!r} has no JSON form")
    elif t is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise CanonicalizationError(f"object key {key!r} is not a string")
            check_exact(key, _depth + 1)
            check_exact(item, _depth + 1)
    elif t is list:
        for item in value:
            check_exact(item, _depth + 1)
    else:
        raise CanonicalizationError(f"{t.__name__} is not JSON data")


def exact_bytes(value: Any) -> bytes:
    """Return the RFC 8785 bytes of ``value``, which must pass :func:`check_exact`.

    Unlike :func:`canonical_bytes` nothing is normalized: a value with no exact JSON form
    is refused, never mapped onto another value's bytes.
    """
    check_exact(value)
    if _is_plain(value):
        return orjson.dumps(value, option=_ORJSON_OPTS)
    return jcs_encode(value)


# ------------------------------------------------------------------ normalization


def _clean_str(s: str) -> str:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates cannot be UTF-8: each becomes U+FFFD.
        return "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in s)
    return s


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return _clean_str(str(key))
    if key is None or isinstance(key, (bool, int, float)):
        # The key's own JSON text: 1 -> "1", True -> "true", None -> "null".
        data = _normalize(key, 0, set())
        return data if isinstance(data, str) else jcs_encode(data).decode("utf-8")
    if isinstance(key, enum.Enum):
        return _key_text(key.value)
    if isinstance(key, (uuid.UUID, PurePath, decimal.Decimal)):
        return str(key)
    if isinstance(key, (_dt.datetime, _dt.date, _dt.time)):
        return str(_normalize(key, 0, set()))
    raise CanonicalizationError(f"object key of type {type(key).__name__} has no text form")


def _float_text(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    return "Infinity" if x > 0 else "-Infinity"


def _datetime_text(value: _dt.datetime) -> str:
    if value.tzinfo is None or value.utcoffset() is None:
        return value.isoformat(timespec="microseconds")
    utc = value.astimezone(_dt.timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond:06d}Z"


def _normalize(value: Any, depth: int, active: set[int]) -> Any:
    if depth > MAX_DEPTH:
        raise CanonicalizationError(f"content nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, enum.Enum):
        return _normalize(value.value, depth + 1, active)
    if isinstance(value, str):
        return _clean_str(str(value))
    if isinstance(value, int):
        value = int(value)
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return value
        try:
            as_double = float(value)
        except OverflowError:
            return str(value)
        # A JCS number is a double: keep the number only if no digit is lost, i.e. the
        # double equals the integer or its JCS text is the integer's own digits.
        if as_double == value or _es6_number(as_double) == str(value):
            return as_double
        return str(value)
    if isinstance(value, float):
        value = float(value)
        return value if math.isfinite(value) else _float_text(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, _dt.datetime):
        return _datetime_text(value)
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return _normalize(value.total_seconds(), depth, active)
    if isinstance(value, (uuid.UUID, PurePath)):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, BaseException):
        return {"type": type(value).__qualname__, "message": _clean_str(str(value))}

    marker = id(value)
    if marker in active:
        raise CanonicalizationError("content contains a reference cycle")
    active.add(marker)
    try:
        if isinstance(value, Mapping):
            return _normalize_mapping(value, depth, active)
        if isinstance(value, (list, tuple)):
            return [_normalize(v, depth + 1, active) for v in value]
        if isinstance(value, (set, frozenset)):
            items = [_normalize(v, depth + 1, active) for v in value]
            return [orjson.loads(b) for b in sorted(canonical_bytes(i) for i in items)]
        dump = getattr(value, "model_dump", None)
        if callable(dump):  # pydantic v2
            return _normalize(dump(mode="json"), depth + 1, active)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return _normalize_mapping(fields, depth, active)
        legacy_dump = getattr(value, "dict", None)
        if callable(legacy_dump) and hasattr(value, "__fields__"):  # pydantic v1
            return _normalize(legacy_dump(), depth + 1, active)
    finally:
        active.discard(marker)
    return _clean_str(repr(value))


def _normalize_mapping(value: Mapping[Any, Any], depth: int, active: set[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        text = _key_text(key)
        if text in out:
            raise CanonicalizationError(f"two keys normalize to the same text {text!r}")
        out[text] = _normalize(item, depth + 1, active)
    return out


def normalize(value: Any) -> Any:
    """Turn ``value`` into plain JSON data, deterministically (rules: spec/canonical.md)."""
    return _normalize(value, 0, set())
