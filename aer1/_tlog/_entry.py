"""The log entry of a receipt (spec/log.md): what identifies it and what binds it, as text.

An entry is ASCII lines, each ending in a newline, in a fixed order; nothing else is
allowed (a parser rebuilds the bytes and must get the same). Two kinds:

    aer1-log-entry/v1            aer1-log-entry/v1
    closed                       opened
    workflow_id <uuid>           workflow_id <uuid>
    receipt_id <uuid>            receipt_id <uuid>
    status <ok|error|incomplete> started_at <time>
    merkle_root <hex64>
    chain_head <hex64>
    signer <hex64 key id | none>
    started_at <time>
    ended_at <time>

A "closed" entry is a finished receipt (its first step's ``started_at``, its last step's
``ended_at``); an "opened" entry says a run with those ids started, and is closed by a
"closed" entry with the same ids (from finalize or from recovery).

API:
    ENTRY_HEADER, OPENED, CLOSED, MAX_LOG_ENTRY_BYTES
    LogEntry(kind, workflow_id, receipt_id, started_at, status=None, merkle_root=None,
             chain_head=None, signer=None, ended_at=None)    .encode() -> bytes; .ids
    entry_for_receipt(receipt) -> LogEntry         the "closed" entry of a parsed receipt (LogMalformed if
                                                   it lacks what an entry binds)
    receipt_entry_bytes(receipt) -> bytes          the same entry's bytes, checked once
    opened_entry(workflow_id, receipt_id, started_at) -> LogEntry
    parse_entry(data) -> LogEntry                  LogMalformed unless canonical entry bytes
    IDS_BYTES                                      the length of b"<workflow_id>/<receipt_id>"
    entry_ids(data) -> (kind, b"<workflow_id>/<receipt_id>", started_at)   what the completeness walk reads of an
                                                   entry, without a LogEntry (LogMalformed as parse_entry)
    canonical_ids(data) -> b"<workflow_id>/<receipt_id>"   the same of an entry known canonical (one
                                                   receipt_entry_bytes made), read at fixed places

The walk reads every entry of a log and the verifier computes every receipt's entry, so both
have a fast path: one regular expression over the whole entry, spelled from the same member
patterns, that matches exactly the canonical bytes (each member line once, in order, every
value as its pattern wants). What it does not match goes the member-by-member way, which
says what is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._receipt import HEX64_PATTERN, TIMESTAMP_PATTERN, UUID_PATTERN, WORKFLOW_STATUSES, is_hex64, is_uuid
from .._timefmt import is_step_time_form
from ..errors import LogMalformed
from ._note import check_length, decode_text

__all__ = [
    "CLOSED",
    "ENTRY_HEADER",
    "IDS_BYTES",
    "MAX_LOG_ENTRY_BYTES",
    "OPENED",
    "LogEntry",
    "canonical_ids",
    "entry_for_receipt",
    "entry_ids",
    "opened_entry",
    "parse_entry",
    "receipt_entry_bytes",
]

ENTRY_HEADER = "aer1-log-entry/v1"
OPENED = "opened"
CLOSED = "closed"
#: Longest entry bytes read (ours are under 500 bytes).
MAX_LOG_ENTRY_BYTES = 4096
_NO_SIGNER = "none"
_UUID_CHARS = 36
#: ``b"<workflow_id>/<receipt_id>"``'s length.
IDS_BYTES = 2 * _UUID_CHARS + 1
#: Where the ids lie in a canonical entry of either kind (the two kind names are as long).
_WF = len(f"{ENTRY_HEADER}\n{CLOSED}\nworkflow_id ")
_RID = _WF + _UUID_CHARS + len("\nreceipt_id ")
_STATUS = "(?:" + "|".join(re.escape(s) for s in WORKFLOW_STATUSES) + ")"
#: The member lines of a closed entry (``signer``: a key id or ``none``) and of an opened one.
_IDS_LINES = f"workflow_id (?P<wf>{UUID_PATTERN})\nreceipt_id (?P<rid>{UUID_PATTERN})\n"
_CLOSED_LINES = (f"{_IDS_LINES}status {_STATUS}\n"
                 f"merkle_root {HEX64_PATTERN}\nchain_head {HEX64_PATTERN}\nsigner (?:{HEX64_PATTERN}|{_NO_SIGNER})\n"
                 f"started_at (?P<started>{TIMESTAMP_PATTERN})\nended_at {TIMESTAMP_PATTERN}\n")
_OPENED_LINES = f"{_IDS_LINES}started_at (?P<started>{TIMESTAMP_PATTERN})\n"
#: Exactly the canonical bytes of a closed entry, as text (a receipt's) and as bytes (a log's).
_CLOSED_TEXT = re.compile(f"{re.escape(ENTRY_HEADER)}\n{CLOSED}\n{_CLOSED_LINES}")
_CLOSED_BYTES = re.compile(_CLOSED_TEXT.pattern.encode("ascii"))
_OPENED_BYTES = re.compile(f"{re.escape(ENTRY_HEADER)}\n{OPENED}\n{_OPENED_LINES}".encode("ascii"))


@dataclass(frozen=True)
class LogEntry:
    """One entry: a run opened, or a receipt closed (with what binds it)."""

    kind: str
    workflow_id: str
    receipt_id: str
    started_at: str
    status: str | None = None
    merkle_root: str | None = None
    chain_head: str | None = None
    signer: str | None = None
    ended_at: str | None = None

    @property
    def ids(self) -> tuple[str, str]:
        """(workflow_id, receipt_id): what an opened and a closed entry share."""
        return self.workflow_id, self.receipt_id

    def _lines(self) -> list[tuple[str, str | None]]:
        if self.kind == OPENED:
            return [("workflow_id", self.workflow_id), ("receipt_id", self.receipt_id),
                    ("started_at", self.started_at)]
        return [("workflow_id", self.workflow_id), ("receipt_id", self.receipt_id), ("status", self.status),
                ("merkle_root", self.merkle_root), ("chain_head", self.chain_head),
                ("signer", self.signer if self.signer is not None else _NO_SIGNER),
                ("started_at", self.started_at), ("ended_at", self.ended_at)]

    def encode(self) -> bytes:
        """The entry's bytes; refuses values an entry cannot hold."""
        self._check()
        return self._bytes()

    def _bytes(self) -> bytes:
        return (f"{ENTRY_HEADER}\n{self.kind}\n" + "".join(f"{k} {v}\n" for k, v in self._lines())).encode("ascii")

    def _check(self) -> None:
        if self.kind not in (OPENED, CLOSED):
            raise LogMalformed(f"log entry kind: got {self.kind!r}, want {OPENED!r} or {CLOSED!r}")
        _want(is_uuid, self.workflow_id, "workflow_id", "a lowercase UUID")
        _want(is_uuid, self.receipt_id, "receipt_id", "a lowercase UUID")
        _want(is_step_time_form, self.started_at, "started_at", "YYYY-MM-DDTHH:MM:SS.ffffffZ")
        extra = (self.status, self.merkle_root, self.chain_head, self.signer, self.ended_at)
        if self.kind == OPENED:
            if any(v is not None for v in extra):
                raise LogMalformed("an opened log entry carries only workflow_id, receipt_id and started_at")
            return
        if self.status not in WORKFLOW_STATUSES:
            want = ", ".join(WORKFLOW_STATUSES)
            raise LogMalformed(f"log entry status: got {_short(self.status)}, want one of {want}")
        _want(is_hex64, self.merkle_root, "merkle_root", "64 lowercase hex digits")
        _want(is_hex64, self.chain_head, "chain_head", "64 lowercase hex digits")
        if self.signer is not None:
            _want(is_hex64, self.signer, "signer", "a 64-hex key id")
        _want(is_step_time_form, self.ended_at, "ended_at", "YYYY-MM-DDTHH:MM:SS.ffffffZ")


