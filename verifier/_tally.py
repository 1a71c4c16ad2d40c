"""Each file's outcome in a run of many files, the running counts of them, and the schema of the JSON output.

Kept apart from the run (:mod:`._archive`) so that a signed summary (:mod:`._attest`), which
counts the same outcomes, takes them without importing the run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ._output import one_line
from ._report import Report

__all__ = ["MAX_UNREADABLE_LISTED", "SCHEMA", "Outcome", "Tally"]

#: The versioned schema every ``--json`` output follows (spec/verdict-schema.json).
SCHEMA = "aer1-verdict-v1"
#: Unreadable files named in the summary (the count is always exact).
MAX_UNREADABLE_LISTED = 100


@dataclass
class Outcome:
    """One file's report and what the summary counts about it."""

    report: Report
    status: str | None = None
    rules: list[str] = field(default_factory=list)
    sha256: str | None = None
    evidence_sha256: str | None = None
    #: What the file is when it is one of aer1's own files other than a receipt (a keyring, a
    #: summary...): a run of many files lists it as skipped and counts it apart, never as a verdict.
    skipped: str | None = None
    #: The evidence file used (None: none), so a signed summary names it and its re-check reads it.
    evidence: str | None = None
    #: The receipt's log entry (spec/log.md), computed when a log is checked; else why not.
    log_entry: bytes | None = None
    log_why: str = ""
    #: Without an entry, the receipt's ``b"<workflow_id>/<receipt_id>"`` when they could be read.
    log_ids: bytes | None = None


class Tally:
    """Running counts for the summary: by verdict, signer key, receipt status, rule violated."""

    def __init__(self) -> None:
        self.verdicts: Counter[str] = Counter({"VALID": 0, "INVALID": 0, "MALFORMED": 0})
        self.signers: Counter[str] = Counter()
        self.statuses: Counter[str] = Counter()
        self.rules: Counter[str] = Counter()
        self.unreadable: list[str] = []
        self.unreadable_count = 0
        self.skipped: list[str] = []
        self.skipped_count = 0
        #: workflow_id -> the first file that held it (at most MAX_FILES receipts a run), and the
        #: files that held one again: a copy of a receipt is counted twice unless it is named.
        self.first_with: dict[str, str] = {}
        self.duplicates: list[str] = []
        self.duplicates_count = 0
        #: Sections a sink adds when the run ends (``log``), and the exit code they ask for.
        self.sections: dict[str, dict[str, Any]] = {}
        self.section_text: list[str] = []
        self.section_code = 0

    def add(self, o: Outcome) -> None:
        r = o.report
        if o.skipped is not None:  # one of aer1's own files: counted apart, no verdict
            self.skipped_count += 1
            if len(self.skipped) < MAX_UNREADABLE_LISTED:
                self.skipped.append(one_line(f"{r.source}: {o.skipped}"))
            return
        self.verdicts[r.verdict] += 1
        if r.malformed:
            self.unreadable_count += 1
            if len(self.unreadable) < MAX_UNREADABLE_LISTED:
                self.unreadable.append(one_line(f"{r.source}: {r.checks[0].detail}"))
            return
        if r.kind == "receipt":
            b = r.basis()
            self.signers[b["key_id"] or b["signature"]] += 1
            self.statuses[o.status or "not checked"] += 1
            self._note_workflow(r)
        self.rules.update(o.rules)

    def _note_workflow(self, r: Report) -> None:
        """Name a receipt whose workflow_id an earlier file of this run held (a copy, or two runs sharing one id)."""
        if r.workflow_id is None or r.source is None:
            return
        first = self.first_with.get(r.workflow_id)
        if first is None:
            self.first_with[r.workflow_id] = r.source
            return
        self.duplicates_count += 1
        if len(self.duplicates) < MAX_UNREADABLE_LISTED:
            again = "named again in this run" if first == r.source else f"the same workflow_id as {first}"
            self.duplicates.append(one_line(f"{r.source}: {again}"))

    @property
    def total(self) -> int:
        return sum(self.verdicts.values())

    @property
    def exit_code(self) -> int:
        """2 for a file that could not be verified, or when nothing was (every file skipped); 1 invalid; 0."""
        code = 2 if self.verdicts["MALFORMED"] or not self.total else 1 if self.verdicts["INVALID"] else 0
        return max(code, self.section_code)

    @property
    def verdict(self) -> str:
        return {0: "VALID", 1: "INVALID"}.get(self.exit_code, "MALFORMED")

    def breakdown(self) -> dict[str, Any]:
        """The summary beyond the verdict counts (JSON form)."""
        return {
            "receipts": self.total,
            "by_signer": dict(sorted(self.signers.items())),
            "by_status": dict(sorted(self.statuses.items())),
            "by_rule": dict(sorted(self.rules.items())),
            "unreadable": {"count": self.unreadable_count, "files": list(self.unreadable)},
            "skipped": {"count": self.skipped_count, "files": list(self.skipped)},
            "same_workflow": {"count": self.duplicates_count, "files": list(self.duplicates)},
        }

    def text(self) -> list[str]:
        """The summary as lines of text, the counts by verdict last."""
        v = self.verdicts
        lines = []
        for title, counts in (("by signer key", self.signers), ("by status", self.statuses),
                              ("by rule violated", self.rules)):
            if counts:
                lines.append(f"{title}: " + ", ".join(f"{one_line(k)} {n}" for k, n in sorted(counts.items())))
        for title, count, named, tail in (
                ("unreadable", self.unreadable_count, self.unreadable, ", each on its line above"),
                ("skipped, not receipts (aer1's own files)", self.skipped_count, self.skipped,
                 ", each on its line above"),
                ("receipts whose workflow_id an earlier file holds (copies are counted again)",
                 self.duplicates_count, self.duplicates, "")):
            if count:
                lines.append(f"{title}: {count}")
                lines.extend(f"  {u}" for u in named)
                if count > len(named):
                    lines.append(f"  ... and {count - len(named)} more{tail}")
        if not self.total:
            lines.append("no receipt was verified: every file was skipped")
        lines.extend(self.section_text)
        # the counts last: a script reading the last line gets them
        skipped = f"; {self.skipped_count} skipped (not receipts)" if self.skipped_count else ""
        lines.append(f"{v['VALID']} valid, {v['INVALID']} invalid, {v['MALFORMED']} unreadable (of {self.total})"
                     + skipped)
        return lines
