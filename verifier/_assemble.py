"""The one report assembly: checks 3 to 10 after check 2, for the in-memory and the streaming path."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from .._chain import PROFILE
from .._imprint import TIMESTAMPS_MEMBER
from ._checks import check_expected, check_signature
from ._evidence import check_evidence
from ._report import CHECKS, FAIL, NO_KEYRING, NO_TOKEN, PASS, CheckResult, Report
from ._steps import NOT_PROFILE_NOTE, StepChecker

if TYPE_CHECKING:  # checks 9 and 10 load their modules only for a token or a keyring
    from .._keyring import KeyEntry
    from ._timestamp import TsaTrust

__all__ = ["Given", "fresh_checks", "links_note", "skip_rest", "steps_checked"]


class Given(TypedDict, total=False):
    """What a caller gives every reading path besides the receipt (each absent one: None).

    The options of :func:`aer1.verifier.verify_receipt` that reach the checks: the in-memory,
    the cut and the streaming path take them as one set of keywords, named once here.
    """

    evidence: str | os.PathLike[str] | None
    trusted_key_ids: Iterable[str] | None
    expected_root: str | None
    expected_head: str | None
    tsa_trust: TsaTrust | None
    keyring: Mapping[str, KeyEntry] | None


def links_note(count: int) -> str:
    """The note on a receipt verified alone whose ``count`` link steps were not followed."""
    return (f"{count} link step(s) bind child receipts that were not followed here: "
            "verify the bundle with aer1-verify --bundle")


def fresh_checks() -> list[CheckResult]:
    """One unrun result per check, in report order."""
    return [CheckResult(number, name) for number, name in CHECKS]


def skip_rest(checks: list[CheckResult], why: str) -> None:
    """Mark every check in ``checks`` as not run, for the same reason."""
    for c in checks:
        c.skip(why)


def steps_checked(
    report: Report,
    wf: Mapping[str, Any],
    checker: StepChecker,
    *,
    evidence_view: Mapping[str, Any],
    evidence: str | os.PathLike[str] | None,
    beside: str | None,
    trusted_key_ids: Iterable[str] | None,
    expected_root: str | None,
    expected_head: str | None,
    signed: Callable[[], bytes | bytearray] | None = None,
    tsa_trust: TsaTrust | None = None,
    keyring: Mapping[str, KeyEntry] | None = None,
    links: int = 0,
    evidence_check: Callable[[Mapping[str, Any], str, CheckResult], None] = check_evidence,
) -> Report:
    """Checks 3 to 10 of a receipt whose members passed check 2, and the report's summary fields.

    ``evidence_view``: the receipt as the evidence check reads it (its steps' receipt_hash);
    ``beside``: where the evidence was looked for, named when there is none; ``signed``: builds the
    signed bytes when the caller can (called last, once the other checks freed their state);
    ``links``: how many link steps the receipt holds (their children are not followed here);
    ``evidence_check``: check 7 (a caller may try a quicker check first, the reference deciding any doubt).
    """
    _, c_members, c_seq, c_merkle, c_chain, c_sig, c_evidence, c_expected, c_time, c_key = report.checks
    report.workflow_id = wf["workflow_id"]
    report.steps = checker.n
    report.profile = PROFILE if checker.profile else None
    checker.sequence_result(c_seq)
    if links:
        report.notes.append(links_note(links))
    checker.merkle_result(wf, c_merkle)
    if checker.profile:
        checker.chain_result(wf, c_chain)
    else:
        c_chain.skip(f"no chain: the receipt does not declare profile {PROFILE}")
        report.notes.append(NOT_PROFILE_NOTE)
    check_signature(wf, trusted_key_ids, c_sig, signed)
    if evidence is not None:
        if c_chain.status == FAIL or c_members.status == FAIL:
            c_evidence.skip("chain check failed")
        else:
            evidence_check(evidence_view, os.fspath(evidence), c_evidence)
            if c_evidence.status == PASS:  # committed fields: disclosed, erased or withheld (spec/erasure.md)
                from ._disclosures import check_commitments

                check_commitments(evidence_view, os.fspath(evidence), c_evidence, trusted_key_ids, report)
    else:
        c_evidence.skip("no evidence file" + (f" beside the receipt ({beside})" if beside else ""))
    check_expected(wf, expected_root, expected_head, c_expected)
    if TIMESTAMPS_MEMBER in wf:
        from ._timestamp import check_timestamp

        check_timestamp(wf, tsa_trust, c_time)
    else:
        c_time.skip(NO_TOKEN)
    if keyring is not None:
        from ._keyring import check_key

        check_key(wf, keyring, c_sig, c_time, c_key)
    else:
        c_key.skip(NO_KEYRING)
    return report
