"""Escapes an attack review found, performed for real against bubblewrap: each must be contained.

Host keyrings, kernel interfaces (netlink, io_uring, ...), host paths in /proc, and a work_dir
reached through a link or lying inside a directory that sandboxed code could write.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aer1.groupchat import ChatResult, CodeRunnerAgent, GroupChat, ScriptedAgent
from aer1.groupchat._sandbox import DISK_LIMIT_EXIT_CODE, SANDBOX_UID, BubblewrapSandbox, SandboxError
from aer1.groupchat._sandbox.budget import pids_cgroup_parent

from .helpers import step_contents
from .sandboxing import LIMITS, SETTLE_S, MiB, attempts, python

# The keyring system calls, per machine, from the kernel's tables (not from the code under test).
KEYRING_SYSCALLS = {"x86_64": {"add_key": 248, "request_key": 249, "keyctl": 250}}
KEYRING_SYSCALLS["aarch64"] = {"add_key": 217, "request_key": 218, "keyctl": 219}
IO_URING_SETUP = 425
KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING = -3, -4
KEYCTL_GET_KEYRING_ID, KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_READ, KEYCTL_SEARCH = 0, 1, 11, 10

# Keyring access from Python through raw system calls; each helper raises OSError on failure.
KEYRING_CALLS = textwrap.dedent(
    """
    import ctypes, os
    NR = {nr}
    libc = ctypes.CDLL(None, use_errno=True)

    def call(name, *args):
        value = libc.syscall(ctypes.c_long(NR[name]), *args)
        if value < 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
        return value

    def add_key(description, payload, keyring):
        data = payload.encode()
        return call("add_key", b"user", description.encode(), data, ctypes.c_size_t(len(data)), ctypes.c_long(keyring))

    def search(keyring, description):
        kind, name = b"user", description.encode()
        return call("keyctl", ctypes.c_long(10), ctypes.c_long(keyring), kind, name, ctypes.c_long(0))

    def read(key):
        buffer = ctypes.create_string_buffer(256)
        size = call("keyctl", ctypes.c_long(11), ctypes.c_long(key), buffer, ctypes.c_long(256))
        return buffer.raw[:size].decode()
    """
)


def keyring_calls() -> str:
    table = KEYRING_SYSCALLS.get(platform.machine())
    if table is None:
        pytest.skip(f"no keyring system call table for {platform.machine()}")
    return KEYRING_CALLS.replace("{nr}", repr(table))


# The host side of the keyring attack, run in a process of its own: it starts a session keyring
# holding a secret (as a login session does), runs a group chat whose code executor tries to
# read that secret and plant keys, and reports what the code saw and what the host has after.
HOST = """
import json, sys
from aer1.groupchat import CodeRunnerAgent, GroupChat, ScriptedAgent
from aer1.groupchat._sandbox import SandboxLimits
call("keyctl", ctypes.c_long(1), ctypes.c_void_p(None))  # a new session keyring, as at login
secret = add_key("host-secret", "hunter2", -3)
attack = sys.argv[2]

def chat():
    planner = ScriptedAgent("planner", ["```python\\n" + attack + "\\n```", "done TERMINATE"])
    runner = CodeRunnerAgent("runner", work_dir=sys.argv[1], limits=SandboxLimits(timeout_s=20))
    ends = lambda m: "TERMINATE" in (m["content"] or "")
    return GroupChat([planner, runner], is_termination_msg=ends, initiator="user")

outputs = [chat().run("go").messages[2]["content"] for _ in range(2)]
try:
    planted = search(-3, "planted")
except OSError as e:
    planted = e.strerror
print(json.dumps({"outputs": outputs, "secret": read(search(-3, "host-secret")), "planted": planted}))
"""

ATTACK = """
def attempt(label, action):
    try:
        print(label, "OK", repr(action()))
    except OSError as e:
        print(label, e.strerror)
