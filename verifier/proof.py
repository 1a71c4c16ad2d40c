"""Verify a one-step inclusion proof against a Merkle root."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from typing import Any

from ..canonical import CanonicalizationError, canonical_bytes
from ..chain import step_digest, uuid8_from_digest
from ..merkle import RootMismatchError, leaf_receipt_id, verify_inclusion
from ..proof import PROOF_TYPE
from ._parse import MalformedInput, check_json_value, parse_strict, read_limited
from ._report import CheckResult, Report

__all__ = ["PROOF_CHECKS", "verify_proof"]

PROOF_CHECKS = ((1, "parse"), (2, "members"), (3, "step_id"), (4, "inclusion"), (5, "content"), (6, "expected"))
_HEX64 = re.compile(r"[0-9a-f]{64}")
#: Most hashes an audit path may hold (a tree of 2**64 leaves needs 64).
MAX_PATH_LEN = 64


def _members(doc: Any, r: CheckResult) -> bool:
    if not isinstance(doc, dict) or doc.get("type") != PROOF_TYPE:
        r.fail(f"not an inclusion proof (type is not {PROOF_TYPE!r})")
        return False
    size, index, path = doc.get("tree_size"), doc.get("leaf_index"), doc.get("audit_path")
    if type(size) is not int or size < 1:
        r.fail("tree_size is not a positive integer", actual=repr(size))
    if type(index) is not int or index < 0:
        r.fail("leaf_index is not a non-negative integer", actual=repr(index))
    elif type(size) is int and index >= size:
        r.fail("leaf_index is not below tree_size", expected=f"< {size}", actual=index)
    if not isinstance(path, list) or len(path) > MAX_PATH_LEN or not all(
        isinstance(h, str) and _HEX64.fullmatch(h) for h in path
    ):
        r.fail(f"audit_path is not a list of at most {MAX_PATH_LEN} 64-char lowercase hex hashes")
    root = doc.get("merkle_root")
    if not isinstance(root, str) or not _HEX64.fullmatch(root):
        r.fail("merkle_root is not 64 lowercase hex characters")
    if doc.get("merkle_version") != "receipt-id-v0":
        r.fail("merkle_version", expected="receipt-id-v0", actual=repr(doc.get("merkle_version")))
    step = doc.get("step")
    if not isinstance(step, dict) or not isinstance(step.get("receipt_id"), str) or type(step.get("seq")) is not int:
        r.fail("step is not an object with seq and receipt_id")
    elif type(index) is int and step["seq"] != index + 1:
        r.fail("step seq does not match leaf_index + 1", expected=(index or 0) + 1, actual=step["seq"])
    r.passed(f"proof for step {doc.get('leaf_index', 0) + 1 if type(index) is int else '?'} of {size}")
    return r.status != "FAIL"


def verify_proof(
    proof: Mapping[str, Any] | str | os.PathLike[str], *, expected_root: str | None = None
) -> Report:
    """Check a proof: the step id derives from the step, the path leads to the root."""
    checks = [CheckResult(n, name) for n, name in PROOF_CHECKS]
    c_parse, c_members, c_id, c_incl, c_content, c_expected = checks
    report = Report(None, checks, kind="proof")
    if isinstance(proof, (str, os.PathLike)):
        report.source = os.fspath(proof)
        try:
            doc: Any = parse_strict(read_limited(report.source), what=report.source)
        except MalformedInput as e:
            c_parse.fail(str(e))
            for c in checks[1:]:
                c.skip("the input could not be parsed")
            return report
    else:
        doc = proof
        try:
            check_json_value(doc)
        except MalformedInput as e:
            c_parse.fail(str(e))
            for c in checks[1:]:
                c.skip("the input is not JSON data")
            return report
    c_parse.passed("strict JSON")
    if not _members(doc, c_members):
        for c in checks[2:]:
            c.skip("members check failed")
        return report
    report.workflow_id = doc.get("workflow_id") if isinstance(doc.get("workflow_id"), str) else None
    step = doc["step"]
    seq = step["seq"]
    if "prev_digest" in step:
        try:
            rid = uuid8_from_digest(step_digest(step))
        except CanonicalizationError as e:
            c_id.fail(f"step cannot be canonicalized: {e}", seq=seq)
            rid = None
        if rid is not None and rid != step["receipt_id"]:
            c_id.fail("receipt_id is not derived from the step's digest (a member was changed)", seq=seq,
                      expected=rid, actual=step["receipt_id"])
        c_id.passed("receipt_id derives from every member of the step")
    else:
        c_id.skip("step carries no prev_digest: its id is not derived from its members")
    try:
        verify_inclusion(
            leaf_receipt_id(step["receipt_id"]),
            doc["leaf_index"],
            doc["tree_size"],
            [bytes.fromhex(h) for h in doc["audit_path"]],
            bytes.fromhex(doc["merkle_root"]),
        )
        c_incl.passed(f"audit path of {len(doc['audit_path'])} hashes leads to merkle_root")
    except RootMismatchError as e:
        c_incl.fail("audit path does not lead to merkle_root", seq=seq, expected=e.expected.hex(),
                    actual=e.computed.hex())
    except ValueError as e:
        c_incl.fail(f"audit path does not fit the tree: {e}", seq=seq)
    if "content" in doc:
        try:
            got = hashlib.sha256(canonical_bytes(doc["content"])).hexdigest()
        except CanonicalizationError as e:
            c_content.fail(f"content cannot be canonicalized: {e}", seq=seq)
        else:
            if got != step.get("receipt_hash"):
                c_content.fail("content does not hash to the step's receipt_hash", seq=seq,
                               expected=step.get("receipt_hash"), actual=got)
            c_content.passed("content hashes to receipt_hash")
    else:
        c_content.skip("the proof carries no content")
    if expected_root is None:
        c_expected.skip("no --expected-root given: the root is only the proof's own claim")
        report.notes.append("compare merkle_root with a value kept elsewhere (--expected-root) to trust it")
    elif expected_root.lower() != doc["merkle_root"]:
        c_expected.fail("merkle_root differs from the expected root", expected=expected_root.lower(),
                        actual=doc["merkle_root"])
    else:
        c_expected.passed("merkle_root matches the expected root")
    return report
