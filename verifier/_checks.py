"""The numbered receipt checks (2 to 8); check 1, strict parsing, is in ``_parse``."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .._canonical import MAX_SAFE_INTEGER, CanonicalizationError, exact_bytes
from .._chain import PROFILE, is_derived_id
from .._imprint import KEY_PROOF_MEMBER, TIMESTAMPS_MEMBER
from .._link import LINK_KIND
from .._receipt import (
    AGENT_MEMBERS,
    CLOSE_AGENT,
    CLOSE_BOUND_MEMBERS,
    CLOSE_KIND,
    CLOSED_BY_RECOVERY,
    HEX64_PATTERN,
    KINDS,
    MERKLE_VERSION,
    MERKLE_VERSIONS,
    RFC3339_PATTERN,
    STEP_OPTIONAL_MEMBERS,
    STEP_REQUIRED_MEMBERS,
    STEP_STATUSES,
    TIMESTAMP_PATTERN,
    TRACE_MEMBERS,
    UUID_PATTERN,
    WORKFLOW_STATUSES,
    WORKFLOW_TYPE,
    WORKFLOW_VERSION,
    close_content,
    trace_members_problem,
)
from .._signing import SignatureInvalid, SignatureMalformed, parse_signature, verify_signature
from .._timefmt import is_calendar_date, parse_step_time
from ._report import CheckResult

__all__ = [
    "PROFILE_STRIPPED",
    "check_chain_end",
    "check_expected",
    "check_signature",
    "claims_profile",
    "is_derived_id",
]

_UUID = re.compile(UUID_PATTERN, re.ASCII)
#: Why a step with a derived id but no profile members fails (receipts and proofs).
PROFILE_STRIPPED = (
    "profile stripped: receipt_id has the layout of an aer1-chain-v1 derived id (UUIDv8), "
    "but the profile members (profile, chain_head, prev_digest) are missing"
)
_HEX64 = re.compile(HEX64_PATTERN, re.ASCII)
_OUR_TS = re.compile(TIMESTAMP_PATTERN, re.ASCII)
_ANY_TS = re.compile(RFC3339_PATTERN, re.ASCII)
_KIND_SET = frozenset(KINDS)
_STEP_STATUS_SET = frozenset(STEP_STATUSES)
_PROFILE_STEP_MEMBERS = frozenset((*STEP_REQUIRED_MEMBERS, *STEP_OPTIONAL_MEMBERS))
_PROFILE_WORKFLOW_MEMBERS = frozenset(
    (*CLOSE_BOUND_MEMBERS, "steps", "merkle_root", "chain_head", "signature", TIMESTAMPS_MEMBER, KEY_PROOF_MEMBER)
)
#: Longest key_proof value (base64 of a 64-byte Ed25519 signature is 88 characters).
_KEY_PROOF_CHARS = 88
_AGENT_MEMBERS = frozenset(AGENT_MEMBERS)
_DATE_LIMIT = 4096
#: Largest seq accepted (exactly representable in every JSON implementation).
_MAX_SEQ = MAX_SAFE_INTEGER
_valid_dates: dict[str, bool] = {}


def _known(v: Any, names: frozenset[str]) -> bool:
    """True when ``v`` is one of ``names`` (a list or an object is not, and is never hashed)."""
    return type(v) is str and v in names


def is_uuid(v: Any) -> bool:
    return type(v) is str and _UUID.fullmatch(v) is not None


def is_hex64(v: Any) -> bool:
    return type(v) is str and _HEX64.fullmatch(v) is not None


def _is_label(v: Any) -> bool:
    return type(v) is str and v != ""


def date_ok(day: str) -> bool:
    ok = _valid_dates.get(day)
    if ok is None:
        ok = is_calendar_date(day)
        if len(_valid_dates) < _DATE_LIMIT:
            _valid_dates[day] = ok
    return ok


def is_rfc3339(v: Any) -> bool:
    """RFC 3339 date-time of ASCII digits with a real calendar date (fast path for the UTC microsecond form)."""
    if type(v) is not str:
        return False
    m = _OUR_TS.fullmatch(v)
    if m is not None:
        return date_ok(m.group(1))
    m = _ANY_TS.fullmatch(v)
    return m is not None and date_ok(f"{m.group(1)}-{m.group(2)}-{m.group(3)}")


def claims_profile(workflow: Mapping[str, Any]) -> bool:
    """True when any member of our profile is present: then all of it is required."""
    if "profile" in workflow or "chain_head" in workflow:
        return True
    steps = workflow.get("steps")
    return isinstance(steps, list) and any(isinstance(s, dict) and "prev_digest" in s for s in steps)


# ------------------------------------------------------------------ check 2


def _check_agents(agents: Any, result: CheckResult) -> None:
    if not isinstance(agents, list) or not agents:
        result.fail("agents is not a non-empty array")
        return
    names: set[str] = set()
    for i, a in enumerate(agents):
        if not isinstance(a, dict) or not {"name", "type"} <= set(a) or not set(a) <= _AGENT_MEMBERS:
            result.fail(f"agents[{i}] is not an object with name, type and optional description, config_digest")
            return
        if not _is_label(a["name"]) or not _is_label(a["type"]):
            result.fail(f"agents[{i}] name and type must be non-empty strings")
            return
        if "description" in a and type(a["description"]) is not str:
            result.fail(f"agents[{i}] description is not a string")
            return
        if "config_digest" in a and not is_hex64(a["config_digest"]):
            result.fail(f"agents[{i}] config_digest is not 64 lowercase hex characters")
            return
        if a["name"] in names:
            result.fail(f"agents[{i}] repeats the agent {a['name']!r}")
            return
        names.add(a["name"])


def check_workflow_members(wf: Mapping[str, Any], profile: bool, result: CheckResult) -> None:
    if wf.get("type") != WORKFLOW_TYPE:
        result.fail("type is not the workflow receipt type", expected=WORKFLOW_TYPE, actual=repr(wf.get("type")))
    if not _is_label(wf.get("version")):
        result.fail("version is not a non-empty string")
    for name in ("workflow_id", "receipt_id"):
        if not is_uuid(wf.get(name)):
            result.fail(f"{name} is not a lowercase UUID", actual=repr(wf.get(name)))
    for name in ("session_id", "goal", "status"):
        if not _is_label(wf.get(name)):
            result.fail(f"{name} is not a non-empty string")
    for name in ("merkle_root", "output_hash"):
        if not is_hex64(wf.get(name)):
            result.fail(f"{name} is not 64 lowercase hex characters", actual=repr(wf.get(name)))
    url = wf.get("verify_url")
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        result.fail("verify_url is not an http(s) URL")
    if "merkle_version" in wf and wf["merkle_version"] not in MERKLE_VERSIONS:
        result.fail("merkle_version is not a known Section 8.1 version",
                    expected=" or ".join(MERKLE_VERSIONS), actual=repr(wf["merkle_version"]))
    if not profile:
        return
    if wf.get("profile") != PROFILE:
        result.fail("profile is not this construction", expected=PROFILE, actual=repr(wf.get("profile")))
    if wf.get("version") != WORKFLOW_VERSION:
        result.fail("version", expected=WORKFLOW_VERSION, actual=repr(wf.get("version")))
    if wf.get("status") not in WORKFLOW_STATUSES:
        result.fail("status is not ok, error or incomplete", actual=repr(wf.get("status")))
    if wf.get("merkle_version") != MERKLE_VERSION:
        result.fail("merkle_version", expected=MERKLE_VERSION, actual=repr(wf.get("merkle_version")))
    if not is_hex64(wf.get("chain_head")):
        result.fail("chain_head is not 64 lowercase hex characters", actual=repr(wf.get("chain_head")))
    if "agents" in wf:
        _check_agents(wf["agents"], result)
    if "recording_failures" in wf:
        n = wf["recording_failures"]
        if type(n) is not int or n < 1:
            result.fail("recording_failures is not a positive integer", actual=repr(n))
    if "step_statuses" in wf:
        counts = wf["step_statuses"]
        if not (isinstance(counts, dict) and list(counts) == list(STEP_STATUSES)
                and all(type(v) is int and v >= 0 for v in counts.values())):
            result.fail("step_statuses is not {ok, error, cancelled: counts}", actual=repr(counts)[:200])
    if "closed_by" in wf and (wf["closed_by"] != CLOSED_BY_RECOVERY or wf.get("status") != "incomplete"):
        result.fail(f"closed_by is not {CLOSED_BY_RECOVERY!r} on an incomplete receipt",
                    actual=repr(wf["closed_by"]))
    proof = wf.get(KEY_PROOF_MEMBER)
    if KEY_PROOF_MEMBER in wf and not (isinstance(proof, dict) and set(proof) == {"key_id", "value"}
                                  and is_hex64(proof["key_id"]) and type(proof["value"]) is str
                                  and len(proof["value"]) <= _KEY_PROOF_CHARS):
        result.fail(f"{KEY_PROOF_MEMBER} is not {{key_id: 64 hex, value: base64 of a signature}}")
    unknown = sorted(set(wf) - _PROFILE_WORKFLOW_MEMBERS)
    if unknown:
        result.fail(f"members outside the profile: {', '.join(unknown)}")


_PROFILE_STEP_REQUIRED = frozenset(STEP_REQUIRED_MEMBERS)
_TS_LEN = len("2026-01-01T00:00:00.000000Z")
# started_at and ended_at, concatenated (a value it refuses only sends the step to the detailed checks)
_STEP_TIMES = re.compile(TIMESTAMP_PATTERN + TIMESTAMP_PATTERN, re.ASCII)
_HEX_CHARS = 64 + 64 + 32  # two digests and a UUID without its dashes


def _lower_hex(text: str) -> bool:
    """True when ``text`` is lowercase hex digits only (one C round trip, no regular expression)."""
    try:
        return bytes.fromhex(text).hex() == text  # fromhex skips whitespace, takes A-F: the round trip does not
    except ValueError:
        return False


def _profile_step_ok(step: Any) -> bool:
    """Quick test of a profile step; when it says no, the detailed checks say why."""
    if type(step) is not dict:
        return False
    keys = step.keys()
    if keys != _PROFILE_STEP_REQUIRED and not (_PROFILE_STEP_REQUIRED <= keys and keys <= _PROFILE_STEP_MEMBERS):
        return False
    s, tool, agent = step["seq"], step["tool"], step["agent"]
    if type(s) is not int or not 0 < s <= _MAX_SEQ or type(tool) is not str or not tool:
        return False
    if type(agent) is not str or not agent or not _known(step["kind"], _KIND_SET):
        return False
    if not _known(step["status"], _STEP_STATUS_SET):
        return False
    started, ended, rh, prev, rid = (step["started_at"], step["ended_at"], step["receipt_hash"],
                                     step["prev_digest"], step["receipt_id"])
    if type(started) is not str or type(ended) is not str or type(rh) is not str or type(prev) is not str:
        return False
    # Text order is time order only for two texts of the one fixed-width ASCII form, which
    # _STEP_TIMES requires below: a pair that fails either goes to the detailed checks.
    if type(rid) is not str or ended < started:
        return False
    # the lengths fix where each value starts, so no value can borrow from its neighbour
    if len(started) != _TS_LEN or len(ended) != _TS_LEN or len(rh) != 64 or len(prev) != 64 or len(rid) != 36:
        return False
    if rid[8] != "-" or rid[13] != "-" or rid[18] != "-" or rid[23] != "-":
        return False
    digits = rh + prev + rid.replace("-", "")
    if len(digits) != _HEX_CHARS or not _lower_hex(digits):
        return False
    m = _STEP_TIMES.fullmatch(started + ended)
    if m is None:
        return False
    d1, d2 = m.group(1, 2)
    if not (_valid_dates.get(d1) or date_ok(d1)) or not (_valid_dates.get(d2) or date_ok(d2)):
        return False
    if len(keys) > len(_PROFILE_STEP_REQUIRED):
        for name in keys - _PROFILE_STEP_REQUIRED:
            value = step[name]
            if type(value) is not str or not value:
                return False
        if not TRACE_MEMBERS.keys().isdisjoint(keys) and trace_members_problem(step) is not None:
            return False
    return True


def _link_target_ok(step: Mapping[str, Any], seq: int, result: CheckResult) -> bool:
    """A link step names its child: ``target`` is the child's workflow_id (spec/linked.md)."""
    if is_uuid(step.get("target")):
        return True
    result.fail("link step target is not the child's workflow_id (a lowercase UUID)", seq=seq,
                actual=repr(step.get("target")))
    return False


