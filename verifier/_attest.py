"""Signed verification summaries: ``--attest KEY -o FILE`` writes one, ``--summary FILE`` re-checks it.

A summary names each receipt verified (its path and SHA-256, and its evidence file's), the
verdict and what it rested on, the policy (its file's digest), the verifier version and
the time. It is signed with the receipts' Ed25519 construction (spec/signature.md) under
its own type tag, so a receipt signature can never pass as a summary signature or the
reverse. Re-checking a summary verifies its signature and re-hashes every file it names.
"""

from __future__ import annotations

from typing import Any

from .._canonical import CanonicalizationError
from .._outfile import replace_file
from .._signing import SignatureInvalid, load_private_key, parse_signature, sign_receipt, verify_signature
from .._timefmt import format_ns, now_ns
from .._version import __version__
from ._kind import SUMMARY_MEMBERS, SUMMARY_TYPE, SUMMARY_VERSION
from ._output import CliError, one_line
from ._parse import MalformedInput, file_sha256, parse_strict, read_input
from ._policy import Policy
from ._report import FAIL, NOT_CHECKED, PASS, CheckResult
from ._tally import SCHEMA, Outcome, Tally

__all__ = ["SUMMARY_PAYLOAD_TYPE", "SUMMARY_TYPE", "SummaryWriter", "check_summary"]

#: The type tag signed with a summary (a receipt's is ``application/vnd.aer1.workflow-receipt+json``).
SUMMARY_PAYLOAD_TYPE = b"application/vnd.aer1.verification-summary+json"
_MEMBERS = SUMMARY_MEMBERS
#: ``options`` members that name an input file (``{"path", "sha256"}``, or a list of them for TSA roots).
_INPUT_FILES = (("keyring", "--keyring"), ("policy_file", "--policy"), ("receipt", "--receipt"),
                ("tsa_roots", "--tsa-roots"))
#: The verdict a file skipped as not a receipt has in a summary's entries.
SKIPPED = "SKIPPED"
#: A summary file is read whole; one entry per receipt stays well under this at the file-count limit.
MAX_SUMMARY_BYTES = 256 * 1024 * 1024


class SummaryWriter:
    """Collects one short entry per receipt, then writes the signed summary."""

    def __init__(self, key_path: str, out: str, policy: Policy | None, options: dict[str, Any]) -> None:
        try:
            self.key = load_private_key(key_path)
        except ValueError as e:
            raise CliError(f"--attest {key_path}: {e}") from e
        self.out = out
        self.policy = policy
        self.options = options
        self.entries: list[dict[str, Any]] = []

    def add(self, o: Outcome) -> None:
        """One receipt's entry: what was verified (its bytes' digest) and the verdict."""
        r = o.report
        self.entries.append({
            "path": r.source,
            "sha256": o.sha256,
            "evidence": o.evidence if o.evidence_sha256 is not None else None,
            "evidence_sha256": o.evidence_sha256,
            "verdict": SKIPPED if o.skipped is not None else r.verdict,
            "skipped": o.skipped,
            "workflow_id": r.workflow_id,
            "basis": None if r.malformed else r.basis(),
            "reasons": [] if o.skipped is not None else sorted({f.check for f in r.failures}),
            "rules": list(o.rules),
        })

    def write(self, tally: Tally) -> None:
        """Sign and write the summary (to a temporary beside ``out``, then renamed)."""
        doc: dict[str, Any] = {
            "type": SUMMARY_TYPE,
            "version": SUMMARY_VERSION,
            "verifier": {"name": "aer1-verify", "version": __version__, "schema": SCHEMA},
            "verified_at": format_ns(now_ns()),
            "policy": None if self.policy is None else self.policy.describe(),
            "options": self.options,
            "verdict": tally.verdict,
            "summary": dict(tally.verdicts),
            "receipts": self.entries,
        }
        doc["signature"] = sign_receipt(doc, self.key, SUMMARY_PAYLOAD_TYPE)
        from ._output import dump_json

        data = dump_json(doc).encode("utf-8")
        try:
            replace_file(self.out, lambda f: f.write(data))
        except OSError as e:
            raise CliError(f"-o {self.out}: {e.strerror or e}") from e


