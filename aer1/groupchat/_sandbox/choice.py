"""Choosing a sandbox: bubblewrap when a probe shows it works, else refuse or opt out."""

from __future__ import annotations

import logging
import tempfile
import threading

from .api import Sandbox, SandboxError, SandboxUnavailableError
from .bubblewrap import BWRAP_PATH, BubblewrapSandbox
from .limits import SandboxLimits
from .unsandboxed import UnsandboxedExecutor

logger = logging.getLogger("aer1")

_PROBE_TIMEOUT_S = 20.0
_PROBE_MEMORY_BYTES = 512 * 1024 * 1024

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
