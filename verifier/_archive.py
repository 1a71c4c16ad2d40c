"""Archive runs: many receipts verified in worker processes, results streamed out in order.

Each receipt's result is printed (a line, a full report, or a JSON object) and added to
running counts as it arrives, then dropped, so memory does not grow with the archive.
Only a signed summary (``--attest``) keeps one short entry per receipt, because it signs
them all.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from .._storage import is_url
from . import verify_proof
from ._driver import verify_kept
from ._evidence import evidence_for
from ._output import dump_json, one_line, unreadable_report
from ._parse import MalformedInput, open_regular
from ._report import PASS, Report
from ._time_cli import load_time_options

if TYPE_CHECKING:  # a policy's module loads only when one is given
    from ._policy import Policy
    from ._tlog import LogTrust

__all__ = ["SCHEMA", "ArchiveOptions", "Outcome", "Tally", "run_archive", "verify_file"]

#: The versioned schema every ``--json`` output follows (spec/verdict-schema.json).
SCHEMA = "aer1-verdict-v1"
#: Files handed to a worker at a time: large enough to amortize the hand-over, small enough to stream.
_CHUNK = 16
#: Chunks per worker handed out before the results before them are read: bounds what waits in memory.
_WINDOW_CHUNKS = 8
#: Unreadable files named in the summary (the count is always exact).
MAX_UNREADABLE_LISTED = 100
_DIGEST_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class ArchiveOptions:
    """What every receipt of a run is verified against (picklable: sent to each worker)."""

    evidence: str | None = None
    trusted: frozenset[str] | None = None
    expected_root: str | None = None
    expected_head: str | None = None
    receipt: str | None = None
    proof: bool = False
    policy: Policy | None = None
    digests: bool = False
    #: Files for checks 9 and 10, loaded once per run in each worker (their parsed forms do
    #: not travel); ``run_id`` tells one run's loads from another's in the same process.
    tsa_roots: str | None = None
    tsa_policy: str | None = None
    keyring: str | None = None
    run_id: str = ""
    #: Processes for the steps of one large receipt (a run of one file; in a folder run the
    #: files are spread over the processes instead, so each is checked in one).
    steps_jobs: int = 1
    #: The log check's trusted keys (``--log-key``, ``--witness``): adds check ``log``.
    log: LogTrust | None = None
    #: A completeness run: the parent answers each receipt's log check from the walked log
    #: (``Completeness.judge``), so a worker computes the entry only (unless a policy needs the check).
    log_walked: bool = False
    #: ``--storage-options`` (JSON) for receipts named by URL, applied where they are read (a Dask
    #: worker too); it can hold credentials, so it is never shown.
    storage_options: str | None = field(default=None, repr=False)


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


def skipped_line(o: Outcome) -> str:
    """The line a run of many files prints for a file it skipped: what it is."""
    return one_line(f"{o.report.source}: not a receipt, skipped: {o.skipped}")


def file_sha256(path: str) -> str:
    """SHA-256 of a regular file's (or a storage object's) bytes, read in chunks."""
    h = hashlib.sha256()
    if is_url(path):  # an object in storage, named in a signed summary
        from .._limits import MAX_EVIDENCE_BYTES
        from .._storage import chunks

        for chunk in chunks(path, MAX_EVIDENCE_BYTES):
            h.update(chunk)
        return h.hexdigest()
    with open_regular(path) as f:
        while chunk := f.read(_DIGEST_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _status_of(report: Report, wf: dict[str, Any] | None) -> str | None:
    """The receipt's ``status`` member (with ``closed_by`` when recovered), when the chain check bound it."""
    chain = report.check("chain")
    if chain.status != PASS:
        return None
    status = chain.facts.get("status", wf.get("status") if wf is not None else None)
    if not isinstance(status, str):
        return None
    closed = chain.facts.get("closed_by")
    return f"{status} (closed by {closed})" if closed not in (None, "finalize") else status


@functools.lru_cache(maxsize=4)
def _timing(run_id: str, tsa_roots: str | None, tsa_policy: str | None, keyring: str | None) -> dict[str, Any]:
    """``verify_receipt``'s timestamp and keyring options, loaded once per run and process."""
    return load_time_options(tsa_roots, tsa_policy, keyring)


