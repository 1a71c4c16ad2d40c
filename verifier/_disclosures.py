"""Committed fields: each commitment in the evidence checked against its disclosure, or its erasure.

Run as part of check 7, once every content hashed to its step's ``receipt_hash``. A
content field committed at record time (``{"$aer1:commit": D}``, spec/erasure.md) is

* disclosed: the disclosures file beside the evidence holds ``[salt, path, value]`` for it,
  and ``hex(SHA-256(JCS([salt, path, value])))`` equals D (anything else fails the check);
* erased: no disclosure, and an erasure record signed by a trusted key names this receipt,
  the step, the path and D;
* withheld: no disclosure and no such record. The evidence is then not fully checked: the
  check still passes (every hash holds), but the basis says so and ``--require evidence``
  and policies fail it.

A disclosure for a field the step did not commit, or a second one for the same field, fails.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._canonical import CanonicalizationError
from .._commit import (
    DISCLOSURES_TYPE,
    commitment,
    commitments_in,
    disclosures_path_for,
    erasures_path_for,
    has_commitment,
    leaves,
    reveal,
    salt_ok,
)
from .._content_hash import content_hash, hash_of_canonical
from ._evidence import evidence_lines, parse_evidence_line
from ._parse import MalformedInput, open_regular
from ._report import FAIL, CheckResult, Report

__all__ = ["FIELDS_FACT", "Fields", "Unrevealed", "check_commitments", "committed_fields", "find_unrevealed",
           "read_disclosures", "revealed"]

#: The evidence check's fact holding the :class:`Fields` of a receipt with committed fields.
FIELDS_FACT = "fields"
#: Bytes read at once when looking for commitments in an evidence file.
_SCAN_BYTES = 1 << 20
#: Erasure records listed by why they count for nothing (the rest are counted).
_IGNORED_LISTED = 5


@dataclass
class Fields:
    """What check 7 established of a receipt's committed fields."""

    #: (seq, path) -> commitment, for every committed field in the evidence.
    committed: dict[tuple[int, str], str] = field(default_factory=dict)
    #: (seq, path) -> the disclosed value, checked against its commitment.
    disclosed: dict[tuple[int, str], Any] = field(default_factory=dict)
    #: (seq, path) -> the erasure record that counts for it (key_id, erased_at, reason).
    erased: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)
    #: Fields neither disclosed nor erased by a trusted record.
    withheld: list[tuple[int, str]] = field(default_factory=list)
    #: Why erasure records that count for nothing do not count.
    ignored: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """One phrase: how many fields are committed, disclosed, erased (by whom, when, why), withheld."""
        n = len(self.committed)
        parts = [f"{n} field{'' if n == 1 else 's'} committed: {len(self.disclosed)} disclosed and checked"]
        if self.erased:
            groups: dict[tuple[str, str, str], int] = {}
            for r in self.erased.values():
                k = (r["key_id"][:16], r["erased_at"][:10], r["reason"])
                groups[k] = groups.get(k, 0) + 1
            parts.append(f"{len(self.erased)} erased (" + "; ".join(
                f"{n} by key {kid}, {day}, reason {reason!r}" for (kid, day, reason), n in groups.items()) + ")")
        if self.withheld:
            parts.append(f"{len(self.withheld)} WITHHELD (no disclosure and no trusted erasure record: not checked)")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the report's ``fields`` member)."""
        return {
            "committed": len(self.committed),
            "disclosed": len(self.disclosed),
            "erased": [{"seq": s, "path": p, **r} for (s, p), r in sorted(self.erased.items())],
            "withheld": [{"seq": s, "path": p} for s, p in sorted(self.withheld)],
        }


@dataclass(frozen=True)
class Unrevealed:
    """A committed field read without its value: erased by a trusted record, or withheld."""

    seq: int
    path: str
    state: str
    record: dict[str, Any] | None = None

    def describe(self) -> str:
        """``erased (by key K, DATE, reason R)`` or ``withheld (...)``: said, never read as a value."""
        if self.record is not None:
            r = self.record
            return f"erased (by key {r['key_id'][:16]}, {r['erased_at'][:10]}, reason {r['reason']!r})"
        return "withheld (no disclosure and no erasure record by a trusted key)"


