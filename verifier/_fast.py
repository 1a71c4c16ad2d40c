"""The quick path of checks 2 to 5 over the steps of a profile receipt, one member at a time.

The step checker (``_steps``) takes one step at a time and is the reference: it decides
and words every failure. This path applies the same rules to a run of steps at once, a
few C-level passes per member instead of a few dozen Python operations per step: the
values of one member are gathered, their types and lengths checked as a set, their
format checked on the joined text; the step digests are computed from one sorted
encoding of the whole run. It never reports a failure: when any rule is not certainly
met it returns None and the caller runs the reference over the receipt from the start,
so what fails, and how it is worded, is always the reference's.

A run that passes here is also proven to be JSON data within the string limit (exact
``dict``/``str``/``int`` types, scalars only), so the caller may skip the JSON-value
walk over those steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import ge, gt, itemgetter
from typing import Any

from .._chain import derived_ids_hex, step_digests
from .._limits import MAX_STRING_CHARS
from .._link import LINK_KIND
from .._merkle import leaves_of_ids, reduce_levels, root_of_leaves
from .._receipt import (
    CLOSE_KIND,
    KINDS,
    STEP_OPTIONAL_MEMBERS,
    STEP_REQUIRED_MEMBERS,
    STEP_STATUSES,
    TRACE_MEMBERS,
    trace_members_problem,
)
from ._checks import date_ok, is_hex64, is_uuid

__all__ = ["Passed", "Run", "check_block", "check_run", "combine"]

_REQUIRED = frozenset(STEP_REQUIRED_MEMBERS)
_N_REQUIRED = len(STEP_REQUIRED_MEMBERS)
_ALL = frozenset((*STEP_REQUIRED_MEMBERS, *STEP_OPTIONAL_MEMBERS))
_COLUMNS = tuple(map(itemgetter, STEP_REQUIRED_MEMBERS))
_KIND_SET = frozenset(KINDS)
_STATUS_SET = frozenset(STEP_STATUSES)
#: A step time with every digit written 0 (the hour, minute and second digits are checked apart).
_TIME_SHAPE = b"0000-00-00T00:00:00.000000Z"
_TS_LEN = len(_TIME_SHAPE)
_DIGITS_TO_0 = bytes.maketrans(b"0123456789", b"0" * 10)
_HOUR_TENS, _MINUTE_TENS, _SECOND_TENS = 11, 14, 17
_UNDER_3, _UNDER_6 = frozenset("012"), frozenset("012345")
#: Marks hour tens "2" and hour units "4" to "9" with 1 (every other byte 0): an hour from 24 to 29 has both.
_TENS_2 = bytes(1 if b == ord("2") else 0 for b in range(256))
_UNITS_4_9 = bytes(1 if ord("4") <= b <= ord("9") else 0 for b in range(256))
_DAY_LEN = 10
_DATE = itemgetter(slice(0, _DAY_LEN))
_HEX_DIGITS = b"0123456789abcdef"
_ID_LEN = 36
_ID_DASHES = (8, 13, 18, 23)
_HEX_LEN = 64
_DIGEST = 32


@dataclass
class Run:
    """What the reference would have left behind after passing ``steps[lo:hi]``."""

    lo: int
    hi: int
    first_prev: str
    last_digest: str
    leaves: list[bytes]
    #: The Merkle nodes of the run ``levels`` levels up (the run starts at a multiple of 2**levels).
    nodes: list[bytes]
    links: int
    closed: bool  # the run's last step is a close step
    statuses: tuple[int, int, int] = (0, 0, 0)  # ok, error, cancelled: the run's steps but a close step


def check_run(steps: list[Any], lo: int, hi: int, *, last: bool, levels: int = 0) -> Run | None:
    """Steps ``lo`` to ``hi`` (exclusive) of a profile receipt pass checks 2, 3 and 5 as the reference checks them.

    ``last``: the run ends the receipt (only its last step may be a close step).
    Linking the run's first step to the one before, duplicate ids across runs and the
    Merkle root are the caller's. None: not certainly passing (run the reference).
    """
    return check_block(steps[lo:hi], lo, last=last, levels=levels)


def check_block(block: list[Any], lo: int, *, last: bool, levels: int = 0) -> Run | None:
    """:func:`check_run` over steps already cut out: ``block`` holds steps ``lo`` to ``lo + len(block)``."""
    try:
        return _check_run(block, lo, last, levels)
    except (TypeError, ValueError, KeyError, AttributeError):  # orjson's encode error is a TypeError
        return None  # a value of the wrong type or shape met a C-level pass: the reference says what


def _check_run(run: list[Any], lo: int, last: bool, levels: int) -> Run | None:
    n = len(run)
    if n == 0 or set(map(type, run)) != {dict}:
        return None
    sizes = list(map(len, run))
    if max(sizes) > _N_REQUIRED:  # optional members (a required one missing is a KeyError below)
        if not _optional_members_ok([run[i] for i in compress(range(n), map(gt, sizes, repeat(_N_REQUIRED)))]):
            return None
    columns = [tuple(map(get, run)) for get in _COLUMNS]
    seqs, rids, tools, kinds, agents, hashes, started, ended, statuses, prevs = columns
    if set(map(type, seqs)) != {int} or seqs != tuple(range(lo + 1, lo + n + 1)):
        return None
    for labels in (tools, agents):
        if "" in labels or max(map(len, labels)) > MAX_STRING_CHARS:
            return None
        "".join(labels)  # TypeError unless every value is a string (the digests' encoding refuses subclasses)
    if not set(kinds) <= _KIND_SET or not set(statuses) <= _STATUS_SET:
        return None
    closes = kinds.count(CLOSE_KIND)
    closed = kinds[-1] == CLOSE_KIND
    if closes > (1 if last and closed else 0):
        return None  # a close step before the last step: the reference says where
    links = kinds.count(LINK_KIND)
    if links and not all(is_uuid(s.get("target")) for s, k in zip(run, kinds, strict=True) if k == LINK_KIND):
        return None
    if not (_times_ok(started + ended) and all(map(ge, ended, started))):
        return None
    if not (_hex_ok(hashes) and is_hex64(prevs[0])) or set(map(len, prevs)) != {_HEX_LEN}:
        return None
    if set(map(type, rids)) != {str} or set(map(len, rids)) != {_ID_LEN}:
        return None
    ids = "".join(rids)
    dashes = "-" * n
    if any(ids[k::_ID_LEN] != dashes for k in _ID_DASHES):
        return None
    digests = step_digests(run, columns if max(sizes) == _N_REQUIRED else None)
    if "".join(prevs[1:]) != digests[:-_DIGEST].hex() or ids.replace("-", "") != derived_ids_hex(digests):
        return None
    leaves = leaves_of_ids(rids)
    body = statuses[:-1] if closed else statuses  # the close step is not counted
    counted = (body.count("ok"), body.count("error"), body.count("cancelled"))
    return Run(lo, lo + n, prevs[0], digests[-_DIGEST:].hex(), leaves, reduce_levels(leaves[:], levels), links,
               closed, counted)


def _optional_members_ok(steps: list[dict[str, Any]]) -> bool:
    """Steps with members beyond the required ones: those are optional members, non-empty strings (trace ids hex)."""
    for step in steps:
        keys = step.keys()
        if not (_REQUIRED <= keys and keys <= _ALL):
            return False
        for name in keys - _REQUIRED:
            value = step[name]
            if type(value) is not str or not value or len(value) > MAX_STRING_CHARS:
                return False
        if not TRACE_MEMBERS.keys().isdisjoint(keys) and trace_members_problem(step) is not None:
            return False
    return True


def _times_ok(times: tuple[Any, ...]) -> bool:
    """UTC with microseconds, each a real calendar date (what the reference's quick test accepts).

    The joined times, digits written 0, must be the shape repeated (any other character,
    a non-ASCII digit among them, breaks it); then the tens of hours, minutes and seconds
    and the hours 24 to 29 are checked over every time at once, and each distinct date
    (once when, character by character, every time has the first one's).
    """
    if set(map(len, times)) != {_TS_LEN}:
        return False
    text = "".join(times)
    if text.encode().translate(_DIGITS_TO_0) != _TIME_SHAPE * len(times):  # UTF-8 of non-ASCII is longer
        return False
    tens = text[_HOUR_TENS::_TS_LEN]
    if not (set(tens) <= _UNDER_3 and set(text[_MINUTE_TENS::_TS_LEN]) <= _UNDER_6
            and set(text[_SECOND_TENS::_TS_LEN]) <= _UNDER_6):
        return False
    late = int.from_bytes(tens.encode().translate(_TENS_2), "big") & int.from_bytes(
        text[_HOUR_TENS + 1::_TS_LEN].encode().translate(_UNITS_4_9), "big")
    if late:
        return False
    day = times[0][:_DAY_LEN]
    if all(text[k::_TS_LEN] == day[k] * len(times) for k in range(_DAY_LEN)):
        return date_ok(day)  # one date throughout (a run of a day): checked once, no string per time
    return all(date_ok(day) for day in set(map(_DATE, times)))


def _hex_ok(values: tuple[Any, ...]) -> bool:
    """Each value is 64 lowercase hex digits: deleting those from the joined values leaves nothing."""
    if set(map(len, values)) != {_HEX_LEN}:
        return False
    text = "".join(values)
    return not text.encode().translate(None, _HEX_DIGITS)  # UTF-8 of non-ASCII is bytes of 0x80 and up


@dataclass
class Passed:
    """Every step passed checks 2, 3 and 5 as far as the steps alone decide them; what the report needs next."""

    n: int
    first_prev: str
    last_digest: str
    root: bytes  # the receipt-id-v0 Merkle root of the steps
    links: int
    closed: bool
    statuses: tuple[int, int, int] = (0, 0, 0)  # ok, error, cancelled: every step but the close step


def combine(runs: Sequence[Run | None]) -> Passed | None:
    """The runs of one receipt, in order: each links to the one before, no step id repeats, one Merkle root."""
    done: list[Run] = []
    for run in runs:
        if run is None or (done and (run.lo != done[-1].hi or run.first_prev != done[-1].last_digest)):
            return None
        done.append(run)
    if not done:  # a close step inside a run that is not the last was refused by check_run
        return None
    n = done[-1].hi
    if len(set().union(*(r.leaves for r in done))) != n:
        return None  # a repeated id: the reference names the steps
    nodes = [node for r in done for node in r.nodes]
    statuses = (sum(r.statuses[0] for r in done), sum(r.statuses[1] for r in done), sum(r.statuses[2] for r in done))
    return Passed(n, done[0].first_prev, done[-1].last_digest, root_of_leaves(nodes), sum(r.links for r in done),
                  done[-1].closed, statuses)