def check_step(step: Any, i: int, profile: bool, result: CheckResult) -> bool:
    seq = i + 1
    if profile and _profile_step_ok(step):
        return step["kind"] != LINK_KIND or _link_target_ok(step, seq, result)
    if not isinstance(step, dict):
        result.fail("step is not an object", seq=seq)
        return False
    s = step.get("seq")
    if type(s) is not int or not 0 < s <= _MAX_SEQ:
        result.fail(f"seq is not an integer from 1 to {_MAX_SEQ}", seq=seq, actual=repr(s))
        return False
    ok = True
    if not is_uuid(step.get("receipt_id")):
        result.fail("receipt_id is not a lowercase UUID", seq=seq, actual=repr(step.get("receipt_id")))
        ok = False
    if not _is_label(step.get("tool")):
        result.fail("tool is not a non-empty string", seq=seq)
        ok = False
    if not is_hex64(step.get("receipt_hash")):
        result.fail("receipt_hash is not 64 lowercase hex characters", seq=seq,
                    actual=repr(step.get("receipt_hash")))
        ok = False
    for name in ("started_at", "ended_at"):
        if not is_rfc3339(step.get(name)):
            result.fail(f"{name} is not an RFC 3339 date-time with a real date", seq=seq,
                        actual=repr(step.get(name)))
            ok = False
    if not _is_label(step.get("status")):
        result.fail("status is not a non-empty string", seq=seq)
        ok = False
    if not profile:
        if ok and is_derived_id(step["receipt_id"]):
            # Only our chain derives UUIDv8 step ids: without the profile members the id
            # (and so a pinned root) would no longer bind the step's content.
            result.fail(PROFILE_STRIPPED, seq=seq, actual=step["receipt_id"])
            ok = False
        return ok
    if not ok:
        return ok
    if not _known(step.get("kind"), _KIND_SET):
        result.fail("kind is not a known kind", seq=seq, actual=repr(step.get("kind")))
        ok = False
    if not _is_label(step.get("agent")):
        result.fail("agent is not a non-empty string", seq=seq)
        ok = False
    if not _known(step["status"], _STEP_STATUS_SET):
        result.fail("status is not ok, error or cancelled", seq=seq, actual=repr(step["status"]))
        ok = False
    if not is_hex64(step.get("prev_digest")):
        result.fail("prev_digest is not 64 lowercase hex characters", seq=seq)
        ok = False
    for name in STEP_OPTIONAL_MEMBERS:
        if name in step and not _is_label(step[name]):
            result.fail(f"{name} is not a non-empty string", seq=seq)
            ok = False
    trace_problem = trace_members_problem(step) if ok else None  # a member not a string was named above
    if trace_problem is not None:
        result.fail(trace_problem, seq=seq, actual=repr(step.get("trace_id", step.get("span_id"))))
        ok = False
    for name in ("started_at", "ended_at"):
        if _OUR_TS.fullmatch(step[name]) is None:
            result.fail(f"{name} is not UTC with microseconds (YYYY-MM-DDTHH:MM:SS.ffffffZ)", seq=seq,
                        actual=step[name])
            ok = False
    if ok and step["kind"] == LINK_KIND:
        ok = _link_target_ok(step, seq, result)
    extra = set(step) - _PROFILE_STEP_MEMBERS
    if extra:
        result.fail(f"members outside the profile: {', '.join(sorted(extra))}", seq=seq)
        ok = False
    if ok and _ended_before_started(step):
        result.fail("ended_at is before started_at", seq=seq, expected=f">= {step['started_at']}",
                    actual=step["ended_at"])
        ok = False
    return ok


def _ended_before_started(step: Mapping[str, Any]) -> bool:
    """Compared as times (both already match the UTC microsecond form), never as text."""
    started, ended = parse_step_time(step["started_at"]), parse_step_time(step["ended_at"])
    return started is None or ended is None or ended < started


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
        want = hashlib.sha256(exact_bytes(close_content(wf, n))).hexdigest()
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
    if expected_root is not None:
        if wf.get("merkle_root") != expected_root.lower():
            result.fail("merkle_root differs from the expected root", expected=expected_root.lower(),
                        actual=wf.get("merkle_root"))
        done.append("merkle_root")
        result.facts["root"] = True
    if expected_head is not None:
        if wf.get("chain_head") != expected_head.lower():
            result.fail("chain_head differs from the expected head", expected=expected_head.lower(),
                        actual=wf.get("chain_head"))
        done.append("chain_head")
        result.facts["head"] = True
    result.passed(" and ".join(done) + " match the expected values")
