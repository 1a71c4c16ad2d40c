"""The quick path of checks 2 to 5 over the steps of a profile receipt, one member at a time.

The step checker (``_steps``) takes one step at a time and is the reference: it decides
and words every failure. This path applies the same rules to a run of steps at once (the
batch form of the member rules, ``aer1._member_rules.columns_ok``, a few C-level passes
per member instead of a few dozen Python operations per step); the step digests are
computed from one sorted encoding of the whole run. It never reports a failure: when any
rule is not certainly met it returns None and the caller runs the reference over the
receipt from the start, so what fails, and how it is worded, is always the reference's.

A run that passes here is also proven to be JSON data within the string limit (exact
``dict``/``str``/``int`` types, scalars only), so the caller may skip the JSON-value
walk over those steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._chain import derived_ids_hex, step_digests
from .._link import LINK_KIND
from .._member_rules import STEP_COLUMNS, columns_ok
from .._merkle import MerkleAccumulator, leaves_of_ids, reduce_levels
from .._receipt import CLOSE_KIND, STEP_REQUIRED_MEMBERS

__all__ = ["Passed", "Run", "Runs", "check_block", "check_run", "combine"]

_N_REQUIRED = len(STEP_REQUIRED_MEMBERS)
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
    columns = [tuple(map(get, run)) for get in STEP_COLUMNS]  # a required member missing is a KeyError
    if not columns_ok(run, columns, chained=True):  # the digests below prove the rest of the member rules
        return None
    seqs, rids, _, kinds, _, _, _, _, statuses, prevs = columns
    if seqs != tuple(range(lo + 1, lo + n + 1)):
        return None
    closes = kinds.count(CLOSE_KIND)
    closed = kinds[-1] == CLOSE_KIND
    if closes > (1 if last and closed else 0):
        return None  # a close step before the last step: the reference says where
    digests = step_digests(run, columns if max(map(len, run)) == _N_REQUIRED else None)
    if "".join(prevs[1:]) != digests[:-_DIGEST].hex() or "".join(rids).replace("-", "") != derived_ids_hex(digests):
        return None
    leaves = leaves_of_ids(rids)
    body = statuses[:-1] if closed else statuses  # the close step is not counted
    counted = (body.count("ok"), body.count("error"), body.count("cancelled"))
    return Run(lo, lo + n, prevs[0], digests[-_DIGEST:].hex(), leaves, reduce_levels(leaves[:], levels),
               kinds.count(LINK_KIND), closed, counted)


class Runs:
    """The one driver of the quick path: the blocks of a receipt's steps handed in order, checked, then joined.

    Every path hands its steps here: a parsed receipt's (one run, or one per process), a cut
    file's step lines (a part per process, each its own driver from the part's first step),
    a streamed file's blocks. Each block starts where the one before ended; its Merkle nodes
    are reduced ``levels`` levels (blocks start at a multiple of ``2**levels`` steps), except
    a block that is the whole receipt (reduced, it would have no root).
    """

    def __init__(self, levels: int, lo: int = 0) -> None:
        self.levels = levels
        self.lo = lo  # where the next block starts
        self.runs: list[Run] = []

    def check(self, block: list[Any], *, last: bool) -> Run | None:
        """Check the next block (``last``: it ends the receipt); None, keeping nothing: not certainly passing."""
        run = check_block(block, self.lo, last=last, levels=0 if last and self.lo == 0 else self.levels)
        if run is not None:
            self.add(run)
        return run

    def add(self, run: Run) -> None:
        """Keep the next run, checked by :meth:`check` in another process."""
        self.runs.append(run)
        self.lo = run.hi

    def passed(self) -> Passed | None:
        """The runs joined (:func:`combine`): None unless every step was checked and passed."""
        return combine(self.runs)


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
    tree = MerkleAccumulator()
    for r in done:
        tree.add(r.nodes)
    statuses = (sum(r.statuses[0] for r in done), sum(r.statuses[1] for r in done), sum(r.statuses[2] for r in done))
    return Passed(n, done[0].first_prev, done[-1].last_digest, tree.root(), sum(r.links for r in done),
                  done[-1].closed, statuses)

