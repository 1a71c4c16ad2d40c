"""A process budget of its own for each run: a pids cgroup, where this host lets us make one.

``RLIMIT_NPROC`` counts every process of the sandbox user, so concurrent runs (and any
host service running as that user) share one budget and one run can starve another.
When this process may create a child in its pids cgroup (cgroup v1 with the ``pids``
controller, or cgroup v2 with ``pids`` enabled below our cgroup), each run gets a cgroup
of its own whose ``pids.max`` is the run's ``max_processes`` plus bubblewrap's own
processes; the run joins it before bubblewrap starts. Elsewhere the shared rlimit is all
there is (``spec/sandbox.md`` says so).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

logger = logging.getLogger("aer1")

CGROUP_ROOT = Path("/sys/fs/cgroup")
BWRAP_PROCESSES = 2
"""Processes of a run besides the command's: bubblewrap and the sandbox's init."""
_PREFIX = "aer1-sandbox-"
_REMOVE_WAIT_S = 2.0
_REMOVE_POLL_S = 0.02


def _own_cgroup(hierarchy: str) -> str | None:
    """Our cgroup path in ``hierarchy`` ("" for the v2 one, else a v1 controller name)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if (hierarchy == "" and controllers == "") or hierarchy in controllers.split(","):
            return path
    return None


def pids_cgroup_parent() -> Path | None:
    """The directory under which per-run pids cgroups can be made here, or None."""
    v1 = _own_cgroup("pids")
    if v1 is not None:
        candidate = CGROUP_ROOT / "pids" / v1.lstrip("/")
    else:
        v2 = _own_cgroup("")
        if v2 is None:
            return None
        candidate = CGROUP_ROOT / v2.lstrip("/")
        try:
            enabled = (candidate / "cgroup.subtree_control").read_text().split()
        except OSError:
            return None
        if "pids" not in enabled:
            return None
    if not (candidate / "cgroup.procs").is_file() or not os.access(candidate, os.W_OK):
        return None
    return candidate


@contextlib.contextmanager
def run_budget(max_processes: int) -> Iterator[Path | None]:
    """A fresh pids cgroup for one run (its ``cgroup.procs``, to join), removed afterwards;
    None where no such cgroup can be made."""
    parent = pids_cgroup_parent()
    if parent is None:
        yield None
        return
    _sweep(parent)
    group = parent / f"{_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(max_processes + BWRAP_PROCESSES))
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        yield None
        return
    try:
        yield group / "cgroup.procs"
    finally:
        _remove(group)


def _sweep(parent: Path) -> None:
    """Remove the empty cgroups of runs whose host process died before it could."""
    with contextlib.suppress(OSError):
        for group in parent.glob(f"{_PREFIX}*"):
            owner = group.name[len(_PREFIX) :].partition("-")[0]
            if owner.isdigit() and not Path(f"/proc/{owner}").exists():
                with contextlib.suppress(OSError):
                    group.rmdir()


def _remove(group: Path) -> None:
    """Remove the run's cgroup once the kernel has let its killed processes go."""
    deadline = time.monotonic() + _REMOVE_WAIT_S
    while True:
        try:
            group.rmdir()
            return
        except OSError:
            if time.monotonic() >= deadline:
                logger.warning("could not remove the sandbox's cgroup %s; it is left behind", group)
                return
            time.sleep(_REMOVE_POLL_S)
