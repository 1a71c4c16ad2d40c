"""Sandboxes that run one command with no access to the host beyond a work directory.

``BubblewrapSandbox`` isolates with Linux namespaces through bubblewrap (``bwrap``): no
network, a private filesystem view holding only the system's read-only program
directories, the Python interpreter and the read-write ``work_dir``, a fresh ``/proc``,
``/tmp`` and ``/dev``, a scrubbed environment, an unprivileged user and resource limits.
``UnsandboxedExecutor`` (name ``"none"``) is the explicit opt-out: it applies the limits
but no isolation. ``default_sandbox()`` picks bubblewrap after probing that it works and
refuses otherwise unless the caller opts out. ``spec/sandbox.md`` documents exactly what
is and is not protected.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import math
import os
import platform
import selectors
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol, runtime_checkable

logger = logging.getLogger("aer1")

# ---------------------------------------------------------------------------------------------
# Limits
# ---------------------------------------------------------------------------------------------

DEFAULT_TIMEOUT_S = 60.0
"""Wall-clock time one command may run before the whole sandbox is killed."""
DEFAULT_MEMORY_BYTES = 1024 * 1024 * 1024
"""Address-space limit (RLIMIT_AS) of each process in the sandbox."""
DEFAULT_MAX_PROCESSES = 128
"""Processes and threads the sandbox user may have at once (RLIMIT_NPROC)."""
DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024
"""Bytes of combined stdout and stderr kept; the rest is read and dropped."""
DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest file a process may write (RLIMIT_FSIZE)."""
DEFAULT_TMPFS_BYTES = 64 * 1024 * 1024
"""Size of each in-memory filesystem of the sandbox (``/tmp`` and ``/dev/shm``)."""

CPU_GRACE_S = 1
"""CPU seconds allowed beyond the wall-clock timeout before SIGXCPU (a backstop only)."""
OPEN_FILES_LIMIT = 1024
"""Open file descriptors per process (RLIMIT_NOFILE)."""
TIMEOUT_EXIT_CODE = 124
"""Exit code reported when the wall-clock timeout killed the command (as timeout(1) does)."""
COMMAND_NOT_FOUND_EXIT_CODE = 127
"""Exit code when the command cannot be executed (as a shell reports it)."""

LIMIT_TIME = "time"
LIMIT_CPU = "cpu_time"
LIMIT_MEMORY = "memory"
LIMIT_PROCESSES = "processes"
LIMIT_FILE_SIZE = "file_size"
LIMIT_OUTPUT = "output"

# Messages a program prints when an allocation or a fork failed (best-effort hints).
_MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "out of memory")
_PROCESS_MARKERS = ("Resource temporarily unavailable", "Cannot fork")
_FILE_SIZE_MARKERS = ("File too large",)

# ---------------------------------------------------------------------------------------------
# Bubblewrap layout
# ---------------------------------------------------------------------------------------------

BWRAP_PATH = "/usr/bin/bwrap"
SANDBOX_UID = 65534
"""The unprivileged user code runs as (``nobody``): inside, and outside too when started as root."""
SANDBOX_GID = 65534
SANDBOX_WORK_DIR = "/workspace"
"""Where ``work_dir`` appears inside the bubblewrap sandbox (also the initial directory)."""
SANDBOX_HOME = "/tmp"
SANDBOX_HOSTNAME = "sandbox"
SANDBOX_LANG = "C.UTF-8"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"

# Read-only system trees; top-level names that are symlinks (merged /usr) are recreated as symlinks.
_SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The only host /etc entries exposed: the dynamic linker cache and the alternatives symlinks.
_ETC_ENTRIES = ("/etc/ld.so.cache", "/etc/alternatives")
_SYNTHETIC_ETC = {
    "/etc/passwd": f"sandbox:x:{SANDBOX_UID}:{SANDBOX_GID}:sandbox:{SANDBOX_HOME}:/usr/sbin/nologin\n",
    "/etc/group": f"sandbox:x:{SANDBOX_GID}:\n",
    "/etc/hosts": "127.0.0.1 localhost\n::1 localhost\n",
}

_READ_CHUNK_BYTES = 65536
_POLL_S = 0.05
_EXIT_DRAIN_S = 0.2
"""After the command exits, how long output still held open by its leftovers is read."""
_PROBE_TIMEOUT_S = 20.0
_PROBE_MEMORY_BYTES = 512 * 1024 * 1024


