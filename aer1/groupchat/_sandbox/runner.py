"""Running and supervising one sandboxed command: spawn it, read its output, enforce the
clock, kill everything it left, and turn the outcome into a ``SandboxResult``."""

from __future__ import annotations

import abc
import contextlib
import fcntl
import json
import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .api import SandboxError, SandboxResult
from .disk import measure
from .limits import (
    DEFAULT_LIMITS,
    DISK_LIMIT_EXIT_CODE,
    LIMIT_CPU,
    LIMIT_DISK,
    LIMIT_FILE_SIZE,
    LIMIT_MEMORY,
    LIMIT_OUTPUT,
    LIMIT_PROCESSES,
    LIMIT_TIME,
    TIMEOUT_EXIT_CODE,
    WORK_DIR_CHECK_S,
    SandboxLimits,
)
from .workdir import WorkDir, open_work_dir

# Messages a program prints when an allocation or a fork failed (best-effort hints).
_MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "out of memory")
_PROCESS_MARKERS = ("Resource temporarily unavailable", "Cannot fork")
_FILE_SIZE_MARKERS = ("File too large",)

_READ_CHUNK_BYTES = 65536
_POLL_S = 0.05
_CHECK_SHARE = 4
"""The work_dir checks take at most about 1/_CHECK_SHARE of the host's time while a command runs."""
_EXIT_DRAIN_S = 0.2
"""After the command exits, how long output still held open by its leftovers is read."""

# ---------------------------------------------------------------------------------------------
# Supervision shared by both sandboxes: read output, enforce the clock, kill everything.
# ---------------------------------------------------------------------------------------------


@dataclass
class _Outcome:
    output: bytes = b""
    output_bytes: int = 0
    timed_out: bool = False
    started: bool = False
    exit_code: int = 0
    duration_s: float = 0.0
    over_quota: str | None = None


def _has_exited(pid: int) -> bool:
    """Whether our child ``pid`` has exited, without reaping it (its pid stays reserved)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class _InitTracker:
    """Follows bubblewrap's JSON status to hold a pidfd on the sandbox's pid-namespace init.

    Killing that init makes the kernel kill every process of the sandbox.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self.pidfd: int | None = None

    def feed(self, data: bytes) -> None:
        self._buffer += data
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            with contextlib.suppress(ValueError):
                status = json.loads(line)
                if self.pidfd is None and isinstance(status, dict) and isinstance(status.get("child-pid"), int):
                    # Opened while bubblewrap waits on it, so the pid is still that init's.
                    with contextlib.suppress(OSError):
                        self.pidfd = os.pidfd_open(status["child-pid"])

    def kill(self) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            os.close(self.pidfd)
            self.pidfd = None


class _QuotaWatch:
    """Measures ``work_dir`` now and then while a command runs (see :mod:`.disk`)."""

    def __init__(self, work_dir_fd: int | None, limits: SandboxLimits, holders: Path | None) -> None:
        self.fd, self.limits, self.holders = work_dir_fd, limits, holders
        self.due = time.monotonic()

    def problem(self, now: float) -> str | None:
        """Why ``work_dir`` is over its quota, when a check is due and finds it so."""
        if self.fd is None or now < self.due:
            return None
        problem = measure(self.fd, self.limits, self.holders).over(self.limits)
        spent = time.monotonic() - now
        self.due = now + max(WORK_DIR_CHECK_S, _CHECK_SHARE * spent)
        return problem


