"""``aer1 diff A.json B.json``: two receipts of the same task, aligned step by step.

Steps are aligned as sequences of (kind, agent, tool) keys (difflib's longest matching blocks,
after the common head and tail are taken off, which is most of two runs of one task). An
aligned pair is ``same`` when its ``receipt_hash`` and status agree, else ``changed``, with
the content fields that differ (read from each receipt's evidence through the one reader
of content shapes). An unaligned step is ``removed`` (only in A) or ``added`` (only in B),
or ``moved`` when the other receipt has a step of the same key and content elsewhere.
Times, receipt ids and chain digests differ between any two runs and are not compared; nor
is the close step's hash (its content is the receipt's own members, ids and times among
them): two close steps are compared by the members that say what the run was (goal,
status, output_hash, the agents' names).

Each receipt is verified as ``aer1-verify`` would; the verdicts are shown, and two receipts
match only when every step is the same and the verdicts agree.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._report._content import FIELDS, as_text, essentials
from ._report._model import clip
from ._timeline import UNMATCHED, StepRow, step_rows

__all__ = ["MAX_ALIGNED_STEPS", "Change", "Diff", "Op", "diff_receipts"]

#: Steps of each receipt's differing middle that are aligned by key; past it, steps are paired by position.
MAX_ALIGNED_STEPS = 5000
#: Characters of one field's value a difference carries.
VALUE_CHARS = 1000


@dataclass(frozen=True)
class Change:
    """One field that differs between two aligned steps: its name and the two values (None: absent)."""

    name: str
    a: str | None
    b: str | None


@dataclass(frozen=True)
class Op:
    """One line of the alignment: ``same``, ``changed``, ``removed``, ``added`` or ``moved``."""

    op: str
    a: int | None
    b: int | None
    kind: str
    agent: str
    tool: str
    changes: tuple[Change, ...] = ()
    preview: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "a": self.a, "b": self.b, "kind": self.kind, "agent": self.agent, "tool": self.tool,
                "preview": self.preview, "changes": [{"field": c.name, "a": c.a, "b": c.b} for c in self.changes]}


@dataclass
class Diff:
    """The alignment of two receipts' steps, and what it found."""

    ops: list[Op] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        names = ("same", "changed", "removed", "added", "moved")
        return {n: sum(1 for o in self.ops if o.op == n) for n in names}

    @property
    def same(self) -> bool:
        return all(o.op == "same" for o in self.ops)


#: A receipt's members that say what the run was (the close step's content holds them and its ids and times).
_RUN_MEMBERS = ("goal", "status", "output_hash", "agents")


@dataclass(frozen=True)
class _Side:
    receipt: Mapping[str, Any]
    steps: Sequence[Mapping[str, Any]]
    rows: list[StepRow]
    contents: Mapping[int, Any]

    def key(self, i: int) -> tuple[str, str, str]:
        r = self.rows[i]
        return r.kind, r.agent, r.tool

    def digest(self, i: int) -> object:
        return self.steps[i].get("receipt_hash")

    def fields(self, i: int) -> dict[str, str]:
        r = self.rows[i]
        if r.seq is None or r.seq not in self.contents:
            return {}
        return essentials(r.kind, self.contents[r.seq], tool=r.tool, target=r.to).as_dict()


def _side(receipt: Mapping[str, Any], contents: Mapping[int, Any]) -> _Side:
    steps = [s for s in receipt.get("steps") or [] if isinstance(s, Mapping)]
    return _Side(receipt, steps, step_rows(receipt, contents), contents)


def _run_member(receipt: Mapping[str, Any], name: str) -> str | None:
    value = receipt.get(name)
    if name == "agents" and isinstance(value, list):
        value = [a.get("name") if isinstance(a, Mapping) else a for a in value]
    return None if value is None else clip(as_text(value), VALUE_CHARS)


