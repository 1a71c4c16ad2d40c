"""The bubblewrap sandbox: its filesystem layout, namespaces and command line."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from .api import SandboxUnavailableError
from .budget import run_budget
from .launcher import SANDBOX_LANG, SYSTEM_PATH, host_preparation_argv, launcher_argv, sandbox_path
from .limits import SandboxLimits
from .runner import Launch, RunSetup, WorkDirSandbox
from .seccomp import keyctl_syscall, seccomp_filter
from .workdir import WorkDir, hand_over, interpreter_dirs

# ---------------------------------------------------------------------------------------------
# Bubblewrap layout
# ---------------------------------------------------------------------------------------------

#: Where bubblewrap is looked for unless a caller names another path.
BWRAP_PATH = "/usr/bin/bwrap"
SANDBOX_UID = 65534
"""The unprivileged user code runs as (``nobody``): inside, and outside too when started as root."""
SANDBOX_GID = 65534
SANDBOX_WORK_DIR = "/workspace"
"""Where ``work_dir`` appears inside the bubblewrap sandbox (also the initial directory)."""
SANDBOX_HOME = "/tmp"
SANDBOX_HOSTNAME = "sandbox"

# Read-only system trees; top-level names that are symlinks (merged /usr) are recreated as symlinks.
_SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Host-wide kernel tables a fresh /proc still shows, hidden behind /dev/null (keys: the
# descriptions of every key the caller's processes can view).
_MASKED_PROC = ("/proc/keys", "/proc/key-users")
# The only host /etc entries exposed: the dynamic linker cache and the alternatives symlinks.
_ETC_ENTRIES = ("/etc/ld.so.cache", "/etc/alternatives")
_SYNTHETIC_ETC = {
    "/etc/passwd": f"sandbox:x:{SANDBOX_UID}:{SANDBOX_GID}:sandbox:{SANDBOX_HOME}:/usr/sbin/nologin\n",
    "/etc/group": f"sandbox:x:{SANDBOX_GID}:\n",
    "/etc/hosts": "127.0.0.1 localhost\n::1 localhost\n",
}

# ---------------------------------------------------------------------------------------------
# Bubblewrap
# ---------------------------------------------------------------------------------------------


class BubblewrapSandbox(WorkDirSandbox):
    """Runs commands in a bubblewrap sandbox (Linux namespaces, no network, unprivileged user).

    Started as root, the sandbox gets no user namespace: bubblewrap sets it up with every
    capability dropped but CAP_SETUID/CAP_SETGID, which the launcher uses to become
    ``sandbox_uid`` for real before anything else runs, so that the process limit holds and
    no capability survives. ``work_dir`` must then belong to that user: a new or empty one
    is handed over to it, anything else is refused, and no directory on the way to it may
    be writable by that user. Started as another user, bubblewrap makes a user namespace in
    which the command is ``sandbox_uid``. Either way: the seccomp filter of :mod:`.seccomp`,
    a new session keyring, ``work_dir`` reached without following links and bound by
    descriptor (:mod:`.workdir`), its disk quota (:mod:`.disk`), and a pids cgroup of the
    run's own where the host allows one (:mod:`.budget`).
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

    @property
    def work_dir_guard(self) -> tuple[int, int] | None:
        """The user no directory on the way to a work directory may be writable by, if any."""
        return (self.sandbox_uid, self.sandbox_gid) if self.as_root else None

    def _layout(self, work_dir_fd: int, limits: SandboxLimits, etc_fds: dict[str, int]) -> list[str]:
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
            *[a for path in _MASKED_PROC if os.path.exists(path) for a in ("--ro-bind", "/dev/null", path)],
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
        args += ["--bind-fd", str(work_dir_fd), SANDBOX_WORK_DIR, "--remount-ro", "/dev", "--remount-ro", "/"]
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

    @contextlib.contextmanager
    def _confine(self, work_dir: WorkDir, limits: SandboxLimits) -> Iterator[Path | None]:
        """Hand ``work_dir`` over to the sandbox user (as root), and give the run a pids cgroup."""
        user = self.work_dir_guard
        if user is not None:
            hand_over(work_dir, *user)
        with run_budget(limits.max_processes) as cgroup_procs:
            yield cgroup_procs

    def _launch(self, command: list[str], run: RunSetup) -> Launch:
        """``command`` behind bubblewrap and the launcher, with ``work_dir`` mounted read-write at
        ``SANDBOX_WORK_DIR``."""
        pipes, limits, user = run.pipes, run.limits, self.work_dir_guard
        etc_fds = {dest: pipes.preloaded(content.encode()) for dest, content in _SYNTHETIC_ETC.items()}
        program = seccomp_filter()
        seccomp = [] if program is None else ["--seccomp", str(pipes.preloaded(program))]
        status_read, status_write = pipes.channel()
        env = {"PATH": sandbox_path(), "HOME": SANDBOX_HOME, "LANG": SANDBOX_LANG}
        options = [
            *self._namespaces(),
            "--die-with-parent", "--new-session", "--hostname", SANDBOX_HOSTNAME,
            "--json-status-fd", str(status_write),
            *seccomp,
            *self._layout(pipes.lend(run.work_dir.fd), limits, etc_fds),
            "--clearenv", *[a for k, v in env.items() for a in ("--setenv", k, v)],
        ]  # fmt: skip
        # The options travel through a pipe (--args), so that no host path shows in the
        # command line of the sandbox's init, which sandboxed code can read.
        options_fd = pipes.preloaded(b"".join(os.fsencode(option) + b"\0" for option in options))
        procs = None if run.holders is None else str(run.holders)
        launcher = launcher_argv(
            self.python, limits, run.ready_fd, user=user, cwd=SANDBOX_WORK_DIR, own_budget=procs is not None
        )
        bwrap_argv = [
            *host_preparation_argv(self.python, keyctl=keyctl_syscall(), cgroup_procs=procs),
            self.bwrap, "--args", str(options_fd), "--", *launcher, *command,
        ]  # fmt: skip
        return Launch(
            argv=bwrap_argv,
            env={"PATH": SYSTEM_PATH, "LANG": SANDBOX_LANG},
            cwd="/",
            failure="the bubblewrap sandbox failed to start",
            status_fd=status_read,
        )
