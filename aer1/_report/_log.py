"""``aer1 report --log DIR``: the verifier's log walk and completeness over the receipts reported on.

The same walk as ``aer1-verify --log DIR --log-key VKEY --complete PATH`` (``verifier/_tlog.py``):
the checkpoint signed by a trusted log key (and cosigned by K trusted witnesses), the tree
recomputed from the tiles, every entry read; then each receipt's ``log`` check answered
from the walked log, and the receipts against the log's entries. What the frame reads of
it is a :class:`LogFact`. See spec/report.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._timeline import parse_time
from ..verifier._tlog import PROBLEMS, Completeness, exit_code, section_lines, walk_log
from ..verifier._tlog_cli import check_log_option

if TYPE_CHECKING:
    from ..verifier._tally import Outcome
    from ..verifier._tlog import LogTrust

__all__ = ["LogFact", "LogRun"]

_SECONDS_PER_DAY = 86400


@dataclass(frozen=True)
class LogFact:
    """The log as walked over the receipts: the verifier's log section and the span of its closed entries."""

    section: dict[str, Any]
    first_started: str | None
    last_started: str | None

    @property
    def span_days(self) -> float | None:
        """Days from the earliest logged receipt's first step to the latest's (None: the log lists none)."""
        first, last = parse_time(self.first_started), parse_time(self.last_started)
        return None if first is None or last is None else (last - first) / _SECONDS_PER_DAY

    @property
    def exit_code(self) -> int:
        return exit_code(self.section)

    @property
    def lines(self) -> list[str]:
        """The log check as ``aer1-verify`` prints it."""
        return section_lines(self.section)

    def summary(self) -> str:
        """One line: the log, its verdict and checkpoint, and its first problem."""
        cp = self.section["checkpoint"]
        where = "" if cp is None else f" (checkpoint {cp['origin']} size {cp['size']}, signed by " \
            f"{self.section['log_key']}; witnesses: {', '.join(self.section['witnesses']) or 'none verified'})"
        problems = self.section["problems"]
        first = f": {problems[0]}" if problems else ""
        return f"log {self.section['directory']}: {self.section['verdict']}{where}{first}"

    def against(self, min_days: float) -> list[str]:
        """Why the log does not show the receipts kept for ``min_days`` (empty: nothing against it)."""
        problems = self.section["problems"]
        out = []
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            out.append(f"the log did not verify: {problems[0]}{more}")
        complete = self.section.get("complete") or {}
        for name, what in PROBLEMS:
            p = complete.get(name) or {"count": 0, "named": []}
            if p["count"]:
                out.append(f"{p['count']} {what}" + (f", first {p['named'][0]}" if p["named"] else ""))
        span = self.span_days
        if span is None:
            out.append("the log lists no closed receipt")
        elif span < min_days:
            out.append(f"the log's receipts span {span:.1f} days, want at least {min_days:g}")
        return out


@dataclass
class LogRun:
    """One report's log: opened before any receipt is verified, shown each outcome, then finished once."""

    sink: Completeness
    fact: LogFact | None = field(default=None)

    @classmethod
    def open(cls, log: str, trust: LogTrust) -> LogRun:
        """Walk the log at ``log`` (a folder or a storage prefix) under ``trust``; CliError when it names neither."""
        check_log_option(log)
        return cls(Completeness(walk_log(log, trust), trust))

    def see(self, outcome: Outcome) -> None:
        """Answer the receipt's ``log`` check from the walked log (before it is shown), and count it."""
        self.sink.judge(outcome)
        self.sink.add(outcome)

    def finish(self) -> LogFact:
        """The receipts seen against the log's entries (computed once)."""
        if self.fact is None:
            walk = self.sink.walk
            self.fact = LogFact(self.sink.finish(), walk.first_started, walk.last_started)
        return self.fact