class SandboxError(RuntimeError):
    """The sandbox itself failed (as opposed to the command failing inside it)."""


class SandboxUnavailableError(SandboxError):
    """No working sandbox on this machine and the caller did not opt out."""


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one command; memory, file size and tmpfs sizes are in bytes."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_bytes: int = DEFAULT_MEMORY_BYTES
    max_processes: int = DEFAULT_MAX_PROCESSES
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    tmpfs_bytes: int = DEFAULT_TMPFS_BYTES

    def __post_init__(self) -> None:
        if isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, (int, float)) or not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be a positive number, got {self.timeout_s!r}")
        for name in ("memory_bytes", "max_processes", "max_output_bytes", "max_file_bytes", "tmpfs_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")

    @property
    def cpu_seconds(self) -> int:
        """The CPU-time limit (RLIMIT_CPU) per process: the timeout rounded up plus a grace."""
        return math.ceil(self.timeout_s) + CPU_GRACE_S


DEFAULT_LIMITS = SandboxLimits()


@dataclass(frozen=True)
class SandboxResult:
    """What one command did: exit code, captured output, and which limits it hit.

    ``exit_code`` is the command's status, ``128 + n`` when signal ``n`` killed it, and
    ``TIMEOUT_EXIT_CODE`` when the wall-clock timeout did. ``output`` is stdout and
    stderr interleaved as written, decoded as UTF-8 (invalid bytes replaced), at most
    ``max_output_bytes`` bytes. ``limits_hit`` names the limits hit: ``time``, ``output``,
    ``cpu_time`` and ``file_size`` (by signal) are certain; ``memory``, ``processes`` and
    ``file_size`` (by message) are inferred from the usual error messages of a failed
    command, so the command itself can cause or hide them.
    """

    exit_code: int
    output: str
    sandbox: str
    timed_out: bool = False
    output_truncated: bool = False
    output_bytes: int = 0
    duration_s: float = 0.0
    limits_hit: tuple[str, ...] = field(default_factory=tuple)


@runtime_checkable
class Sandbox(Protocol):
    """Runs one command with ``work_dir`` as its only writable host directory."""

    name: str

    def run(
        self,
        argv: Sequence[str],
        *,
        work_dir: str | os.PathLike[str],
        stdin: bytes | None = None,
        limits: SandboxLimits = DEFAULT_LIMITS,
    ) -> SandboxResult:
        """Run ``argv`` (looked up on the sandbox's PATH) in ``work_dir``; never raises for the
        command's own failure, raises ``SandboxError`` when the sandbox cannot run it."""
        ...


# ---------------------------------------------------------------------------------------------
# The launcher, the first program in the sandbox: it drops to the sandbox user when asked,
# enters the work directory, applies the rlimits, reports readiness and execs the command.
# It runs isolated (-I -S): nothing in the work directory or the environment can hijack it.
# ---------------------------------------------------------------------------------------------

_LAUNCHER = """\
import os, resource, signal, sys
# Python ignores these at startup; the command must get the usual default dispositions.
for name in ("SIGPIPE", "SIGXFSZ"):
    signal.signal(getattr(signal, name), signal.SIG_DFL)
args = sys.argv[1:]
cut = args.index("--")
options, command = args[:cut], args[cut + 1:]
ready = uid = gid = -1
cwd = None
limits = []
for option in options:
    key, _, value = option.partition("=")
    if key == "ready":
        ready = int(value)
    elif key == "uid":
        uid = int(value)
    elif key == "gid":
        gid = int(value)
    elif key == "cwd":
        cwd = value
    else:
        soft, _, hard = value.partition(",")
        limits.append((getattr(resource, key), int(soft), int(hard)))
if uid >= 0:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        raise SystemExit("launcher: could not drop to the sandbox user")
if cwd is not None:
    os.chdir(cwd)
    os.environ["PWD"] = cwd
for which, soft, hard in limits:
    current_hard = resource.getrlimit(which)[1]
    if current_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    resource.setrlimit(which, (soft, hard))
os.write(ready, b"1")
os.close(ready)
try:
    os.execvp(command[0], command)
except OSError as e:
    os.write(2, ("cannot run " + repr(command[0]) + ": " + str(e.strerror) + "\\n").encode())
    os._exit(EXIT_CODE)
""".replace("EXIT_CODE", str(COMMAND_NOT_FOUND_EXIT_CODE))