def _named_file(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == {"path", "sha256"} and all(isinstance(x, str) for x in v.values())


def _entries_ok(doc: dict[str, Any]) -> str | None:
    receipts = doc.get("receipts")
    if not isinstance(receipts, list):
        return "receipts is not a list"
    if doc.get("verdict") not in ("VALID", "INVALID", "MALFORMED"):
        return "verdict is not VALID, INVALID or MALFORMED"
    for i, e in enumerate(receipts):
        if not isinstance(e, dict) or not isinstance(e.get("path"), str):
            return f"receipts[{i}] has no path"
        for k in ("sha256", "evidence", "evidence_sha256"):
            if e.get(k) is not None and not isinstance(e.get(k), str):
                return f"receipts[{i}].{k} is not a string"
    options = doc.get("options")
    if not isinstance(options, dict):
        return "options is not an object"
    for member, _ in _INPUT_FILES:
        v = options.get(member)
        if v is not None and not (all(_named_file(x) for x in v) if member == "tsa_roots" and isinstance(v, list)
                                  else _named_file(v)):
            return f"options.{member} is not a file named by path and sha256"
    return None


def _changed(what: str, name: str, want: str) -> str | None:
    """Why ``name`` is not the bytes of SHA-256 ``want``, or None when it is."""
    try:
        got = file_sha256(name)
    except (MalformedInput, OSError) as e:
        return f"{what} {name} cannot be read: {e}"
    return None if got == want else f"{what} {name} changed (got sha256 {got}, want {want})"


def _same_bytes(entry: dict[str, Any]) -> str | None:
    """Why the files an entry names are not the bytes it signed for, or None when they are.

    The evidence file is the one the summary names (``--evidence FILE`` or the one found
    beside the receipt); a summary that records an evidence digest without naming its file
    cannot be re-checked, and says so, rather than guess a file beside the receipt.
    """
    if entry.get("sha256") is None:
        return "no receipt digest was recorded"
    problem = _changed("receipt", entry["path"], entry["sha256"])
    if problem is not None or entry.get("evidence_sha256") is None:
        return problem
    if entry.get("evidence") is None:
        return "an evidence digest is recorded, but not which evidence file: it cannot be re-checked"
    return _changed("evidence", entry["evidence"], entry["evidence_sha256"])


def _inputs(options: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(option, path, sha256) of every input file the summary names in ``options``."""
    out = []
    for member, option in _INPUT_FILES:
        v = options.get(member)
        for f in (v if isinstance(v, list) else [] if v is None else [v]):
            out.append((option, f["path"], f["sha256"]))
    return out


def check_summary(path: str, trusted: set[str] | None) -> tuple[list[CheckResult], dict[str, Any]]:
    """Re-check a summary: its form, its signature (trusted when ``trusted`` names its key), the files."""
    c_parse, c_members, c_sig, c_files, c_verdict = (
        CheckResult(1, "parse"), CheckResult(2, "members"), CheckResult(3, "signature"), CheckResult(4, "receipts"),
        CheckResult(5, "verdict"))
    checks = [c_parse, c_members, c_sig, c_files, c_verdict]
    facts: dict[str, Any] = {"source": path}
    try:
        doc: Any = parse_strict(read_input(path, MAX_SUMMARY_BYTES, what="a summary file"), what=path)
    except MalformedInput as e:
        c_parse.fail(str(e))
        for c in checks[1:]:
            c.skip("the summary could not be parsed")
        return checks, facts
    c_parse.passed("strict UTF-8 JSON")
    why = None
    if not isinstance(doc, dict) or doc.get("type") != SUMMARY_TYPE or doc.get("version") != SUMMARY_VERSION:
        why = f"not a verification summary (want type {SUMMARY_TYPE!r}, version {SUMMARY_VERSION!r})"
    elif set(doc) != _MEMBERS:
        why = f"members: got {sorted(doc)}, want {sorted(_MEMBERS)}"
    else:
        why = _entries_ok(doc)
    if why is not None:
        c_members.fail(why)
        for c in checks[2:]:
            c.skip("members check failed")
        return checks, facts
    c_members.passed(f"{len(doc['receipts'])} receipts named")
    facts.update(verdict=doc["verdict"], verified_at=doc["verified_at"], policy=doc["policy"],
                 verifier=doc["verifier"], receipts=len(doc["receipts"]))
    try:
        parse_signature(doc["signature"])
        kid = verify_signature(doc, None, SUMMARY_PAYLOAD_TYPE)
    except SignatureInvalid as e:
        c_sig.fail(str(e))
    except (ValueError, CanonicalizationError) as e:
        c_sig.fail(f"could not verify: {e}")
    else:
        facts["key_id"] = kid
        facts["trusted"] = trusted is not None and kid in trusted
        if trusted is None:
            c_sig.passed(f"valid signature; signed by an untrusted key {kid} (give --key for authenticity)")
        elif kid in trusted:
            c_sig.passed(f"valid signature by trusted key {kid}")
        else:
            c_sig.fail(f"signed by an untrusted key {kid}", expected=" or ".join(sorted(trusted)), actual=kid)
    if c_sig.status == FAIL:
        c_files.skip("signature check failed: the digests it names are not trusted")
        c_verdict.skip("signature check failed: the verdict it records is not trusted")
        return checks, facts
    changed = 0
    for i, entry in enumerate(doc["receipts"]):
        problem = _same_bytes(entry)
        if problem is not None:
            changed += 1
            c_files.fail(one_line(f"{entry['path']}: {problem}"), seq=i + 1)
    inputs = _inputs(doc["options"])
    # What the verdicts rest on, so that verifying the receipts again can use the same inputs.
    facts["inputs"] = [{"option": option, "path": name} for option, name, _ in inputs] + [
        {"option": "--evidence", "path": e["evidence"], "receipt": e["path"]}
        for e in doc["receipts"] if e.get("evidence") is not None]
    for option, name, want in inputs:
        problem = _changed(f"the {option} input", name, want)
        if problem is not None:
            changed += 1
            c_files.fail(one_line(problem))
    named = f"{len(doc['receipts'])} files and {len(inputs)} input files"
    if changed:
        c_files.detail = f"{changed} of {named} are not the bytes summarized; " + c_files.detail
    else:
        c_files.passed(f"all {named} (receipts, the evidence files named, keyring, TSA roots, policy) are "
                       "the same bytes")
    counts = doc["summary"] if isinstance(doc["summary"], dict) else {}
    told = ", ".join(f"{counts.get(v)} {v.lower()}" for v in ("VALID", "INVALID", "MALFORMED") if v in counts)
    if doc["verdict"] == "VALID":
        c_verdict.passed(f"the run it summarizes was VALID ({told})")
    else:
        c_verdict.fail(f"the run it summarizes was {doc['verdict']} ({told}): the summary holds, the archive did not",
                       expected="VALID", actual=doc["verdict"])
    return checks, facts


def summary_verdict(checks: list[CheckResult]) -> tuple[str, int]:
    """VALID (0) when every check passed or was not needed, INVALID (1), MALFORMED (2)."""
    if checks[0].status == FAIL or checks[1].status == FAIL:
        return "MALFORMED", 2
    if any(c.status == FAIL for c in checks):
        return "INVALID", 1
    if any(c.status == NOT_CHECKED for c in checks):
        return "INVALID", 1
    return ("VALID", 0) if all(c.status == PASS for c in checks) else ("INVALID", 1)
