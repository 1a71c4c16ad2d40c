"""Archive runs: many receipts verified in worker processes, results streamed out in order.

Each receipt's result is printed (a line, a full report, or a JSON object) and added to
running counts as it arrives, then dropped, so memory does not grow with the archive.
Only a signed summary (``--attest``) keeps one short entry per receipt, because it signs
them all.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import IO, Any

from ._output import dump_json, one_line
from ._report import PASS, Report
from ._run_file import ArchiveOptions, Outcome, Worker, file_sha256, skipped_line, verify_file
from ._tally import SCHEMA, Tally

#: ``ArchiveOptions``, ``Outcome``, ``file_sha256`` and ``verify_file`` live in :mod:`._run_file`; named here too.
__all__ = ["SCHEMA", "ArchiveOptions", "Outcome", "Tally", "file_sha256", "run_archive", "verify_file"]

#: Files handed to a worker at a time: large enough to amortize the hand-over, small enough to stream.
_CHUNK = 16
#: Chunks per worker handed out before the results before them are read: bounds what waits in memory.
_WINDOW_CHUNKS = 8


def outcomes(tasks: list[tuple[str, bool, str | None]], opts: ArchiveOptions, jobs: int,
             client: Any = None, dask_batch: int | None = None) -> Iterator[Outcome]:
    """Each file's outcome, in the order of ``tasks``; ``jobs`` > 1 verifies in worker processes.

    ``client``: a ``distributed.Client``, to verify in batches on its Dask cluster instead
    (``dask_batch`` receipts a task; None: sized by what is left).
    """
    if client is not None:
        from ._dask import dask_outcomes  # loaded only for --dask

        yield from dask_outcomes(tasks, opts, client, batch=dask_batch)
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
                verbose: bool, only_failures: bool, out: IO[str], sinks: list[Any], client: Any = None,
                dask_batch: int | None = None) -> Tally:
    """Verify every file, stream each result to ``out`` (and each of ``sinks``), return the counts.

    A sink has ``add(outcome)``; it sees every outcome, failures or not. ``client`` and
    ``dask_batch``: verify on that Dask cluster (``outcomes``).
    """
    tally = Tally()
    bar = _progress(len(tasks))
    first = True
    if as_json:
        out.write('{\n  "schema": "' + SCHEMA + '",\n  "results": [')
    try:
        judges = [j for j in (getattr(s, "judge", None) for s in sinks) if j is not None]
        for o in outcomes(tasks, opts, jobs, client, dask_batch):
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