def _short(value: Any) -> str:
    return repr(value)[:80]


def _want(form: Callable[[Any], bool], value: Any, what: str, want: str) -> None:
    if not form(value):
        raise LogMalformed(f"log entry {what}: got {_short(value)}, want {want}")


def opened_entry(workflow_id: str, receipt_id: str, started_at: str) -> LogEntry:
    """The entry that says a run with these ids started at ``started_at``."""
    entry = LogEntry(OPENED, workflow_id, receipt_id, started_at)
    entry._check()
    return entry


def receipt_entry_bytes(receipt: Mapping[str, Any]) -> bytes:
    """``entry_for_receipt(receipt).encode()``, its values checked once (the verifier's per-receipt path)."""
    fast = _closed_text(receipt)
    return fast if fast is not None else entry_for_receipt(receipt)._bytes()


def _closed_text(receipt: Any) -> bytes | None:
    """The closed entry's bytes when every value is a string its pattern matches; None: see entry_for_receipt.

    The text has ten lines whatever the values; a value holding a newline adds one, and then
    the expression (ten lines, no newline in any member pattern) cannot match."""
    if type(receipt) is not dict:
        return None
    steps = receipt.get("steps")
    if type(steps) is not list or not steps or type(steps[0]) is not dict or type(steps[-1]) is not dict:
        return None
    sig = receipt.get("signature")
    if sig is None:
        signer = _NO_SIGNER
    elif type(sig) is dict and type(sig.get("key_id")) is str and sig["key_id"] != _NO_SIGNER:
        signer = sig["key_id"]
    else:
        return None
    values = (receipt.get("workflow_id"), receipt.get("receipt_id"), receipt.get("status"),
              receipt.get("merkle_root"), receipt.get("chain_head"), steps[0].get("started_at"),
              steps[-1].get("ended_at"))
    if not all(type(v) is str for v in values):
        return None
    wf, rid, status, root, head, started, ended = values
    text = (f"{ENTRY_HEADER}\n{CLOSED}\nworkflow_id {wf}\nreceipt_id {rid}\nstatus {status}\nmerkle_root {root}\n"
            f"chain_head {head}\nsigner {signer}\nstarted_at {started}\nended_at {ended}\n")
    return text.encode("ascii") if _CLOSED_TEXT.fullmatch(text) else None


