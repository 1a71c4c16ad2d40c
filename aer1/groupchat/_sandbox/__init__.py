"""Sandboxes that run one command with no access to the host beyond a work directory.

``BubblewrapSandbox`` isolates with Linux namespaces through bubblewrap (``bwrap``): no
network, a private filesystem view holding only the system's read-only program
directories, the Python interpreter and the read-write ``work_dir``, a fresh ``/proc``,
``/tmp`` and ``/dev``, a scrubbed environment, an unprivileged user, a seccomp filter and
resource limits. ``UnsandboxedExecutor`` (name ``"none"``) is the explicit opt-out: it
applies the limits but no isolation. ``default_sandbox()`` picks bubblewrap after probing
that it works and refuses otherwise unless the caller opts out. ``spec/sandbox.md``
documents exactly what is and is not protected.

One module per job: ``limits`` (the limits), ``api`` (protocol, result, errors),
``launcher`` (the first program inside), ``seccomp`` (the system-call filter), ``workdir``
(checking, creating and opening the work directory), ``disk`` (its quota), ``runner``
(spawning and supervising),
``bubblewrap`` and ``unsandboxed`` (the two sandboxes), ``choice`` (picking one).
"""

from __future__ import annotations

from . import limits
from .api import Sandbox, SandboxError, SandboxResult, SandboxUnavailableError
from .bubblewrap import (
    BWRAP_PATH,
    SANDBOX_GID,
    SANDBOX_HOME,
    SANDBOX_HOSTNAME,
    SANDBOX_UID,
    SANDBOX_WORK_DIR,
    BubblewrapSandbox,
)
from .choice import default_sandbox, probe_bubblewrap
from .launcher import SANDBOX_LANG, SYSTEM_PATH
from .limits import *  # noqa: F403
from .seccomp import seccomp_filter
from .unsandboxed import UnsandboxedExecutor
from .workdir import WorkDirError, interpreter_dirs

__all__ = [
    "BWRAP_PATH",
    "SANDBOX_GID",
    "SANDBOX_HOME",
    "SANDBOX_HOSTNAME",
    "SANDBOX_LANG",
    "SANDBOX_UID",
    "SANDBOX_WORK_DIR",
    "SYSTEM_PATH",
    "BubblewrapSandbox",
    "Sandbox",
    "SandboxError",
    "SandboxResult",
    "SandboxUnavailableError",
    "UnsandboxedExecutor",
    "WorkDirError",
    "default_sandbox",
    "interpreter_dirs",
    "probe_bubblewrap",
    "seccomp_filter",
]
__all__ += limits.__all__