def _supervise(
    proc: subprocess.Popen[bytes],
    *,
    ready_fd: int,
    status_fd: int | None,
    limits: SandboxLimits,
    start: float,
    work_dir_fd: int | None,
    holders: Path | None,
) -> _Outcome:
    """Collect output until the command ends, times out or fills ``work_dir``; then kill
    whatever is left."""
    assert proc.stdout is not None
    outcome = _Outcome()
    captured = bytearray()
    tracker = _InitTracker()
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout.fileno(), selectors.EVENT_READ, "output")
    selector.register(ready_fd, selectors.EVENT_READ, "ready")
    if status_fd is not None:
        selector.register(status_fd, selectors.EVENT_READ, "status")
    deadline = start + limits.timeout_s
    drain_until: float | None = None
    watch = _QuotaWatch(work_dir_fd, limits, holders)
    try:
        while selector.get_map():
            now = time.monotonic()
            if drain_until is None and _has_exited(proc.pid):
                drain_until = now + _EXIT_DRAIN_S
            if drain_until is None:
                outcome.over_quota = watch.problem(now)
                if outcome.over_quota is not None:
                    break
            end = deadline if drain_until is None else drain_until
            if now >= end:
                outcome.timed_out = drain_until is None
                break
            for key, _ in selector.select(min(end - now, _POLL_S)):
                chunk = os.read(key.fd, _READ_CHUNK_BYTES)
                if not chunk:
                    selector.unregister(key.fd)
                elif key.data == "output":
                    room = limits.max_output_bytes - len(captured)
                    if room > 0:
                        captured += chunk[:room]
                    outcome.output_bytes += len(chunk)
                elif key.data == "ready":
                    outcome.started = True
                else:
                    tracker.feed(chunk)
    finally:
        selector.close()
        tracker.kill()
        _kill_group(proc.pid)  # still unreaped here, so the group id cannot have been reused
        proc.wait()
        proc.stdout.close()
    outcome.duration_s = time.monotonic() - start
    outcome.output = bytes(captured)
    code = proc.returncode
    outcome.exit_code = 128 - code if code < 0 else code
    if outcome.timed_out:
        outcome.exit_code = TIMEOUT_EXIT_CODE
    elif outcome.over_quota is not None:
        outcome.exit_code = DISK_LIMIT_EXIT_CODE
    elif work_dir_fd is not None:  # what the command left when it ended between two checks
        outcome.over_quota = measure(work_dir_fd, limits).over(limits)
    return outcome


def _limits_hit(outcome: _Outcome, limits: SandboxLimits, text: str) -> tuple[str, ...]:
    """Name the limits the command hit (see ``SandboxResult``)."""
    hit: list[str] = []
    if outcome.timed_out:
        hit.append(LIMIT_TIME)
    if outcome.exit_code == 128 + signal.SIGXCPU:
        hit.append(LIMIT_CPU)
    failed = outcome.exit_code != 0
    if failed and any(marker in text for marker in _MEMORY_MARKERS):
        hit.append(LIMIT_MEMORY)
    if failed and any(marker in text for marker in _PROCESS_MARKERS):
        hit.append(LIMIT_PROCESSES)
    if outcome.exit_code == 128 + signal.SIGXFSZ or (failed and any(m in text for m in _FILE_SIZE_MARKERS)):
        hit.append(LIMIT_FILE_SIZE)
    if outcome.output_bytes > limits.max_output_bytes:
        hit.append(LIMIT_OUTPUT)
    if outcome.over_quota is not None:
        hit.append(LIMIT_DISK)
    return tuple(hit)


def _result(name: str, outcome: _Outcome, limits: SandboxLimits) -> SandboxResult:
    text = outcome.output.decode("utf-8", errors="replace")
    return SandboxResult(
        exit_code=outcome.exit_code,
        output=text,
        sandbox=name,
        timed_out=outcome.timed_out,
        output_truncated=outcome.output_bytes > limits.max_output_bytes,
        output_bytes=outcome.output_bytes,
        duration_s=outcome.duration_s,
        limits_hit=_limits_hit(outcome, limits, text),
        over_quota=outcome.over_quota,
    )


class Pipes:
    """The pipes of one run. The child's ends are closed once it is spawned, ours when the
    run ends."""

    def __init__(self) -> None:
        self._ours: list[int] = []
        self._childs: list[int] = []
        self._lent: list[int] = []

    def lend(self, fd: int) -> int:
        """Pass ``fd``, which someone else owns and closes, to the child too."""
        self._lent.append(fd)
        return fd

    def preloaded(self, content: bytes) -> int:
        """A read end for the child that yields ``content``, which must fit the pipe's buffer
        (nothing reads it before the child starts); raises ``SandboxError`` otherwise."""
        read_end, write_end = os.pipe()
        self._childs.append(read_end)
        if len(content) > fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ):
            os.close(write_end)
            raise SandboxError(f"{len(content)} bytes of sandbox set-up data do not fit a pipe")
        with os.fdopen(write_end, "wb") as writer:
            writer.write(content)
        return read_end

    def channel(self) -> tuple[int, int]:
        """A pipe from the child to us: (our read end, the child's write end)."""
        read_end, write_end = os.pipe()
        self._ours.append(read_end)
        self._childs.append(write_end)
        return read_end, write_end

    @property
    def child_fds(self) -> tuple[int, ...]:
        return (*self._childs, *self._lent)

    def spawned(self) -> None:
        """Close our copies of the child's ends, so that its exit shows as end-of-file."""
        for fd in self._childs:
            os.close(fd)
        self._childs.clear()

    def __enter__(self) -> Pipes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.spawned()
        for fd in self._ours:
            os.close(fd)
        self._ours.clear()


