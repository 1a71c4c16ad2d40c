"""Auditor policies: what must hold of a receipt beyond its own checks, failing closed.

A policy (``--require`` shorthands, a ``--policy`` TOML file, or both) adds one check,
``policy``, to a receipt's report. It can only add failures, so a receipt that is INVALID
without it stays INVALID. Every violation names its rule and the step seqs involved. The
file format and each rule form's meaning are in ``spec/policy.md``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .._canonical import CanonicalizationError
from .._chain import PROFILE
from .._content_hash import content_hash
from .._limits import MAX_PARSE_COST_BYTES, STREAM_MIN_BYTES, parse_cost
from .._link import LINK_KIND
from .._receipt import CLOSE_KIND, KINDS, is_hex64
from .._timefmt import parse_step_time
from .._vocabulary import VOCABULARY, follows_vocabulary
from ..errors import MalformedInputError
from ._disclosures import Fields, Unrevealed, find_unrevealed, revealed
from ._evidence import evidence_for, evidence_lines, parse_evidence_line
from ._parse import MalformedInput, parse_strict, read_limited
from ._report import FAIL, PASS, CheckResult, Failure, Report, same_bytes

__all__ = [
    "FORMAT",
    "POLICY_CHECK",
    "REQUIREMENTS",
    "Policy",
    "PolicyError",
    "Rule",
    "RuleViolation",
    "apply_policy",
    "evidence_for",
    "load_policy",
    "load_workflow",
    "parse_require",
]

#: The check a policy adds to a report; also the reason code of each violation.
POLICY_CHECK = "policy"
#: The one policy file format this verifier reads.
FORMAT = "aer1-policy-v1"
#: ``--require`` shorthands: each demands the check of that name with status PASS.
REQUIREMENTS = ("chain", "signature", "evidence", "timestamp", "log")
#: ``require.evidence`` levels for committed fields (spec/erasure.md); ``true`` is ERASED_ALLOWED.
EVIDENCE_COMPLETE, ERASED_ALLOWED = "complete", "allow-erased"
EVIDENCE_LEVELS = (EVIDENCE_COMPLETE, ERASED_ALLOWED)
#: A policy file is read whole: it is a short, human-written file.
MAX_POLICY_BYTES = 1024 * 1024
#: Trace rules and allow-list patterns per policy.
MAX_RULES = 1000
#: Step seqs a violation's text names (the count beyond is stated; its JSON ``seqs`` has every one).
MAX_SEQS_LISTED = 20
#: A tool call's ``arguments`` JSON string is parsed under this size (larger: the rule fails).
MAX_ARGUMENTS_BYTES = 1024 * 1024
#: Rule forms (``form = ...``) and the members each takes besides ``name`` and ``form``.
FORMS: dict[str, frozenset[str]] = {
    "approved_before": frozenset({"kind", "tool"}),
    "argument": frozenset({"tool", "argument", "max", "min", "pattern"}),
    "none_after": frozenset({"kind", "tool", "after", "until"}),
    "at_most": frozenset({"kind", "tool", "count"}),
}
_CONTENT_FORMS = frozenset({"approved_before", "argument"})
_REQUIRE_KEYS = frozenset({*REQUIREMENTS, "signers", "root_pinned", "head_pinned", "profile", "status", "max_steps",
                           "tsa_signers", "min_witnesses"})
_ALLOW_KEYS = frozenset({"agents", "tools"})
_TOP_KEYS = frozenset({"format", "name", "require", "allow", "rule", "trust"})
#: ``[trust]``: the files checks 9 and 10 trust, named by the policy (paths relative to it).
_TRUST_KEYS = frozenset({"keyring", "tsa_roots", "tsa_policy", "log_keys", "witnesses"})
#: ``[trust]`` members that list verifier keys (spec/log.md): key strings, or files relative to the policy.
_KEY_LISTS = ("log_keys", "witnesses")
_APPROVAL = "approval"
_TIMESTAMP = "timestamp"
#: The status collectors give a call that an approval denied or left pending, so it did not run.
_STOPPED = "cancelled"


class PolicyError(MalformedInputError):
    """A policy that cannot be used (unreadable, unknown member or rule form): a usage error."""


@dataclass(frozen=True)
class RuleViolation(Failure):
    """A failure of the ``policy`` check: which rule (its name from the file) and which steps."""

    rule: str = ""
    seqs: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON form: a failure plus ``rule`` and ``seqs``."""
        return {**super().to_dict(), "rule": self.rule, "seqs": list(self.seqs)}


