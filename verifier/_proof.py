"""Verify a one-step inclusion proof: a step, bound to its content, in a tree the auditor pins.

A proof is VALID only when all of these hold: the step's ``receipt_id`` derives from its
own members (an aer1-chain-v1 step); the close step at the last index, with ``seq`` equal
to ``tree_size``, fixes the number of steps (so no index past the real tree, reached
through a duplicated odd node, is accepted); both audit paths lead exactly to
``merkle_root``; embedded content hashes to ``receipt_hash``; and the root is pinned by
something the auditor trusts: ``--expected-root``, or a receipt that verifies, is signed
by a trusted key and has that root.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from .._canonical import CanonicalizationError
from .._chain import genesis_digest, is_derived_id, step_digest, uuid8_from_digest
from .._content_hash import content_hash
from .._member_rules import PROFILE_STRIPPED
from .._merkle import RootMismatchError, leaf_receipt_id, verify_inclusion
from .._receipt import (
    CLOSE_AGENT,
    CLOSE_KIND,
    MERKLE_VERSION,
    PROOF_MEMBERS,
    PROOF_TYPE,
    PROOF_VERSION,
    is_hex64,
    is_uuid,
)
from ._checks import check_step
from ._parse import MalformedInput, check_json_value, parse_strict, read_limited
from ._report import FAIL, PASS, CheckResult, Report

__all__ = ["MAX_PATH_LEN", "PROOF_CHECKS", "verify_proof"]

PROOF_CHECKS = (
    (1, "parse"),
    (2, "members"),
    (3, "step_id"),
    (4, "tree_size"),
    (5, "inclusion"),
    (6, "content"),
    (7, "root_pinned"),
)
#: Most hashes an audit path may hold (a tree of 2**64 leaves needs 64).
MAX_PATH_LEN = 64


def _path_ok(path: Any) -> bool:
    return isinstance(path, list) and len(path) <= MAX_PATH_LEN and all(
        is_hex64(h) for h in path
    )


def _members(doc: Any, r: CheckResult) -> bool:
    if not isinstance(doc, dict) or doc.get("type") != PROOF_TYPE:
        r.fail(f"not an inclusion proof (type is not {PROOF_TYPE!r})")
        return False
    unknown = sorted(set(doc) - PROOF_MEMBERS)
    if unknown:
        r.fail(f"members outside the proof format: {', '.join(unknown)}")
    if doc.get("version") != PROOF_VERSION:
        r.fail("version", expected=PROOF_VERSION, actual=repr(doc.get("version")))
    wid = doc.get("workflow_id")
    if not is_uuid(wid):
        r.fail("workflow_id is not a lowercase UUID", actual=repr(wid))
    size, index = doc.get("tree_size"), doc.get("leaf_index")
    if type(size) is not int or not 1 <= size <= 2**MAX_PATH_LEN:
        r.fail("tree_size is not a positive integer", actual=repr(size))
    if type(index) is not int or index < 0:
        r.fail("leaf_index is not a non-negative integer", actual=repr(index))
    elif type(size) is int and index >= size:
        r.fail("leaf_index is not below tree_size", expected=f"< {size}", actual=index)
    if not _path_ok(doc.get("audit_path")):
        r.fail(f"audit_path is not a list of at most {MAX_PATH_LEN} 64-char lowercase hex hashes")
    root = doc.get("merkle_root")
    if not is_hex64(root):
        r.fail("merkle_root is not 64 lowercase hex characters")
    if doc.get("merkle_version") != MERKLE_VERSION:
        r.fail("merkle_version", expected=MERKLE_VERSION, actual=repr(doc.get("merkle_version")))
    if r.status == FAIL:
        return False
    size, index = doc["tree_size"], doc["leaf_index"]
    step: Any = doc.get("step")
    if not check_step(step, index, isinstance(step, dict) and "prev_digest" in step, r):
        return False
    if step["seq"] != index + 1:
        r.fail("step seq does not match leaf_index + 1", seq=step["seq"], expected=index + 1, actual=step["seq"])
    last = index == size - 1
    close: Any = doc.get("close")
    if last:
        if "close" in doc:
            r.fail("close is given, but the proved step is the last one (it must be the close step itself)")
    elif not isinstance(close, dict) or set(close) != {"step", "audit_path"} or not _path_ok(close["audit_path"]):
        r.fail("close is not {step, audit_path}: the close step and its path are needed to fix the tree size")
    elif check_step(close["step"], size - 1, isinstance(close["step"], dict) and "prev_digest" in close["step"], r):
        if close["step"]["seq"] != size:
            r.fail("close step seq is not tree_size", seq=close["step"]["seq"], expected=size,
                   actual=close["step"]["seq"])
    r.passed(f"proof for step {index + 1} of {size}")
    return r.status != FAIL


def _derived(step: Mapping[str, Any], r: CheckResult) -> str | None:
    """The step's digest (hex) when its receipt_id derives from its members; else a failure."""
    seq = step["seq"]
    if "prev_digest" not in step:
        why = PROFILE_STRIPPED if is_derived_id(step["receipt_id"]) else (
            "step carries no prev_digest: its id is not derived from its members, so nothing binds its "
            "content (proofs are for aer1-chain-v1 steps)")
        r.fail(why, seq=seq)
        return None
    try:
        digest = step_digest(step)
    except CanonicalizationError as e:
        r.fail(f"step cannot be canonicalized: {e}", seq=seq)
        return None
    rid = uuid8_from_digest(digest)
    if rid != step["receipt_id"]:
        r.fail("receipt_id is not derived from the step's digest (a member was changed)", seq=seq,
               expected=rid, actual=step["receipt_id"])
        return None
    return str(digest.hex())


