"""RFC 3339 UTC timestamps with microseconds, formatted fast (one per recorded step)."""

from __future__ import annotations

import datetime as _dt
import math
import time

__all__ = ["format_ns", "now_ns", "to_ns"]

_NS_PER_S = 1_000_000_000
# (second, "YYYY-MM-DDTHH:MM:SS") of the last second formatted; one tuple, replaced atomically
_cache: tuple[int, str] = (-1, "")


def now_ns() -> int:
    """Wall-clock time in nanoseconds since the epoch."""
    return time.time_ns()


def format_ns(ns: int) -> str:
    """Format epoch nanoseconds as ``YYYY-MM-DDTHH:MM:SS.ffffffZ``."""
    global _cache
    second = ns // _NS_PER_S
    cached_second, prefix = _cache
    if second != cached_second:
        prefix = _dt.datetime.fromtimestamp(second, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        _cache = (second, prefix)
    return f"{prefix}.{ns // 1000 % 1_000_000:06d}Z"


def to_ns(value: object) -> int:
    """Epoch nanoseconds from a float/int of epoch seconds or an aware datetime.

    Floats are floored to the microsecond (the precision a float of epoch seconds holds),
    so a start taken with ``time.time()`` is never after an end taken later with
    ``time.time_ns()``.
    """
    if type(value) is float:
        return math.floor(value * 1_000_000) * 1000
    if isinstance(value, bool):
        raise TypeError("a timestamp must be epoch seconds or an aware datetime, not bool")
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError("naive datetime: give an aware datetime (for example in UTC)")
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
        return (delta.days * 86_400 + delta.seconds) * _NS_PER_S + delta.microseconds * 1000
    if isinstance(value, int):
        return value * _NS_PER_S
    if isinstance(value, float):
        return math.floor(value * 1_000_000) * 1000
    raise TypeError(f"a timestamp must be epoch seconds or an aware datetime, not {type(value).__name__}")
