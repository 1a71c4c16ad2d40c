"""Canonical JSON: deterministic normalization of observed values and RFC 8785 (JCS).

Two layers:

* :func:`normalize` turns any Python value into exact JSON data (dict with str keys,
  list, str, int, float, bool, None, each with an exact RFC 8785 form) by the rules in
  ``spec/canonical.md``. A value JSON cannot hold exactly (a lone surrogate, an integer
  beyond ±(2^53 − 1), NaN or an infinity) becomes a tagged object that no other value
  gives, so the mapping is one-to-one; :func:`restore` inverts it.
* :func:`canonical_bytes` encodes ``normalize(value)`` as RFC 8785 canonical JSON. Plain
  data (strings, safe integers, BMP-only keys) goes through orjson, which produces the
  same bytes as JCS for that subset; anything else goes through the exact encoder
  :func:`jcs_encode`. A property test shows the two agree on their common domain.
  Where orjson is not loaded (a small receipt verified from the command line), the
  standard library's encoder writes that subset instead: the same bytes
  (:func:`sorted_json`), without the start-up cost of loading orjson.
* :func:`exact_bytes` encodes data that is already exact and refuses anything else: the
  verifier uses it, so it never maps one value onto another value's bytes.

Only what encoding arbitrary Python values needs (dates, UUIDs, decimals, paths, bytes,
dataclasses) is loaded on first use: the verifier reads JSON data and never needs it.
"""

from __future__ import annotations

import enum
import json
import math
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ._limits import MAX_CONTENT_DEPTH
from .errors import MalformedInputError

if TYPE_CHECKING:  # loaded on first use (see _Rich)
    import datetime as _dt

__all__ = [
    "MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "TAG_PREFIX",
    "CanonicalizationError",
    "canonical_bytes",
    "check_exact",
    "exact_bytes",
    "jcs_encode",
    "member_order",
    "normalize",
    "restore",
    "sorted_json",
]

#: Largest integer that an IEEE 754 double (and so every JCS verifier) holds exactly.
MAX_SAFE_INTEGER = 2**53 - 1
#: Deepest nesting accepted in observed content (orjson's own limit is 255).
MAX_DEPTH = MAX_CONTENT_DEPTH

#: The standard library's encoder writing what ``orjson.dumps(value, option=OPT_SORT_KEYS)`` writes,
#: for JSON data with string keys and no float (``ensure_ascii=False``: RFC 8785 escapes only
#: ``"``, ``\\`` and control characters, as both do).
_STD_SORTED = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode

#: Bits of the largest finite double; a longer integer is no double's text.
_DOUBLE_MAX_BITS = 1024
#: Object keys beginning with this are tags of the normalization (spec/canonical.md).
TAG_PREFIX = "$aer1:"
#: An integer beyond ±(2^53 − 1): its decimal digits.
TAG_INT = TAG_PREFIX + "int"
#: NaN, Infinity or -Infinity.
TAG_FLOAT = TAG_PREFIX + "float"
#: A string holding a lone surrogate: its runs of text, each lone surrogate as its code point (an integer).
TAG_STR = TAG_PREFIX + "str"
#: An object that has a key beginning with TAG_PREFIX, wrapped so it is not read as a tag.
TAG_OBJECT = TAG_PREFIX + "object"


class CanonicalizationError(MalformedInputError):
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


def member_order(name: str) -> bytes:
    """RFC 8785 member order: a sort key comparing member names as UTF-16 code units."""
    return name.encode("utf-16-be", "surrogatepass")


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
        for key in sorted(value, key=member_order):
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


def is_plain(value: Any, depth: int = 0) -> bool:
    """True when orjson's output for ``value`` is already exact JCS."""
    t = type(value)
    if t is dict:
        if depth >= MAX_DEPTH:
            return False
        for k, v in value.items():
            # Sorting by code point equals sorting by UTF-16 code units for BMP-only keys;
            # a tag-prefixed key needs the escape that normalization gives it.
            if type(k) is not str or not (k.isascii() or max(k) <= "\uffff") or k.startswith(TAG_PREFIX):
                return False
            if type(v) is not str and not is_plain(v, depth + 1):
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
            if type(v) is not str and not is_plain(v, depth + 1):
                return False
        return True
    return False


def sorted_json(value: Any) -> bytes:
    """``orjson.dumps(value, option=orjson.OPT_SORT_KEYS)``, with or without orjson: for JSON data with no float.

    orjson writes it when it is loaded (a producer, a large receipt); otherwise the standard
    library's encoder does, and for such data (dict, list, str, int, bool, None) it writes the
    same bytes (``tests/core/test_canonical.py`` holds the two equal), so a small receipt is
    verified without loading orjson. For data :func:`is_plain` accepts, these are its RFC 8785
    bytes. Raises ``TypeError`` or ``ValueError`` for what neither writes (a value that is not
    JSON data, a lone surrogate).
    """
    orjson = sys.modules.get("orjson")
    if orjson is not None:
        out: bytes = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        return out
    return _STD_SORTED(value).encode("utf-8")