@dataclass(frozen=True)
class Rule:
    """One trace rule; patterns are shell-style (``*``, ``?``, ``[...]``), matched case-sensitively."""

    name: str
    form: str
    kind: str = "*"
    tool: str = "*"
    after: str = "termination"
    until: str | None = None
    count: int = 0
    argument: tuple[str, ...] = ()
    max: float | None = None
    min: float | None = None
    pattern: str | None = None

    def matches(self, step: Mapping[str, Any]) -> bool:
        """True when ``step`` is one this rule constrains (the close step never is)."""
        kind = step.get("kind")
        return (isinstance(kind, str) and kind != CLOSE_KIND and fnmatch.fnmatchcase(kind, self.kind)
                and fnmatch.fnmatchcase(str(step.get("tool")), self.tool))


@dataclass(frozen=True)
class Policy:
    """What an auditor requires of every receipt; empty members require nothing."""

    name: str = "--require"
    digest: str | None = None
    require: frozenset[str] = frozenset()
    signers: frozenset[str] | None = None
    root_pinned: bool = False
    head_pinned: bool = False
    profile: str | None = None
    statuses: frozenset[str] | None = None
    max_steps: int | None = None
    tsa_signers: int | None = None
    #: What ``require.evidence`` takes of committed fields: "allow-erased" (erased by a trusted
    #: record, none withheld) or "complete" (every one disclosed and checked); spec/erasure.md.
    evidence_fields: str = "allow-erased"
    #: ``[trust]``: a keyring file, a folder of TSA certificates and a TSA policy OID.
    keyring: str | None = None
    tsa_roots: str | None = None
    tsa_policy: str | None = None
    agents: tuple[str, ...] | None = None
    tools: tuple[str, ...] | None = None
    rules: tuple[Rule, ...] = field(default=())
    #: ``[trust] log_keys`` / ``witnesses`` and ``[require] min_witnesses``: the log check's trust.
    log_keys: tuple[str, ...] = ()
    witnesses: tuple[str, ...] = ()
    min_witnesses: int | None = None

    @property
    def needs_workflow(self) -> bool:
        """True when evaluating needs the receipt's members and steps, not only the report."""
        return bool(self.statuses is not None or self.agents is not None or self.tools is not None or self.rules)

    def with_requirements(self, names: Iterable[str]) -> Policy:
        """This policy with the ``--require`` shorthands ``names`` added."""
        return replace(self, require=self.require | frozenset(names))

    def describe(self) -> dict[str, Any]:
        """What the policy is, for a summary: its name, file digest and shorthands."""
        return {"name": self.name, "digest": self.digest, "require": sorted(self.require)}