def _launcher_argv(
    python: str,
    limits: SandboxLimits,
    ready_fd: int,
    *,
    user: tuple[int, int] | None = None,
    cwd: str | None = None,
) -> list[str]:
    """The launcher command line: rlimits, optional user and directory, the readiness fd."""
    rlimits = {
        "RLIMIT_AS": (limits.memory_bytes, limits.memory_bytes),
        "RLIMIT_NPROC": (limits.max_processes, limits.max_processes),
        "RLIMIT_CPU": (limits.cpu_seconds, limits.cpu_seconds + CPU_GRACE_S),
        "RLIMIT_FSIZE": (limits.max_file_bytes, limits.max_file_bytes),
        "RLIMIT_NOFILE": (OPEN_FILES_LIMIT, OPEN_FILES_LIMIT),
        "RLIMIT_CORE": (0, 0),
    }
    options = [f"{name}={soft},{hard}" for name, (soft, hard) in rlimits.items()]
    if user is not None:
        options += [f"uid={user[0]}", f"gid={user[1]}"]
    if cwd is not None:
        options.append(f"cwd={cwd}")
    return [python, "-I", "-S", "-c", _LAUNCHER, f"ready={ready_fd}", *options, "--"]


# ---------------------------------------------------------------------------------------------
# A seccomp filter refusing new user namespaces (the one kind of namespace an unprivileged
# process may create, and a large kernel attack surface), whatever mode bubblewrap runs in.
# ---------------------------------------------------------------------------------------------

_CLONE_NEWUSER = 0x10000000
_X32_SYSCALL_BIT = 0x40000000


@dataclass(frozen=True)
class _SyscallTable:
    audit_arch: int
    clone: int
    unshare: int
    clone3: int
    has_x32: bool


_SYSCALLS = {
    "x86_64": _SyscallTable(audit_arch=0xC000003E, clone=56, unshare=272, clone3=435, has_x32=True),
    "aarch64": _SyscallTable(audit_arch=0xC00000B7, clone=220, unshare=97, clone3=435, has_x32=False),
}

# Classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h).
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_OFFSET_NR, _OFFSET_ARCH, _OFFSET_ARG0 = 0, 4, 16


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """The BPF program for bubblewrap's ``--seccomp``: creating a user namespace (clone or
    unshare with CLONE_NEWUSER) fails with EPERM, clone3 (whose flags a filter cannot read)
    with ENOSYS so that libc falls back to clone, and system calls of another ABI (32-bit,
    x32) with ENOSYS. None on a machine without a known syscall table."""
    table = _SYSCALLS.get(machine or platform.machine())
    if table is None:
        return None
    # (opcode, jump-if-true label, jump-if-false label, operand); labels are resolved below.
    program: list[tuple[int, str | None, str | None, int]] = [
        (_LD_W_ABS, None, None, _OFFSET_ARCH),
        (_JEQ_K, None, "enosys", table.audit_arch),
        (_LD_W_ABS, None, None, _OFFSET_NR),
    ]
    if table.has_x32:
        program.append((_JGE_K, "enosys", None, _X32_SYSCALL_BIT))
    program += [
        (_JEQ_K, "enosys", None, table.clone3),
        (_JEQ_K, "flags", None, table.unshare),
        (_JEQ_K, "flags", "allow", table.clone),
    ]
    labels = {"flags": len(program), "allow": len(program) + 2, "eperm": len(program) + 3}
    labels["enosys"] = len(program) + 4
    program += [
        (_LD_W_ABS, None, None, _OFFSET_ARG0),
        (_JSET_K, "eperm", "allow", _CLONE_NEWUSER),
        (_RET_K, None, None, _RET_ALLOW),
        (_RET_K, None, None, _RET_ERRNO | errno.EPERM),
        (_RET_K, None, None, _RET_ERRNO | errno.ENOSYS),
    ]

    def jump(at: int, label: str | None) -> int:
        return 0 if label is None else labels[label] - at - 1

    return b"".join(
        struct.pack("=HBBI", code, jump(at, jt), jump(at, jf), k) for at, (code, jt, jf, k) in enumerate(program)
    )


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


def _supervise(
    proc: subprocess.Popen[bytes], *, ready_fd: int, status_fd: int | None, limits: SandboxLimits, start: float
) -> _Outcome:
    """Collect output until the command ends or times out; then kill whatever is left."""
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
    try:
        while selector.get_map():
            now = time.monotonic()
            if drain_until is None and _has_exited(proc.pid):
                drain_until = now + _EXIT_DRAIN_S
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
    outcome.exit_code = TIMEOUT_EXIT_CODE if outcome.timed_out else (128 - code if code < 0 else code)
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
    )