def _close_changes(a: _Side, b: _Side) -> tuple[Change, ...]:
    """Two close steps differ only in what the runs were (their ids and times always differ)."""
    pairs = ((n, _run_member(a.receipt, n), _run_member(b.receipt, n)) for n in _RUN_MEMBERS)
    return tuple(Change(n, x, y) for n, x, y in pairs if x != y)


def _changes(a: _Side, i: int, b: _Side, j: int) -> tuple[Change, ...]:
    """The fields that differ between step ``i`` of A and step ``j`` of B (status, target, content fields)."""
    out = []
    ra, rb = a.rows[i], b.rows[j]
    for name, x, y in (("status", ra.status, rb.status), ("to", ra.to, rb.to)):
        if x != y:
            out.append(Change(name, x, y))
    forged = [n for n, side, k in (("A", a, i), ("B", b, j)) if side.rows[k].content_matches is False]
    if forged:  # a content that does not hash to its step is not what was recorded: its values are not shown
        out.append(Change("content", f"receipt_hash {a.digest(i)}", f"receipt_hash {b.digest(j)} "
                          f"({' and '.join(forged)}: {UNMATCHED}, not compared)"))
        return tuple(out)
    fa, fb = a.fields(i), b.fields(j)
    for name in FIELDS:
        if fa.get(name) != fb.get(name):
            out.append(Change(name, _cut(fa.get(name)), _cut(fb.get(name))))
    if a.digest(i) != b.digest(j) and len(out) == sum(c.name in ("status", "to") for c in out):
        why = "other members of the content differ" if fa or fb else "no evidence to show how"
        out.append(Change("content", f"receipt_hash {a.digest(i)}", f"receipt_hash {b.digest(j)} ({why})"))
    return tuple(out)


def _cut(value: str | None) -> str | None:
    return None if value is None else clip(value, VALUE_CHARS)


def _op(name: str, a: _Side | None, i: int | None, b: _Side | None, j: int | None,
        changes: tuple[Change, ...] = ()) -> Op:
    side, at = (a, i) if a is not None and i is not None else (b, j)
    assert side is not None and at is not None
    r = side.rows[at]
    seq_a = None if a is None or i is None else a.rows[i].seq
    seq_b = None if b is None or j is None else b.rows[j].seq
    preview = r.preview if r.content_matches is not False else f"({UNMATCHED}) {r.preview}"
    return Op(name, seq_a, seq_b, r.kind, r.agent, r.tool, changes, preview)


def _pair(a: _Side, i: int, b: _Side, j: int) -> Op:
    if a.rows[i].kind == "close":
        changes = _close_changes(a, b)
        return _op("changed" if changes else "same", a, i, b, j, changes)
    if a.digest(i) == b.digest(j) and a.rows[i].status == b.rows[j].status and a.rows[i].to == b.rows[j].to:
        return _op("same", a, i, b, j)
    return _op("changed", a, i, b, j, _changes(a, i, b, j))


def _aligned(a: _Side, i1: int, b: _Side, j1: int, n: int) -> list[Op]:
    """``n`` steps of equal keys paired in order, except that a step whose content reappears at another place of
    the block (steps of one key in another order) is ``moved`` there, and what it leaves is removed or added."""
    off = [k for k in range(n) if a.digest(i1 + k) != b.digest(j1 + k)]
    free: dict[object, list[int]] = {}
    for k in off:
        free.setdefault(b.digest(j1 + k), []).append(k)
    moved: dict[int, int] = {}
    for k in off:
        if a.rows[i1 + k].kind != "close" and free.get(a.digest(i1 + k)):
            moved[k] = free[a.digest(i1 + k)].pop(0)
    taken = set(moved.values())
    ops: list[Op] = []
    for k in range(n):
        if k in moved:
            ops.append(_op("moved", a, i1 + k, b, j1 + moved[k]))
        elif k in taken:
            ops.append(_op("removed", a, i1 + k, None, None))
        else:
            ops.append(_pair(a, i1 + k, b, j1 + k))
            continue
        if k not in taken and k in moved:
            ops.append(_op("added", None, None, b, j1 + k))
    return ops


