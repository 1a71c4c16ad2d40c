"""The member rules of a receipt, defined once: of one step, of many steps at once, of the workflow.

Every producer and verifier path takes its member rules from here, in one of three forms
that agree (tests/core/test_member_rules.py):

* :func:`step_problems`: every problem of one step, worded (the verifier reports them,
  recovery the first); :func:`workflow_problems` the same for the workflow's members;
* :func:`step_ok`: True exactly when a profile step has no problem, fast (the common case);
* :func:`steps_ok` and :func:`columns_ok`: the batch form over a run of steps gathered
  member by member, a few C-level passes per member (the verifier's quick path).

The formats (UUID, hex, times) are those of :mod:`aer1._receipt` and :mod:`aer1._timefmt`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import ge, gt, itemgetter
from typing import Any, TypeGuard

from ._canonical import MAX_SAFE_INTEGER
from ._chain import PROFILE, is_derived_id
from ._imprint import KEY_PROOF_MEMBER, TIMESTAMPS_MEMBER
from ._limits import MAX_STRING_CHARS
from ._link import LINK_KIND
from ._receipt import (
    AGENT_MEMBERS,
    CLOSE_BOUND_MEMBERS,
    CLOSED_BY_RECOVERY,
    KINDS,
    MERKLE_VERSION,
    MERKLE_VERSIONS,
    STEP_OPTIONAL_MEMBERS,
    STEP_REQUIRED_MEMBERS,
    STEP_STATUSES,
    TRACE_MEMBERS,
    WORKFLOW_STATUSES,
    WORKFLOW_TYPE,
    WORKFLOW_VERSION,
    is_hex64,
    is_uuid,
    trace_members_problem,
)
from ._timefmt import STEP_TIME_CHARS, is_rfc3339, is_step_time_form, parse_step_time, step_time_dates, step_times_ok

__all__ = [
    "MAX_SEQ",
    "PROFILE_STRIPPED",
    "STEP_COLUMNS",
    "TIME_FORM",
    "Problem",
    "agent_problem",
    "columns_ok",
    "is_hex64",
    "is_http_url",
    "is_label",
    "is_uuid",
    "step_ok",
    "step_problems",
    "steps_ok",
    "workflow_problems",
]

#: Largest seq accepted (exactly representable in every JSON implementation).
MAX_SEQ = MAX_SAFE_INTEGER
#: Why a step with a derived id but no profile members fails (receipts and proofs).
PROFILE_STRIPPED = (
    "profile stripped: receipt_id has the layout of an aer1-chain-v1 derived id (UUIDv8), "
    "but the profile members (profile, chain_head, prev_digest) are missing"
)
#: The :attr:`Problem.rule` of a step time not in its form (or not a real date), whatever the wording.
TIME_FORM = "time-form"
#: Gets each required member of a step, in :data:`STEP_REQUIRED_MEMBERS` order (the batch form's columns).
STEP_COLUMNS = tuple(map(itemgetter, STEP_REQUIRED_MEMBERS))

_KIND_SET = frozenset(KINDS)
_STATUS_SET = frozenset(STEP_STATUSES)
_REQUIRED = frozenset(STEP_REQUIRED_MEMBERS)
_N_REQUIRED = len(STEP_REQUIRED_MEMBERS)
_ALL = frozenset((*STEP_REQUIRED_MEMBERS, *STEP_OPTIONAL_MEMBERS))
_WORKFLOW_MEMBERS = frozenset(
    (*CLOSE_BOUND_MEMBERS, "steps", "merkle_root", "chain_head", "signature", TIMESTAMPS_MEMBER, KEY_PROOF_MEMBER)
)
_AGENT_MEMBERS = frozenset(AGENT_MEMBERS)
#: Longest key_proof value (base64 of a 64-byte Ed25519 signature is 88 characters).
_KEY_PROOF_CHARS = 88
_HEX_CHARS = 64 + 64 + 32  # two digests and a UUID without its dashes
_HEX_DIGITS = b"0123456789abcdef"
_HEX_LEN = 64
_ID_LEN = 36
_ID_DASHES = (8, 13, 18, 23)


@dataclass(frozen=True)
class Problem:
    """One broken member rule: its words, and what was expected and found where that helps."""

    message: str
    expected: str | None = None
    actual: str | None = None
    #: Which rule, where a caller words it its own way (:data:`TIME_FORM`); else empty.
    rule: str = ""
    #: The member the rule is about, where a caller words it its own way.
    member: str = ""


# ------------------------------------------------------------------ values


def is_label(v: Any) -> TypeGuard[str]:
    """A non-empty string."""
    return type(v) is str and v != ""


def is_http_url(v: Any) -> bool:
    """An http(s) URL (verify_url)."""
    return isinstance(v, str) and v.startswith(("https://", "http://"))


def _known(v: Any, names: frozenset[str]) -> bool:
    """True when ``v`` is one of ``names`` (a list or an object is not, and is never hashed)."""
    return type(v) is str and v in names


def _lower_hex(text: str) -> bool:
    """True when ``text`` is lowercase hex digits only (one C round trip, no regular expression)."""
    try:
        return bytes.fromhex(text).hex() == text  # fromhex skips whitespace, takes A-F: the round trip does not
    except ValueError:
        return False


# ------------------------------------------------------------------ one step


def step_ok(step: Any) -> bool:
    """A step of our profile (exactly a ``dict``) has no :func:`step_problems`: the quick test, most steps pass it."""
    if type(step) is not dict:
        return False
    keys = step.keys()
    if keys != _REQUIRED and not (_REQUIRED <= keys and keys <= _ALL):
        return False
    s, tool, agent, kind = step["seq"], step["tool"], step["agent"], step["kind"]
    if type(s) is not int or not 0 < s <= MAX_SEQ or type(tool) is not str or not tool:
        return False
    if type(agent) is not str or not agent or not _known(kind, _KIND_SET):
        return False
    if not _known(step["status"], _STATUS_SET):
        return False
    started, ended, rh, prev, rid = (step["started_at"], step["ended_at"], step["receipt_hash"],
                                     step["prev_digest"], step["receipt_id"])
    if type(started) is not str or type(ended) is not str or type(rh) is not str or type(prev) is not str:
        return False
    # Text order is time order only for two texts of the one fixed-width ASCII form, which
    # step_time_dates requires below: a pair that fails either goes to the detailed checks.
    if type(rid) is not str or ended < started:
        return False
    # the lengths fix where each value starts, so no value can borrow from its neighbour
    if (len(started) != STEP_TIME_CHARS or len(ended) != STEP_TIME_CHARS or len(rh) != 64 or len(prev) != 64
            or len(rid) != 36):
        return False
    if rid[8] != "-" or rid[13] != "-" or rid[18] != "-" or rid[23] != "-":
        return False
    digits = rh + prev + rid.replace("-", "")
    if len(digits) != _HEX_CHARS or not _lower_hex(digits):
        return False
    if not step_time_dates(started, ended):
        return False
    if len(keys) > _N_REQUIRED:
        for name in keys - _REQUIRED:
            value = step[name]
            if type(value) is not str or not value:
                return False
        if not TRACE_MEMBERS.keys().isdisjoint(keys) and trace_members_problem(step) is not None:
            return False
    return kind != LINK_KIND or is_uuid(step.get("target"))


def step_problems(step: Any, profile: bool) -> list[Problem]:
    """Every problem of one step, in the order the verifier reports them.

    ``profile``: the receipt claims our profile, so its members are required too. A
    problem of a value's type stops the checks that need that value.
    """
    if profile and step_ok(step):
        return []
    if not isinstance(step, dict):
        return [Problem("step is not an object")]
    s = step.get("seq")
    if type(s) is not int or not 0 < s <= MAX_SEQ:
        return [Problem(f"seq is not an integer from 1 to {MAX_SEQ}", actual=repr(s))]
    out: list[Problem] = []
    if not is_uuid(step.get("receipt_id")):
        out.append(Problem("receipt_id is not a lowercase UUID", actual=repr(step.get("receipt_id"))))
    if not is_label(step.get("tool")):
        out.append(Problem("tool is not a non-empty string"))
    if not is_hex64(step.get("receipt_hash")):
        out.append(Problem("receipt_hash is not 64 lowercase hex characters", actual=repr(step.get("receipt_hash"))))
    for name in ("started_at", "ended_at"):
        if not is_rfc3339(step.get(name)):
            out.append(Problem(f"{name} is not an RFC 3339 date-time with a real date", actual=repr(step.get(name)),
                               rule=TIME_FORM, member=name))
    if not is_label(step.get("status")):
        out.append(Problem("status is not a non-empty string"))
    if not profile:
        if not out and is_derived_id(step["receipt_id"]):
            # Only our chain derives UUIDv8 step ids: without the profile members the id
            # (and so a pinned root) would no longer bind the step's content.
            out.append(Problem(PROFILE_STRIPPED, actual=step["receipt_id"]))
        return out
    if out:
        return out
    if not _known(step.get("kind"), _KIND_SET):
        out.append(Problem("kind is not a known kind", actual=repr(step.get("kind"))))
    if not is_label(step.get("agent")):
        out.append(Problem("agent is not a non-empty string"))
    if not _known(step["status"], _STATUS_SET):
        out.append(Problem("status is not ok, error or cancelled", actual=repr(step["status"])))
    if not is_hex64(step.get("prev_digest")):
        out.append(Problem("prev_digest is not 64 lowercase hex characters"))
    for name in STEP_OPTIONAL_MEMBERS:
        if name in step and not is_label(step[name]):
            out.append(Problem(f"{name} is not a non-empty string"))
    trace_problem = None if out else trace_members_problem(step)  # a member not a string was named above
    if trace_problem is not None:
        out.append(Problem(trace_problem, actual=repr(step.get("trace_id", step.get("span_id")))))
    for name in ("started_at", "ended_at"):
        if not is_step_time_form(step[name]):
            out.append(Problem(f"{name} is not UTC with microseconds (YYYY-MM-DDTHH:MM:SS.ffffffZ)",
                               actual=step[name], rule=TIME_FORM, member=name))
    if not out and step["kind"] == LINK_KIND and not is_uuid(step.get("target")):
        out.append(Problem("link step target is not the child's workflow_id (a lowercase UUID)",
                           actual=repr(step.get("target"))))
    extra = set(step) - _ALL
    if extra:
        out.append(Problem(f"members outside the profile: {', '.join(sorted(extra))}"))
    if not out and _ended_before_started(step):
        out.append(Problem("ended_at is before started_at", expected=f">= {step['started_at']}",
                           actual=step["ended_at"]))
    return out


def _ended_before_started(step: Mapping[str, Any]) -> bool:
    """Compared as times (both already match the UTC microsecond form), never as text."""
    started, ended = parse_step_time(step["started_at"]), parse_step_time(step["ended_at"])
    return started is None or ended is None or ended < started


# ------------------------------------------------------------------ many steps


def steps_ok(run: Sequence[Any]) -> bool:
    """The batch form of :func:`step_ok`: every step of ``run`` passes it (and each string is within the limit).

    A string longer than ``MAX_STRING_CHARS`` makes it say no where :func:`step_ok` says
    yes: the batch form also stands for the JSON-value walk, which refuses such a string.
    """
    try:
        if not run or set(map(type, run)) != {dict}:
            return False
        return columns_ok(run, [tuple(map(get, run)) for get in STEP_COLUMNS])
    except KeyError:  # a required member missing
        return False


def columns_ok(run: Sequence[Any], columns: Sequence[tuple[Any, ...]], *, chained: bool = False) -> bool:
    """:func:`steps_ok` over steps (each exactly a ``dict``) whose required members the caller gathered.

    ``columns``: each of :data:`STEP_REQUIRED_MEMBERS`, one tuple per member over ``run``.
    ``chained``: the caller encodes every step with ``_chain.step_digests`` (which refuses
    any value not exactly a ``str`` or an ``int``) and compares each ``prev_digest`` after
    the first and each ``receipt_id`` with the digests: those rules are then proven there
    and not checked again here.
    """
    try:
        return _columns_ok(run, columns, chained)
    except (TypeError, ValueError, AttributeError):
        return False  # a value of the wrong type or shape met a C-level pass


def _columns_ok(run: Sequence[Any], columns: Sequence[tuple[Any, ...]], chained: bool) -> bool:
    n = len(run)
    sizes = list(map(len, run))
    if max(sizes) > _N_REQUIRED:  # optional members (a required one missing was a KeyError to the caller)
        if not _optional_members_ok([run[i] for i in compress(range(n), map(gt, sizes, repeat(_N_REQUIRED)))]):
            return False
    seqs, rids, tools, kinds, agents, hashes, started, ended, statuses, prevs = columns
    if set(map(type, seqs)) != {int} or min(seqs) < 1 or max(seqs) > MAX_SEQ:
        return False
    if not chained and any(set(map(type, column)) != {str} for column in columns[1:]):
        return False  # every other required member is exactly a string (chained: the digests refuse the rest)
    for labels in (tools, agents):
        if "" in labels or max(map(len, labels)) > MAX_STRING_CHARS:
            return False
        "".join(labels)  # TypeError unless every value is a string
    if not set(kinds) <= _KIND_SET or not set(statuses) <= _STATUS_SET:
        return False
    if LINK_KIND in kinds and not all(is_uuid(s.get("target")) for s, k in zip(run, kinds, strict=True)
                                      if k == LINK_KIND):
        return False
    if not (step_times_ok(started + ended) and all(map(ge, ended, started))):
        return False
    if not (_hex_ok(hashes) and is_hex64(prevs[0])) or set(map(len, prevs)) != {_HEX_LEN}:
        return False
    if set(map(type, rids)) != {str} or set(map(len, rids)) != {_ID_LEN}:
        return False
    ids = "".join(rids)
    dashes = "-" * n
    if any(ids[k::_ID_LEN] != dashes for k in _ID_DASHES):
        return False
    return chained or (_hex_ok(prevs) and not ids.replace("-", "").encode().translate(None, _HEX_DIGITS))


def _optional_members_ok(steps: list[dict[str, Any]]) -> bool:
    """Steps with members beyond the required ones: those are optional members, non-empty strings (trace ids hex)."""
    for step in steps:
        keys = step.keys()
        if not (_REQUIRED <= keys and keys <= _ALL):
            return False
        for name in keys - _REQUIRED:
            value = step[name]
            if type(value) is not str or not value or len(value) > MAX_STRING_CHARS:
                return False
        if not TRACE_MEMBERS.keys().isdisjoint(keys) and trace_members_problem(step) is not None:
            return False
    return True


def _hex_ok(values: tuple[Any, ...]) -> bool:
    """Each value is 64 lowercase hex digits: deleting those from the joined values leaves nothing."""
    if set(map(len, values)) != {_HEX_LEN}:
        return False
    text = "".join(values)
    return not text.encode().translate(None, _HEX_DIGITS)  # UTF-8 of non-ASCII is bytes of 0x80 and up


# ------------------------------------------------------------------ the workflow


def agent_problem(agent: Any) -> str | None:
    """Why one ``agents`` entry is malformed (worded after its place), or None."""
    if not isinstance(agent, dict) or not {"name", "type"} <= set(agent) or not set(agent) <= _AGENT_MEMBERS:
        return "is not an object with name, type and optional description, config_digest"
    if not is_label(agent["name"]) or not is_label(agent["type"]):
        return "name and type must be non-empty strings"
    if "description" in agent and type(agent["description"]) is not str:
        return "description is not a string"
    if "config_digest" in agent and not is_hex64(agent["config_digest"]):
        return "config_digest is not 64 lowercase hex characters"
    return None


def _agents_problem(agents: Any) -> Problem | None:
    if not isinstance(agents, list) or not agents:
        return Problem("agents is not a non-empty array")
    names: set[str] = set()
    for i, a in enumerate(agents):
        why = agent_problem(a)
        if why is not None:
            return Problem(f"agents[{i}] {why}")
        if a["name"] in names:
            return Problem(f"agents[{i}] repeats the agent {a['name']!r}")
        names.add(a["name"])
    return None


def workflow_problems(wf: Mapping[str, Any], profile: bool) -> list[Problem]:
    """Every problem of the workflow's own members (not its steps), in the order the verifier reports them."""
    out: list[Problem] = []
    if wf.get("type") != WORKFLOW_TYPE:
        out.append(Problem("type is not the workflow receipt type", expected=WORKFLOW_TYPE,
                           actual=repr(wf.get("type"))))
    if not is_label(wf.get("version")):
        out.append(Problem("version is not a non-empty string"))
    for name in ("workflow_id", "receipt_id"):
        if not is_uuid(wf.get(name)):
            out.append(Problem(f"{name} is not a lowercase UUID", actual=repr(wf.get(name))))
    for name in ("session_id", "goal", "status"):
        if not is_label(wf.get(name)):
            out.append(Problem(f"{name} is not a non-empty string"))
    for name in ("merkle_root", "output_hash"):
        if not is_hex64(wf.get(name)):
            out.append(Problem(f"{name} is not 64 lowercase hex characters", actual=repr(wf.get(name))))
    if not is_http_url(wf.get("verify_url")):
        out.append(Problem("verify_url is not an http(s) URL"))
    if "merkle_version" in wf and wf["merkle_version"] not in MERKLE_VERSIONS:
        out.append(Problem("merkle_version is not a known Section 8.1 version",
                           expected=" or ".join(MERKLE_VERSIONS), actual=repr(wf["merkle_version"])))
    if not profile:
        return out
    if wf.get("profile") != PROFILE:
        out.append(Problem("profile is not this construction", expected=PROFILE, actual=repr(wf.get("profile"))))
    if wf.get("version") != WORKFLOW_VERSION:
        out.append(Problem("version", expected=WORKFLOW_VERSION, actual=repr(wf.get("version"))))
    if wf.get("status") not in WORKFLOW_STATUSES:
        out.append(Problem("status is not ok, error or incomplete", actual=repr(wf.get("status"))))
    if wf.get("merkle_version") != MERKLE_VERSION:
        out.append(Problem("merkle_version", expected=MERKLE_VERSION, actual=repr(wf.get("merkle_version"))))
    if not is_hex64(wf.get("chain_head")):
        out.append(Problem("chain_head is not 64 lowercase hex characters", actual=repr(wf.get("chain_head"))))
    if "agents" in wf:
        agents = _agents_problem(wf["agents"])
        if agents is not None:
            out.append(agents)
    if "recording_failures" in wf:
        n = wf["recording_failures"]
        if type(n) is not int or n < 1:
            out.append(Problem("recording_failures is not a positive integer", actual=repr(n)))
    if "step_statuses" in wf:
        counts = wf["step_statuses"]
        if not (isinstance(counts, dict) and list(counts) == list(STEP_STATUSES)
                and all(type(v) is int and v >= 0 for v in counts.values())):
            out.append(Problem("step_statuses is not {ok, error, cancelled: counts}", actual=repr(counts)[:200]))
    if "closed_by" in wf and (wf["closed_by"] != CLOSED_BY_RECOVERY or wf.get("status") != "incomplete"):
        out.append(Problem(f"closed_by is not {CLOSED_BY_RECOVERY!r} on an incomplete receipt",
                           actual=repr(wf["closed_by"])))
    proof = wf.get(KEY_PROOF_MEMBER)
    if KEY_PROOF_MEMBER in wf and not (isinstance(proof, dict) and set(proof) == {"key_id", "value"}
                                       and is_hex64(proof["key_id"]) and type(proof["value"]) is str
                                       and len(proof["value"]) <= _KEY_PROOF_CHARS):
        out.append(Problem(f"{KEY_PROOF_MEMBER} is not {{key_id: 64 hex, value: base64 of a signature}}"))
    unknown = sorted(set(wf) - _WORKFLOW_MEMBERS)
    if unknown:
        out.append(Problem(f"members outside the profile: {', '.join(unknown)}"))
    return out