def verify_file(task: tuple[str, bool, str | None], opts: ArchiveOptions) -> Outcome:
    """Verify one file of a run (in a worker): the report, policy applied, and what the summary needs."""
    path, is_proof, why = task
    if why is not None:
        return Outcome(unreadable_report(path, why))
    if is_url(path):  # an object in storage: verified from a private copy of its bytes
        from ._staged import verify_staged

        return verify_staged(task, opts)
    if is_proof or opts.proof:
        proof = Outcome(verify_proof(path, expected_root=opts.expected_root, receipt=opts.receipt,
                                     trusted_key_ids=opts.trusted))
        proof.skipped = proof.report.checks[0].facts.get("own_file")
        if opts.policy is not None:  # a proof has no chain, evidence or steps: what needs them fails
            from ._policy import apply_policy

            proof.rules = apply_policy(proof.report, opts.policy, None, None)
        return proof
    before = _stat(path)
    report, parsed = verify_kept(path, evidence=opts.evidence, trusted_key_ids=opts.trusted,
                                  expected_root=opts.expected_root, expected_head=opts.expected_head,
                                  jobs=opts.steps_jobs, **_timing(opts.run_id, opts.tsa_roots, opts.tsa_policy,
                                                                  opts.keyring))
    outcome = Outcome(report, skipped=report.checks[0].facts.get("own_file"))
    evidence = evidence_for(path, opts.evidence)
    outcome.evidence = None if evidence is None else os.fspath(evidence)
    wf = None
    chain = report.check("chain")
    bound = not report.malformed and chain.status == PASS
    if bound and ("status" not in chain.facts or opts.log is not None or (
            opts.policy is not None and opts.policy.needs_workflow)):
        # The receipt as the checks parsed it; only a streamed one is parsed once more (or none, if too large).
        wf = parsed if isinstance(parsed, dict) else _load_again(path, report)
    if opts.log is not None:
        from ._tlog import check_receipt_log, receipt_entry

        outcome.log_entry, outcome.log_why = receipt_entry(wf) if bound else (None, "its chain check did not pass")
        if not opts.log_walked or opts.policy is not None:
            check_receipt_log(report, path, opts.log, outcome.log_entry, outcome.log_why)
    if opts.policy is not None:
        from ._policy import apply_policy

        outcome.rules = apply_policy(report, opts.policy, path, evidence, workflow=wf)
    outcome.status = _status_of(report, wf)
    if opts.digests:
        try:
            # The digest of the bytes verified (a read of its own could see another file); streamed: read again.
            outcome.sha256 = report.checks[0].facts.get("sha256") or file_sha256(path)
            outcome.evidence_sha256 = file_sha256(evidence) if evidence is not None else None
        except (MalformedInput, OSError) as e:
            report.notes.append(f"cannot digest the file for the summary: {e}")
    if before != _stat(path):
        report.notes.append("the file changed while it was verified: verify it again")
        report.checks[0].fail("the file changed while it was verified")
    return outcome


def _load_again(path: str, report: Report) -> dict[str, Any] | None:
    """A streamed receipt parsed again (the bytes ``report`` verified), or None when it cannot be held."""
    from ._policy import load_workflow

    return load_workflow(path, report)[0]


def _stat(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class _Worker:
    """A picklable callable: ``verify_file`` with the run's options bound."""

    def __init__(self, opts: ArchiveOptions) -> None:
        self.opts = opts

    def __call__(self, task: tuple[str, bool, str | None]) -> Outcome:
        try:
            return verify_file(task, self.opts)
        except Exception as e:  # one file's failure is its result: the stream (and its JSON) goes on
            return Outcome(unreadable_report(task[0], f"internal error: {type(e).__name__}: {e}"))


def outcomes(tasks: list[tuple[str, bool, str | None]], opts: ArchiveOptions, jobs: int,
             client: Any = None) -> Iterator[Outcome]:
    """Each file's outcome, in the order of ``tasks``; ``jobs`` > 1 verifies in worker processes.

    ``client``: a ``distributed.Client``, to verify in batches on its Dask cluster instead.
    """
    if client is not None:
        from ._dask import dask_outcomes  # loaded only for --dask

        yield from dask_outcomes(tasks, opts, client)
        return
    worker = _Worker(opts)
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
        judges = [j for j in (getattr(s, "judge", None) for s in sinks) if j is not None]
        for o in outcomes(tasks, opts, jobs, client):
            for judge in judges:  # a sink that completes the report (the log check of a completeness run)
                judge(o)
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