class _Pipes:
    """The pipes of one run. The child's ends are closed once it is spawned, ours when the
    run ends."""

    def __init__(self) -> None:
        self._ours: list[int] = []
        self._childs: list[int] = []

    def preloaded(self, content: bytes) -> int:
        """A read end for the child that yields ``content`` (which must fit a pipe buffer)."""
        read_end, write_end = os.pipe()
        self._childs.append(read_end)
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
        return tuple(self._childs)

    def spawned(self) -> None:
        """Close our copies of the child's ends, so that its exit shows as end-of-file."""
        for fd in self._childs:
            os.close(fd)
        self._childs.clear()

    def __enter__(self) -> _Pipes:
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


def _execute(
    name: str,
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: str,
    stdin: bytes | None,
    limits: SandboxLimits,
    pipes: _Pipes,
    ready_fd: int,
    status_fd: int | None,
    failure: str,
) -> SandboxResult:
    """Spawn ``argv`` in its own session, supervise it, and turn the outcome into a result."""
    with _stdin_file(stdin) as stdin_source:
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=stdin_source,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=cwd,
                start_new_session=True,
                pass_fds=pipes.child_fds,
            )
        except OSError as e:
            raise SandboxError(f"{failure}: {e}") from e
        pipes.spawned()
        outcome = _supervise(proc, ready_fd=ready_fd, status_fd=status_fd, limits=limits, start=start)
    if not outcome.started and not outcome.timed_out:
        detail = outcome.output.decode("utf-8", errors="replace").strip()
        raise SandboxError(f"{failure} (exit {outcome.exit_code}): {detail}")
    return _result(name, outcome, limits)


def _check_argv(argv: Sequence[str]) -> list[str]:
    if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv must be a non-empty sequence of strings")
    return list(argv)


def interpreter_dirs() -> list[str]:
    """The directories the running interpreter needs: its prefixes, as given and resolved."""
    dirs: list[str] = []
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        for candidate in (os.path.abspath(prefix), os.path.realpath(prefix)):
            if candidate not in dirs and candidate != "/":
                dirs.append(candidate)
    return dirs


def _prepare_work_dir(work_dir: str | os.PathLike[str]) -> Path:
    """Create ``work_dir`` if needed and return its resolved path.

    Refuses the filesystem root, the home directory and any directory holding the Python
    installation: sandboxed code may rewrite everything in ``work_dir``, and the host would
    then run what it wrote.
    """
    path = Path(work_dir).resolve()
    if path == Path(path.anchor):
        raise ValueError("work_dir must not be the filesystem root")
    home = os.path.expanduser("~")
    if os.path.isabs(home) and path == Path(home).resolve():
        raise ValueError(f"work_dir must not be the home directory ({path}); use a dedicated directory")
    for directory in interpreter_dirs():
        if Path(directory).resolve().is_relative_to(path):
            raise ValueError(f"work_dir {path} holds the Python installation {directory}; use a dedicated directory")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _sandbox_path() -> str:
    """PATH inside sandboxes: the interpreter's directory first, then the system's."""
    return f"{os.path.dirname(os.path.abspath(sys.executable))}:{SYSTEM_PATH}"


# ---------------------------------------------------------------------------------------------
# Bubblewrap
# ---------------------------------------------------------------------------------------------


