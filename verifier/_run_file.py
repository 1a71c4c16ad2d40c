"""One file of an archive run verified: what every file is checked against, and its outcome.

Kept apart from the run (:mod:`._archive`) so that the processes and clusters that verify
files (:mod:`._dask`) take this without importing the run that starts them.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._storage import is_url
from ._output import one_line, unreadable_report
from ._parse import MalformedInput, file_sha256
from ._report import PASS, Report
from ._tally import Outcome
from ._time_cli import load_time_options

if TYPE_CHECKING:  # a policy's module loads only when one is given
    from ._policy import Policy
    from ._tlog import LogTrust
    from ._trust import Trust

__all__ = ["ArchiveOptions", "Outcome", "Worker", "file_sha256", "skipped_line", "verify_file"]


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

    @classmethod
    def from_trust(cls, trust: Trust, **run: Any) -> ArchiveOptions:
        """The options of a run against ``trust`` (its files by path, loaded again in each worker)."""
        files = trust.files
        return cls(trusted=trust.trusted_key_ids, expected_root=trust.expected_root,
                   expected_head=trust.expected_head, receipt=trust.receipt, policy=trust.policy, log=trust.log,
                   tsa_roots=files.get("tsa_roots"), tsa_policy=files.get("tsa_policy"), keyring=files.get("keyring"),
                   **run)

    def trust(self) -> Trust:
        """What each file of the run is verified against: the trust files loaded once per run and process."""
        from ._trust import Trust

        timing = _timing(self.run_id, self.tsa_roots, self.tsa_policy, self.keyring)
        return Trust(self.trusted, timing["keyring"], timing["tsa_trust"], self.expected_root, self.expected_head,
                     self.receipt, self.policy, self.log)


def skipped_line(o: Outcome) -> str:
    """The line a run of many files prints for a file it skipped: what it is."""
    return one_line(f"{o.report.source}: not a receipt, skipped: {o.skipped}")


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

        return verify_staged(task, opts, functools.partial(verify_file, opts=opts))
    trust = opts.trust()
    if is_proof or opts.proof:  # a proof has no chain, evidence or steps: what a policy needs of them fails
        checked = trust.examine_proof(path)
        return Outcome(checked.report, rules=checked.rules, skipped=checked.report.checks[0].facts.get("own_file"))
    before = _stat(path)
    examined = trust.examine(path, evidence=opts.evidence, jobs=opts.steps_jobs, log_walked=opts.log_walked)
    report, wf, evidence = examined.report, examined.workflow, examined.evidence
    outcome = Outcome(report, skipped=report.checks[0].facts.get("own_file"), rules=examined.rules,
                      evidence=evidence, log_entry=examined.log_entry, log_why=examined.log_why,
                      log_ids=examined.log_ids)
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


def _stat(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class Worker:
    """A picklable callable: ``verify_file`` with the run's options bound."""

    def __init__(self, opts: ArchiveOptions) -> None:
        self.opts = opts

    def __call__(self, task: tuple[str, bool, str | None]) -> Outcome:
        try:
            return verify_file(task, self.opts)
        except Exception as e:  # one file's failure is its result: the stream (and its JSON) goes on
            return Outcome(unreadable_report(task[0], f"internal error: {type(e).__name__}: {e}"))