attempt("session", lambda: call("keyctl", ctypes.c_long(0), ctypes.c_long(-3), ctypes.c_long(0)))
attempt("search", lambda: read(search(-3, "host-secret")))
attempt("plant-session", lambda: add_key("planted", "x", -3))
attempt("plant-user", lambda: add_key("planted", "x", -4))
attempt("found-user", lambda: read(search(-4, "planted")))
attempt("request", lambda: call("request_key", b"user", b"host-secret", ctypes.c_void_p(None), ctypes.c_long(0)))
attempt("proc-keys", lambda: "host-secret" in open("/proc/keys").read())
"""


def test_host_keyrings_are_out_of_reach_and_nothing_outlives_a_run(bwrap: BubblewrapSandbox, tmp_path: Path) -> None:
    calls = keyring_calls()
    attack = calls + textwrap.dedent(ATTACK)
    host = subprocess.run(
        [sys.executable, "-c", calls + textwrap.dedent(HOST), str(tmp_path / "work"), attack],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert host.returncode == 0, host.stderr
    report: dict[str, Any] = json.loads(host.stdout)
    denied = "Operation not permitted"
    expected = [
        f"session {denied}",
        f"search {denied}",
        f"plant-session {denied}",
        f"plant-user {denied}",
        f"found-user {denied}",
        f"request {denied}",
        "proc-keys Permission denied",
    ]
    for output in report["outputs"]:  # the second run sees nothing the first one left
        assert output.splitlines()[2:] == expected, output
    assert (report["secret"], report["planted"]) == ("hunter2", "Required key not available")


def test_kernel_interfaces_beyond_unix_and_ip_sockets_are_refused(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    lines = attempts(
        bwrap,
        f"""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)

        def syscall(nr):
            if libc.syscall(ctypes.c_long(nr), ctypes.c_long(8), ctypes.c_void_p(None)) < 0:
                raise OSError(ctypes.get_errno(), "")

        for name, family, kind, proto in [
            ("uevent", 16, socket.SOCK_DGRAM, 15), ("route", 16, socket.SOCK_RAW, 0),
            ("packet", 17, socket.SOCK_RAW, 0), ("alg", 38, socket.SOCK_SEQPACKET, 0),
            ("vsock", 40, socket.SOCK_STREAM, 0), ("pfkey", 15, socket.SOCK_RAW, 2),
        ]:
            attempt(name, lambda: socket.socket(family, kind, proto).close())
        attempt("netlink-pair", lambda: socket.socketpair(16, socket.SOCK_RAW, 0))
        attempt("io_uring", lambda: syscall({IO_URING_SETUP}))
        attempt("unix", lambda: [s.close() for s in socket.socketpair(socket.AF_UNIX)] and "ok")
        attempt("inet", lambda: socket.socket(socket.AF_INET).close())
        attempt("inet6", lambda: socket.socket(socket.AF_INET6).close())
        """,
        work_dir,
    )
    refused = ["uevent", "route", "packet", "alg", "vsock", "pfkey", "netlink-pair"]
    assert lines == [
        *[f"{name}: EAFNOSUPPORT" for name in refused],
        "io_uring: ENOSYS",
        "unix: OK 'ok'",
        "inet: OK None",
        "inet6: OK None",
    ]


def test_process_command_lines_show_no_host_path(bwrap: BubblewrapSandbox, tmp_path: Path) -> None:
    work_dir = tmp_path / "work-a1b2"
    result = python(
        bwrap,
        "import os\n"
        "for pid in sorted(p for p in os.listdir('/proc') if p.isdigit()):\n"
        "    for part in ('cmdline', 'environ'):\n"
        "        try:\n"
        "            print(pid, part, open(f'/proc/{pid}/{part}', 'rb').read().replace(b'\\0', b' ').decode())\n"
        "        except PermissionError:\n"
        "            print(pid, part, 'unreadable')\n",
        work_dir,
    )
    assert result.exit_code == 0, result.output
    assert str(tmp_path) not in result.output
    assert "--bind" not in result.output and "--args" in result.output


def test_mountinfo_still_shows_the_work_dir_host_path(bwrap: BubblewrapSandbox, tmp_path: Path) -> None:
    """A documented remainder (spec/sandbox.md): bubblewrap cannot hide a bind mount's source."""
    work_dir = tmp_path / "work-c3d4"
    result = python(bwrap, "print(open('/proc/self/mountinfo').read())", work_dir)
    [line] = [line for line in result.output.splitlines() if " /workspace " in line]
    assert line.split()[3] == str(work_dir)


# ---------------------------------------------------------------------------------------------
# work_dir reached through links, or inside a directory sandboxed code could write
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """An empty root-owned directory the attacks try to have handed over and mounted."""
    path = tmp_path / "victim"
    path.mkdir(mode=0o755)
    return path


def assert_untouched(victim: Path) -> None:
    info = victim.stat()
    assert (info.st_uid, oct(info.st_mode & 0o7777), os.listdir(victim)) == (os.getuid(), "0o755", [])