class BubblewrapSandbox:
    """Runs commands in a bubblewrap sandbox (Linux namespaces, no network, unprivileged user).

    Started as root, the sandbox gets no user namespace: bubblewrap sets it up with every
    capability dropped but CAP_SETUID/CAP_SETGID, which the launcher uses to become
    ``sandbox_uid`` for real before anything else runs, so that the process limit holds and
    no capability survives. ``work_dir`` must then belong to that user: a new or empty one
    is handed over to it, anything else is refused. Started as another user, bubblewrap
    makes a user namespace in which the command is ``sandbox_uid``. Either way a seccomp
    filter refuses new user namespaces.
    """

    name = "bubblewrap"

    def __init__(
        self, bwrap: str = BWRAP_PATH, *, sandbox_uid: int = SANDBOX_UID, sandbox_gid: int = SANDBOX_GID
    ) -> None:
        if not sys.platform.startswith("linux"):
            raise SandboxUnavailableError("bubblewrap sandboxes need Linux")
        if not os.access(bwrap, os.X_OK):
            raise SandboxUnavailableError(f"bubblewrap not found at {bwrap} (install it: apt-get install bubblewrap)")
        self.bwrap = bwrap
        self.sandbox_uid = sandbox_uid
        self.sandbox_gid = sandbox_gid
        self.python = os.path.abspath(sys.executable)

    @property
    def as_root(self) -> bool:
        """Whether this process is root (then no user namespace is used; see the class doc)."""
        return os.geteuid() == 0

    def _own_work_dir(self, path: Path) -> None:
        """As root, make ``path`` the sandbox user's; only a new or empty directory is taken over."""
        info = path.stat()
        if info.st_uid == self.sandbox_uid:
            return
        if any(path.iterdir()):
            raise SandboxError(
                f"work_dir {path} belongs to uid {info.st_uid} and is not empty; code runs as uid "
                f"{self.sandbox_uid} and could not write there. Use a new directory, or give it to "
                f"that user (chown {self.sandbox_uid}:{self.sandbox_gid})."
            )
        os.chown(path, self.sandbox_uid, self.sandbox_gid)

    def _layout(self, work_dir: Path, limits: SandboxLimits, etc_fds: dict[str, int]) -> list[str]:
        """The bubblewrap options describing the sandbox's filesystem, in mount order."""
        args: list[str] = []
        bound: list[str] = []
        for tree in _SYSTEM_TREES:
            if os.path.islink(tree):
                args += ["--symlink", os.readlink(tree), tree]
            elif os.path.isdir(tree):
                args += ["--ro-bind", tree, tree]
                bound.append(tree)
        args += ["--perms", "0755", "--dir", "/etc"]
        for entry in _ETC_ENTRIES:
            args += ["--ro-bind-try", entry, entry]
        for dest, fd in etc_fds.items():
            args += ["--perms", "0444", "--ro-bind-data", str(fd), dest]
        size = str(limits.tmpfs_bytes)
        args += [
            "--proc", "/proc",
            "--dev", "/dev",
            "--perms", "1777", "--size", size, "--tmpfs", "/dev/shm",
            "--perms", "1777", "--size", size, "--tmpfs", "/tmp",
        ]  # fmt: skip
        # After the tmpfs mounts, so that an interpreter kept under /tmp stays visible.
        made: set[str] = set()
        for directory in interpreter_dirs():
            if any(directory == b or directory.startswith(b + "/") for b in bound):
                continue
            parent = os.path.dirname(directory)
            ancestors: list[str] = []
            while parent not in ("/", "/tmp") and parent not in made:
                ancestors.append(parent)
                parent = os.path.dirname(parent)
            for ancestor in reversed(ancestors):
                # Parents bubblewrap creates copy the host's modes; keep them traversable.
                args += ["--perms", "0755", "--dir", ancestor]
                made.add(ancestor)
            args += ["--ro-bind", os.path.realpath(directory), directory]
            bound.append(directory)
        args += ["--bind", str(work_dir), SANDBOX_WORK_DIR, "--remount-ro", "/dev", "--remount-ro", "/"]
        return args

    def _namespaces(self) -> list[str]:
        common = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        if self.as_root:
            return [*common, "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        return [
            "--unshare-user", "--disable-userns",
            "--uid", str(self.sandbox_uid), "--gid", str(self.sandbox_gid),
            *common, "--cap-drop", "ALL",
        ]  # fmt: skip

    def run(
        self,
        argv: Sequence[str],
        *,
        work_dir: str | os.PathLike[str],
        stdin: bytes | None = None,
        limits: SandboxLimits = DEFAULT_LIMITS,
    ) -> SandboxResult:
        """Run ``argv`` in the sandbox with ``work_dir`` mounted read-write at ``SANDBOX_WORK_DIR``."""
        command = _check_argv(argv)
        path = _prepare_work_dir(work_dir)
        if self.as_root:
            self._own_work_dir(path)
        with _Pipes() as pipes:
            etc_fds = {dest: pipes.preloaded(content.encode()) for dest, content in _SYNTHETIC_ETC.items()}
            program = seccomp_filter()
            seccomp = [] if program is None else ["--seccomp", str(pipes.preloaded(program))]
            ready_read, ready_write = pipes.channel()
            status_read, status_write = pipes.channel()
            env = {"PATH": _sandbox_path(), "HOME": SANDBOX_HOME, "LANG": SANDBOX_LANG}
            user = (self.sandbox_uid, self.sandbox_gid) if self.as_root else None
            bwrap_argv = [
                self.bwrap,
                *self._namespaces(),
                "--die-with-parent", "--new-session", "--hostname", SANDBOX_HOSTNAME,
                "--json-status-fd", str(status_write),
                *seccomp,
                *self._layout(path, limits, etc_fds),
                "--clearenv", *[a for k, v in env.items() for a in ("--setenv", k, v)],
                "--",
                *_launcher_argv(self.python, limits, ready_write, user=user, cwd=SANDBOX_WORK_DIR),
                *command,
            ]  # fmt: skip
            return _execute(
                self.name,
                bwrap_argv,
                env={"PATH": SYSTEM_PATH, "LANG": SANDBOX_LANG},
                cwd="/",
                stdin=stdin,
                limits=limits,
                pipes=pipes,
                ready_fd=ready_read,
                status_fd=status_read,
                failure="the bubblewrap sandbox failed to start",
            )


