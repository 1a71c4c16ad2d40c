"""aer1.verifier: offline verification of AER-1 workflow receipts, from any producer.

Checks, in order (each name is the reason reported when it fails):

1. ``parse``: valid UTF-8 JSON, no duplicate keys, no NaN/Infinity, bounded size and depth;
2. ``members``: AER-1 Table 2 and Table 3 members present and well-formed (and ours, if claimed);
3. ``sequence``: seq is 1..n in array order, no duplicate receipt_id;
4. ``merkle_root``: recomputed under merkle_version (absent means receipt-id-v0);
5. ``chain``: prev_digest links, derived receipt ids, chain_head, the close step (our profile);
6. ``signature``: valid under its embedded key; trusted only with a given key;
7. ``evidence``: every content hashes to its step's receipt_hash;
8. ``expected``: merkle_root / chain_head equal values kept elsewhere.

This package imports nothing from the collectors.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from ..chain import PROFILE
from ..limits import MAX_PARSE_COST_BYTES, parse_cost
from ..link import LINK_KIND
from ..receipt import evidence_path_for
from ._bundle import links_note
from ._checks import (
    check_chain,
    check_expected,
    check_members,
    check_merkle,
    check_sequence,
    check_signature,
    claims_profile,
)
from ._evidence import check_evidence
from ._parse import MalformedInput, check_json_value, parse_strict, read_limited
from ._report import CHECKS, FAIL, NOT_CHECKED, PASS, CheckResult, Failure, Report
from ._stream import STREAM_MIN_BYTES, verify_streaming
from .proof import verify_proof

__all__ = [
    "CHECKS",
    "FAIL",
    "NOT_CHECKED",
    "PASS",
    "CheckResult",
    "Failure",
    "MalformedInput",
    "Report",
    "verify_proof",
    "verify_receipt",
]


def _fresh_checks() -> list[CheckResult]:
    return [CheckResult(number, name) for number, name in CHECKS]


def verify_receipt(
    receipt: Mapping[str, Any] | str | os.PathLike[str] | bytes,
    *,
    evidence: str | os.PathLike[str] | None = None,
    trusted_key_ids: Iterable[str] | None = None,
    expected_root: str | None = None,
    expected_head: str | None = None,
) -> Report:
    """Run every check on a receipt: a parsed dict, a path to a receipt file, or its bytes.

    ``evidence``: an evidence file; by default, for a path, ``<stem>.evidence.jsonl``
    beside the receipt is used when it exists. ``trusted_key_ids``: key ids (SHA-256 of
    the raw public key) whose signatures are authentic; when given, a receipt that is not
    signed by one of them fails.
    """
    checks = _fresh_checks()
    source: str | None = None
    c_parse, c_members, c_seq, c_merkle, c_chain, c_sig, c_evidence, c_expected = checks
    report = Report(source, checks)
    if isinstance(receipt, (str, os.PathLike)):
        source = os.fspath(receipt)
        report.source = source
        trusted_key_ids = None if trusted_key_ids is None else set(trusted_key_ids)

        def stream(in_memory_ok: bool) -> Report | None:
            return verify_streaming(source, evidence=evidence, trusted_key_ids=trusted_key_ids,
                                    expected_root=expected_root, expected_head=expected_head,
                                    in_memory_ok=in_memory_ok)

        if os.path.isfile(source) and os.path.getsize(source) >= STREAM_MIN_BYTES:  # large: stream it
            streamed = stream(in_memory_ok=False)
            assert streamed is not None
            return streamed
        try:
            data = read_limited(source)
            if parse_cost(data) > MAX_PARSE_COST_BYTES:  # small but costly to hold parsed: stream it
                streamed = stream(in_memory_ok=False)
                assert streamed is not None
                return streamed
            wf: Any = parse_strict(data, what=source)
        except MalformedInput as e:
            c_parse.fail(str(e))
            _skip_rest(checks[1:], "the input could not be parsed")
            return report
        c_parse.passed("strict UTF-8 JSON; no duplicate keys; size and depth within limits")
        if evidence is None:
            beside = evidence_path_for(source)
            if os.path.lexists(beside):
                evidence = beside
    elif isinstance(receipt, bytes):
        try:
            wf = parse_strict(receipt, what="the receipt")
        except MalformedInput as e:
            c_parse.fail(str(e))
            _skip_rest(checks[1:], "the input could not be parsed")
            return report
        c_parse.passed("strict UTF-8 JSON; no duplicate keys; size and depth within limits")
    else:
        wf = receipt
        try:
            check_json_value(wf)
        except MalformedInput as e:
            c_parse.fail(str(e))
            _skip_rest(checks[1:], "the input is not JSON data")
            return report
        c_parse.passed("given as parsed JSON data within limits")

    profile = isinstance(wf, dict) and claims_profile(wf)
    if not check_members(wf, profile, c_members):
        _skip_rest(checks[2:], "members check failed")
        return report
    report.workflow_id = wf["workflow_id"]
    report.steps = len(wf["steps"])
    report.profile = PROFILE if profile else None
    check_sequence(wf["steps"], c_seq)
    links = sum(1 for s in wf["steps"] if s.get("kind") == LINK_KIND)
    if links:
        report.notes.append(links_note(links))
    check_merkle(wf, c_merkle)
    if profile:
        check_chain(wf, c_chain)
    else:
        c_chain.skip(f"no chain: the receipt does not declare profile {PROFILE}")
        report.notes.append(
            "not an aer1-chain-v1 receipt: only the AER-1 base checks apply; step contents, agents "
            "and order are not bound beyond receipt ids and the Merkle root"
        )
    check_signature(wf, trusted_key_ids, c_sig)
    if evidence is not None:
        if c_chain.status == FAIL or c_members.status == FAIL:
            c_evidence.skip("chain check failed")
        else:
            check_evidence(wf, os.fspath(evidence), c_evidence)
    else:
        c_evidence.skip("no evidence file" + (f" beside the receipt ({evidence_path_for(source)})" if source else ""))
    check_expected(wf, expected_root, expected_head, c_expected)
    return report


def _skip_rest(checks: list[CheckResult], why: str) -> None:
    for c in checks:
        c.skip(why)

