"""Verification results: one result per numbered check, failures with seq and values."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CHECKS", "FAIL", "NOT_CHECKED", "NO_KEYRING", "NO_TOKEN", "PASS", "CheckResult", "Failure", "Report",
           "one_line", "same_bytes"]

#: A check's status: it ran and held.
PASS = "PASS"
#: A check's status: it ran and failed.
FAIL = "FAIL"
#: A check's status: it did not run (nothing to check against, or an earlier check failed).
NOT_CHECKED = "NOT CHECKED"
#: Check 9 on a receipt with no timestamp member (said without loading the timestamp module).
NO_TOKEN = "no timestamp token: the time of signing is not independently established"
#: Check 10 when no keyring is given (said without loading the keyring module).
NO_KEYRING = "no --keyring given"

def one_line(text: str) -> str:
    """``text`` with every unprintable character (line breaks, terminal escapes) written as its escape.

    File names and member values come from untrusted input: a newline or an escape sequence
    in one must not turn one line into two, forge a verdict line or drive the terminal.
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


#: The numbered checks, in order; each name is the reason reported when it fails.
CHECKS = (
    (1, "parse"),
    (2, "members"),
    (3, "sequence"),
    (4, "merkle_root"),
    (5, "chain"),
    (6, "signature"),
    (7, "evidence"),
    (8, "expected"),
    (9, "timestamp"),
    (10, "key"),
)


@dataclass(frozen=True)
class Failure:
    """One failed condition: which check, which step (seq), what was expected and found."""

    check: str
    message: str
    seq: int | None = None
    expected: str | None = None
    actual: str | None = None

    @property
    def reason(self) -> str:
        """One line: ``check: step N: message (got X, want Y)``."""
        where = f"step {self.seq}: " if self.seq is not None else ""
        parts = []
        if self.actual is not None:
            parts.append(f"got {self.actual}")
        if self.expected is not None:
            parts.append(f"want {self.expected}")
        values = f" ({', '.join(parts)})" if parts else ""
        return f"{self.check}: {where}{self.message}{values}"

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "check": self.check,
            "seq": self.seq,
            "message": self.message,
            "expected": self.expected,
            "actual": self.actual,
        }


@dataclass
class CheckResult:
    """The outcome of one numbered check."""

    number: int
    name: str
    status: str = NOT_CHECKED
    detail: str = ""
    failures: list[Failure] = field(default_factory=list)
    #: What a passed check established, for the verdict's basis (e.g. the signing key id).
    facts: dict[str, Any] = field(default_factory=dict)

    def fail(self, message: str, *, seq: int | None = None, expected: Any = None, actual: Any = None) -> None:
        """Record a failure; the check's status becomes FAIL."""
        self.status = FAIL
        self.failures.append(
            Failure(
                self.name,
                message,
                seq,
                None if expected is None else str(expected),
                None if actual is None else str(actual),
            )
        )
        if not self.detail:
            self.detail = self.failures[0].reason

    def passed(self, detail: str) -> None:
        """Mark PASS unless a failure was already recorded."""
        if self.status != FAIL:
            self.status = PASS
            self.detail = detail

    def skip(self, why: str) -> None:
        """Mark NOT CHECKED, saying why."""
        self.status = NOT_CHECKED
        self.detail = why

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "number": self.number,
            "name": self.name,
            "status": self.status,
            "detail": self.detail,
            "failures": [f.to_dict() for f in self.failures],
        }