# ---------------------------------------------------------------------------------------------
# The explicit opt-out
# ---------------------------------------------------------------------------------------------


class UnsandboxedExecutor:
    """The explicit opt-out: runs on the host with the limits but WITHOUT any isolation.

    Its name, ``"none"``, is what receipts record. The command runs as the calling user in
    ``work_dir``, with the scrubbed environment (PATH, HOME=work_dir, LANG), the same
    rlimits, the wall-clock timeout and the output cap; it can read and write whatever
    that user can and use the network.
    """

    name = "none"

    def __init__(self) -> None:
        self.python = os.path.abspath(sys.executable)

    def run(
        self,
        argv: Sequence[str],
        *,
        work_dir: str | os.PathLike[str],
        stdin: bytes | None = None,
        limits: SandboxLimits = DEFAULT_LIMITS,
    ) -> SandboxResult:
        """Run ``argv`` on the host in ``work_dir``; its process group is killed at the end."""
        command = _check_argv(argv)
        path = _prepare_work_dir(work_dir)
        with _Pipes() as pipes:
            ready_read, ready_write = pipes.channel()
            return _execute(
                self.name,
                [*_launcher_argv(self.python, limits, ready_write), *command],
                env={"PATH": _sandbox_path(), "HOME": str(path), "LANG": SANDBOX_LANG},
                cwd=str(path),
                stdin=stdin,
                limits=limits,
                pipes=pipes,
                ready_fd=ready_read,
                status_fd=None,
                failure="the launcher failed",
            )


# ---------------------------------------------------------------------------------------------
# Choosing a sandbox
# ---------------------------------------------------------------------------------------------

_probe_lock = threading.Lock()
_probe_results: dict[str, str | None] = {}


def probe_bubblewrap(bwrap: str = BWRAP_PATH) -> str | None:
    """Check once per process that bubblewrap runs Python here; returns None, or why not."""
    with _probe_lock:
        if bwrap not in _probe_results:
            _probe_results[bwrap] = _probe(bwrap)
        return _probe_results[bwrap]


def _probe(bwrap: str) -> str | None:
    try:
        sandbox = BubblewrapSandbox(bwrap)
        with tempfile.TemporaryDirectory(prefix="aer1-probe-") as work_dir:
            limits = SandboxLimits(timeout_s=_PROBE_TIMEOUT_S, memory_bytes=_PROBE_MEMORY_BYTES)
            result = sandbox.run([sandbox.python, "-I", "-S", "-c", "print('ok')"], work_dir=work_dir, limits=limits)
    except (SandboxError, OSError, ValueError) as e:
        return str(e)
    if result.exit_code != 0 or result.output != "ok\n":
        return f"the probe command failed (exit {result.exit_code}): {result.output.strip()}"
    return None


def default_sandbox(*, allow_unsandboxed: bool = False, bwrap: str = BWRAP_PATH) -> Sandbox:
    """The bubblewrap sandbox when it works here; else the opt-out if allowed; else an error."""
    problem = probe_bubblewrap(bwrap)
    if problem is None:
        return BubblewrapSandbox(bwrap)
    if allow_unsandboxed:
        logger.warning("no sandbox available (%s); running code UNSANDBOXED as explicitly allowed", problem)
        return UnsandboxedExecutor()
    raise SandboxUnavailableError(
        f"no working sandbox for code execution: {problem}. Install bubblewrap "
        "(apt-get install bubblewrap) on Linux, or opt out explicitly with allow_unsandboxed=True "
        "(code then runs on the host without isolation, and the receipt records sandbox 'none')."
    )
