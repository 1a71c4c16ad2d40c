"""RFC 3339 UTC timestamps with microseconds, formatted fast (one per recorded step)."""

from __future__ import annotations

import math
import re
import time

# datetime loads only to format or convert a time: verifying parses step times without it
from ._receipt import TIMESTAMP_PATTERN

__all__ = ["format_ns", "is_calendar_date", "now_ns", "parse_step_time", "to_ns"]

_STEP_TIME = re.compile(TIMESTAMP_PATTERN, re.ASCII)
#: Days in each month of a common year.
_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)

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
        import datetime as _dt

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
    import datetime as _dt

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


def is_calendar_date(day: str) -> bool:
    """``day`` is a real date ``YYYY-MM-DD`` of ASCII digits, year 1 or later (no other text is a date here)."""
    if not (len(day) == 10 and day.isascii() and day[4] == day[7] == "-"
            and (day[:4] + day[5:7] + day[8:]).isdigit()):
        return False
    year, month, d = int(day[:4]), int(day[5:7]), int(day[8:])
    if year < 1 or not 1 <= month <= 12:
        return False
    leap = month == 2 and year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= d <= _MONTH_DAYS[month - 1] + leap


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (no datetime needed)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146_097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719_468


def parse_step_time(text: object) -> int | None:
    """Epoch microseconds of a step time ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (ASCII digits, a real date), else None.

    Times are ordered by this value, never by their text: a text that only looks like a
    time (another script's digits, a date that does not exist) has no place in the order.
    """
    if type(text) is not str or _STEP_TIME.fullmatch(text) is None or not is_calendar_date(text[:10]):
        return None
    days = _days_from_civil(int(text[0:4]), int(text[5:7]), int(text[8:10]))
    seconds = days * 86_400 + int(text[11:13]) * 3600 + int(text[14:16]) * 60 + int(text[17:19])
    return seconds * 1_000_000 + int(text[20:26])
