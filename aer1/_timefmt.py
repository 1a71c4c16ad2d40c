"""RFC 3339 timestamps: our step times formatted fast (one per recorded step), and every time form checked here.

The form rules are defined once, in this module: :func:`is_step_time_form` (our UTC
microsecond form), :func:`is_utc_time_form` (UTC, any fraction to the microsecond: the
keyring's times), :func:`is_rfc3339` (any RFC 3339 date-time, as other producers write
it), :func:`step_time_dates` (two step times at once) and :func:`step_times_ok` (the batch
form over many), each with a real calendar date where it says so.
"""

from __future__ import annotations

import math
import re
import time
from operator import itemgetter
from typing import Any

# datetime loads only to format or convert a time: verifying parses step times without it
from ._receipt import RFC3339_PATTERN, TIMESTAMP_PATTERN

__all__ = [
    "STEP_TIME_CHARS",
    "date_ok",
    "format_ns",
    "is_calendar_date",
    "is_rfc3339",
    "is_step_time_form",
    "is_utc_time_form",
    "now_ns",
    "parse_step_time",
    "step_time_dates",
    "step_times_ok",
    "to_ns",
]

_STEP_TIME = re.compile(TIMESTAMP_PATTERN, re.ASCII)
_ANY_TIME = re.compile(RFC3339_PATTERN, re.ASCII)
# a UTC time with an optional fraction of up to 6 digits (the keyring's valid_from, valid_until, revoked_at)
_UTC_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z", re.ASCII)
# two step times, concatenated (the fixed width of each fixes where the second starts)
_TWO_STEP_TIMES = re.compile(TIMESTAMP_PATTERN + TIMESTAMP_PATTERN, re.ASCII)
#: Characters of a step time ``YYYY-MM-DDTHH:MM:SS.ffffffZ``.
STEP_TIME_CHARS = len("2026-01-01T00:00:00.000000Z")
#: A step time with every digit written 0 (the hour, minute and second digits are checked apart).
_TIME_SHAPE = b"0000-00-00T00:00:00.000000Z"
_DIGITS_TO_0 = bytes.maketrans(b"0123456789", b"0" * 10)
_HOUR_TENS, _MINUTE_TENS, _SECOND_TENS = 11, 14, 17
_UNDER_3, _UNDER_6 = frozenset("012"), frozenset("012345")
#: Marks hour tens "2" and hour units "4" to "9" with 1 (every other byte 0): an hour from 24 to 29 has both.
_TENS_2 = bytes(1 if b == ord("2") else 0 for b in range(256))
_UNITS_4_9 = bytes(1 if ord("4") <= b <= ord("9") else 0 for b in range(256))
_DAY_LEN = 10
_DATE = itemgetter(slice(0, _DAY_LEN))
#: Dates :func:`date_ok` remembers (a receipt's steps share a few days).
_DATE_LIMIT = 4096
_valid_dates: dict[str, bool] = {}
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


def date_ok(day: str) -> bool:
    """:func:`is_calendar_date`, remembered for up to ``_DATE_LIMIT`` distinct days (steps share their dates)."""
    ok = _valid_dates.get(day)
    if ok is None:
        ok = is_calendar_date(day)
        if len(_valid_dates) < _DATE_LIMIT:
            _valid_dates[day] = ok
    return ok


def is_step_time_form(text: object) -> bool:
    """``text`` has our step time form ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` of ASCII digits (the date is not checked)."""
    return type(text) is str and _STEP_TIME.fullmatch(text) is not None


def is_utc_time_form(text: object) -> bool:
    """``text`` has the form ``YYYY-MM-DDTHH:MM:SS[.f to .ffffff]Z`` of ASCII digits (the values are not checked)."""
    return type(text) is str and _UTC_TIME.fullmatch(text) is not None


def is_rfc3339(v: object) -> bool:
    """RFC 3339 date-time of ASCII digits with a real calendar date (fast path for the UTC microsecond form)."""
    if type(v) is not str:
        return False
    m = _STEP_TIME.fullmatch(v)
    if m is not None:
        return date_ok(m.group(1))
    m = _ANY_TIME.fullmatch(v)
    return m is not None and date_ok(f"{m.group(1)}-{m.group(2)}-{m.group(3)}")


def step_time_dates(started: str, ended: str) -> bool:
    """Two strings of :data:`STEP_TIME_CHARS` are each a step time with a real date (one match for both)."""
    m = _TWO_STEP_TIMES.fullmatch(started + ended)
    if m is None:
        return False
    d1, d2 = m.group(1, 2)
    return bool((_valid_dates.get(d1) or date_ok(d1)) and (_valid_dates.get(d2) or date_ok(d2)))


def step_times_ok(times: tuple[Any, ...]) -> bool:
    """Every one of ``times`` is a step time with a real date: the batch form of :func:`parse_step_time`.

    The joined times, digits written 0, must be the shape repeated (any other character,
    a non-ASCII digit among them, breaks it); then the tens of hours, minutes and seconds
    and the hours 24 to 29 are checked over every time at once, and each distinct date
    (once when, character by character, every time has the first one's). A value that is
    not a string raises TypeError (the caller's "no").
    """
    if set(map(len, times)) != {STEP_TIME_CHARS}:
        return False
    text = "".join(times)
    if text.encode().translate(_DIGITS_TO_0) != _TIME_SHAPE * len(times):  # UTF-8 of non-ASCII is longer
        return False
    tens = text[_HOUR_TENS::STEP_TIME_CHARS]
    if not (set(tens) <= _UNDER_3 and set(text[_MINUTE_TENS::STEP_TIME_CHARS]) <= _UNDER_6
            and set(text[_SECOND_TENS::STEP_TIME_CHARS]) <= _UNDER_6):
        return False
    late = int.from_bytes(tens.encode().translate(_TENS_2), "big") & int.from_bytes(
        text[_HOUR_TENS + 1::STEP_TIME_CHARS].encode().translate(_UNITS_4_9), "big")
    if late:
        return False
    day = text[:_DAY_LEN]
    if all(text[k::STEP_TIME_CHARS] == day[k] * len(times) for k in range(_DAY_LEN)):
        return date_ok(day)  # one date throughout (a run of a day): checked once, no string per time
    return all(date_ok(d) for d in set(map(_DATE, times)))
