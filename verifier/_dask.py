"""Archive runs on a Dask cluster: batches of receipts per task, outcomes streamed back in order.

Each task verifies a batch with :func:`~aer1.verifier._run_file.verify_file`, the code and
options of a run on one machine. Trust material the client read from its own disk (the
keyring, the TSA roots) travels inside the task as bytes and is written to a private folder
on the worker, so a worker never needs a path only the client has. Outcomes are read in
the order of the files; a batch whose worker is lost is run again by the scheduler and is
read once, so each file is counted exactly once. ``distributed`` loads only here.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
import tempfile
from collections.abc import Iterator
from typing import Any

from ..errors import CouldNotVerifyError
from ._output import unreadable_report
from ._run_file import ArchiveOptions, Outcome, Worker

__all__ = ["CONNECT_TIMEOUT", "DASK_BATCH", "DASK_MAX_BATCH", "QUIET_WORKERS", "DaskUnavailable", "batch_size",
           "connect", "dask_outcomes", "local_cluster", "ship"]

#: Receipts per task at the least (the end of a run): the scheduler's cost per task (1 to 6 ms)
#: stays far below a batch's work (64 receipts of 50 steps: about 70 ms).
DASK_BATCH = 64
#: Receipts per task at the most (the start of a long run): the scheduler and the client handle a
#: task in a few ms whatever its size, so fewer, larger tasks cost less while much is left.
DASK_MAX_BATCH = 512
#: Tasks per worker submitted ahead of the one being read: bounds the results waiting in memory.
_AHEAD_PER_WORKER = 4
#: Seconds to wait for a scheduler before giving up (a usage error, never a hang).
CONNECT_TIMEOUT = 10.0

#: Dask settings of the LocalCluster ``--dask local`` starts. By default each worker samples its
#: task thread's stack every 10 ms (the statistical profiler), ticks its event loop every 20 ms
#: and reads its memory every 100 ms: about 4 % of a core per idle worker and more while a task
#: holds the GIL, taken from the verification on a loaded machine. A run shows no dashboard,
#: so none of it is needed at that rate; memory is still watched (its limits still apply), once
#: a second. Each Nanny also sets ``MALLOC_TRIM_THRESHOLD_=65536`` in its worker's environment
#: by default: glibc then hands freed memory back to the system whenever 64 KiB are free at the
#: top of the heap (and stops adapting its mmap threshold), so a worker maps, faults in and
#: zeroes its pages again for each receipt (13 times the page faults of a run on one machine,
#: 12 to 25 % more CPU per receipt); the workers keep glibc's own settings here (None unsets it).
#: An external cluster keeps its own configuration: the same keys set there save the same.
QUIET_WORKERS: dict[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
}

Task = tuple[str, bool, str | None]
#: (name, bytes) of each file shipped; the keyring's name is ``_KEYRING``.
Shipped = tuple[tuple[str, bytes], ...]
_KEYRING = "keyring"
_TSA = "tsa"


class DaskUnavailable(CouldNotVerifyError):
    """Dask is not installed, or the scheduler cannot be reached: one line for the caller."""


def ship(opts: ArchiveOptions) -> tuple[ArchiveOptions, Shipped]:
    """``opts`` without client paths to trust material, and that material as bytes."""
    files: list[tuple[str, bytes]] = []
    if opts.keyring is not None:
        with open(opts.keyring, "rb") as f:
            files.append((_KEYRING, f.read()))
    if opts.tsa_roots is not None:
        for name in sorted(os.listdir(opts.tsa_roots)):
            path = os.path.join(opts.tsa_roots, name)
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    files.append((f"{_TSA}/{name}", f.read()))
    return dataclasses.replace(opts, keyring=None, tsa_roots=None), tuple(files)


@functools.lru_cache(maxsize=4)
def _unpack(run_id: str, shipped: Shipped, keyring: bool, tsa: bool) -> tuple[str | None, str | None]:
    """Write the shipped files to a private folder on this worker, once per run; their paths."""
    folder = tempfile.mkdtemp(prefix=f"aer1-trust-{run_id}-")
    os.makedirs(os.path.join(folder, _TSA))
    for name, data in shipped:
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    return (os.path.join(folder, _KEYRING) if keyring else None,
            os.path.join(folder, _TSA) if tsa else None)


def verify_batch(tasks: list[Task], opts: ArchiveOptions, shipped: Shipped, keyring: bool,
                 tsa: bool) -> list[Outcome]:
    """A Dask task: each file's outcome, verified as one machine's run would (runs on a worker)."""
    if shipped or keyring or tsa:
        ring, roots = _unpack(opts.run_id, shipped, keyring, tsa)
        opts = dataclasses.replace(opts, keyring=ring, tsa_roots=roots)
    if len(tasks) > 1:
        import orjson  # noqa: F401  (as in a run on one machine: with it loaded, each file is parsed and encoded quicker)
    worker = Worker(opts)
    return [worker(t) for t in tasks]


def connect(address: str, workers: int, timeout: float | None = None) -> Any:
    """A ``distributed.Client``: ``local`` starts a LocalCluster of ``workers`` processes on 127.0.0.1."""
    try:
        import distributed
    except ImportError as e:
        raise DaskUnavailable("--dask needs Dask: pip install 'aer1[dask]'") from e
    wait = CONNECT_TIMEOUT if timeout is None else timeout
    try:
        if address == "local":
            return distributed.Client(local_cluster(workers), timeout=wait)  # type: ignore[no-untyped-call,unused-ignore]
        return distributed.Client(address, timeout=wait)  # type: ignore[no-untyped-call,unused-ignore]
    except (OSError, TimeoutError, ValueError, TypeError) as e:
        raise DaskUnavailable(f"--dask {address}: cannot reach the scheduler within {wait:g} s: "
                              f"{type(e).__name__}: {e}") from e


def local_cluster(workers: int) -> Any:
    """A ``distributed.LocalCluster`` of ``workers`` single-thread processes on 127.0.0.1, with ``QUIET_WORKERS``."""
    import dask
    import distributed

    with dask.config.set(QUIET_WORKERS):  # read by the workers as they start (each Nanny hands its config on)
        return distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,  # type: ignore[no-untyped-call,unused-ignore]
                                        host="127.0.0.1", dashboard_address=None)


def close(client: Any) -> None:
    """Close ``client`` and the local cluster it started, if any."""
    cluster = client.cluster if getattr(client, "cluster", None) is not None else None
    client.close()
    if cluster is not None:
        cluster.close()


def batch_size(left: int, in_flight: int, batch: int | None = None) -> int:
    """Receipts in the next task when ``left`` are not yet sent and ``in_flight`` tasks are kept ahead.

    ``batch`` fixes the size. Otherwise the size shrinks with what is left (guided scheduling):
    a share of it that keeps about two rounds of tasks ahead, from :data:`DASK_MAX_BATCH` while
    much is left down to :data:`DASK_BATCH` at the end, so the workers finish together rather
    than one waiting on the other's last large batch."""
    if batch is not None:
        return batch
    return max(DASK_BATCH, min(DASK_MAX_BATCH, left // (2 * in_flight)))


def dask_outcomes(tasks: list[Task], opts: ArchiveOptions, client: Any, *,
                  batch: int | None = None) -> Iterator[Outcome]:
    """Each file's outcome, in the order of ``tasks``, verified in batches on ``client``'s cluster.

    ``batch``: receipts per task (default: :func:`batch_size`'s guided sizes). A batch that
    fails on the cluster (its worker lost more often than the scheduler allows) comes back as
    each of its files unreadable, with the reason: never dropped, never twice.
    """
    sent, shipped = ship(opts)
    keyring, tsa = opts.keyring is not None, opts.tsa_roots is not None
    ahead = max(1, len(client.scheduler_info().get("workers", {})) * _AHEAD_PER_WORKER)
    pending: collections.deque[tuple[list[Task], Any]] = collections.deque()
    start, nxt = 0, 0
    try:
        while start < len(tasks) or pending:
            while start < len(tasks) and len(pending) < ahead:
                b = tasks[start:start + batch_size(len(tasks) - start, ahead, batch)]
                start += len(b)
                pending.append((b, client.submit(verify_batch, b, sent, shipped, keyring, tsa, pure=False,
                                                 key=f"aer1-verify-{opts.run_id}-{nxt}")))
                nxt += 1
            b, future = pending.popleft()
            try:
                results: list[Outcome] = future.result()
            except Exception as e:  # the cluster gave up on this batch: each file says so
                why = f"not verified: the cluster failed this batch: {type(e).__name__}: {e}"
                results = [Outcome(unreadable_report(t[0], why)) for t in b]
            finally:
                future.release()
            yield from results
    finally:
        for _, future in pending:
            future.cancel()