@dataclass
class Report:
    """All check results for one receipt (or proof), and the verdict they give."""

    source: str | None
    checks: list[CheckResult]
    kind: str = "receipt"
    workflow_id: str | None = None
    profile: str | None = None
    steps: int | None = None
    notes: list[str] = field(default_factory=list)

    def check(self, name: str) -> CheckResult:
        """The result of the check called ``name``."""
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def malformed(self) -> bool:
        """True when the input could not be read as a receipt at all (exit code 2)."""
        return self.checks[0].status == FAIL

    @property
    def valid(self) -> bool:
        """True when no check failed."""
        return all(c.status != FAIL for c in self.checks)

    @property
    def verdict(self) -> str:
        """VALID, INVALID, or MALFORMED."""
        if self.malformed:
            return "MALFORMED"
        return "VALID" if self.valid else "INVALID"

    @property
    def exit_code(self) -> int:
        """0 valid, 1 invalid, 2 malformed or unreadable."""
        return {"VALID": 0, "INVALID": 1}.get(self.verdict, 2)

    @property
    def failures(self) -> list[Failure]:
        """Every failure, in check order."""
        return [f for c in self.checks for f in c.failures]

    def _passed(self, name: str) -> CheckResult | None:
        for c in self.checks:
            if c.name == name and c.status == PASS:
                return c
        return None

    def basis(self) -> dict[str, Any]:
        """What the verdict rests on: which checks ran and what they established."""
        if self.kind == "proof":
            pin = self._passed("root_pinned")
            return {
                "step_id": "checked" if self._passed("step_id") else "not checked",
                "tree_size": "checked" if self._passed("tree_size") else "not checked",
                "content": "checked" if self._passed("content") else "not checked",
                "root": "pinned" if pin else "not pinned",
                "pinned_by": pin.facts.get("pinned_by") if pin else None,
                "workflow_id": "bound" if pin and pin.facts.get("workflow_bound_by") else "not bound",
            }
        chain, sig, expected = self._passed("chain"), self._passed("signature"), self._passed("expected")
        if sig is None:
            signature, key = "unsigned" if self._has_no_signature() else "not checked", None
        else:
            key = sig.facts.get("key_id")
            signature = "trusted key" if sig.facts.get("trusted") else "unknown key"
        facts = expected.facts if expected else {}
        return {
            "level": "aer1-chain-v1" if chain else "AER-1 base checks only",
            "chain": "checked" if chain else "not checked",
            "signature": signature,
            "key_id": key,
            "evidence": "checked" if self._passed("evidence") else "not checked",
            "root": "pinned" if facts.get("root") else "not pinned",
            "head": "pinned" if facts.get("head") else "not pinned",
            "closed_by": chain.facts.get("closed_by") if chain else None,
            **self._time_basis(),
            **self._log_basis(),
        }

    def _log_basis(self) -> dict[str, Any]:
        """The transparency log check (when one ran): the entry and checkpoint it established."""
        log = next((c for c in self.checks if c.name == "log"), None)
        if log is None:
            return {}
        if log.status != PASS:
            return {"log": "not checked" if log.status != FAIL else "failed"}
        f = log.facts
        return {"log": f"entry {f['index']} of {f['origin']} (checkpoint size {f['size']}, "
                       f"{len(f['witnesses'])} trusted witness cosignatures)"}

    def _time_basis(self) -> dict[str, Any]:
        """Independent time (check 9) and the key's validity at it (check 10), as established."""
        stamp = self._passed("timestamp")
        key = next((c for c in self.checks if c.name == "key"), CheckResult(10, "key"))
        return {
            "timestamp": "verified" if stamp else "not verified",
            "tsa_time": stamp.facts.get("time") if stamp else None,
            "key_validity": ("valid at TSA time" if key.status == PASS else
                             "not established" if key.facts.get("established") is False else "not checked"),
        }

    def _has_no_signature(self) -> bool:
        for c in self.checks:
            if c.name == "signature":
                return bool(c.facts.get("unsigned"))
        return False

    def basis_text(self) -> str:
        """The basis as one phrase list for the verdict line."""
        b = self.basis()
        if self.kind == "proof":
            root = f"root pinned by {b['pinned_by']}" if b["root"] == "pinned" else "root NOT pinned"
            return (f"proof; step id {b['step_id']}; tree size {b['tree_size']}; content {b['content']}; {root}; "
                    f"workflow id {b['workflow_id']}; {self.steps if self.steps is not None else '-'} steps")
        parts = [b["level"]]
        if b["chain"] == "checked":
            parts.append("chain checked")
            parts.append("CLOSED BY RECOVERY (incomplete run)" if b["closed_by"] == "recovery" else "finalized")
        else:
            parts.append("no chain: step contents not bound")
        if b["signature"] == "trusted key":
            parts.append(f"signed by trusted key {b['key_id']}")
        elif b["signature"] == "unknown key":
            parts.append(f"signed by an unknown key {b['key_id']} (not trusted)")
        else:
            parts.append(b["signature"])
        parts.append(f"evidence {b['evidence']}")
        parts.append(f"root {b['root']}" + ("; head pinned" if b["head"] == "pinned" else ""))
        if b["tsa_time"]:
            parts.append(f"timestamped by a trusted TSA at {b['tsa_time']}")
        if b["key_validity"] == "valid at TSA time":
            parts.append("key valid at TSA time (keyring)")
        elif b["key_validity"] == "not established":
            parts.append("key validity at signing NOT established (no independent time)")
        if b.get("log", "not checked") not in ("not checked", "failed"):
            parts.append(f"logged as {b['log']}")
        parts.append(f"{self.steps if self.steps is not None else '-'} steps")
        return "; ".join(parts)

    def to_text(self) -> str:
        """The human report: a line per check (PASS, FAIL, NOT CHECKED and why), notes, the verdict."""
        lines = [f"{self.source or '(receipt)'}: {self.verdict}"]
        for c in self.checks:
            lines.append(f"  {c.number} {c.name:<12} {c.status:<11} {c.detail}")
            for f in c.failures[1:5]:
                lines.append(f"  {'':<14} {'':<11} {f.reason}")
        for note in self.notes:
            lines.append(f"  note: {note}")
        if self.verdict == "VALID":
            lines.append(f"verdict: VALID ({self.basis_text()})")
        else:
            first = self.failures[0].reason if self.failures else "see above"
            lines.append(f"verdict: {self.verdict}: {first}")
        return "\n".join(one_line(line) for line in lines)  # values from the input never make a line

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the shape ``aer1-verify --json`` prints)."""
        return {
            "source": self.source,
            "kind": self.kind,
            "verdict": self.verdict,
            "valid": self.valid,
            "exit_code": self.exit_code,
            "workflow_id": self.workflow_id,
            "profile": self.profile,
            "steps": self.steps,
            "checks": [c.to_dict() for c in self.checks],
            "failures": [f.to_dict() for f in self.failures],
            "notes": list(self.notes),
            "basis": None if self.malformed else self.basis(),
        }


def same_bytes(data: bytes, report: Report) -> bool:
    """True when ``data``, a receipt file read again, are the bytes ``report`` verified.

    A policy and a bundle's links read the file a second time; a file swapped in between
    (same workflow_id, same step count, a step's agent renamed) must not be evaluated in
    place of the receipt that was verified.
    """
    return report.checks[0].facts.get("sha256") == hashlib.sha256(data).hexdigest()
