"""The launcher, the first program in a sandbox, and the environment the command gets.

It drops to the sandbox user when asked, enters the work directory, applies the rlimits,
reports readiness and execs the command. It runs isolated (-I -S): nothing in the work
directory or the environment can hijack it.
"""

from __future__ import annotations

import os
import sys

from .limits import COMMAND_NOT_FOUND_EXIT_CODE, CPU_GRACE_S, OPEN_FILES_LIMIT, SandboxLimits

SANDBOX_LANG = "C.UTF-8"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


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


def launcher_argv(
    python: str,
    limits: SandboxLimits,
    ready_fd: int,
    *,
    user: tuple[int, int] | None = None,
    cwd: str | None = None,
    own_budget: bool = False,
) -> list[str]:
    """The launcher command line: rlimits, optional user and directory, the readiness fd.

    With ``own_budget`` (the run has a pids cgroup of its own) no ``RLIMIT_NPROC`` is set:
    that limit counts every process of the user, other runs' included.
    """
    rlimits = {
        "RLIMIT_AS": (limits.memory_bytes, limits.memory_bytes),
        **({} if own_budget else {"RLIMIT_NPROC": (limits.max_processes, limits.max_processes)}),
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



# Run on the host in front of bubblewrap. It joins the run's pids cgroup, so that the whole
# sandbox counts against the run's own process budget; and keyctl(KEYCTL_JOIN_SESSION_KEYRING,
# NULL) gives it, and so the whole sandbox, a new anonymous session keyring, so that nothing
# in it possesses the caller's keys (a kernel without keyrings, ENOSYS, has none to inherit).
_HOST_PREPARATION = """\
import ctypes, errno, os, sys
keyctl, procs = sys.argv[1], sys.argv[2]
if procs != "-":
    with open(procs, "w") as group:
        group.write(str(os.getpid()))
if keyctl != "-":
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(ctypes.c_long(int(keyctl)), ctypes.c_long(1), ctypes.c_void_p(None)) < 0:
        if ctypes.get_errno() != errno.ENOSYS:
            raise SystemExit("cannot start a new session keyring: " + os.strerror(ctypes.get_errno()))
os.execv(sys.argv[3], sys.argv[3:])
"""


def host_preparation_argv(python: str, *, keyctl: int | None, cgroup_procs: str | None) -> list[str]:
    """The command prefix that runs what follows it in the run's cgroup and a new session
    keyring (each when given); empty when there is nothing to do."""
    if keyctl is None and cgroup_procs is None:
        return []
    options = ["-" if keyctl is None else str(keyctl), cgroup_procs or "-"]
    return [python, "-I", "-S", "-c", _HOST_PREPARATION, *options]


def sandbox_path() -> str:
    """PATH inside sandboxes: the interpreter's directory first, then the system's."""
    return f"{os.path.dirname(os.path.abspath(sys.executable))}:{SYSTEM_PATH}"