def entry_for_receipt(receipt: Mapping[str, Any]) -> LogEntry:
    """The "closed" entry of a parsed receipt.

    The receipt must carry what an entry binds: ids, status, merkle_root, chain_head (a
    receipt of the aer1-chain-v1 profile) and steps with times; a signature's key id, if
    signed. Nothing here checks the receipt itself: that is the verifier's job.
    """
    if not isinstance(receipt, Mapping):
        raise LogMalformed("log entry: the receipt is not a JSON object")
    steps = receipt.get("steps")
    if not isinstance(steps, list) or not steps or not isinstance(steps[0], Mapping) or not isinstance(
            steps[-1], Mapping):
        raise LogMalformed("log entry: the receipt has no steps")
    sig = receipt.get("signature")
    signer = sig.get("key_id") if isinstance(sig, Mapping) else None
    if sig is not None and not isinstance(signer, str):
        raise LogMalformed("log entry: the receipt's signature has no key_id")
    entry = LogEntry(CLOSED, receipt.get("workflow_id"), receipt.get("receipt_id"),  # type: ignore[arg-type]
                     steps[0].get("started_at"), receipt.get("status"), receipt.get("merkle_root"),  # type: ignore[arg-type]
                     receipt.get("chain_head"), signer, steps[-1].get("ended_at"))
    entry._check()
    return entry


def parse_entry(data: bytes) -> LogEntry:
    """The entry in ``data``: exactly the bytes :meth:`LogEntry.encode` gives for it."""
    check_length(data, MAX_LOG_ENTRY_BYTES, "log entry")
    text = decode_text(data, "log entry", ascii_only=True)
    lines = text.split("\n")
    if len(lines) < 3 or lines[0] != ENTRY_HEADER or lines[-1] != "":
        raise LogMalformed(f"log entry: want {ENTRY_HEADER!r}, a kind, then member lines, each ending in a newline")
    kind = lines[1]
    values: dict[str, str] = {}
    for line in lines[2:-1]:
        key, sep, value = line.partition(" ")
        if not sep or key in values:
            raise LogMalformed(f"log entry: line {_short(line)}: want one 'name value' line per member")
        values[key] = value
    if kind == OPENED:
        entry = LogEntry(OPENED, values.get("workflow_id", ""), values.get("receipt_id", ""),
                         values.get("started_at", ""))
    elif kind == CLOSED:
        signer = values.get("signer")
        entry = LogEntry(CLOSED, values.get("workflow_id", ""), values.get("receipt_id", ""),
                         values.get("started_at", ""), values.get("status"), values.get("merkle_root"),
                         values.get("chain_head"), None if signer == _NO_SIGNER else signer, values.get("ended_at"))
    else:
        raise LogMalformed(f"log entry kind: got {_short(kind)}, want {OPENED!r} or {CLOSED!r}")
    if entry.encode() != data:
        raise LogMalformed("log entry: not in canonical form (members missing, extra or out of order)")
    return entry


def entry_ids(data: bytes) -> tuple[str, bytes, bytes]:
    """(kind, ``b"<workflow_id>/<receipt_id>"``, ``started_at``) of the entry in ``data``; LogMalformed as
    :func:`parse_entry`."""
    m = _CLOSED_BYTES.fullmatch(data)
    if m is not None:
        return CLOSED, m["wf"] + b"/" + m["rid"], m["started"]
    m = _OPENED_BYTES.fullmatch(data)
    if m is not None:
        return OPENED, m["wf"] + b"/" + m["rid"], m["started"]
    entry = parse_entry(data)
    return entry.kind, f"{entry.workflow_id}/{entry.receipt_id}".encode("ascii"), entry.started_at.encode("ascii")


def canonical_ids(data: bytes) -> bytes:
    """``entry_ids(data)[1]`` of an entry known canonical (one :func:`receipt_entry_bytes` made)."""
    return data[_WF : _WF + _UUID_CHARS] + b"/" + data[_RID : _RID + _UUID_CHARS]