def _blocks(a: _Side, lo_a: int, hi_a: int, b: _Side, lo_b: int, hi_b: int,
            notes: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's opcodes over the keys of A[lo_a:hi_a] and B[lo_b:hi_b] (absolute indices)."""
    if hi_a - lo_a > MAX_ALIGNED_STEPS or hi_b - lo_b > MAX_ALIGNED_STEPS:
        notes.append(f"the runs differ over more than {MAX_ALIGNED_STEPS} steps: the rest is paired by position")
        n = min(hi_a - lo_a, hi_b - lo_b)
        out = [("replace", lo_a, lo_a + n, lo_b, lo_b + n)]
        if hi_a - lo_a > n:
            out.append(("delete", lo_a + n, hi_a, lo_b + n, lo_b + n))
        if hi_b - lo_b > n:
            out.append(("insert", lo_a + n, lo_a + n, lo_b + n, hi_b))
        return out
    keys_a = [a.key(i) for i in range(lo_a, hi_a)]
    keys_b = [b.key(j) for j in range(lo_b, hi_b)]
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    return [(tag, lo_a + i1, lo_a + i2, lo_b + j1, lo_b + j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes()]


def diff_receipts(receipt_a: Mapping[str, Any], contents_a: Mapping[int, Any], receipt_b: Mapping[str, Any],
                  contents_b: Mapping[int, Any]) -> Diff:
    """Align the steps of two receipts and say, pair by pair, what differs."""
    a, b = _side(receipt_a, contents_a), _side(receipt_b, contents_b)
    result = Diff()
    n_a, n_b = len(a.rows), len(b.rows)
    head = 0
    while head < min(n_a, n_b) and a.key(head) == b.key(head) and a.digest(head) == b.digest(head):
        head += 1
    tail = 0
    while tail < min(n_a, n_b) - head and a.key(n_a - 1 - tail) == b.key(n_b - 1 - tail) and (
            a.digest(n_a - 1 - tail) == b.digest(n_b - 1 - tail) or a.key(n_a - 1 - tail)[0] == "close"):
        tail += 1
    ops: list[Op] = [_pair(a, i, b, i) for i in range(head)]
    removed: list[int] = []
    added: list[int] = []
    for tag, i1, i2, j1, j2 in _blocks(a, head, n_a - tail, b, head, n_b - tail, result.notes):
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1 and all(
                a.key(i1 + k) == b.key(j1 + k) for k in range(i2 - i1))):
            ops += _aligned(a, i1, b, j1, i2 - i1)
            continue
        ops += [_op("removed", a, i, None, None) for i in range(i1, i2)]
        ops += [_op("added", None, None, b, j) for j in range(j1, j2)]
        removed += range(i1, i2)
        added += range(j1, j2)
    ops += [_pair(a, n_a - tail + k, b, n_b - tail + k) for k in range(tail)]
    # a removed step whose key and content reappear among the added ones was moved, not lost
    unmatched: dict[tuple[tuple[str, str, str], object], list[int | None]] = {}
    for j in added:
        unmatched.setdefault((b.key(j), b.digest(j)), []).append(b.rows[j].seq)
    moved_to: dict[int | None, int | None] = {}
    for i in removed:
        seqs = unmatched.get((a.key(i), a.digest(i)))
        if seqs:
            moved_to[a.rows[i].seq] = seqs.pop(0)
    moved_from = {v: k for k, v in moved_to.items()}
    for o in ops:
        if o.op == "removed" and o.a in moved_to:
            result.ops.append(Op("moved", o.a, moved_to[o.a], o.kind, o.agent, o.tool, (), o.preview))
        elif not (o.op == "added" and o.b in moved_from):
            result.ops.append(o)
    return result
