"""The explicit opt-out: the limits without any isolation."""

from __future__ import annotations

import os
import sys

from .api import SandboxResult
from .launcher import SANDBOX_LANG, launcher_argv, sandbox_path
from .limits import SandboxLimits
from .runner import Pipes, WorkDirSandbox, execute
from .workdir import WorkDir


class UnsandboxedExecutor(WorkDirSandbox):
    """The explicit opt-out: runs on the host with the limits but WITHOUT any isolation.

    Its name, ``"none"``, is what receipts record. The command runs as the calling user in
    ``work_dir``, with the scrubbed environment (PATH, HOME=work_dir, LANG), the same
    rlimits, the wall-clock timeout and the output cap; it can read and write whatever
    that user can and use the network.
    """

    name = "none"

    def __init__(self) -> None:
        self.python = os.path.abspath(sys.executable)

    def _run(self, command: list[str], work_dir: WorkDir, stdin: bytes | None, limits: SandboxLimits) -> SandboxResult:
        """Run ``command`` on the host in ``work_dir``; its process group is killed at the end."""
        with Pipes() as pipes:
            path = work_dir.path
            ready_read, ready_write = pipes.channel()
            return execute(
                self.name,
                [*launcher_argv(self.python, limits, ready_write), *command],
                env={"PATH": sandbox_path(), "HOME": str(path), "LANG": SANDBOX_LANG},
                cwd=str(path),
                stdin=stdin,
                limits=limits,
                pipes=pipes,
                ready_fd=ready_read,
                status_fd=None,
                failure="the launcher failed",
                work_dir_fd=work_dir.fd,
            )

