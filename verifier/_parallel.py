"""The quick path over a large receipt in several processes: each checks a run of steps.

Given the ``prev_digest`` a run starts from, each run's digests, links, ids and leaves are
checked apart, and its Merkle nodes reduced ``Paths.levels`` levels (runs start at a
multiple of ``2**levels`` steps, so their nodes are those of the whole tree); this
process then checks the seams, the repeated ids and the top of the tree (``_fast.combine``).

Worker processes are made with ``os.fork``: they read the parsed receipt where it lies,
with nothing pickled on the way in. A fork is made only when this process runs one
thread (a lock held by another thread would stay held in the child); otherwise, on a
system without ``fork``, below ``Paths.parallel_min_steps``, or when a worker does not
answer, the runs are checked here. The result is the same either way: a run that is not
certainly passing makes the caller run the reference over the whole receipt.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
from collections.abc import Callable
from typing import Any

from .._receipt import MERKLE_VERSION
from ._fast import Passed, Run, Runs
from ._paths import DEFAULT_PATHS, Paths

__all__ = [
    "collect",
    "fork_job",
    "fork_safe",
    "quick_steps",
    "reap",
    "steps_in_runs",
]

_READ = 1 << 20


def fork_safe() -> bool:
    """True when forking cannot copy a lock another thread holds: ``fork`` exists and one thread runs.

    Threads Python does not know of (started by a C library) count too: on Linux they are
    read from ``/proc/self/task``; where that cannot be read, no fork is made.
    """
    import threading  # loaded only for a receipt large enough to be split

    if not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def steps_in_runs(steps: list[Any], jobs: int, paths: Paths = DEFAULT_PATHS) -> Passed | None:
    """The quick path over ``steps`` in up to ``jobs`` processes (this one included); None: run the reference."""
    n = len(steps)
    block, levels = paths.block_steps, paths.levels
    per = -(-n // max(jobs, 1) // block) * block or block  # whole blocks, rounded up
    runs = Runs(levels)
    if jobs <= 1 or n < paths.parallel_min_steps or per >= n or not fork_safe():
        return runs.passed() if runs.check(steps, last=True) is not None else None
    bounds = [(lo, min(lo + per, n)) for lo in range(0, n, per)]
    workers: list[tuple[int, int, tuple[int, int]]] = []
    try:
        for lo, hi in bounds[1:]:
            pid, fd = fork_job(functools.partial(_run_of, steps, lo, hi, n, levels))
            workers.append((pid, fd, (lo, hi)))
        if runs.check(steps[:bounds[0][1]], last=False) is None:
            return None
        while workers:
            pid, fd, (lo, hi) = workers.pop(0)
            run = collect(pid, fd)
            if isinstance(run, Run) and run.lo == runs.lo:
                runs.add(run)
            elif runs.check(steps[lo:hi], last=hi == n) is None:  # no answer: checked here
                return None
    finally:
        reap([(pid, fd) for pid, fd, _ in workers])
    return runs.passed()


def _run_of(steps: list[Any], lo: int, hi: int, n: int, levels: int) -> Run | None:
    """A worker's job: steps ``lo`` to ``hi`` of ``n``, by the driver (:class:`~._fast.Runs`) from ``lo``."""
    return Runs(levels, lo).check(steps[lo:hi], last=hi == n)


def fork_job(job: Callable[[], Any]) -> tuple[int, int]:
    """Run ``job`` in a child process; its pickled answer comes on the returned pipe (pid, read end)."""
    import pickle  # loaded only when a worker is made

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: never returns into the caller's code
        try:
            os.close(read_fd)
            gc.disable()  # a collection would touch (and so copy) every page of the receipt
            view = memoryview(pickle.dumps(job()))
            while view:
                view = view[os.write(write_fd, view):]
        finally:
            os._exit(0)
    os.close(write_fd)
    return pid, read_fd


def collect(pid: int, fd: int) -> Any:
    """The worker's answer, or None when it gave none (it failed, or its bytes do not unpickle)."""
    chunks = []
    try:
        while chunk := os.read(fd, _READ):
            chunks.append(chunk)
    finally:
        os.close(fd)
        _, status = os.waitpid(pid, 0)
    if status != 0 or not chunks:
        return None
    import pickle

    try:
        return pickle.loads(b"".join(chunks))  # our own child's bytes, not input
    except (pickle.UnpicklingError, EOFError, AttributeError, ValueError):
        return None


def reap(workers: list[tuple[int, int]]) -> None:
    """Close and wait for workers not collected (only when the caller was interrupted): none is left behind."""
    for pid, fd in workers:
        os.close(fd)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def quick_steps(wf: Any, jobs: int = 1, paths: Paths = DEFAULT_PATHS) -> Passed | None:
    """Checks 2, 3 and 5 over the steps of a receipt that claims our profile; None: run the reference.

    ``jobs``: processes to use for a receipt of ``paths.parallel_min_steps`` steps or more.
    """
    if type(wf) is not dict or not ("profile" in wf or "chain_head" in wf):
        return None
    if wf.get("merkle_version") != MERKLE_VERSION:
        return None
    steps = wf.get("steps")
    if type(steps) is not list or not steps:
        return None
    return steps_in_runs(steps, jobs, paths)
