"""Erasure records: a signed statement that one committed field's disclosure was deleted, and why.

A record names the receipt (``workflow_id``, ``receipt_id``, ``chain_head``), the step
(``seq``), the field (``path``) and its ``commitment``, when (``erased_at``), why
(``reason``), and is signed with Ed25519 as receipts are (``signature``, over its other
members, under its own payload type). A verifier counts a record only when it is signed by a
trusted key, names this receipt, and names a commitment the step holds at that path, for a
disclosure that is missing; any other record counts for nothing (spec/erasure.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._canonical import CanonicalizationError
from ._limits import MAX_ERASURE_REASON_CHARS
from ._signing import SignatureInvalid, SignatureMalformed, sign_receipt, verify_signature
from ._timefmt import is_step_time_form

__all__ = [
    "ERASURE_MEMBERS",
    "ERASURE_PAYLOAD_TYPE",
    "ERASURE_TYPE",
    "ERASURE_VERSION",
    "binding_of",
    "erasure_record",
    "record_problem",
]

ERASURE_TYPE = "aer1-erasure"
ERASURE_VERSION = "1"
#: The payload type an erasure record's signature is over (receipts sign under their own).
ERASURE_PAYLOAD_TYPE = b"application/vnd.aer1.erasure-record+json"
#: The members of an erasure record, in the order they are written.
ERASURE_MEMBERS = ("type", "version", "workflow_id", "receipt_id", "chain_head", "seq", "path", "commitment",
                   "erased_at", "reason", "signature")
#: The receipt members a record is bound to.
_BINDING = ("workflow_id", "receipt_id", "chain_head")
_MEMBER_SET = frozenset(ERASURE_MEMBERS)


def binding_of(receipt: Mapping[str, Any]) -> dict[str, Any]:
    """The members of ``receipt`` an erasure record names it by."""
    return {k: receipt.get(k) for k in _BINDING}


def erasure_record(receipt: Mapping[str, Any], seq: int, path: str, commitment: str, reason: str,
                   key: Any, erased_at: str) -> dict[str, Any]:
    """A signed erasure record for field ``path`` of step ``seq`` of ``receipt`` (``key``: an Ed25519 private key)."""
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError("an erasure needs a reason (the request it answers)")
    if len(reason) > MAX_ERASURE_REASON_CHARS:
        raise ValueError(f"reason is {len(reason)} characters long, over the {MAX_ERASURE_REASON_CHARS} limit")
    record: dict[str, Any] = {"type": ERASURE_TYPE, "version": ERASURE_VERSION, **binding_of(receipt), "seq": seq,
                              "path": path, "commitment": commitment, "erased_at": erased_at, "reason": reason}
    record["signature"] = sign_receipt(record, key, ERASURE_PAYLOAD_TYPE)
    return record


def record_problem(record: Any, receipt: Mapping[str, Any], committed: Mapping[tuple[int, str], str],
                   trusted: frozenset[str] | None) -> tuple[str | None, str | None]:
    """(why ``record`` counts for nothing, or None when it counts; its key id when its signature verifies).

    ``committed``: (seq, path) -> commitment for each field of the receipt's steps whose
    disclosure is missing; ``trusted``: the key ids whose erasures count (None: no key is).
    """
    if not isinstance(record, dict) or set(record) != _MEMBER_SET:
        return "not an erasure record (members)", None
    if record["type"] != ERASURE_TYPE or record["version"] != ERASURE_VERSION:
        return "not an erasure record of this version", None
    reason, seq = record["reason"], record["seq"]
    if type(reason) is not str or len(reason) > MAX_ERASURE_REASON_CHARS or type(seq) is not int \
            or type(record["path"]) is not str or type(record["commitment"]) is not str \
            or not is_step_time_form(record["erased_at"]):
        return "malformed member", None
    try:
        kid = verify_signature(record, payload_type=ERASURE_PAYLOAD_TYPE)
    except (SignatureMalformed, SignatureInvalid, CanonicalizationError) as e:
        return f"signature: {e}", None
    if trusted is None or kid not in trusted:
        return f"signed by key {kid}, which is not trusted", kid
    for k, want in binding_of(receipt).items():
        if record[k] != want:
            return f"for another receipt ({k} differs)", kid
    want = committed.get((seq, record["path"]))
    if want is None:
        return f"step {seq} has no withheld field {record['path']}", kid
    if record["commitment"] != want:
        return f"step {seq}'s field {record['path']} has another commitment", kid
    return None, kid
