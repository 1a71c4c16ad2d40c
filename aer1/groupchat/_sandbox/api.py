"""What every sandbox offers: the ``Sandbox`` protocol, its result and its errors."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from aer1.errors import Aer1Error

from .limits import DEFAULT_LIMITS, SandboxLimits


class SandboxError(Aer1Error, RuntimeError):
    """The sandbox itself failed (as opposed to the command failing inside it)."""


class SandboxUnavailableError(SandboxError):
    """No working sandbox on this machine and the caller did not opt out."""


@dataclass(frozen=True)
class SandboxResult:
    """What one command did: exit code, captured output, and which limits it hit.

    ``exit_code`` is the command's status, ``128 + n`` when signal ``n`` killed it,
    ``TIMEOUT_EXIT_CODE`` when the wall-clock timeout did and ``DISK_LIMIT_EXIT_CODE`` when
    the disk quota did. ``output`` is stdout and stderr interleaved as written, decoded as
    UTF-8 (invalid bytes replaced), at most ``max_output_bytes`` bytes. ``limits_hit`` names
    the limits hit: ``time``, ``output``, ``disk``, ``cpu_time`` and ``file_size`` (by
    signal) are certain; ``memory``, ``processes`` and ``file_size`` (by message) are
    inferred from the usual error messages of a failed command, so the command itself can
    cause or hide them. ``over_quota`` says why ``work_dir`` is over its quota (found while
    the command ran, which killed it, or when it ended), else None.
    """

    exit_code: int
    output: str
    sandbox: str
    timed_out: bool = False
    output_truncated: bool = False
    output_bytes: int = 0
    duration_s: float = 0.0
    limits_hit: tuple[str, ...] = field(default_factory=tuple)
    over_quota: str | None = None


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