def plant(bwrap: BubblewrapSandbox, work_dir: Path, code: str) -> None:
    result = python(bwrap, code, work_dir)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("planted", "nested"),
    [
        ("os.symlink(VICTIM, 'inner')", "inner"),
        ("os.symlink('/', 'root')", "root{VICTIM}"),
        ("os.makedirs('deep'); os.symlink(VICTIM, 'deep/inner')", "deep/inner"),
        ("os.mkdir('inner')", "inner"),
        ("pass", "new/inner"),
    ],
    ids=["link-to-victim", "link-in-the-middle", "link-below-a-dir", "dir-made-by-code", "missing"],
)
def test_work_dir_inside_an_earlier_work_dir_is_refused(
    bwrap: BubblewrapSandbox, work_dir: Path, victim: Path, planted: str, nested: str
) -> None:
    if not bwrap.as_root and "symlink" not in planted:
        pytest.skip("as another user, files of the sandbox are the caller's: only links are refused")
    plant(bwrap, work_dir, f"import os\nVICTIM = {str(victim)!r}\n{planted}")
    target = work_dir / nested.replace("{VICTIM}", str(victim))
    with pytest.raises(SandboxError, match=r"symbolic link|can write"):
        CodeRunnerAgent("runner", work_dir=target, sandbox=bwrap)
    with pytest.raises(SandboxError, match=r"symbolic link|can write"):
        python(bwrap, "open('/workspace/pwned', 'w').write('x')", target)
    assert_untouched(victim)
    if bwrap.as_root:
        assert not (work_dir / "new").exists()


def test_a_host_symlink_on_the_way_is_refused_not_followed(
    bwrap: BubblewrapSandbox, tmp_path: Path, victim: Path
) -> None:
    (tmp_path / "shortcut").symlink_to(victim)
    with pytest.raises(SandboxError, match=r"reached through .*shortcut, which is a symbolic link; pass a real path"):
        python(bwrap, "open('/workspace/pwned', 'w').write('x')", tmp_path / "shortcut")
    with pytest.raises(SandboxError, match="symbolic link"):
        python(bwrap, "pass", tmp_path / "shortcut" / "below")
    assert_untouched(victim)


def test_work_dir_below_a_directory_everyone_can_write_is_refused_as_root(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    if not bwrap.as_root:
        pytest.skip("only the root mode hands work directories over to the sandbox user")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(SandboxError, match=f"the sandbox user \\(uid {SANDBOX_UID}\\) can write"):
        python(bwrap, "pass", shared / "work")
    shared.chmod(0o1777)  # sticky: others cannot replace what is there
    assert python(bwrap, "print('ran')", shared / "work", LIMITS).output == "ran\n"


def test_a_sibling_work_dir_is_fine(bwrap: BubblewrapSandbox, tmp_path: Path) -> None:
    assert python(bwrap, "open('a', 'w').write('1')", tmp_path / "one").exit_code == 0
    assert python(bwrap, "print(sorted(__import__('os').listdir()))", tmp_path / "two").output == "[]\n"


# ---------------------------------------------------------------------------------------------
# The work_dir disk quota
# ---------------------------------------------------------------------------------------------

QUOTA = dataclasses.replace(LIMITS, work_dir_bytes=8 * MiB, work_dir_entries=400)
FILL = "import os\nfor i in range(10**9):\n    open(f'f{i}', 'wb').write(os.urandom(256 * 1024))\n"


def used(path: Path) -> tuple[int, int]:
    """(bytes allocated, entries) below ``path``, measured independently of the code under test."""
    total = entries = 0
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            entries += 1
            total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total, entries


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (FILL, "more than 8388608 bytes"),
        ("for i in range(10**9):\n    open(f'f{i}', 'w').close()\n", "more than 400 entries"),
        ("import os\nfor i in range(10**9):\n    os.mkdir(f'd{i}')\n", "more than 400 entries"),
        ("import os\nos.makedirs('/'.join(['d'] * 300))\nimport time\ntime.sleep(30)\n", "deeper than 256 levels"),
    ],
    ids=["bytes", "files", "directories", "depth"],
)
def test_filling_work_dir_is_stopped_by_the_quota(
    bwrap: BubblewrapSandbox, work_dir: Path, code: str, reason: str
) -> None:
    result = python(bwrap, code, work_dir, QUOTA)
    assert (result.exit_code, result.timed_out, result.limits_hit) == (DISK_LIMIT_EXIT_CODE, False, ("disk",))
    assert result.over_quota is not None and reason in result.over_quota
    again = python(bwrap, "print('never')", work_dir, QUOTA)  # already full: killed at once
    assert (again.exit_code, again.output, again.limits_hit) == (DISK_LIMIT_EXIT_CODE, "", ("disk",))


HIDE_OPEN = "f = open(f'f{i}', 'wb+')\nf.write(os.urandom(256 * 1024))\nf.flush()\nkept.append(f)\n"
HIDE_MAPPED = HIDE_OPEN + "kept[-1] = mmap.mmap(f.fileno(), 0)\nf.close()\n"


@pytest.mark.parametrize("hide", [HIDE_OPEN, HIDE_MAPPED], ids=["open", "mapped"])
def test_files_unlinked_while_held_count_against_the_quota(bwrap: BubblewrapSandbox, work_dir: Path, hide: str) -> None:
    if pids_cgroup_parent() is None:
        pytest.skip("without a cgroup of its own the run's processes are not known (spec/sandbox.md)")
    body = textwrap.indent(hide + "os.unlink(f'f{i}')\n", "    ")
    code = f"import mmap, os, time\nkept = []\nfor i in range(4000):\n{body}time.sleep(30)\n"
    result = python(bwrap, code, work_dir, QUOTA)
    assert (result.exit_code, result.limits_hit, result.over_quota) == (
        DISK_LIMIT_EXIT_CODE,
        ("disk",),
        "work_dir holds more than 8388608 bytes",
    ), result.output
    assert used(work_dir)[0] < QUOTA.work_dir_bytes  # what is over is what no walk could see