def find_unrevealed(value: Any) -> Unrevealed | None:
    """The first committed field read without its value inside ``value``, or None."""
    return next((v for v in leaves(value) if isinstance(v, Unrevealed)), None)


def _may_commit(path: str) -> bool:
    """Cheap look: whether the file at ``path`` holds a commitment tag's bytes anywhere."""
    tag = b'"$aer1:commit"'
    with open_regular(path, what="an evidence file") as f:
        tail = b""
        while True:
            block = f.read(_SCAN_BYTES)
            if not block:
                return False
            if tag in tail + block[: len(tag)] or tag in block:
                return True
            tail = block[-len(tag):]


def committed_fields(view: Mapping[str, Any], path: str) -> dict[tuple[int, str], str]:
    """Every commitment in the evidence, each line re-hashed against its step (the file may have changed)."""
    steps = view["steps"]
    out: dict[tuple[int, str], str] = {}
    if not _may_commit(path):
        return out
    for number, line in evidence_lines(path):
        if number == 1 or not has_commitment(line):
            continue
        seq = number - 1
        if seq > len(steps):
            raise MalformedInput(f"evidence line {number} is for a step the receipt does not have")
        content = _content_of(line, number, seq, steps[seq - 1]["receipt_hash"])
        try:
            found = commitments_in(content)
        except ValueError as e:
            raise MalformedInput(f"step {seq}: {e}") from e
        out.update(((seq, p), d) for p, d in found.items())
    return out


def _content_of(line: bytes, number: int, seq: int, want: str) -> Any:
    """The content of evidence line ``number`` for step ``seq``, hashed again against ``want``.

    A line as our writer makes it embeds the hashed bytes verbatim: those are hashed and read
    as they are. Any other line is parsed strictly and its content hashed by the exact encoder.
    """
    prefix = b'{"seq":%d,"receipt_hash":"%s","content":' % (seq, want.encode())
    if line.startswith(prefix) and line.endswith(b"}\n"):
        raw = line[len(prefix):-2]
        if hash_of_canonical(raw) == want:
            return json.loads(raw)  # the very bytes hashed: check 7 found them exact JSON
    record = parse_evidence_line(line, number)
    if not isinstance(record, dict) or record.get("seq") != seq:
        raise MalformedInput(f"evidence line {number} no longer matches step {seq}")
    try:
        digest = content_hash(record.get("content"))
    except CanonicalizationError as e:
        raise MalformedInput(f"evidence line {number}: {e}") from e
    if digest != want:
        raise MalformedInput(f"evidence line {number} no longer matches step {seq}")
    return record["content"]


def read_disclosures(path: str, workflow_id: Any) -> list[tuple[int, bytes, tuple[int, str, str, Any]]]:
    """Each line of the disclosures file at ``path`` after its header: (line number, line, (seq, salt, path, value))."""
    out: list[tuple[int, bytes, tuple[int, str, str, Any]]] = []
    for number, line in evidence_lines(path):
        record = parse_evidence_line(line, number)
        if number == 1:
            if not isinstance(record, dict) or record.get("type") != DISCLOSURES_TYPE:
                raise MalformedInput(f"{path} is not an aer1 disclosures file (line 1 is not its header)")
            if record.get("workflow_id") != workflow_id:
                raise MalformedInput(f"{path} belongs to another workflow (got {record.get('workflow_id')!r}, "
                                     f"want {workflow_id!r})")
            continue
        d = record.get("disclosure") if isinstance(record, dict) else None
        if not isinstance(record, dict) or set(record) != {"seq", "disclosure"} or type(record["seq"]) is not int \
                or not isinstance(d, list) or len(d) != 3 or type(d[1]) is not str:
            raise MalformedInput(f"disclosures line {number} is not {{seq, disclosure: [salt, path, value]}}")
        if not salt_ok(d[0]):
            raise MalformedInput(f"disclosures line {number}: the salt is not base64url text of at least 128 bits")
        out.append((number, line, (record["seq"], d[0], d[1], d[2])))
    return out


