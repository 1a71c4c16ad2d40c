"""The code sandbox, for real: escape attempts run inside bubblewrap and must fail there.

No mocks: every test here starts real bubblewrap sandboxes (about 50 ms each). With
bubblewrap missing, the tests fail under ``CI=true`` and are skipped only outside CI;
with bubblewrap present but not working, they fail.
"""

from __future__ import annotations

import errno
import functools
import json
import logging
import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from aer1.groupchat._code import (
    MAX_CODE_BYTES,
    SUPPORTED_LANGUAGES,
    CodeRunResult,
    FencedBlock,
    execute_code_blocks,
    extract_code_blocks,
    normalize_language,
)
from aer1.groupchat._sandbox import (
    BWRAP_PATH,
    CPU_GRACE_S,
    OPEN_FILES_LIMIT,
    SANDBOX_UID,
    SANDBOX_WORK_DIR,
    BubblewrapSandbox,
    Sandbox,
    SandboxError,
    SandboxLimits,
    SandboxUnavailableError,
    UnsandboxedExecutor,
    default_sandbox,
    interpreter_dirs,
    seccomp_filter,
)
from aer1.groupchat._sandbox.budget import pids_cgroup_parent
from aer1.groupchat._sandbox.runner import Pipes

from .sandboxing import (
    ATTEMPT,
    LIMITS,
    LINGER_S,
    SETTLE_S,
    SHORT,
    UNROUTED_ADDRESS,
    MiB,
    attempts,
    python,
    sandbox_user_pids,
)

REPO = Path(__file__).resolve().parents[2]