def test_a_command_that_overfills_and_exits_between_checks_is_reported(
    bwrap: BubblewrapSandbox, work_dir: Path
) -> None:
    limits = dataclasses.replace(QUOTA, work_dir_bytes=MiB // 2)
    result = python(bwrap, "open('big', 'wb').write(bytes(1024 * 1024))", work_dir, limits)
    assert "disk" in result.limits_hit and result.over_quota is not None
    assert result.exit_code in (0, DISK_LIMIT_EXIT_CODE)


def test_links_are_not_followed_and_hard_links_count_once(bwrap: BubblewrapSandbox, work_dir: Path) -> None:
    code = (
        "import os\nos.symlink('/usr', 'usr')\nos.symlink('/', 'root')\n"
        "open('data', 'wb').write(os.urandom(1024 * 1024))\n"
        "for i in range(20):\n    os.link('data', f'data{i}')\n"
    )
    result = python(bwrap, code, work_dir, dataclasses.replace(QUOTA, work_dir_bytes=2 * MiB))
    assert (result.exit_code, result.limits_hit, result.over_quota) == (0, (), None)
    assert used(work_dir)[1] == 23


def test_the_quota_reaches_the_model_and_the_receipt(
    tmp_path: Path, bwrap: BubblewrapSandbox, check_receipt: Callable[[ChatResult], Path]
) -> None:
    planner = ScriptedAgent("planner", [f"```python\n{FILL}```", "done TERMINATE"])
    runner = CodeRunnerAgent("runner", work_dir=tmp_path / "work", sandbox=bwrap, limits=QUOTA)
    ends = lambda m: "TERMINATE" in (m["content"] or "")  # noqa: E731
    result = GroupChat([planner, runner], is_termination_msg=ends, initiator="user").run("Fill it.")
    reply = result.messages[2]["content"]
    assert reply.startswith(f"exitcode: {DISK_LIMIT_EXIT_CODE} (execution failed)")
    assert reply.endswith("[disk limit: work_dir holds more than 8388608 bytes; the command was killed]\n")
    [step] = [s for s in step_contents(result, tmp_path) if isinstance(s, dict) and "code_blocks" in s]
    assert step["groupchat"]["limits_hit"] == ["disk"]
    assert (step["exit_code"], step["error"]["type"]) == (DISK_LIMIT_EXIT_CODE, "exit_code")
    check_receipt(result)


# ---------------------------------------------------------------------------------------------
# Process budget per run
# ---------------------------------------------------------------------------------------------

BUDGET = dataclasses.replace(LIMITS, timeout_s=30.0, max_processes=16)
HOG = """
import os, time
forked = 0
try:
    while True:
        if os.fork() == 0:
            while not os.path.exists("release"):
                time.sleep(0.05)
            os._exit(0)
        forked += 1
except OSError as e:
    error = e.strerror
    open("full", "w").write(str(forked))
while not os.path.exists("release"):
    time.sleep(0.05)
print("hog forked", forked, "then", error)
"""
NEIGHBOUR = """
import os, time
pids = []
for _ in range(8):
    pid = os.fork()
    if pid == 0:
        time.sleep(0.5)
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
print("neighbour forked", len(pids))
"""


def test_one_run_cannot_take_another_runs_processes(bwrap: BubblewrapSandbox, tmp_path: Path) -> None:
    hog_dir, results = tmp_path / "hog", {}
    hog = threading.Thread(target=lambda: results.update(hog=python(bwrap, HOG, hog_dir, BUDGET)))
    hog.start()
    try:
        deadline = time.monotonic() + SETTLE_S
        while not (hog_dir / "full").exists():  # a wait for a condition, not a speed target
            assert time.monotonic() < deadline and hog.is_alive(), "the hog never filled its budget"
            time.sleep(0.05)
        neighbour = python(bwrap, NEIGHBOUR, tmp_path / "neighbour", BUDGET)
    finally:
        (hog_dir / "release").write_text("")
        hog.join()
    assert results["hog"].output == "hog forked 15 then Resource temporarily unavailable\n"
    if pids_cgroup_parent() is None:  # documented: runs share the sandbox user's process limit
        assert neighbour.exit_code != 0 and "Resource temporarily unavailable" in neighbour.output
    else:
        assert (neighbour.exit_code, neighbour.output) == (0, "neighbour forked 8\n")