@contextlib.contextmanager
def _stdin_file(stdin: bytes | None) -> Iterator[IO[bytes] | int]:
    """Standard input for the command: an unlinked temporary file, or /dev/null."""
    if stdin is None:
        yield subprocess.DEVNULL
        return
    with tempfile.TemporaryFile() as handle:
        handle.write(stdin)
        handle.seek(0)
        yield handle


@dataclass(frozen=True)
class Launch:
    """What a sandbox starts on the host for one command (see :func:`execute`)."""

    argv: list[str]
    """The host command line; it ends in the launcher and the command."""
    env: dict[str, str]
    cwd: str
    failure: str
    """What the error says when the command never started."""
    status_fd: int | None = None
    """Bubblewrap's JSON status pipe, if it runs under bubblewrap."""


def execute(
    name: str,
    launch: Launch,
    *,
    stdin: bytes | None,
    limits: SandboxLimits,
    pipes: Pipes,
    ready_fd: int,
    work_dir_fd: int | None = None,
    holders: Path | None = None,
) -> SandboxResult:
    """Spawn ``launch`` in its own session, supervise it (measuring ``work_dir`` when its
    descriptor is given, with what the processes listed in ``holders`` keep unlinked), and
    turn the outcome into a result."""
    with _stdin_file(stdin) as stdin_source:
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                launch.argv,
                stdin=stdin_source,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=launch.env,
                cwd=launch.cwd,
                start_new_session=True,
                pass_fds=pipes.child_fds,
            )
        except OSError as e:
            raise SandboxError(f"{launch.failure}: {e}") from e
        pipes.spawned()
        outcome = _supervise(
            proc,
            ready_fd=ready_fd,
            status_fd=launch.status_fd,
            limits=limits,
            start=start,
            work_dir_fd=work_dir_fd,
            holders=holders,
        )
    if not outcome.started and not outcome.timed_out and outcome.over_quota is None:
        detail = outcome.output.decode("utf-8", errors="replace").strip()
        raise SandboxError(f"{launch.failure} (exit {outcome.exit_code}): {detail}")
    return _result(name, outcome, limits)


@dataclass(frozen=True)
class RunSetup:
    """One run as a sandbox's ``_launch`` sees it."""

    work_dir: WorkDir
    """The opened ``work_dir``."""
    limits: SandboxLimits
    pipes: Pipes
    ready_fd: int
    """The launcher's end of the pipe on which it reports that the command starts."""
    holders: Path | None
    """What ``_confine`` yielded: the ``cgroup.procs`` of the run's own cgroup, if any."""


class WorkDirSandbox(abc.ABC):
    """What both sandboxes share: check the command, open ``work_dir`` (:mod:`.workdir`) with
    the sandbox's ``work_dir_guard``, confine the run (``_confine``), then start the launch
    the sandbox makes of the command (``_launch``) and supervise it (:func:`execute`)."""

    name: str

    @property
    def work_dir_guard(self) -> tuple[int, int] | None:
        """The ``(uid, gid)`` no directory on the way to ``work_dir`` may be writable by, if any."""
        return None

    def run(
        self,
        argv: Sequence[str],
        *,
        work_dir: str | os.PathLike[str],
        stdin: bytes | None = None,
        limits: SandboxLimits = DEFAULT_LIMITS,
    ) -> SandboxResult:
        """Run ``argv`` (looked up on the sandbox's PATH) in ``work_dir`` (see ``Sandbox``)."""
        command = check_argv(argv)
        with (
            open_work_dir(work_dir, guard=self.work_dir_guard) as opened,
            self._confine(opened, limits) as holders,
            Pipes() as pipes,
        ):
            ready_read, ready_write = pipes.channel()
            return execute(
                self.name,
                self._launch(command, RunSetup(opened, limits, pipes, ready_write, holders)),
                stdin=stdin,
                limits=limits,
                pipes=pipes,
                ready_fd=ready_read,
                work_dir_fd=opened.fd,
                holders=holders,
            )

    def _confine(self, work_dir: WorkDir, limits: SandboxLimits) -> contextlib.AbstractContextManager[Path | None]:
        """Set up what holds the run for its length; yields the ``cgroup.procs`` of the
        run's processes, if they have a cgroup of their own. None by default."""
        return contextlib.nullcontext()

    @abc.abstractmethod
    def _launch(self, command: list[str], run: RunSetup) -> Launch:
        """What to start for ``command`` in ``run``."""


def check_argv(argv: Sequence[str]) -> list[str]:
    if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv must be a non-empty sequence of strings")
    return list(argv)
