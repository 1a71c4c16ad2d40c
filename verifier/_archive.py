"""Archive runs: many receipts verified in worker processes, results streamed out in order.

Each receipt's result is printed (a line, a full report, or a JSON object) and added to
running counts as it arrives, then dropped, so memory does not grow with the archive.
Only a signed summary (``--attest``) keeps one short entry per receipt, because it signs
them all.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from typing import IO, Any

from ._output import dump_json, one_line
from ._report import PASS, Report
from ._run_file import ArchiveOptions, Outcome, Worker, file_sha256, skipped_line, verify_file

#: ``ArchiveOptions``, ``Outcome``, ``file_sha256`` and ``verify_file`` live in :mod:`._run_file`; named here too.
__all__ = ["SCHEMA", "ArchiveOptions", "Outcome", "Tally", "file_sha256", "run_archive", "verify_file"]

#: The versioned schema every ``--json`` output follows (spec/verdict-schema.json).
SCHEMA = "aer1-verdict-v1"
#: Files handed to a worker at a time: large enough to amortize the hand-over, small enough to stream.
_CHUNK = 16
#: Chunks per worker handed out before the results before them are read: bounds what waits in memory.
_WINDOW_CHUNKS = 8
#: Unreadable files named in the summary (the count is always exact).
MAX_UNREADABLE_LISTED = 100


def outcomes(tasks: list[tuple[str, bool, str | None]], opts: ArchiveOptions, jobs: int,
             client: Any = None) -> Iterator[Outcome]:
    """Each file's outcome, in the order of ``tasks``; ``jobs`` > 1 verifies in worker processes.

    ``client``: a ``distributed.Client``, to verify in batches on its Dask cluster instead.
    """
    if client is not None:
        from ._dask import dask_outcomes  # loaded only for --dask

        yield from dask_outcomes(tasks, opts, client)
        return
    worker = Worker(opts)
    if len(tasks) > 1:
        import orjson  # noqa: F401  (loaded once for many files, it parses and encodes each quicker)
    if jobs <= 1 or len(tasks) <= 1:
        for t in tasks:
            yield worker(t)
        return
    import multiprocessing  # loaded only for a run of many files in worker processes

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
    window = jobs * _CHUNK * _WINDOW_CHUNKS  # results a slow reader can leave waiting, at most
    with ctx.Pool(min(jobs, len(tasks))) as pool:
        for start in range(0, len(tasks), window):
            yield from pool.imap(worker, tasks[start:start + window], chunksize=_CHUNK)


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
        self.rules.update(o.rules)

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
        }

    def text(self) -> list[str]:
        """The summary as lines of text, the counts by verdict last."""
        v = self.verdicts
        lines = []
        for title, counts in (("by signer key", self.signers), ("by status", self.statuses),
                              ("by rule violated", self.rules)):
            if counts:
                lines.append(f"{title}: " + ", ".join(f"{one_line(k)} {n}" for k, n in sorted(counts.items())))
        if self.unreadable_count:
            lines.append(f"unreadable: {self.unreadable_count}")
            lines.extend(f"  {u}" for u in self.unreadable)
            if self.unreadable_count > len(self.unreadable):
                lines.append(f"  ... and {self.unreadable_count - len(self.unreadable)} more, each on its line above")
        if self.skipped_count:
            lines.append(f"skipped, not receipts (aer1's own files): {self.skipped_count}")
            lines.extend(f"  {u}" for u in self.skipped)
            if self.skipped_count > len(self.skipped):
                lines.append(f"  ... and {self.skipped_count - len(self.skipped)} more, each on its line above")
        if not self.total:
            lines.append("no receipt was verified: every file was skipped")
        lines.extend(self.section_text)
        # the counts last: a script reading the last line gets them
        skipped = f"; {self.skipped_count} skipped (not receipts)" if self.skipped_count else ""
        lines.append(f"{v['VALID']} valid, {v['INVALID']} invalid, {v['MALFORMED']} unreadable (of {self.total})"
                     + skipped)
        return lines


def short_line(r: Report) -> str:
    """One line for one receipt: its verdict and what it rests on, or its first failure."""
    if r.malformed:
        return one_line(f"{r.source}: MALFORMED: {r.checks[0].detail}")
    if r.valid:
        from ._policy import POLICY_CHECK

        policy = next((c for c in r.checks if c.name == POLICY_CHECK and c.status == PASS), None)
        held = f"; {policy.detail}" if policy is not None else ""
        return one_line(f"{r.source}: VALID ({r.basis_text()}{held})")
    first = r.failures[0].reason if r.failures else "see the full report (--verbose)"
    return one_line(f"{r.source}: INVALID: {first}")


def report_doc(r: Report) -> dict[str, Any]:
    """One receipt's JSON object, the same alone and inside an archive's results."""
    return {"schema": SCHEMA, **r.to_dict()}


def _progress(total: int) -> Any:
    """A progress bar on standard error when it is a terminal, else None."""
    if total < 2 or not sys.stderr.isatty():
        return None
    from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]

    return tqdm(total=total, file=sys.stderr, unit="receipt", leave=False, dynamic_ncols=True)


def run_archive(tasks: list[tuple[str, bool, str | None]], opts: ArchiveOptions, *, jobs: int, as_json: bool,
                verbose: bool, only_failures: bool, out: IO[str], sinks: list[Any], client: Any = None) -> Tally:
    """Verify every file, stream each result to ``out`` (and each of ``sinks``), return the counts.

    A sink has ``add(outcome)``; it sees every outcome, failures or not. ``client``: verify
    on that Dask cluster (``outcomes``).
    """
    tally = Tally()
    bar = _progress(len(tasks))
    first = True
    if as_json:
        out.write('{\n  "schema": "' + SCHEMA + '",\n  "results": [')
    try:
        for o in outcomes(tasks, opts, jobs, client):
            tally.add(o)
            for sink in sinks:
                sink.add(o)
            if bar is not None:
                bar.update(1)
            r = o.report
            if o.skipped is not None:  # listed in every form but JSON's results (its breakdown names it)
                if not as_json:
                    out.write(skipped_line(o) + "\n")
                continue
            if only_failures and r.verdict == "VALID":
                continue
            if as_json:
                body = dump_json(report_doc(r)).rstrip("\n").replace("\n", "\n    ")
                out.write(("\n    " if first else ",\n    ") + body)
                first = False
            elif verbose:
                out.write((r.to_text(every=True) if not r.malformed else short_line(r)) + "\n")
            else:
                out.write(short_line(r) + "\n")
    finally:
        if bar is not None:
            bar.close()
    for sink in sinks:  # a sink that judges the run as a whole (the log's completeness) speaks last
        finish = getattr(sink, "finish_run", None)
        if finish is not None:
            finish(tally)
    if as_json:
        tail = {"summary": dict(tally.verdicts), "breakdown": tally.breakdown(), **tally.sections,
                "verdict": tally.verdict, "exit_code": tally.exit_code}
        rest = dump_json(tail).strip()[1:-1].rstrip()
        out.write(("\n  ],") + rest + "\n}\n")
    else:
        out.write("\n".join(tally.text()) + "\n")
    return tally