def _check_ids(doc: Mapping[str, Any], r: CheckResult) -> None:
    step, close = doc["step"], doc.get("close")
    digest = _derived(step, r)
    if digest is not None and step["seq"] == 1 and step["prev_digest"] != genesis_digest(doc["workflow_id"]):
        r.fail("step 1's prev_digest is not the genesis digest of workflow_id", seq=1,
               expected=genesis_digest(doc["workflow_id"]), actual=step["prev_digest"])
    if close is not None:
        close_digest = _derived(close["step"], r)
        last = close["step"]
        if digest is not None and close_digest is not None and last["seq"] == step["seq"] + 1 \
                and last["prev_digest"] != digest:
            r.fail("close step's prev_digest does not link to the proved step", seq=last["seq"],
                   expected=digest, actual=last["prev_digest"])
    r.passed("receipt_id derives from every member of the step" + (" and of the close step" if close else ""))


def _check_size(doc: Mapping[str, Any], r: CheckResult) -> None:
    """The step at the last index is a close step whose seq is tree_size; no other is a close step."""
    step, close, size = doc["step"], doc.get("close"), doc["tree_size"]
    last = close["step"] if close is not None else step
    if last["kind"] != CLOSE_KIND or last["tool"] != CLOSE_KIND or last["agent"] != CLOSE_AGENT:
        r.fail("the step at the last index is not the close step: the tree size is not fixed", seq=last["seq"],
               expected=f"{CLOSE_KIND}/{CLOSE_KIND}/{CLOSE_AGENT}",
               actual=f"{last['kind']}/{last['tool']}/{last['agent']}")
    if close is not None and step["kind"] == CLOSE_KIND:
        r.fail("a close step before the last index", seq=step["seq"])
    r.passed(f"close step with seq {size} at the last index: the tree has exactly {size} steps")


def _inclusion(doc: Mapping[str, Any], step: Mapping[str, Any], index: int, path: list[str],
               r: CheckResult) -> None:
    try:
        verify_inclusion(leaf_receipt_id(step["receipt_id"]), index, doc["tree_size"],
                         [bytes.fromhex(h) for h in path], bytes.fromhex(doc["merkle_root"]))
    except RootMismatchError as e:
        r.fail("audit path does not lead to merkle_root", seq=step["seq"], expected=e.expected.hex(),
               actual=e.computed.hex())
    except ValueError as e:
        r.fail(f"audit path does not fit the tree: {e}", seq=step["seq"])


def _pin(doc: Mapping[str, Any], expected_root: str | None, receipt: str | os.PathLike[str] | None,
         trusted: set[str] | None, r: CheckResult) -> None:
    root = doc["merkle_root"]
    pinned = []
    if expected_root is not None:
        if expected_root.lower() != root:
            r.fail("merkle_root differs from the expected root", expected=expected_root.lower(), actual=root)
            return
        pinned.append("--expected-root")
    if receipt is not None:
        from ._driver import verify_on_paths as check_receipt

        source = os.fspath(receipt)
        report = check_receipt(source, trusted_key_ids=trusted, expected_root=root)
        sig = report.check("signature")
        if not report.valid:
            r.fail(f"the pinning receipt {source} is not valid: "
                   + (report.failures[0].reason if report.failures else report.verdict))
            return
        kid = sig.facts.get("key_id")
        if trusted is None or sig.status != PASS or kid not in trusted:
            r.fail(f"the pinning receipt {source} is not signed by a trusted key (give --key or --trusted-keys)")
            return
        if report.workflow_id != doc["workflow_id"]:
            r.fail(f"the pinning receipt {source} is for another workflow", expected=doc["workflow_id"],
                   actual=report.workflow_id)
            return
        pinned.append(f"receipt signed by trusted key {kid}")
        r.facts["receipt_of_workflow"] = True
    if not pinned:
        r.fail("root not pinned: merkle_root is only the proof's own claim; give --expected-root, or "
               "--receipt with --key/--trusted-keys")
        return
    r.facts["pinned_by"] = " and ".join(pinned)
    r.passed("merkle_root pinned by " + " and ".join(pinned))