def assert_ticking_stopped(tick: Path) -> None:
    """The file a sandboxed loop rewrote every 20 ms stops changing (within SETTLE_S)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        before = tick.read_text()
        time.sleep(0.25)
        if tick.read_text() == before:
            return
        assert time.monotonic() < deadline, "a sandboxed process survived"


@pytest.fixture
def no_leftovers(bwrap: BubblewrapSandbox) -> Iterator[None]:
    """As root, no process of the sandbox user may outlive the test."""
    before = sandbox_user_pids() if bwrap.as_root else set()
    yield
    if bwrap.as_root:
        deadline = time.monotonic() + SETTLE_S
        while sandbox_user_pids() - before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sandbox_user_pids() - before == set()


# ---------------------------------------------------------------------------------------------
# Filesystem
# ---------------------------------------------------------------------------------------------


def test_files_outside_work_dir_cannot_be_read(bwrap: BubblewrapSandbox, tmp_path: Path, work_dir: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("host secret 7c1f")
    lines = attempts(
        bwrap,
        f"""
        attempt("secret", lambda: open({str(secret)!r}).read())
        attempt("outside dir", lambda: os.listdir({str(outside)!r}))
        attempt("via /proc/1/root", lambda: open("/proc/1/root" + {str(secret)!r}).read())
        attempt("via ..", lambda: open("{SANDBOX_WORK_DIR}/../" + {str(secret)!r}).read())
        attempt("shadow", lambda: open("/etc/shadow").read())
        attempt("etc", lambda: sorted(os.listdir("/etc")))
        attempt("sys", lambda: os.listdir("/sys"))
        """,
        work_dir,
    )
    proc_root = "EACCES" if bwrap.as_root else "ENOENT"
    host_etc = [name for name in ("alternatives", "ld.so.cache") if Path("/etc", name).exists()]
    etc = sorted(["group", "hosts", "passwd", *host_etc])
    assert lines == [
        "secret: ENOENT",
        "outside dir: ENOENT",
        f"via /proc/1/root: {proc_root}",
        "via ..: ENOENT",
        "shadow: ENOENT",
        f"etc: OK {etc!r}",
        "sys: ENOENT",
    ]


def test_home_of_root_shows_only_the_interpreter(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    visible = sorted({d.split("/")[2] for d in interpreter_dirs() if d.startswith("/root/")})
    lines = attempts(bwrap, 'attempt("root", lambda: sorted(os.listdir("/root")))', work_dir)
    assert lines == [f"root: OK {visible!r}" if visible else "root: ENOENT"]
    if Path("/root/.bashrc").exists():
        assert attempts(bwrap, 'attempt("bashrc", lambda: open("/root/.bashrc").read())', work_dir) == [
            "bashrc: ENOENT"
        ]


def test_symlink_planted_in_work_dir_resolves_inside_the_sandbox(
    bwrap: BubblewrapSandbox, tmp_path: Path, work_dir: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret 51ab")
    assert python(bwrap, "pass", work_dir).exit_code == 0  # creates work_dir, owned by the sandbox user
    (work_dir / "link").symlink_to(secret)
    assert attempts(bwrap, 'attempt("link", lambda: open("link").read())', work_dir) == ["link: ENOENT"]


def test_writes_outside_work_dir_fail(bwrap: BubblewrapSandbox, tmp_path: Path, work_dir: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    prefix = interpreter_dirs()[0]
    lines = attempts(
        bwrap,
        f"""
        attempt("outside", lambda: open({str(outside / "escape.txt")!r}, "w"))
        attempt("usr", lambda: open("/usr/escape.txt", "w"))
        attempt("root dir", lambda: open("/escape.txt", "w"))
        attempt("etc", lambda: open("/etc/escape.txt", "w"))
        attempt("dev", lambda: open("/dev/escape.txt", "w"))
        attempt("interpreter", lambda: open({prefix + "/escape.txt"!r}, "w"))
        attempt("sysctl", lambda: open("/proc/sys/kernel/hostname", "w").write("x"))
        os.makedirs({str(outside)!r})
        attempt("outside recreated", lambda: open({str(outside / "escape.txt")!r}, "w").write("x"))
        attempt("work_dir", lambda: open("inside.txt", "w").write("kept"))
        """,
        work_dir,
    )
    assert lines == [
        "outside: ENOENT",
        "usr: EROFS",
        "root dir: EROFS",
        "etc: EROFS",
        "dev: EROFS",
        "interpreter: EROFS",
        "sysctl: EACCES",
        "outside recreated: OK 1",
        "work_dir: OK 4",
    ]
    assert list(outside.iterdir()) == []
    assert not Path("/usr/escape.txt").exists() and not Path(prefix, "escape.txt").exists()
    assert (work_dir / "inside.txt").read_text() == "kept"
    if bwrap.as_root:
        assert (work_dir / "inside.txt").stat().st_uid == SANDBOX_UID


def test_tmp_is_private_and_fresh_per_run(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    name = f"/tmp/aer1-sandbox-{uuid.uuid4().hex}"
    assert attempts(bwrap, f'attempt("write", lambda: open({name!r}, "w").write("abc"))', work_dir) == [
        "write: OK 3"
    ]
    assert not Path(name).exists()
    assert attempts(bwrap, f'attempt("again", lambda: open({name!r}).read())', work_dir) == ["again: ENOENT"]


def test_work_dir_persists_between_runs(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    assert python(bwrap, "open('state.txt', 'w').write('one')", work_dir).exit_code == 0
    result = python(bwrap, "import os; print(os.getcwd(), open('state.txt').read())", work_dir)
    assert (result.exit_code, result.output) == (0, f"{SANDBOX_WORK_DIR} one\n")
    assert (work_dir / "state.txt").read_text() == "one"


def test_tmpfs_size_is_limited(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    limits = SandboxLimits(timeout_s=10.0, max_file_bytes=64 * MiB, tmpfs_bytes=4 * MiB)
    lines = attempts(
        bwrap,
        """
        attempt("tmp", lambda: open("/tmp/big", "wb").write(b"x" * (8 * 1024 * 1024)))
        attempt("shm", lambda: open("/dev/shm/big", "wb").write(b"x" * (8 * 1024 * 1024)))
        """,
        work_dir,
        limits,
    )
    assert lines == ["tmp: ENOSPC", "shm: ENOSPC"]


def test_root_refuses_a_foreign_non_empty_work_dir(bwrap: BubblewrapSandbox, tmp_path: Path) -> None:
    if not bwrap.as_root:
        assert python(bwrap, "pass", tmp_path / "mine").exit_code == 0
        return
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "data.txt").write_text("x")
    with pytest.raises(SandboxError, match=r"not empty; code runs as uid 65534"):
        python(bwrap, "pass", foreign)
    assert foreign.stat().st_uid == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    assert python(bwrap, "pass", empty).exit_code == 0
    assert empty.stat().st_uid == SANDBOX_UID


def test_work_dir_must_not_hold_what_the_host_runs(bwrap: BubblewrapSandbox) -> None:
    with pytest.raises(ValueError, match="filesystem root"):
        bwrap.run(["true"], work_dir="/")
    with pytest.raises(ValueError, match="home directory"):
        bwrap.run(["true"], work_dir=Path.home())
    holder = Path(sys.prefix).parent
    with pytest.raises(ValueError, match="holds the Python installation"):
        bwrap.run(["true"], work_dir=holder)
    with pytest.raises(ValueError, match="holds the Python installation"):
        UnsandboxedExecutor().run(["true"], work_dir=holder)


# ---------------------------------------------------------------------------------------------
# Network
# ---------------------------------------------------------------------------------------------


def test_loopback_listener_on_the_host_sees_nothing(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        lines = attempts(
            bwrap,
            f"""
            attempt("interfaces", lambda: [line.split(":")[0].strip() for line in open("/proc/net/dev")][2:])
            attempt("tcp", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2))
            attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", {port})))
            """,
            work_dir,
        )
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert lines == ["interfaces: OK ['lo']", "tcp: ECONNREFUSED", "udp: OK 1"]


def test_abstract_unix_socket_on_the_host_is_unreachable(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    name = f"\0aer1-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(name)
        listener.listen(8)
        lines = attempts(
            bwrap,
            f"""
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            attempt("abstract", lambda: s.connect({name!r}))
            """,
            work_dir,
        )
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert lines == ["abstract: ECONNREFUSED"]


def test_outside_addresses_have_no_route(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    lines = attempts(
        bwrap,
        f"""
        attempt("tcp", lambda: socket.create_connection(({UNROUTED_ADDRESS!r}, 80), timeout=5))
        attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ({UNROUTED_ADDRESS!r}, 9)))
        attempt("ipv6", lambda: socket.create_connection(("2001:db8::1", 80), timeout=5))
        attempt("resolver config", lambda: open("/etc/resolv.conf").read())
        """,
        work_dir,
    )
    # ENETUNREACH (not a timeout): the sandbox has no route, so no packet was ever sent.
    assert lines == ["tcp: ENETUNREACH", "udp: ENETUNREACH", "ipv6: ENETUNREACH", "resolver config: ENOENT"]


# ---------------------------------------------------------------------------------------------
# Environment, processes, privileges
# ---------------------------------------------------------------------------------------------


def test_host_environment_is_not_visible(
    bwrap: BubblewrapSandbox, work_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("AER1_TEST_SECRET", secret)
    result = python(
        bwrap,
        ATTEMPT
        + textwrap.dedent(
            """
            import json
            print(json.dumps(dict(os.environ), sort_keys=True))
            attempt("init environ", lambda: open("/proc/1/environ", "rb").read())
            attempt("own environ", lambda: sorted(open("/proc/self/environ", "rb").read().split(b"\\0")))
            """
        ),
        work_dir,
    )
    assert result.exit_code == 0
    env_line, *rest = result.output.splitlines()
    path = f"{os.path.dirname(os.path.abspath(sys.executable))}:/usr/local/bin:/usr/bin:/bin"
    assert json.loads(env_line) == {"HOME": "/tmp", "LANG": "C.UTF-8", "PATH": path, "PWD": SANDBOX_WORK_DIR}
    if bwrap.as_root:
        assert rest[0] == "init environ: EACCES"
    assert rest[1].startswith("own environ: OK [b'', b'HOME=/tmp', b'LANG=C.UTF-8', b'PATH=")
    assert secret not in result.output


def test_sees_only_its_own_processes(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    lines = attempts(
        bwrap,
        """
        attempt("pids", lambda: sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
        attempt("hostname", socket.gethostname)
        """,
        work_dir,
    )
    assert lines == ["pids: OK [1, 2]", "hostname: OK 'sandbox'"]


def test_runs_unprivileged_with_no_capabilities(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    fields = ("Uid", "Gid", "CapPrm", "CapEff", "CapAmb", "NoNewPrivs", "Seccomp")
    result = python(
        bwrap,
        f"""
for line in open("/proc/self/status"):
    key, _, value = line.partition(":")
    if key in {fields!r}:
        print(key, value.split())
""",
        work_dir,
    )
    assert result.output.splitlines() == [
        "Uid ['65534', '65534', '65534', '65534']",
        "Gid ['65534', '65534', '65534', '65534']",
        "CapPrm ['0000000000000000']",
        "CapEff ['0000000000000000']",
        "CapAmb ['0000000000000000']",
        "NoNewPrivs ['1']",
        "Seccomp ['2']",
    ]


def test_cannot_create_user_namespaces(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    result = bwrap.run(["sh", "-c", "unshare --user true; echo rc=$?"], work_dir=work_dir, limits=LIMITS)
    assert result.output == "unshare: unshare failed: Operation not permitted\nrc=1\n"


def test_threads_and_subprocesses_still_work(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    result = python(
        bwrap,
        "import subprocess, threading\n"
        "t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()\n"
        "print(subprocess.run(['sh', '-c', 'echo child'], capture_output=True, text=True).stdout, end='')\n",
        work_dir,
    )
    assert (result.exit_code, result.output) == (0, "thread\nchild\n")


def run_bpf(program: bytes, nr: int, arch: int, arg0: int = 0) -> int:
    """Evaluate a classic-BPF seccomp program on one system call (the opcodes it uses)."""
    data = struct.pack("=IIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    insns: list[tuple[int, int, int, int]] = [
        struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)
    ]
    acc = pc = 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif code == 0x06:
            return k
        else:
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
            pc += 1 + (jt if taken else jf)


# Per machine, from the kernel's tables: add_key, request_key, keyctl, bpf, perf_event_open,
# userfaultfd, then socket and socketpair.
DENIED_CALLS = {"x86_64": (248, 249, 250, 321, 298, 323), "aarch64": (217, 218, 219, 280, 241, 282)}
SOCKET_CALLS = {"x86_64": (41, 53), "aarch64": (198, 199)}


def test_seccomp_filter_decisions() -> None:
    allow, eperm, enosys, eafnosupport = 0x7FFF0000, 0x00050001, 0x00050026, 0x00050061
    new_user, sigchld = 0x10000000, 17
    tables = (("x86_64", 0xC000003E, 56, 272, 39), ("aarch64", 0xC00000B7, 220, 97, 172))
    for machine, arch, clone, unshare, getpid in tables:
        program = seccomp_filter(machine)
        assert program is not None
        decide = functools.partial(run_bpf, program, arch=arch)
        assert decide(getpid) == allow
        assert [decide(nr) for nr in DENIED_CALLS[machine]] == [eperm] * 6
        assert [decide(nr) for nr in (425, 426, 427)] == [enosys] * 3  # io_uring
        for call in SOCKET_CALLS[machine]:
            assert [decide(call, arg0=family) for family in (1, 2, 10)] == [allow] * 3  # unix, inet, inet6
            assert [decide(call, arg0=family) for family in (0, 16, 17, 38, 40, 15, 255)] == [eafnosupport] * 7
        assert decide(clone, arg0=sigchld) == allow
        assert decide(clone, arg0=new_user | sigchld) == eperm
        assert decide(unshare, arg0=0x00020000) == allow  # CLONE_NEWNS: refused later for lack of privilege
        assert decide(unshare, arg0=new_user) == eperm
        assert decide(435) == enosys  # clone3
        assert run_bpf(program, getpid, arch=0x40000003) == enosys  # i386
    x86 = seccomp_filter("x86_64")
    assert x86 is not None and run_bpf(x86, 0x40000000 | 39, arch=0xC000003E) == enosys  # x32
    assert seccomp_filter("sparc") is None


# ---------------------------------------------------------------------------------------------
# Limits
# ---------------------------------------------------------------------------------------------


def test_rlimits_are_applied(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    result = python(
        bwrap,
        "import resource as r\n"
        "for n in ('AS', 'NPROC', 'CPU', 'FSIZE', 'NOFILE', 'CORE'):\n"
        "    print(n, *r.getrlimit(getattr(r, 'RLIMIT_' + n)))\n",
        work_dir,
    )
    cpu = LIMITS.cpu_seconds
    assert LIMITS.cpu_seconds == 10 + CPU_GRACE_S
    # With a pids cgroup of its own the run needs no per-user process limit (see budget.py).
    nproc = (LIMITS.max_processes,) * 2 if pids_cgroup_parent() is None else resource.getrlimit(resource.RLIMIT_NPROC)
    assert result.output.splitlines() == [
        f"AS {LIMITS.memory_bytes} {LIMITS.memory_bytes}",
        "NPROC {} {}".format(*nproc),
        f"CPU {cpu} {cpu + CPU_GRACE_S}",
        f"FSIZE {LIMITS.max_file_bytes} {LIMITS.max_file_bytes}",
        f"NOFILE {OPEN_FILES_LIMIT} {OPEN_FILES_LIMIT}",
        "CORE 0 0",
    ]


def test_fork_bomb_hits_the_process_limit(bwrap: BubblewrapSandbox, work_dir: Path, no_leftovers: None) -> None:
    code = textwrap.dedent(
        f"""
        import errno, os, time
        forked = 0
        try:
            while True:
                if os.fork() == 0:
                    time.sleep({LINGER_S})
                    os._exit(0)
                forked += 1
        except OSError as e:
            print(forked, errno.errorcode[e.errno], flush=True)
            raise
        """
    )
    result = python(bwrap, code, work_dir)
    first, *rest = result.output.splitlines()
    assert rest == [
        "Traceback (most recent call last):",
        '  File "<string>", line 6, in <module>',
        "BlockingIOError: [Errno 11] Resource temporarily unavailable",
    ]
    forked, error = first.split()
    assert error == "EAGAIN"
    assert 0 < int(forked) < LIMITS.max_processes
    assert result.exit_code == 1
    assert result.limits_hit == ("processes",)
    assert result.duration_s < LINGER_S  # run() did not wait for the sleeping children: they died with it


def test_shell_fork_bomb_is_contained(bwrap: BubblewrapSandbox, work_dir: Path, no_leftovers: None) -> None:
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, len(sandbox_user_pids()))

    sampler = threading.Thread(target=sample)
    if bwrap.as_root:
        sampler.start()
    try:
        result = bwrap.run(["bash", "-c", f":(){{ :|:& }};:; sleep {LINGER_S}"], work_dir=work_dir, limits=SHORT)
    finally:
        done.set()
        if sampler.is_alive():
            sampler.join()
    assert (result.exit_code, result.timed_out, result.limits_hit) == (124, True, ("time", "processes"))
    assert "fork: retry: Resource temporarily unavailable" in result.output
    assert peak <= SHORT.max_processes


def test_runaway_loop_hits_the_time_limit(bwrap: BubblewrapSandbox, work_dir: Path, no_leftovers: None) -> None:
    result = python(bwrap, "while True:\n    pass\n", work_dir, SHORT)
    assert (result.exit_code, result.output, result.timed_out, result.limits_hit) == (124, "", True, ("time",))
    assert result.duration_s >= SHORT.timeout_s  # not killed before its time


def test_timeout_kills_detached_background_processes(
    bwrap: BubblewrapSandbox, work_dir: Path, no_leftovers: None
) -> None:
    script = "setsid sh -c 'while :; do date +%s%N > tick; sleep 0.02; done' & sleep 30"
    result = bwrap.run(["sh", "-c", script], work_dir=work_dir, limits=SHORT)
    assert result.timed_out
    assert_ticking_stopped(work_dir / "tick")


def test_leftovers_die_when_the_command_exits(bwrap: BubblewrapSandbox, work_dir: Path, no_leftovers: None) -> None:
    script = "(while :; do date +%s%N > tick; sleep 0.02; done) & sleep 0.1; echo done"
    result = bwrap.run(["sh", "-c", script], work_dir=work_dir, limits=LIMITS)
    assert (result.exit_code, result.output, result.timed_out) == (0, "done\n", False)
    assert_ticking_stopped(work_dir / "tick")


def test_sandbox_dies_with_its_parent(bwrap: BubblewrapSandbox, work_dir: Path, no_leftovers: None) -> None:
    script = "while :; do date +%s%N > tick; sleep 0.02; done"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from aer1.groupchat._sandbox import BubblewrapSandbox as B; "
            "B().run(['sh', '-c', sys.argv[1]], work_dir=sys.argv[2])",
            script,
            str(work_dir),
        ],
        cwd=REPO,
    )
    try:
        deadline = time.monotonic() + 10
        while not (work_dir / "tick").exists():
            assert time.monotonic() < deadline and parent.poll() is None
            time.sleep(0.02)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert_ticking_stopped(work_dir / "tick")


def test_memory_hog_hits_the_memory_limit(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    result = python(bwrap, "hog = bytearray(512 * 1024 * 1024)\nprint('allocated')", work_dir)
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == "MemoryError"
    assert result.limits_hit == ("memory",)


def test_file_size_limit(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    result = python(bwrap, "open('big', 'wb').write(b'x' * (2 * 1024 * 1024))", work_dir)
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == "OSError: [Errno 27] File too large"
    assert result.limits_hit == ("file_size",)
    assert (work_dir / "big").stat().st_size == LIMITS.max_file_bytes
    shell = bwrap.run(["sh", "-c", "head -c 2000000 /dev/zero > big2"], work_dir=work_dir, limits=LIMITS)
    assert (shell.exit_code, shell.limits_hit) == (128 + signal.SIGXFSZ, ("file_size",))


def test_huge_output_is_truncated(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    result = python(bwrap, "import sys\nsys.stdout.write('x' * 1_000_000)\nprint('end')", work_dir)
    assert result.exit_code == 0
    assert result.output == "x" * LIMITS.max_output_bytes
    assert (result.output_truncated, result.output_bytes, result.limits_hit) == (True, 1_000_004, ("output",))


# ---------------------------------------------------------------------------------------------
# Plain behaviour
# ---------------------------------------------------------------------------------------------


def test_exit_codes_stdin_and_interleaved_output(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    result = bwrap.run(["sh", "-c", "echo out; echo err >&2; exit 3"], work_dir=work_dir, limits=LIMITS)
    assert (result.exit_code, result.output, result.sandbox) == (3, "out\nerr\n", "bubblewrap")
    echoed = bwrap.run(["cat"], work_dir=work_dir, stdin=b"from stdin", limits=LIMITS)
    assert (echoed.exit_code, echoed.output) == (0, "from stdin")
    killed = bwrap.run(["sh", "-c", "kill -9 $$"], work_dir=work_dir, limits=LIMITS)
    assert killed.exit_code == 128 + signal.SIGKILL
    missing = bwrap.run(["no-such-command"], work_dir=work_dir, limits=LIMITS)
    assert (missing.exit_code, missing.output) == (127, "cannot run 'no-such-command': No such file or directory\n")


def test_broken_bubblewrap_raises_instead_of_reporting_a_failed_command(work_dir: Path) -> None:
    with pytest.raises(SandboxError, match=r"failed to start \(exit 1\)"):
        BubblewrapSandbox(bwrap="/bin/false").run(["true"], work_dir=work_dir)


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        SandboxLimits(timeout_s=0)
    with pytest.raises(ValueError, match="memory_bytes"):
        SandboxLimits(memory_bytes=True)
    with pytest.raises(ValueError, match="max_processes"):
        SandboxLimits(max_processes=-1)


def test_protocol() -> None:
    assert isinstance(UnsandboxedExecutor(), Sandbox)
    if os.path.exists(BWRAP_PATH):
        assert isinstance(BubblewrapSandbox(), Sandbox)


# ---------------------------------------------------------------------------------------------
# Choosing a sandbox, and the explicit opt-out
# ---------------------------------------------------------------------------------------------


def test_default_sandbox_is_bubblewrap(bwrap: BubblewrapSandbox) -> None:
    chosen = default_sandbox()
    assert isinstance(chosen, BubblewrapSandbox) and chosen.name == "bubblewrap"


def test_no_sandbox_is_refused_unless_opted_out(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(SandboxUnavailableError) as raised:
        default_sandbox(bwrap="/nonexistent/bwrap")
    message = str(raised.value)
    assert "apt-get install bubblewrap" in message and "allow_unsandboxed=True" in message
    with pytest.raises(SandboxUnavailableError, match="failed to start"):
        default_sandbox(bwrap="/bin/false")
    with caplog.at_level(logging.WARNING, logger="aer1"):
        chosen = default_sandbox(allow_unsandboxed=True, bwrap="/nonexistent/bwrap")
    assert isinstance(chosen, UnsandboxedExecutor) and chosen.name == "none"
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["no sandbox available"]


def test_unsandboxed_executor_isolates_nothing_but_keeps_limits(
    tmp_path: Path, work_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AER1_TEST_SECRET", "visible?")
    secret = tmp_path / "secret.txt"
    secret.write_text("readable")
    none = UnsandboxedExecutor()
    result = python(
        none,
        f"import os; print(open({str(secret)!r}).read(), os.getcwd(), sorted(os.environ))",
        work_dir,
    )
    assert (result.exit_code, result.sandbox) == (0, "none")
    assert result.output == f"readable {work_dir} ['HOME', 'LANG', 'PATH']\n"
    looped = none.run(["sh", "-c", f"sleep {LINGER_S} & while :; do :; done"], work_dir=work_dir, limits=SHORT)
    assert (looped.exit_code, looped.timed_out) == (124, True)
    assert looped.duration_s < LINGER_S  # the background sleep, holding the output pipe, was killed too
    big = python(none, "print('y' * 10000)", work_dir)
    assert (big.output, big.output_truncated) == ("y" * LIMITS.max_output_bytes, True)


# ---------------------------------------------------------------------------------------------
# Code blocks
# ---------------------------------------------------------------------------------------------


def test_extract_code_blocks() -> None:
    text = (
        "Intro\n"
        "```python\nprint(1)\n```\n"
        "```Python3 title=x\nprint(2)\n```\n"
        "```py\nprint(3)\n```\n"
        "~~~shell\necho 4\n~~~\n"
        "```{.bash}\necho 5\n```\n"
        "```\nuntagged\n```\n"
        "```json\n{}\n```\n"
        "````markdown\n```python\nnested()\n```\n````\n"
        "  ```sh\n  indented\n    more\n  ```\n"
        "```sh\r\necho crlf\r\n```\r\n"
        "```python\n\n```\n"
        "```python\nnever closed\n"
        "```sh\necho swallowed\n"
    )
    assert extract_code_blocks(text) == [
        FencedBlock("python", "print(1)"),
        FencedBlock("python", "print(2)"),
        FencedBlock("python", "print(3)"),
        FencedBlock("sh", "echo 4"),
        FencedBlock("bash", "echo 5"),
        FencedBlock("", "untagged"),
        FencedBlock("json", "{}"),
        FencedBlock("markdown", "```python\nnested()\n```"),
        FencedBlock("sh", "indented\n  more"),
        FencedBlock("sh", "echo crlf"),
        FencedBlock("python", ""),
    ]
    assert extract_code_blocks("no fences") == []
    assert extract_code_blocks("```python inline``` text") == []
    assert [normalize_language(t) for t in ("", " PY ", "python3", "Shell", "BASH", "zsh")] == [
        "",
        "python",
        "python",
        "sh",
        "bash",
        "zsh",
    ]
    assert SUPPORTED_LANGUAGES == ("python", "sh", "bash")


def test_execute_python_sh_and_bash_blocks(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    blocks = extract_code_blocks(
        "```python\nimport sys\nsys.stdout.write('py')\n```\n"
        "```sh\necho sh-$0\n```\n"
        "```bash\necho ${BASH_VERSION:+bash}\n```\n"
    )
    result = execute_code_blocks(blocks, sandbox=bwrap, work_dir=work_dir, limits=LIMITS)
    assert result == CodeRunResult(
        exit_code=0,
        output="py\nsh-sh\nbash\n",
        sandbox="bubblewrap",
        blocks_run=3,
        blocks_skipped=0,
        limits=LIMITS,
    )


def test_execution_stops_at_the_first_failure(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    blocks = [
        FencedBlock("sh", "echo first"),
        FencedBlock("python", "raise SystemExit('boom')"),
        FencedBlock("sh", "touch not-reached"),
    ]
    result = execute_code_blocks(blocks, sandbox=bwrap, work_dir=work_dir, limits=LIMITS)
    assert (result.exit_code, result.output, result.blocks_run) == (1, "first\nboom\n", 2)
    assert not (work_dir / "not-reached").exists()


def test_unsupported_and_untagged_blocks_never_run(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    blocks = extract_code_blocks(
        "```\ntouch untagged\n```\n"
        "```javascript\nrequire('fs').writeFileSync('js', '')\n```\n"
        "```zsh\ntouch zsh\n```\n"
        "```sh\nls\n```\n"
    )
    result = execute_code_blocks(blocks, sandbox=bwrap, work_dir=work_dir, limits=LIMITS)
    assert (result.exit_code, result.output, result.blocks_run, result.blocks_skipped) == (0, "", 1, 3)
    assert list(work_dir.iterdir()) == []
    nothing = execute_code_blocks(blocks[:3], sandbox=bwrap, work_dir=work_dir, limits=LIMITS)
    assert (nothing.exit_code, nothing.output, nothing.blocks_run, nothing.blocks_skipped) == (0, "", 0, 3)


def test_limit_notices_in_the_output(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    blocks = [FencedBlock("python", "print('z' * 5000)"), FencedBlock("sh", "printf partial; sleep 30")]
    result = execute_code_blocks(blocks, sandbox=bwrap, work_dir=work_dir, limits=SHORT)
    assert result.output == (
        "z" * 4096
        + "\n[output truncated: 5001 bytes written, the first 4096 kept]\n"
        + "partial\n[time limit: killed after 0.3 s]\n"
    )
    assert (result.exit_code, result.timed_out, result.output_truncated) == (124, True, True)
    assert result.limits_hit == ("output", "time")


def test_oversized_block_is_refused(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    big = FencedBlock("python", "#" * (MAX_CODE_BYTES + 1))
    result = execute_code_blocks([big], sandbox=bwrap, work_dir=work_dir, limits=LIMITS)
    assert (result.exit_code, result.blocks_run) == (1, 1)
    assert result.output == f"[not run: the code block is {MAX_CODE_BYTES + 1} bytes; the limit is {MAX_CODE_BYTES}]\n"
    largest = execute_code_blocks([FencedBlock("python", "#" * MAX_CODE_BYTES)], sandbox=bwrap, work_dir=work_dir)
    assert (largest.exit_code, largest.output) == (0, "")
    for code, reason in (("print(1)\x00", "contains a NUL character"), ("'\ud800'", "is not encodable text")):
        refused = execute_code_blocks([FencedBlock("python", code)], sandbox=bwrap, work_dir=work_dir)
        assert (refused.exit_code, refused.output) == (1, f"[not run: the code block {reason}]\n")


def test_errno_names_used_here_exist() -> None:
    assert {"ENOENT", "EROFS", "EACCES", "ENETUNREACH", "ECONNREFUSED", "ENOSPC", "EAGAIN"} <= set(
        errno.errorcode.values()
    )


def test_set_up_data_too_large_for_a_pipe_is_refused_not_a_hang() -> None:
    with Pipes() as pipes, pytest.raises(SandboxError, match="do not fit a pipe"):
        pipes.preloaded(bytes(4 * MiB))