def canonical_bytes(value: Any) -> bytes:
    """Return the RFC 8785 canonical bytes of ``normalize(value)``."""
    if is_plain(value):
        try:
            return sorted_json(value)
        except (TypeError, ValueError):
            pass  # e.g. a lone surrogate: normalization tags it
    return exact_bytes(normalize(value))


# ------------------------------------------------------------------ exact JSON data


def check_exact(value: Any, _depth: int = 0) -> None:
    """Raise :class:`CanonicalizationError` unless ``value`` is JSON data RFC 8785 holds exactly.

    Exact means: ``dict`` with ``str`` keys, ``list``, ``str`` with no lone surrogate,
    ``bool``, ``None``, ``int`` within ±(2^53 − 1) or whose digits are exactly how RFC 8785
    writes a double (a float such as 2^53 or 1e20, parsed back as an integer), and finite
    ``float``, nested at most :data:`MAX_DEPTH` deep. Such a value and its canonical bytes determine each other (up
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
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER and not _is_double_text(value):
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


def _is_double_text(value: int) -> bool:
    """True when ``value``'s digits are how RFC 8785 writes some double (e.g. 2^53 read back as an int)."""
    if value.bit_length() > _DOUBLE_MAX_BITS:
        return False
    return _es6_number(float(value)) == str(value)


def exact_bytes(value: Any) -> bytes:
    """Return the RFC 8785 bytes of ``value``, which must pass :func:`check_exact`.

    Unlike :func:`canonical_bytes` nothing is normalized: a value with no exact JSON form
    is refused, never mapped onto another value's bytes.
    """
    check_exact(value)
    if is_plain(value):
        return sorted_json(value)  # exact data: no lone surrogate, so it is written
    return jcs_encode(value)


# ------------------------------------------------------------------ normalization


def _text(s: str) -> str | dict[str, list[str | int]]:
    """A string as it is, or, when it holds a lone surrogate, tagged as runs of text and code points.

    ``"caf\\udead"`` becomes ``{"$aer1:str": ["caf", 57005]}``: each surrogate code point
    stays one integer, so two surrogates side by side never merge into one character.
    """
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            parts: list[str | int] = []
            run: list[str] = []
            for ch in s:
                if "\ud800" <= ch <= "\udfff":
                    if run:
                        parts.append("".join(run))
                        run = []
                    parts.append(ord(ch))
                else:
                    run.append(ch)
            if run:
                parts.append("".join(run))
            return {TAG_STR: parts}
    return s


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        text = str(key)
        if not isinstance(_text(text), str):
            raise CanonicalizationError("object key holds a lone surrogate: it has no exact JSON form")
        return text
    if key is None or isinstance(key, bool):
        return "null" if key is None else ("true" if key else "false")
    if isinstance(key, int):
        return str(int(key))
    if isinstance(key, float):
        return _es6_number(float(key)) if math.isfinite(key) else _float_text(key)
    if isinstance(key, enum.Enum):
        return _key_text(key.value)
    rich = _rich()
    if isinstance(key, (rich.UUID, rich.PurePath, rich.Decimal)):
        return _key_text(str(key))
    if isinstance(key, (rich.datetime, rich.date, rich.time)):
        return str(_normalize(key, 0, set()))
    raise CanonicalizationError(f"object key of type {type(key).__name__} has no text form")


def _float_text(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    return "Infinity" if x > 0 else "-Infinity"


class _Rich:
    """The types of Python values beyond JSON that normalization writes, from modules loaded on first use."""

    def __init__(self) -> None:
        import base64
        import dataclasses
        import datetime
        import decimal
        import uuid
        from pathlib import PurePath

        self.b64encode = base64.b64encode
        self.dataclasses = dataclasses
        self.datetime, self.date, self.time = datetime.datetime, datetime.date, datetime.time
        self.timedelta, self.utc = datetime.timedelta, datetime.timezone.utc
        self.Decimal = decimal.Decimal
        self.UUID = uuid.UUID
        self.PurePath = PurePath


_RICH: list[_Rich] = []


def _rich() -> _Rich:
    if not _RICH:
        _RICH.append(_Rich())
    return _RICH[0]


def _datetime_text(value: _dt.datetime) -> str:
    if value.tzinfo is None or value.utcoffset() is None:
        return value.isoformat(timespec="microseconds")
    utc = value.astimezone(_rich().utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond:06d}Z"


def _normalize(value: Any, depth: int, active: set[int]) -> Any:
    if depth > MAX_DEPTH:
        raise CanonicalizationError(f"content nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, enum.Enum):
        return _normalize(value.value, depth + 1, active)
    if isinstance(value, str):
        return _text(str(value))
    if isinstance(value, int):
        value = int(value)
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return value
        # A JCS number is a double: beyond 2^53 it would lose digits or merge with a float.
        return {TAG_INT: _int_digits(value)}
    if isinstance(value, float):
        value = float(value)
        return value if math.isfinite(value) else {TAG_FLOAT: _float_text(value)}
    rich = _rich()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return rich.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, rich.datetime):
        return _datetime_text(value)
    if isinstance(value, (rich.date, rich.time)):
        return value.isoformat()
    if isinstance(value, rich.timedelta):
        return _normalize(value.total_seconds(), depth, active)
    if isinstance(value, (rich.UUID, rich.PurePath)):
        return str(value)
    if isinstance(value, rich.Decimal):
        return str(value)
    if isinstance(value, BaseException):
        return {"type": type(value).__qualname__, "message": _text(str(value))}

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
            return sorted(items, key=exact_bytes)
        dump = getattr(value, "model_dump", None)
        if callable(dump):  # pydantic v2
            return _normalize(dump(mode="json"), depth + 1, active)
        if rich.dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name) for f in rich.dataclasses.fields(value)}
            return _normalize_mapping(fields, depth, active)
        legacy_dump = getattr(value, "dict", None)
        if callable(legacy_dump) and hasattr(value, "__fields__"):  # pydantic v1
            return _normalize(legacy_dump(), depth + 1, active)
    finally:
        active.discard(marker)
    return _text(repr(value))


