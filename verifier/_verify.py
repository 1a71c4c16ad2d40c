"""Checks 1 to 10 of one receipt, by whichever path fits its size: the run behind every receipt verified.

Kept apart from the package so that what verifies receipts inside the verifier (bundles,
proofs pinned by a receipt, the trust object) imports it, never the package back.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .. import _limits
from .._limits import MAX_PARSE_COST_BYTES, parse_cost
from .._link import LINK_KIND
from .._receipt import evidence_path_for
from ._fast import Passed
from ._parallel import SPLIT_MIN_BYTES, quick_steps
from ._parse import MalformedInput, check_json_value, parse_strict, parse_unwalked, read_limited
from ._report import Report

if TYPE_CHECKING:
    from .._keyring import KeyEntry
    from ._tsa_trust import TsaTrust

__all__ = ["check_receipt"]


def check_receipt(
    receipt: Mapping[str, Any] | str | os.PathLike[str] | bytes,
    *,
    evidence: str | os.PathLike[str] | None = None,
    trusted_key_ids: Iterable[str] | None = None,
    expected_root: str | None = None,
    expected_head: str | None = None,
    tsa_trust: TsaTrust | None = None,
    keyring: Mapping[str, KeyEntry] | None = None,
    jobs: int = 1,
) -> Report:
    """Run checks 1 to 10 on a receipt: a parsed dict, a path to a receipt file, or its bytes.

    What :func:`aer1.verifier.verify_receipt` and :class:`aer1.verifier.Trust` run, before a
    policy or the log check; the arguments are theirs.

    ``evidence``: an evidence file; by default, for a path, ``<stem>.evidence.jsonl``
    beside the receipt is used when it exists. ``trusted_key_ids``: key ids (SHA-256 of
    the raw public key) whose signatures are authentic; when given, a receipt that is not
    signed by one of them fails. ``tsa_trust``: TSA roots for the timestamp check;
    ``keyring``: key windows and revocations for the key check. ``jobs``: processes for a
    receipt file of 1 MiB or more in the saved layout (cut into runs of step lines) and for
    the steps of a parsed receipt of 20,000 steps or more (two cores busy with other work
    rarely beat one: measure). A file too large or too costly to hold parsed is verified by
    streaming; every path gives the same checks and the same report.
    """
    from ._assemble import fresh_checks, skip_rest, steps_checked
    from ._checks import claims_profile
    from ._steps import check_members

    checks = fresh_checks()
    c_parse, c_members = checks[0], checks[1]
    report = Report(None, checks)
    source: str | None = None
    given_parsed = not isinstance(receipt, (str, os.PathLike, bytes))
    passed: Passed | None = None
    quick_done = given_parsed
    try:
        if isinstance(receipt, (str, os.PathLike)):
            source = report.source = os.fspath(receipt)
            trusted_key_ids = None if trusted_key_ids is None else set(trusted_key_ids)
            data = None
            if not (os.path.isfile(source) and os.path.getsize(source) >= _limits.STREAM_MIN_BYTES):
                data = read_limited(source)
            if jobs > 1 and (data is None or len(data) >= SPLIT_MIN_BYTES):
                from ._split import verify_split  # large files only: the fork and its pipes load here

                split = verify_split(source, data, jobs, evidence=evidence, trusted_key_ids=trusted_key_ids,
                                     expected_root=expected_root, expected_head=expected_head,
                                     tsa_trust=tsa_trust, keyring=keyring)
                if split is not None:
                    return split
            if data is None or parse_cost(data) > MAX_PARSE_COST_BYTES:  # large, or costly to hold parsed
                from ._stream import verify_streaming  # loaded only for a file streamed

                return verify_streaming(source, evidence=evidence, trusted_key_ids=trusted_key_ids,
                                        expected_root=expected_root, expected_head=expected_head,
                                        tsa_trust=tsa_trust, keyring=keyring)
            wf, owed = parse_unwalked(data, what=source)  # size and cost checked just above
            if owed:  # steps the quick path passes are JSON data within the limits: the walk skips them
                passed, quick_done = quick_steps(wf, jobs), True
                check_json_value(wf if passed is None else {k: v for k, v in wf.items() if k != "steps"})
            # What a later reader of the file (a policy, a bundle's links) checks it reads the same bytes by.
            c_parse.facts["sha256"] = hashlib.sha256(data).hexdigest()
            if evidence is None and os.path.lexists(evidence_path_for(source)):
                evidence = evidence_path_for(source)
        elif isinstance(receipt, bytes):
            wf = parse_strict(receipt, what="the receipt")
        else:
            wf = receipt
            passed = quick_steps(wf, jobs)  # steps it passes are JSON data: the walk covers the rest
            check_json_value(wf if passed is None else {k: v for k, v in wf.items() if k != "steps"})
    except MalformedInput as e:
        c_parse.fail(str(e))
        skip_rest(checks[1:], "the input is not JSON data" if given_parsed else "the input could not be parsed")
        return report
    c_parse.passed("given as parsed JSON data within limits" if given_parsed
                   else "strict UTF-8 JSON; no duplicate keys; size and depth within limits")
    from ._kind import refuse_unless_receipt

    if refuse_unless_receipt(report, wf):  # not a receipt: MALFORMED (exit 2), never a receipt that fails
        return report

    if not quick_done:
        passed = quick_steps(wf, jobs)
    checker = check_members(wf, isinstance(wf, dict) and claims_profile(wf), c_members, passed)
    if checker is None:
        skip_rest(checks[2:], "members check failed")
        return report
    signed = None
    if passed is not None and isinstance(wf, dict) and "signature" in wf:  # every step passed the quick checks
        from ._signed import signing_input_of_passed

        signed = functools.partial(signing_input_of_passed, wf)
    return steps_checked(report, wf, checker, evidence_view=wf, evidence=evidence, signed=signed,
                         beside=None if source is None else evidence_path_for(source),
                         trusted_key_ids=trusted_key_ids, expected_root=expected_root, expected_head=expected_head,
                         tsa_trust=tsa_trust, keyring=keyring,
                         links=checker.links if checker.links is not None
                         else sum(1 for s in wf["steps"] if s.get("kind") == LINK_KIND))
