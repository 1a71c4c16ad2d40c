"""The numbered receipt checks (2 to 8); check 1, strict parsing, is in ``_parse``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._canonical import CanonicalizationError
from .._content_hash import content_hash
from .._member_rules import step_ok, step_problems, workflow_problems
from .._receipt import CLOSE_AGENT, CLOSE_KIND, close_content
from .._signing import SignatureInvalid, SignatureMalformed, parse_signature, verify_signature
from ._report import CheckResult

__all__ = [
    "check_chain_end",
    "check_expected",
    "check_signature",
    "check_step",
    "check_workflow_members",
    "claims_profile",
]


def claims_profile(workflow: Mapping[str, Any]) -> bool:
    """True when any member of our profile is present: then all of it is required."""
    if "profile" in workflow or "chain_head" in workflow:
        return True
    steps = workflow.get("steps")
    return isinstance(steps, list) and any(isinstance(s, dict) and "prev_digest" in s for s in steps)


# ------------------------------------------------------------------ check 2


def check_workflow_members(wf: Mapping[str, Any], profile: bool, result: CheckResult) -> None:
    """The workflow's own members (``aer1._member_rules``), each problem a failure of ``result``."""
    for p in workflow_problems(wf, profile):
        result.fail(p.message, expected=p.expected, actual=p.actual)


def check_step(step: Any, i: int, profile: bool, result: CheckResult) -> bool:
    """Step ``i`` (from 0) by the member rules (``aer1._member_rules``); True when it has no problem."""
    if profile and step_ok(step):
        return True
    problems = step_problems(step, profile)
    for p in problems:
        result.fail(p.message, seq=i + 1, expected=p.expected, actual=p.actual)
    return not problems


# ------------------------------------------------------------------ check 5


def check_chain_end(wf: Mapping[str, Any], head: str, last: Mapping[str, Any], n: int, result: CheckResult,
                    counts: Mapping[str, int] | None = None) -> None:
    """The end of check 5: chain_head is the last digest; the last step is the bound close step.

    Shared by the in-memory and the streaming verifier, so both report the same.
    """
    if wf["chain_head"] != head:
        result.fail("chain_head is not the digest of the last step", expected=head, actual=wf["chain_head"])
        return
    if last["kind"] != CLOSE_KIND:
        result.fail("receipt cut short: the last step is not a close step", seq=n,
                    expected=CLOSE_KIND, actual=last["kind"])
        return
    if last["tool"] != CLOSE_KIND or last["agent"] != CLOSE_AGENT:
        result.fail("close step tool/agent", seq=n, expected=f"{CLOSE_KIND}/{CLOSE_AGENT}",
                    actual=f"{last['tool']}/{last['agent']}")
        return
    try:
        want = content_hash(close_content(wf, n))
    except CanonicalizationError as e:
        result.fail(f"workflow members cannot be canonicalized: {e}", seq=n)
        return
    if last["receipt_hash"] != want:
        result.fail("close step does not match the workflow members (goal, session, status, "
                    "output_hash, ... or the step count were changed)", seq=n,
                    expected=want, actual=last["receipt_hash"])
        return
    if "step_statuses" in wf and counts is not None and dict(wf["step_statuses"]) != dict(counts):
        result.fail("step_statuses does not count the statuses of the steps", seq=n,
                    expected=repr(dict(counts)), actual=repr(wf["step_statuses"]))
        return
    result.facts["closed_by"] = wf.get("closed_by", "finalize")
    result.facts["status"] = wf.get("status")  # bound by the close step: an archive summary counts it
    result.passed(f"{n} links, derived receipt ids, chain_head and close step verified"
                  + ("; closed by recovery from a journal" if "closed_by" in wf else ""))


# ------------------------------------------------------------------ check 6


def check_signature(
    wf: Mapping[str, Any], trusted: Iterable[str] | None, result: CheckResult,
    signed: Callable[[], bytes | bytearray] | None = None,
) -> None:
    """Check 6: signature valid under its key (integrity); the key trusted (authenticity).

    ``signed``: builds the signed bytes when the caller can (streaming verification); it
    raises CanonicalizationError when the receipt has none.
    """
    trusted_ids = None if trusted is None else set(trusted)
    if "signature" not in wf:
        if trusted_ids is not None:
            result.fail("not signed, but a trusted key was required")
        else:
            result.skip("not signed")
            result.facts["unsigned"] = True
        return
    try:
        parse_signature(wf["signature"])
    except SignatureMalformed as e:
        result.fail(f"could not verify: malformed signature member: {e}")
        return
    try:
        kid = verify_signature(wf, None if signed is None else signed())
    except SignatureInvalid as e:
        result.fail(str(e))
        return
    except CanonicalizationError as e:
        result.fail(f"could not verify: receipt cannot be canonicalized: {e}")
        return
    result.facts["key_id"] = kid
    result.facts["trusted"] = trusted_ids is not None and kid in trusted_ids
    if trusted_ids is None:
        result.passed(f"valid signature; signed by an untrusted key {kid} "
                      "(integrity only: give --key or --trusted-keys for authenticity)")
    elif kid in trusted_ids:
        result.passed(f"valid signature by trusted key {kid}")
    else:
        result.fail(f"signed by an untrusted key {kid}", expected=" or ".join(sorted(trusted_ids)), actual=kid)


# ------------------------------------------------------------------ check 8


def check_expected(
    wf: Mapping[str, Any], expected_root: str | None, expected_head: str | None, result: CheckResult
) -> None:
    """Check 8: compare merkle_root / chain_head with values kept elsewhere."""
    if expected_root is None and expected_head is None:
        result.skip("no --expected-root or --expected-head given")
        return
    done = []
    for member, want, what in (("merkle_root", expected_root, "root"), ("chain_head", expected_head, "head")):
        if want is None:
            continue
        if wf.get(member) != want.lower():
            result.fail(f"{member} differs from the expected {what}", expected=want.lower(), actual=wf.get(member))
        done.append(member)
        result.facts[what] = True
    result.passed(" and ".join(done) + " match the expected values")