def _normalize_mapping(value: Mapping[Any, Any], depth: int, active: set[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    tagged = False
    for key, item in value.items():
        text = _key_text(key)
        if text in out:
            raise CanonicalizationError(f"two keys normalize to the same text {text!r}")
        tagged = tagged or text.startswith(TAG_PREFIX)
        out[text] = _normalize(item, depth + 1, active)
    return {TAG_OBJECT: out} if tagged else out


def _int_digits(value: int) -> str:
    try:
        return str(value)
    except ValueError as e:  # over the interpreter's digit limit for int -> str
        raise CanonicalizationError(f"integer of about {value.bit_length() * 0.30103:.0f} digits is too "
                                    "large to record") from e


def normalize(value: Any) -> Any:
    """Turn ``value`` into exact JSON data, deterministically and one-to-one (rules: spec/canonical.md)."""
    return _normalize(value, 0, set())


_RESTORE_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_INT_TAG = re.compile(r"-?[1-9][0-9]*", re.ASCII)
#: Longest digit string :func:`restore` turns back into an int (the interpreter's own default limit).
_MAX_TAG_DIGITS = 4300


def restore(data: Any) -> Any:
    """Invert the tags of :func:`normalize`: big integers, NaN/infinities, lone surrogates, escaped objects.

    ``restore(normalize(x))`` equals ``x`` for JSON-like ``x`` (dicts with string keys,
    lists, strings, numbers, booleans, None); readers of evidence use it to get back what
    the run produced. Only a tag exactly as normalization writes it is inverted; any other
    object with a tag's key (``{"$aer1:int": "5"}``, a text-only ``$aer1:str``) is left as it
    is, so two different contents never restore to the same value.
    """
    if type(data) is list:
        return [restore(v) for v in data]
    if type(data) is int and not -MAX_SAFE_INTEGER <= data <= MAX_SAFE_INTEGER:
        return float(data)  # in exact data such digits are a double's text (big integers are tagged)
    if type(data) is not dict:
        return data
    if len(data) == 1:
        ((key, item),) = data.items()
        if key == TAG_INT and _is_int_tag(item):
            return int(item)
        if key == TAG_FLOAT and type(item) is str and item in _RESTORE_FLOATS:
            return _RESTORE_FLOATS[item]
        if key == TAG_STR and _is_str_tag(item):
            return "".join(p if type(p) is str else chr(p) for p in item)
        if key == TAG_OBJECT and type(item) is dict and any(k.startswith(TAG_PREFIX) for k in item):
            return {k: restore(v) for k, v in item.items()}
    return {k: restore(v) for k, v in data.items()}


def _is_int_tag(item: Any) -> bool:
    """The digits normalization writes: ASCII, no leading zero or sign but ``-``, beyond ±(2^53 − 1).

    Only that exact form is a tag, so no two contents restore to one value (``{"$aer1:int": "5"}``
    or ``"007"`` is not 5, ``"٣"`` is not 3).
    """
    if type(item) is not str or len(item) > _MAX_TAG_DIGITS or _INT_TAG.fullmatch(item) is None:
        return False
    return not -MAX_SAFE_INTEGER <= int(item) <= MAX_SAFE_INTEGER


def _is_str_tag(item: Any) -> bool:
    """What :func:`_text` writes: runs of text (non-empty, no surrogate, never two in a row) and at
    least one lone surrogate code point."""
    if type(item) is not list:
        return False
    surrogates, after_text = 0, False
    for p in item:
        if type(p) is int and 0xD800 <= p <= 0xDFFF:
            surrogates, after_text = surrogates + 1, False
        elif type(p) is str and p and not after_text and _text(p) is p:
            after_text = True
        else:
            return False
    return surrogates > 0
