"""Shared by the sandbox tests: limits small enough for tests, and helpers that run code in a
sandbox and report what each attempted action did."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from aer1.groupchat._sandbox import SANDBOX_UID, Sandbox, SandboxLimits, SandboxResult

MiB = 1024 * 1024
LIMITS = SandboxLimits(
    timeout_s=10.0,
    memory_bytes=256 * MiB,
    max_processes=16,
    max_output_bytes=4096,
    max_file_bytes=1 * MiB,
    tmpfs_bytes=4 * MiB,
)
SHORT = SandboxLimits(
    timeout_s=0.3,
    memory_bytes=256 * MiB,
    max_processes=32,
    max_output_bytes=4096,
    max_file_bytes=1 * MiB,
    tmpfs_bytes=4 * MiB,
)
# TEST-NET-1 (RFC 5737): a non-private, non-loopback address reserved for documentation and
# never routed, so even a broken sandbox could not reach anything with it.
UNROUTED_ADDRESS = "192.0.2.1"
#: How long the leftover processes some tests start would live if nothing killed them (s).
LINGER_S = 30
#: How long killed sandbox processes may take to disappear (a wait for a condition, not a speed target).
SETTLE_S = 10.0

# Inside the sandbox: try each action, print one line "label: OK <value>" or "label: <ERRNO>".
ATTEMPT = textwrap.dedent(
    """
    import errno, os, socket, sys

    def attempt(label, action):
        try:
            value = action()
        except OSError as e:
            print(f"{label}: {errno.errorcode[e.errno]}")
        else:
            print(f"{label}: OK {value!r}")
    """
)


def python(sandbox: Sandbox, code: str, work_dir: Path, limits: SandboxLimits = LIMITS) -> SandboxResult:
    """Run Python code (without site-packages, to start faster) in ``sandbox``."""
    return sandbox.run([sys.executable, "-S", "-c", code], work_dir=work_dir, limits=limits)


def attempts(sandbox: Sandbox, body: str, work_dir: Path, limits: SandboxLimits = LIMITS) -> list[str]:
    result = python(sandbox, ATTEMPT + textwrap.dedent(body), work_dir, limits)
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def sandbox_user_pids() -> set[int]:
    """Host pids running as the sandbox user (root mode only: otherwise that is us)."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
            if int(uid_line.split()[1]) == SANDBOX_UID:
                pids.add(int(entry.name))
    return pids


