"""A receipt in object storage, verified from a private local copy of its bytes.

The receipt and the files beside it (evidence, disclosures, erasures, log proof) are
copied whole into a private folder, each no longer than its limit plus one byte (the
checks then name the limit), and verified there by the code that verifies a local file:
the verdict is on the bytes copied, which are the bytes digested for a signed summary.
The files beside it are looked for in a listing of its folder, made once per run and
process (a missing one then costs no request). The report names the URLs, never the
private copy. Works in Dask workers as in one process.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import posixpath
import shutil
import tempfile
from collections.abc import Callable
from typing import Any, Protocol

from .._commit import disclosures_path_for, erasures_path_for
from .._limits import MAX_EVIDENCE_BYTES, MAX_INPUT_BYTES
from .._receipt import evidence_path_for
from .._storage import copy_out, is_url, names_in, parse_options, use_options
from .._tlog import MAX_PROOF_BYTES, proof_path_for
from ..errors import StorageError
from ._output import unreadable_report
from ._report import CheckResult, Report
from ._tally import Outcome

__all__ = ["verify_object", "verify_staged"]


class StagedOptions(Protocol):
    """What staging reads of a run's options (an ``ArchiveOptions``)."""

    @property
    def evidence(self) -> str | None: ...
    @property
    def storage_options(self) -> str | None: ...
    @property
    def proof(self) -> bool: ...
    @property
    def run_id(self) -> str: ...

@dataclasses.dataclass(frozen=True)
class _Alone:
    """The staging options of one receipt verified alone (``verify_receipt`` of a URL)."""

    run_id: str
    evidence: str | None = None
    storage_options: str | None = None  # the process's own (``aer1._storage.use_options``)
    proof: bool = False


#: Folders whose listings a process keeps at once (an archive's files come folder by folder).
_FOLDERS_LISTED = 16


def _beside(url: str) -> list[tuple[str, int]]:
    """The files looked for beside a receipt, each with the most bytes copied."""
    evidence = evidence_path_for(url)
    return [(evidence, MAX_EVIDENCE_BYTES), (disclosures_path_for(evidence), MAX_EVIDENCE_BYTES),
            (erasures_path_for(evidence), MAX_EVIDENCE_BYTES), (proof_path_for(url), MAX_PROOF_BYTES)]


@functools.lru_cache(maxsize=_FOLDERS_LISTED)
def _listed(folder: str, run_id: str) -> frozenset[str]:
    """The objects in ``folder``, listed once per run and process: a file beside a receipt is
    looked for in the listing, so a missing one costs no request (``run_id``: a later run lists anew)."""
    return names_in(folder)


def _copy(url: str, folder: str, limit: int, *, required: bool) -> bool:
    """Copy ``url`` into ``folder`` under its own name; False when it is missing and not ``required``."""
    target = os.path.join(folder, posixpath.basename(url))
    try:
        with open(target, "xb") as f:
            copy_out(url, f, limit)
    except FileNotFoundError:
        os.unlink(target)
        if required:
            raise
        return False
    return True


def _renamed(value: Any, local: str, remote: str) -> Any:
    """``value`` (text, lists and dicts of it) with the private folder named as the URL's."""
    if isinstance(value, str):
        return value.replace(local, remote)
    if isinstance(value, list):
        return [_renamed(v, local, remote) for v in value]
    if isinstance(value, dict):
        return {k: _renamed(v, local, remote) for k, v in value.items()}
    return value


def _rename_report(report: Report, local: str, remote: str) -> None:
    report.source = _renamed(report.source, local, remote)
    report.notes = _renamed(report.notes, local, remote)
    for c in report.checks:
        _rename_check(c, local, remote)


def _rename_check(c: CheckResult, local: str, remote: str) -> None:
    c.detail = _renamed(c.detail, local, remote)
    c.facts = _renamed(c.facts, local, remote)
    c.failures = [dataclasses.replace(f, message=_renamed(f.message, local, remote),
                                      expected=_renamed(f.expected, local, remote),
                                      actual=_renamed(f.actual, local, remote)) for f in c.failures]


def verify_staged(task: tuple[str, bool, str | None], opts: StagedOptions,
                  verify_file: Callable[[tuple[str, bool, str | None]], Outcome]) -> Outcome:
    """Verify the object ``task`` names (a URL) as ``verify_file`` verifies a local file of the same bytes."""

    url, is_proof, _ = task
    if opts.evidence is not None and is_url(opts.evidence):
        return Outcome(unreadable_report(url, "--evidence names a local file"))
    if opts.storage_options is not None:
        use_options(parse_options(opts.storage_options))
    folder = tempfile.mkdtemp(prefix="aer1-staged-")
    try:
        try:
            _copy(url, folder, MAX_INPUT_BYTES, required=True)
            if not (is_proof or opts.proof):
                listed = _listed(posixpath.dirname(url), opts.run_id)
                for beside, limit in _beside(url):
                    if beside in listed:
                        _copy(beside, folder, limit, required=False)
        except FileNotFoundError:
            return Outcome(unreadable_report(url, "cannot read: not found (no such object)"))
        except (StorageError, OSError) as e:
            return Outcome(unreadable_report(url, f"cannot read: {e.strerror or e}"))
        local = os.path.join(folder, posixpath.basename(url))
        outcome = verify_file((local, is_proof, None))
        remote = posixpath.dirname(url)
        _rename_report(outcome.report, folder, remote)
        outcome.evidence = _renamed(outcome.evidence, folder, remote)
        return outcome
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def verify_object(url: str, verify: Callable[[str], Report]) -> Report:
    """The report on the receipt object at ``url``: ``verify`` of a private copy of it and the files
    beside it, with the URLs named. Its folder is listed anew on each call (a fresh ``run_id``)."""
    alone = _Alone(run_id=os.urandom(8).hex())
    return verify_staged((url, False, None), alone, lambda task: Outcome(verify(task[0]))).report