def verify_proof(
    proof: Mapping[str, Any] | str | os.PathLike[str] | bytes,
    *,
    expected_root: str | None = None,
    receipt: str | os.PathLike[str] | None = None,
    trusted_key_ids: Iterable[str] | None = None,
) -> Report:
    """Check a proof: a parsed dict, a path or its bytes (the checks: spec/verifier.md, "Proofs").

    ``receipt`` (a path) with ``trusted_key_ids`` can pin its root, as ``expected_root`` can.
    """
    checks = [CheckResult(n, name) for n, name in PROOF_CHECKS]
    c_parse, c_members, c_id, c_size, c_incl, c_content, c_pin = checks
    report = Report(None, checks, kind="proof")
    trusted = None if trusted_key_ids is None else set(trusted_key_ids)
    if isinstance(proof, (str, os.PathLike, bytes)):
        try:
            if isinstance(proof, bytes):
                doc: Any = parse_strict(proof, what="the proof")
            else:
                report.source = os.fspath(proof)
                doc = parse_strict(read_limited(report.source), what=report.source)
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
    if not isinstance(doc, dict) or doc.get("type") != PROOF_TYPE:  # another document: MALFORMED, exit 2
        from ._kind import not_a_receipt, own_file

        what = own_file(doc) or (not_a_receipt(doc) or "a receipt").removeprefix("not a receipt: ").split(";")[0]
        c_parse.detail = ""
        c_parse.fail(f"not an inclusion proof: {what}; a proof is a JSON object of type {PROOF_TYPE!r}")
        for c in checks[1:]:
            c.skip("not an inclusion proof")
        return report
    if not _members(doc, c_members):
        for c in checks[2:]:
            c.skip("members check failed")
        return report
    report.workflow_id = doc["workflow_id"]
    report.steps = doc["tree_size"]
    step, close, size = doc["step"], doc.get("close"), doc["tree_size"]
    _check_ids(doc, c_id)
    _inclusion(doc, step, doc["leaf_index"], doc["audit_path"], c_incl)
    if close is not None:
        _inclusion(doc, close["step"], size - 1, close["audit_path"], c_incl)
    c_incl.passed(f"audit path of {len(doc['audit_path'])} hashes leads to merkle_root"
                  + (f"; the close step's path of {len(close['audit_path'])} too" if close else ""))
    if c_id.status == PASS and c_incl.status == PASS:
        _check_size(doc, c_size)
    else:
        c_size.skip("the step ids or the paths did not verify: the close step proves nothing")
    if "content" in doc:
        try:
            got = content_hash(doc["content"])
        except CanonicalizationError as e:
            c_content.fail(f"content has no exact canonical form: {e}", seq=step["seq"])
        else:
            if got != step.get("receipt_hash"):
                c_content.fail("content does not hash to the step's receipt_hash", seq=step["seq"],
                               expected=step.get("receipt_hash"), actual=got)
            elif step["kind"] == CLOSE_KIND and isinstance(doc["content"], dict) \
                    and doc["content"].get("workflow_id") != doc["workflow_id"]:
                c_content.fail("the close step's content names another workflow", seq=step["seq"],
                               expected=doc["workflow_id"], actual=repr(doc["content"].get("workflow_id")))
            c_content.passed("content hashes to receipt_hash")
    else:
        c_content.skip("the proof carries no content: only the step's members are bound")
    _pin(doc, expected_root, receipt, trusted, c_pin)
    _bind_workflow(doc, c_id, c_content, c_pin)
    return report


def _bind_workflow(doc: Mapping[str, Any], c_id: CheckResult, c_content: CheckResult, c_pin: CheckResult) -> None:
    """Say what binds the proof's ``workflow_id``: otherwise it is only the proof's own label.

    Only step 1 (its ``prev_digest`` is the genesis digest of the workflow id), the close
    step's content (it names the workflow) or a pinning receipt of that workflow bind it; a
    root pinned by ``--expected-root`` binds the tree, not the name.
    """
    if c_pin.status != PASS:
        return
    step, content = doc["step"], doc.get("content")
    if c_id.status == PASS and step["seq"] == 1:
        by = "the genesis link of step 1"
    elif c_content.status == PASS and step["kind"] == CLOSE_KIND and isinstance(content, dict) \
            and content.get("workflow_id") == doc["workflow_id"]:
        by = "the close step's content"
    elif c_pin.facts.get("receipt_of_workflow"):
        by = "the pinning receipt"
    else:
        c_pin.facts["workflow_bound_by"] = None
        return
    c_pin.facts["workflow_bound_by"] = by