def parse_require(text: str) -> frozenset[str]:
    """The ``--require`` list (``chain,signature``); an unknown name is a usage error."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise PolicyError(f"--require: got {text!r}, want a comma-separated list of {', '.join(REQUIREMENTS)}")
    for n in names:
        if n not in REQUIREMENTS:
            raise PolicyError(f"--require: unknown requirement {n!r} (want one of {', '.join(REQUIREMENTS)})")
    return frozenset(names)


def _only(table: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise PolicyError(f"{where}: unknown member {unknown[0]!r} (want one of {', '.join(sorted(allowed))})")


def _typed(value: Any, kind: type | tuple[type, ...], where: str, want: str) -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise PolicyError(f"{where}: got {type(value).__name__} {value!r}, want {want}")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    _typed(value, list, where, "a list of strings")
    if len(value) > MAX_RULES:
        raise PolicyError(f"{where}: more than {MAX_RULES} entries")
    return tuple(_typed(v, str, where, "a list of strings") for v in value)


def _number(value: Any, where: str) -> float:
    _typed(value, (int, float), where, "a number")
    if not math.isfinite(value):
        raise PolicyError(f"{where}: got {value!r}, want a finite number")
    return float(value)


def _rule(table: Any, index: int) -> Rule:
    where = f"rule {index}"
    _typed(table, dict, where, "a table")
    name = _typed(table.get("name"), str, f"{where}: name", "a non-empty string")
    if not name:
        raise PolicyError(f"{where}: name is empty")
    where = f"rule {name!r}"
    form = table.get("form")
    if form not in FORMS:
        raise PolicyError(f"{where}: unknown rule form {form!r} (want one of {', '.join(FORMS)})")
    _only(table, FORMS[form] | {"name", "form"}, where)
    args: dict[str, Any] = {}
    for key in ("kind", "tool", "after", "until"):
        if key in table:
            args[key] = _typed(table[key], str, f"{where}: {key}", "a string (pattern)")
    until = args.get("until")
    if until is not None and (until not in KINDS or until == CLOSE_KIND
                              or fnmatch.fnmatchcase(until, args.get("after", Rule.after))):
        # a pattern, or the kind that starts a quiet part, would end every quiet part at
        # once and so quietly disable the rule: only one other step kind may end it
        raise PolicyError(f"{where}: until: got {until!r}, want one step kind other than the one `after` "
                          f"matches (one of {', '.join(k for k in KINDS if k != CLOSE_KIND)})")
    if form == "approved_before":
        args.setdefault("kind", "tool_call")
    if form == "argument":
        path = _typed(table.get("argument"), str, f"{where}: argument", "a dotted argument name")
        if not path or any(not part for part in path.split(".")):
            raise PolicyError(f"{where}: argument: got {path!r}, want a dotted argument name")
        args["argument"] = tuple(path.split("."))
        args["kind"] = "tool_call"
        for bound in ("max", "min"):
            if bound in table:
                args[bound] = _number(table[bound], f"{where}: {bound}")
        if "pattern" in table:
            pattern = _typed(table["pattern"], str, f"{where}: pattern", "a regular expression")
            try:
                re.compile(pattern, re.ASCII)  # \d, \w and [a-z] mean ASCII only, as every format checked
            except (re.error, ValueError, OverflowError, RecursionError) as e:  # (?u) with ASCII: ValueError
                raise PolicyError(f"{where}: pattern {pattern!r} is not a regular expression: {e}") from e
            args["pattern"] = pattern
        if not {"max", "min", "pattern"} & set(table):
            raise PolicyError(f"{where}: an argument rule needs max, min or pattern")
    if form == "at_most":
        count = _typed(table.get("count"), int, f"{where}: count", "an integer >= 0")
        if count < 0:
            raise PolicyError(f"{where}: count: got {count}, want an integer >= 0")
        args["count"] = count
    return Rule(name=name, form=form, **args)


def load_policy(path: str) -> Policy:
    """Read and check a policy file; anything it cannot use is a :class:`PolicyError`."""
    if sys.version_info >= (3, 11):  # the TOML reader loads only when a policy is read
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found,no-redef,unused-ignore]

    try:
        data = read_limited(path, MAX_POLICY_BYTES, what="a policy file")
    except MalformedInput as e:
        raise PolicyError(f"--policy {path}: {e}") from e
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise PolicyError(f"--policy {path}: not a TOML file: {e}") from e
    except RecursionError as e:  # the TOML reader recurses once per nested array or inline table
        raise PolicyError(f"--policy {path}: nested too deeply to be a policy") from e
    try:
        return _policy(doc, hashlib.sha256(data).hexdigest(), os.path.dirname(os.path.abspath(path)))
    except PolicyError as e:
        raise PolicyError(f"--policy {path}: {e}") from e


def _policy(doc: dict[str, Any], digest: str, folder: str) -> Policy:
    _only(doc, _TOP_KEYS, "top level")
    trust = _typed(doc.get("trust", {}), dict, "[trust]", "a table")
    _only(trust, _TRUST_KEYS, "[trust]")
    named = {k: _typed(v, str, f"[trust] {k}", "a string") for k, v in trust.items() if k not in _KEY_LISTS}
    keys = {k: tuple(v if "+" in v else os.path.join(folder, v) for v in _strings(trust[k], f"[trust] {k}"))
            for k in _KEY_LISTS if k in trust}
    for key in ("keyring", "tsa_roots"):
        if key in named:
            named[key] = os.path.join(folder, named[key])  # relative to the policy file
    if doc.get("format") != FORMAT:
        raise PolicyError(f"format: got {doc.get('format')!r}, want {FORMAT!r}")
    name = _typed(doc.get("name", "policy"), str, "name", "a string")
    req = _typed(doc.get("require", {}), dict, "[require]", "a table")
    _only(req, _REQUIRE_KEYS, "[require]")
    require = set()
    evidence_fields = ERASED_ALLOWED
    if isinstance(req.get("evidence"), str):  # "complete" or "allow-erased": evidence, and what of committed fields
        evidence_fields = req["evidence"]
        if evidence_fields not in EVIDENCE_LEVELS:
            raise PolicyError(f"[require] evidence: got {evidence_fields!r}, want true, false or one of "
                              f"{', '.join(repr(x) for x in EVIDENCE_LEVELS)}")
        req = {**req, "evidence": True}
    for key in (*REQUIREMENTS, "root_pinned", "head_pinned"):
        if _typed(req.get(key, False), bool, f"[require] {key}", "true or false") and key in REQUIREMENTS:
            require.add(key)
    signers = None
    if "signers" in req:
        signers = frozenset(_strings(req["signers"], "[require] signers"))
        bad = sorted(s for s in signers if not is_hex64(s))
        if bad or not signers:
            raise PolicyError(f"[require] signers: got {bad[0] if bad else 'an empty list'!r}, "
                              "want key ids (64 lowercase hex characters)")
    profile = req.get("profile")
    if profile is not None and profile != PROFILE:
        raise PolicyError(f"[require] profile: got {profile!r}, want {PROFILE!r}")
    statuses = frozenset(_strings(req["status"], "[require] status")) if "status" in req else None
    max_steps = None
    if "max_steps" in req:
        max_steps = _typed(req["max_steps"], int, "[require] max_steps", "an integer >= 1")
        if max_steps < 1:
            raise PolicyError(f"[require] max_steps: got {max_steps}, want an integer >= 1")
    tsa_signers = None
    if "tsa_signers" in req:
        tsa_signers = _typed(req["tsa_signers"], int, "[require] tsa_signers", "an integer >= 1")
        if tsa_signers < 1:
            raise PolicyError(f"[require] tsa_signers: got {tsa_signers}, want an integer >= 1")
    min_witnesses = None
    if "min_witnesses" in req:
        min_witnesses = _typed(req["min_witnesses"], int, "[require] min_witnesses", "an integer >= 0")
        if min_witnesses < 0:
            raise PolicyError(f"[require] min_witnesses: got {min_witnesses}, want an integer >= 0")
    allow = _typed(doc.get("allow", {}), dict, "[allow]", "a table")
    _only(allow, _ALLOW_KEYS, "[allow]")
    rules_doc = _typed(doc.get("rule", []), list, "[[rule]]", "an array of tables")
    if len(rules_doc) > MAX_RULES:
        raise PolicyError(f"[[rule]]: more than {MAX_RULES} rules")
    rules = tuple(_rule(r, i + 1) for i, r in enumerate(rules_doc))
    names = [r.name for r in rules]
    if len(set(names)) != len(names):
        raise PolicyError(f"[[rule]]: two rules are named {next(n for n in names if names.count(n) > 1)!r}")
    return Policy(
        name=name,
        digest=digest,
        require=frozenset(require),
        signers=signers,
        root_pinned=bool(req.get("root_pinned", False)),
        head_pinned=bool(req.get("head_pinned", False)),
        profile=profile,
        statuses=statuses,
        max_steps=max_steps,
        tsa_signers=tsa_signers,
        evidence_fields=evidence_fields,
        keyring=named.get("keyring"),
        tsa_roots=named.get("tsa_roots"),
        tsa_policy=named.get("tsa_policy"),
        agents=_strings(allow["agents"], "[allow] agents") if "agents" in allow else None,
        tools=_strings(allow["tools"], "[allow] tools") if "tools" in allow else None,
        rules=rules,
        log_keys=keys.get("log_keys", ()),
        witnesses=keys.get("witnesses", ()),
        min_witnesses=min_witnesses,
    )


# ------------------------------------------------------------------ evaluation


class _Check:
    """Collects violations into the ``policy`` check result."""

    def __init__(self, result: CheckResult) -> None:
        self.result = result
        self.rules: list[str] = []

    def violate(self, rule: str, message: str, seqs: Sequence[int] = (), *, expected: Any = None,
                actual: Any = None) -> None:
        listed = tuple(seqs[:MAX_SEQS_LISTED])
        more = f" (and {len(seqs) - len(listed)} more: --json lists every step)" if len(seqs) > len(listed) else ""
        where = f"steps {', '.join(map(str, listed))}{more}: " if len(seqs) > 1 else ""
        self.result.failures.append(RuleViolation(
            POLICY_CHECK, f"rule {rule}: {where}{message}", listed[0] if len(listed) == 1 else None,
            None if expected is None else str(expected), None if actual is None else str(actual),
            rule=rule, seqs=tuple(seqs)))
        self.result.status = FAIL
        if not self.result.detail:
            self.result.detail = self.result.failures[0].reason
        self.rules.append(rule)


def _status(report: Report, name: str) -> str | None:
    return next((c.status for c in report.checks if c.name == name), None)


def _requirements(policy: Policy, report: Report, out: _Check) -> None:
    for name in sorted(policy.require):
        status = _status(report, name)
        if status is None:
            out.violate(f"require.{name}", f"no {name} check ran, so it cannot be shown to hold",
                        expected=PASS, actual="no such check")
        elif status != PASS:
            detail = report.check(name).detail
            out.violate(f"require.{name}", f"the {name} check did not pass: {detail}", expected=PASS, actual=status)
        elif name == "evidence":
            _committed_fields(policy, report, out)
    basis = report.basis()
    if policy.signers is not None and basis.get("key_id") not in policy.signers:
        out.violate("require.signers", "not signed by a key the policy names",
                    expected=" or ".join(sorted(policy.signers)), actual=basis.get("key_id") or basis.get("signature"))
    for pin, wanted in (("root", policy.root_pinned), ("head", policy.head_pinned)):
        if wanted and basis.get(pin) != "pinned":
            out.violate(f"require.{pin}_pinned", f"the {pin} is not pinned (give --expected-{pin})",
                        expected="pinned", actual=basis.get(pin))
    if policy.profile is not None and (report.profile != policy.profile or _status(report, "chain") != PASS):
        out.violate("require.profile", "the receipt is not a checked receipt of this profile",
                    expected=policy.profile, actual=report.profile or "no profile")
    if policy.tsa_signers is not None:
        stamp = next((c for c in report.checks if c.name == _TIMESTAMP and c.status == PASS), None)
        signers = stamp.facts.get("signers") if stamp is not None else None
        got = len(signers) if isinstance(signers, list) else 0
        if got < policy.tsa_signers:
            why = "" if stamp is not None else " (the timestamp check did not pass)"
            out.violate("require.tsa_signers", f"too few tokens verified from distinct TSA signing certificates{why}",
                        expected=f"at least {policy.tsa_signers}", actual=got)
    if policy.max_steps is not None and (report.steps is None or report.steps > policy.max_steps):
        out.violate("require.max_steps", "too many steps", expected=f"at most {policy.max_steps}",
                    actual=report.steps)


def _committed_fields(policy: Policy, report: Report, out: _Check) -> None:
    """``require.evidence`` of committed fields: none withheld; with "complete", none erased either."""
    fields = report.committed_fields()
    if fields is None:
        return
    if fields.withheld:
        out.violate("require.evidence", f"{len(fields.withheld)} committed field(s) withheld (no disclosure and no "
                    "erasure record by a trusted key): the evidence is not fully checked",
                    sorted({seq for seq, _ in fields.withheld}), expected="every committed field checked or erased",
                    actual=", ".join(f"step {s} {p}" for s, p in fields.withheld[:5]))
    if policy.evidence_fields == EVIDENCE_COMPLETE and fields.erased:
        out.violate("require.evidence", f"{len(fields.erased)} committed field(s) erased, and the policy requires "
                    "complete evidence", sorted({seq for seq, _ in fields.erased}), expected="complete",
                    actual="erased")


def load_workflow(path: str, report: Report | None = None) -> tuple[dict[str, Any] | None, str]:
    """The receipt at ``path`` parsed again (the bytes ``report`` verified, when given), or None and why not."""
    try:
        data = read_limited(path, STREAM_MIN_BYTES - 1)
        if parse_cost(data) > MAX_PARSE_COST_BYTES:
            raise MalformedInput("costly to hold parsed")
        if report is not None and not same_bytes(data, report):  # verified in memory, so its digest is known
            return None, "the receipt changed while it was verified"
        wf = parse_strict(data, what=path)
    except MalformedInput as e:
        return None, f"the receipt cannot be read again for the policy: {e}"
    if not isinstance(wf, dict) or not isinstance(wf.get("steps"), list):
        return None, "the receipt has no steps"
    return wf, ""


def _is_approved(content: Any) -> bool:
    """An approval content that records a decision to approve, and nothing that says otherwise.

    ``decision`` is the built-in gate's and Agent Framework's form, ``approved`` autogen-core's;
    a content carrying both must have both say approved.
    """
    if not isinstance(content, dict):
        return False
    # ``is True`` and a str compare: JSON 1 or 1.0 equals True in Python, yet records no approval.
    says = [content[k] is True if k == "approved" else content[k] == "approved"
            for k in ("decision", "approved") if k in content]
    return bool(says) and all(says)


#: Members of an approval content that name the tool approved: the built-in gate's and the
#: core API's ``tool``, Agent Framework's ``function``.
_APPROVED_TOOL_MEMBERS = ("tool", "function")
#: ... and the step vocabulary's ``name`` (spec/steps.md, *approval*).
_VOCABULARY_TOOL_MEMBERS = ("name",)


def _approves_tool(content: Any, tool: Any) -> bool:
    """False when the approval content names a tool (in any member, null naming none) other than ``tool``."""
    members = _VOCABULARY_TOOL_MEMBERS if follows_vocabulary(content) else _APPROVED_TOOL_MEMBERS
    return not isinstance(content, dict) or all(content.get(k) in (None, tool) for k in members)


def _argument(content: Any, path: tuple[str, ...]) -> tuple[bool, Any]:
    """The argument at ``path`` of a tool call written in the step vocabulary (spec/steps.md).

    A content without the vocabulary's marker predates it: its arguments may be an object,
    the model's text or a framework's own form, so the rule says so instead of guessing.
    """
    if not follows_vocabulary(content):
        return False, (f"its content predates the step vocabulary ({VOCABULARY}, spec/steps.md): "
                       "its arguments are not read")
    if content.get("arguments_malformed") is True:
        return False, "its arguments are malformed text (arguments_malformed), not a JSON object"
    value: Any = content.get("arguments")
    for part in path:
        if isinstance(value, Unrevealed):
            break
        if not isinstance(value, dict) or part not in value:
            return False, f"no argument {'.'.join(path)}"
        value = value[part]
    hidden = find_unrevealed(value)
    if hidden is not None:  # said, never passed or failed as if it were a value
        return False, f"argument {'.'.join(path)} was {hidden.describe()}: the rule cannot be evaluated over it"
    return True, value


def _contents(wf: Mapping[str, Any], evidence: str, seqs: set[int], fields: Fields | None = None) -> dict[int, Any]:
    """The evidence content of each step in ``seqs``, each re-hashed against its step's receipt_hash.

    Called only after the evidence check passed, so line N + 1 holds step N; re-hashing
    binds each content used here to the receipt even if the file changed since.
    """
    steps = wf["steps"]
    out: dict[int, Any] = {}
    if not seqs:
        return out
    last = max(seqs)
    for number, line in evidence_lines(evidence):
        seq = number - 1
        if seq in seqs:
            record = parse_evidence_line(line, number)
            content = record.get("content") if isinstance(record, dict) else None
            try:
                digest = content_hash(content)
            except CanonicalizationError as e:
                raise MalformedInput(f"evidence line {number}: {e}") from e
            if not isinstance(record, dict) or record.get("seq") != seq or digest != steps[seq - 1]["receipt_hash"]:
                raise MalformedInput(f"evidence line {number} no longer matches step {seq}")
            out[seq] = revealed(content, seq, fields)  # committed fields as disclosed, or Unrevealed
        if seq >= last:
            break
    return out


def _allow(policy: Policy, steps: list[Any], out: _Check) -> None:
    for member, patterns in (("agents", policy.agents), ("tools", policy.tools)):
        if patterns is None:
            continue
        field_name = "agent" if member == "agents" else "tool"
        bad: dict[str, list[int]] = {}
        for s in steps:
            value = str(s.get(field_name))
            picked = s.get("kind") != CLOSE_KIND if member == "agents" else s.get("kind") == "tool_call"
            if picked and not any(fnmatch.fnmatchcase(value, p) for p in patterns):
                bad.setdefault(value, []).append(s["seq"])
        for value, seqs in bad.items():
            out.violate(f"allow.{member}", f"{field_name} {value!r} is not allowed", seqs,
                        expected=" | ".join(patterns), actual=value)


def _approved_before(rule: Rule, steps: list[Any], contents: dict[int, Any], out: _Check) -> None:
    open_approvals: list[Mapping[str, Any]] = []
    for s in steps:
        if s.get("kind") == _APPROVAL:
            open_approvals.append(s)
            continue
        if not rule.matches(s):
            continue
        call_id = s.get("call_id")
        found = None
        denied = None
        other_arguments = None
        late = None
        for a in open_approvals:
            content = contents.get(a["seq"])
            if a.get("call_id") != call_id or (s.get("kind") == "tool_call" and not _approves_tool(content, s["tool"])):
                continue
            if not _is_approved(content):
                denied = a
            elif not _decided_before(a, s):
                late = a  # recorded first, yet decided after the step had started: it did not gate it
            elif not _same_arguments(content, contents.get(s["seq"])):
                other_arguments = a
            else:
                found = a
                break
        if found is not None:
            open_approvals.remove(found)  # one approval lets one step through
            continue
        if denied is not None and s.get("status") == _STOPPED:
            continue  # the gate worked: its approval said no and the call did not run
        which = f"call id {call_id}" if call_id is not None else "no call id"
        hidden = None if other_arguments is None else next(
            (h for c in (contents.get(other_arguments["seq"]), contents.get(s["seq"])) if isinstance(c, dict)
             for h in [find_unrevealed([c.get(m) for m in _ARGUMENT_FORMS])] if h is not None), None)
        if hidden is not None:
            why = (f"; the arguments at step {hidden.seq} ({hidden.path}) were {hidden.describe()}, so the approval "
                   f"at step {other_arguments['seq']} cannot be bound to them")  # type: ignore[index]
        elif other_arguments is not None:
            why = f"; the approval at step {other_arguments['seq']} approved other arguments"
        elif late is not None:
            why = f"; the approval at step {late['seq']} was decided after the step started"
        elif denied is not None:
            why = f"; the approval at step {denied['seq']} was not approved"
        else:
            why = ""
        out.violate(rule.name, f"{s.get('kind')} {s.get('tool')!r} has no approved approval before it ({which}){why}",
                    [s["seq"]])


def _decided_before(approval: Mapping[str, Any], step: Mapping[str, Any]) -> bool:
    """True when the approval ended no later than the step started.

    Steps are recorded when they end, so seq order alone lets a call that started first
    and an approval given while it ran pass as "approved before". The chain binds both
    times; they are compared as parsed times, and a text that is not one approves nothing.
    """
    ended, started = parse_step_time(approval.get("ended_at")), parse_step_time(step.get("started_at"))
    return ended is not None and started is not None and ended <= started


def _arguments_key(content: Any, member: str) -> str | None:
    """What a content says its arguments were, as one comparable string (None: it does not say).

    ``arguments_digest`` is the gate's SHA-256 of the arguments' RFC 8785 bytes; ``arguments``
    (an object, or JSON text of one, as models send it) is hashed the same way, so the two
    forms compare with each other, key order and spacing do not matter and value types do.
    Unreadable arguments compare as themselves, never as equal to readable ones.
    """
    if not isinstance(content, dict) or content.get(member) is None:
        return None
    value = content[member]
    if member == "arguments_digest":
        return f"sha256:{value}" if is_hex64(value) else f"digest:{value!r}"
    if isinstance(value, str) and len(value) <= MAX_ARGUMENTS_BYTES:
        try:
            value = parse_strict(value.encode("utf-8", "surrogatepass"), what="arguments")
        except MalformedInput:
            return f"text:{value}"
    try:
        return "sha256:" + content_hash(value)
    except CanonicalizationError:
        return f"repr:{value!r}"


_ARGUMENT_FORMS = ("arguments_digest", "arguments")


def _same_arguments(approval: Any, step: Any) -> bool:
    """False when the approval and the step both name their arguments, and they differ.

    The built-in gate records ``arguments_digest`` on both, over the unredacted arguments
    (its recorded ``arguments`` are redacted on one side only), so that is compared when
    both have it; otherwise ``arguments``. When they share no form, one side's digest is
    compared with the other side's arguments hashed alike: naming the approved call only by
    digest and the call that ran only by value binds no less. When either content does not
    name its arguments there is nothing to bind, and the approval counts.
    """
    approved = {m: _arguments_key(approval, m) for m in _ARGUMENT_FORMS}
    ran = {m: _arguments_key(step, m) for m in _ARGUMENT_FORMS}
    for m in _ARGUMENT_FORMS:
        if approved[m] is not None and ran[m] is not None:
            return approved[m] == ran[m]
    said, done = next((k for k in approved.values() if k), None), next((k for k in ran.values() if k), None)
    return said is None or done is None or said == done


def _argument_rule(rule: Rule, steps: list[Any], contents: dict[int, Any], out: _Check) -> None:
    name = ".".join(rule.argument)
    for s in steps:
        if not rule.matches(s):
            continue
        ok, value = _argument(contents.get(s["seq"]), rule.argument)
        if not ok:
            out.violate(rule.name, f"tool {s['tool']!r}: {value}", [s["seq"]])
            continue
        if rule.max is not None or rule.min is not None:
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number:
                out.violate(rule.name, f"tool {s['tool']!r}: argument {name} is not a number", [s["seq"]],
                            expected="a number", actual=repr(value)[:80])
                continue
            if rule.max is not None and value > rule.max:
                out.violate(rule.name, f"tool {s['tool']!r}: argument {name} is too large", [s["seq"]],
                            expected=f"at most {rule.max:g}", actual=value)
            if rule.min is not None and value < rule.min:
                out.violate(rule.name, f"tool {s['tool']!r}: argument {name} is too small", [s["seq"]],
                            expected=f"at least {rule.min:g}", actual=value)
        if rule.pattern is not None and not (isinstance(value, str) and re.fullmatch(rule.pattern, value, re.ASCII)):
            out.violate(rule.name, f"tool {s['tool']!r}: argument {name} does not match", [s["seq"]],
                        expected=f"/{rule.pattern}/", actual=repr(value)[:80])


def _none_after(rule: Rule, steps: list[Any], out: _Check) -> None:
    """Each quiet part, from a step matching ``after`` to the next matching ``until`` (or the end)."""
    start: int | None = None
    seqs: list[int] = []

    def close() -> None:
        if start is not None and seqs:
            out.violate(rule.name, f"{rule.kind} step after the {rule.after} at step {steps[start]['seq']}", seqs)

    for i, s in enumerate(steps):
        kind = str(s.get("kind"))
        if start is None:
            if fnmatch.fnmatchcase(kind, rule.after):
                start, seqs = i, []
        elif rule.until is not None and kind != CLOSE_KIND and fnmatch.fnmatchcase(kind, rule.until):
            close()
            start = None
            if fnmatch.fnmatchcase(kind, rule.after):
                start, seqs = i, []
        elif rule.matches(s):
            seqs.append(s["seq"])
    close()


def _at_most(rule: Rule, steps: list[Any], out: _Check) -> None:
    seqs = [s["seq"] for s in steps if rule.matches(s)]
    if len(seqs) > rule.count:
        out.violate(rule.name, f"{len(seqs)} steps match, more than {rule.count}", seqs[rule.count:],
                    expected=f"at most {rule.count}", actual=len(seqs))


def _steps_rules(policy: Policy, report: Report, wf: dict[str, Any], evidence: str | None, out: _Check) -> None:
    steps = wf["steps"]
    if policy.statuses is not None and wf.get("status") not in policy.statuses:
        out.violate("require.status", "receipt status not allowed", expected=" or ".join(sorted(policy.statuses)),
                    actual=wf.get("status"))
    _allow(policy, steps, out)
    needed: set[int] = set()
    content_rules = [r for r in policy.rules if r.form in _CONTENT_FORMS]
    for r in content_rules:
        needed.update(s["seq"] for s in steps
                      if (r.form == "approved_before" and s.get("kind") == _APPROVAL) or r.matches(s))
    contents: dict[int, Any] = {}
    missing = None
    if content_rules:
        if _status(report, "evidence") != PASS or evidence is None:
            missing = "it needs the step contents, and the evidence check did not pass"
        else:
            try:
                contents = _contents(wf, evidence, needed, report.committed_fields())
            except (MalformedInput, OSError) as e:
                missing = f"it needs the step contents, and the evidence cannot be read again: {e}"
    for rule in policy.rules:
        if rule.form in _CONTENT_FORMS and missing is not None:
            out.violate(rule.name, missing, expected="evidence checked", actual=_status(report, "evidence"))
        elif rule.form == "approved_before":
            _approved_before(rule, steps, contents, out)
        elif rule.form == "argument":
            _argument_rule(rule, steps, contents, out)
        elif rule.form == "none_after":
            _none_after(rule, steps, out)
        else:
            _at_most(rule, steps, out)


def _workflow_parts(policy: Policy) -> list[str]:
    names = [f"rule {r.name}" for r in policy.rules]
    names += [f"allow.{m}" for m, v in (("agents", policy.agents), ("tools", policy.tools)) if v is not None]
    return names + (["require.status"] if policy.statuses is not None else [])


def _unevaluated_children(policy: Policy, workflow: Mapping[str, Any] | None) -> str:
    """What a pass does not cover: the steps of linked child receipts, which only their own receipts hold."""
    links = sum(s.get("kind") == LINK_KIND for s in workflow["steps"]) if workflow is not None else 0
    if not (links and policy.needs_workflow):
        return ""
    return (f"; over this receipt's own steps only: the steps of its {links} linked child receipt(s) were not "
            "evaluated (verify each child with this policy)")


def apply_policy(report: Report, policy: Policy, receipt: str | None, evidence: str | None,
                 workflow: dict[str, Any] | None = None) -> list[str]:
    """Add the ``policy`` check to ``report``; returns the names of the rules violated.

    ``receipt``: the file verified (read again when the policy looks at steps), or
    ``workflow``: the receipt already parsed. ``evidence``: the evidence file the report
    checked. Whatever cannot be evaluated fails, naming why: nothing passes vacuously.
    """
    result = CheckResult(len(report.checks) + 1, POLICY_CHECK)
    report.checks.append(result)
    out = _Check(result)
    if report.malformed:
        result.skip("the receipt could not be read")
        return []
    _requirements(policy, report, out)
    if policy.needs_workflow:
        why = ""
        if _status(report, "chain") != PASS:
            why = "the steps are not bound: the chain check did not pass"
        elif workflow is None and receipt is not None:
            workflow, why = load_workflow(receipt, report)
        elif workflow is None:
            why = "the receipt is not available to evaluate rules over its steps"
        if workflow is not None and not why and (workflow.get("workflow_id") != report.workflow_id
                                                 or len(workflow["steps"]) != report.steps):
            why = "the receipt changed while it was verified"
        if why or workflow is None:
            for part in _workflow_parts(policy):
                rule = part.removeprefix("rule ")
                out.violate(rule, why, expected="evaluated", actual="not evaluated")
        else:
            _steps_rules(policy, report, workflow, evidence, out)
    if result.status != FAIL:
        if policy.digest is None:
            result.passed(f"required {', '.join(sorted(policy.require))}: all PASS")
        else:
            result.passed(f"policy {policy.name!r} holds ({len(policy.rules)} rules; file sha256 {policy.digest[:16]})"
                          + _unevaluated_children(policy, workflow))
    return sorted(set(out.rules))