def _records(path: str) -> list[Any]:
    """The erasure records file's lines, parsed (a line that does not parse is kept as None: it counts for nothing)."""
    out: list[Any] = []
    for number, line in evidence_lines(path):
        try:
            out.append(parse_evidence_line(line, number))
        except MalformedInput:
            out.append(None)
    return out


def check_commitments(view: Mapping[str, Any], evidence: str, result: CheckResult,
                      trusted_key_ids: Iterable[str] | None, report: Report) -> None:
    """Check the committed fields of a receipt whose evidence passed; a receipt with none is left as it is."""
    disclosures_file = disclosures_path_for(evidence)
    try:
        committed = committed_fields(view, evidence)
        disclosures = (read_disclosures(disclosures_file, view.get("workflow_id"))
                       if os.path.lexists(disclosures_file) else [])
    except MalformedInput as e:
        result.fail(f"committed fields: {e}")
        return
    except OSError as e:
        result.fail(f"committed fields: cannot read {e.filename or disclosures_file}: {e.strerror or e}")
        return
    if not committed and not disclosures:
        return
    fields = Fields(committed)
    for _, _, (seq, salt, where, value) in disclosures:
        want = committed.get((seq, where))
        if want is None:
            result.fail(f"the disclosures file discloses {where}, a field the step never committed", seq=seq)
            continue
        if (seq, where) in fields.disclosed:
            result.fail(f"the disclosures file discloses {where} twice", seq=seq)
            continue
        try:
            got = commitment(salt, where, value)
        except CanonicalizationError as e:
            result.fail(f"disclosure of {where} has no exact JSON form: {e}", seq=seq)
            continue
        if got != want:
            result.fail(f"disclosure of {where} does not match its commitment", seq=seq, expected=want, actual=got)
            continue
        fields.disclosed[(seq, where)] = value
    if result.status == FAIL:
        return
    missing = {k: v for k, v in committed.items() if k not in fields.disclosed}
    records_file = erasures_path_for(evidence)
    if missing and os.path.lexists(records_file):
        from .._erasure import record_problem  # only for a receipt with erased fields

        trusted = None if trusted_key_ids is None else frozenset(trusted_key_ids)
        try:
            records = _records(records_file)
        except (MalformedInput, OSError) as e:
            fields.ignored.append(f"erasure records unreadable: {e}")
            records = []
        for record in records:
            why, kid = record_problem(record, view, missing, trusted)
            if why is not None:
                fields.ignored.append(why)
                continue
            key = (record["seq"], record["path"])
            fields.erased.setdefault(key, {"key_id": kid, "erased_at": record["erased_at"],
                                           "reason": record["reason"]})
    fields.withheld = sorted(k for k in missing if k not in fields.erased)
    if fields.ignored:
        shown = "; ".join(fields.ignored[:_IGNORED_LISTED])
        more = f" (and {len(fields.ignored) - _IGNORED_LISTED} more)" if len(fields.ignored) > _IGNORED_LISTED else ""
        report.notes.append(f"{len(fields.ignored)} erasure record(s) count for nothing: {shown}{more}")
    result.facts[FIELDS_FACT] = fields
    result.detail = f"{result.detail}; {fields.summary()}"


def revealed(content: Any, seq: int, fields: Fields | None) -> Any:
    """``content`` with its committed fields as disclosed; an erased or withheld one as an :class:`Unrevealed`."""
    if fields is None or not fields.committed:
        return content

    def found(where: str) -> Any:
        key = (seq, where)
        if key in fields.disclosed:
            return fields.disclosed[key]
        record = fields.erased.get(key)
        return Unrevealed(seq, where, "erased" if record is not None else "withheld", record)

    return reveal(content, found)
