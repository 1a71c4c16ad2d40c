"""The explicit opt-out: the limits without any isolation."""

from __future__ import annotations

import os
import sys

from .launcher import SANDBOX_LANG, launcher_argv, sandbox_path
from .runner import Launch, RunSetup, WorkDirSandbox


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

    def _launch(self, command: list[str], run: RunSetup) -> Launch:
        """``command`` behind the launcher, on the host in ``work_dir``; its process group is killed at the end."""
        path = run.work_dir.path
        return Launch(
            argv=[*launcher_argv(self.python, run.limits, run.ready_fd), *command],
            env={"PATH": sandbox_path(), "HOME": str(path), "LANG": SANDBOX_LANG},
            cwd=str(path),
            failure="the launcher failed",
        )
