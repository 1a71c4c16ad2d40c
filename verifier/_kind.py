"""What a JSON document is: a receipt, one of aer1's other files, or nothing the verifier reads.

One rule for every path (file, standard input, folder, parsed data, streamed and cut files):
a document is a receipt when it is a JSON object whose ``type`` is the AER-1 receipt type.
Anything else is not a receipt: check 1 fails, the verdict is MALFORMED and the exit code
2, never INVALID (1), which is kept for receipts that fail a check (spec/verifier.md).
A folder run also tells aer1's own files (a keyring, a signed summary, a verdict report,
an anchor proof) from unknown documents, by their own format member and shape, never by
name: they are listed as "not a receipt, skipped" and counted apart.
"""

from __future__ import annotations

from typing import Any

from .._receipt import PROOF_TYPE, WORKFLOW_TYPE
from ._report import Report

__all__ = ["NOT_A_RECEIPT", "SUMMARY_MEMBERS", "SUMMARY_TYPE", "SUMMARY_VERSION", "not_a_receipt", "own_file",
           "refuse_unless_receipt"]

#: Every reason a document is refused as not a receipt starts with this.
NOT_A_RECEIPT = "not a receipt"
#: The ``type`` of a signed verification summary (``aer1-verify --attest``) and its members.
SUMMARY_TYPE = "aer1-verification-summary"
SUMMARY_VERSION = "1"
SUMMARY_MEMBERS = frozenset({"type", "version", "verifier", "verified_at", "policy", "options", "verdict", "summary",
                             "receipts", "signature"})
#: The ``schema`` of ``aer1-verify --json`` output, and the ``format`` of a compat anchor proof.
_VERDICT_SCHEMA = "aer1-verdict-v1"
_ANCHOR_FORMAT = "aer1-anchor-proof/1"
_KEYRING_TYPE = "aer1-keyring"  # aer1._keyring.KEYRING_TYPE, named here so a receipt run does not load it
_SHOWN = 60


def _json_kind(doc: Any) -> str:
    if isinstance(doc, bool) or doc is None:
        return "a JSON literal"
    if isinstance(doc, dict):
        return "a JSON object"
    if isinstance(doc, list):
        return "a JSON array"
    return "a JSON string" if isinstance(doc, str) else "a JSON number"


def own_file(doc: Any) -> str | None:
    """What aer1 file ``doc`` is, when it is one of ours other than a receipt; else None.

    Each is recognized by its format member and checked for its shape, so a receipt whose
    ``type`` was edited is not taken for one (it is an unknown document, and MALFORMED).
    """
    if not isinstance(doc, dict):
        return None
    kind = doc.get("type")
    if kind == _KEYRING_TYPE:
        from .._keyring import KeyringError, parse_keyring  # only for a keyring met in a folder

        try:
            parse_keyring(doc)
        except KeyringError:
            return None
        return "an aer1 keyring (aer1 keygen)"
    if kind == SUMMARY_TYPE and doc.get("version") == SUMMARY_VERSION and set(doc) == SUMMARY_MEMBERS:
        return "a signed verification summary (aer1-verify --attest; check it with --summary)"
    if "type" in doc or "steps" in doc:
        return None
    if doc.get("schema") == _VERDICT_SCHEMA and "verdict" in doc:
        return "an aer1-verify --json report"
    if doc.get("format") == _ANCHOR_FORMAT and "backends" in doc:
        return "an anchor proof (aer1.collectors.verify_anchor)"
    return None


def not_a_receipt(doc: Any) -> str | None:
    """Why ``doc`` is not a receipt (the reason check 1 gives), or None when it is one."""
    if not isinstance(doc, dict):
        return f"{NOT_A_RECEIPT}: {_json_kind(doc)}, not an object"
    kind = doc.get("type", None)
    if kind == WORKFLOW_TYPE:
        return None
    what = own_file(doc)
    if what is None and kind == PROOF_TYPE:
        what = "an inclusion proof (verify it with --proof, or name it NAME.proof.json)"
    if what is None:
        what = ("a JSON object with no type member" if "type" not in doc
                else f"a JSON object of type {str(kind)[:_SHOWN]!r}")
    return f"{NOT_A_RECEIPT}: {what}; a receipt is a JSON object of type {WORKFLOW_TYPE!r}"


def refuse_unless_receipt(report: Report, doc: Any) -> bool:
    """Fail check 1 of ``report`` when ``doc`` is not a receipt (the rest NOT CHECKED); True when refused."""
    why = not_a_receipt(doc)
    if why is None:
        return False
    c_parse = report.checks[0]
    c_parse.detail = ""  # the parse itself held: the reason replaces its detail
    c_parse.fail(why)
    own = own_file(doc)
    if own is not None:
        c_parse.facts["own_file"] = own  # a folder run lists it as skipped
    for c in report.checks[1:]:
        c.skip("not a receipt")
    return True
