"""Resource limits of one sandboxed command: the defaults, their names, ``SandboxLimits``."""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Every name here; the package exports them all.
__all__ = [
    "COMMAND_NOT_FOUND_EXIT_CODE",
    "CPU_GRACE_S",
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_MAX_PROCESSES",
    "DEFAULT_MEMORY_BYTES",
    "DEFAULT_TIMEOUT_S",
    "DEFAULT_TMPFS_BYTES",
    "DEFAULT_WORK_DIR_BYTES",
    "DEFAULT_WORK_DIR_ENTRIES",
    "DISK_LIMIT_EXIT_CODE",
    "LIMIT_CPU",
    "LIMIT_DISK",
    "LIMIT_FILE_SIZE",
    "LIMIT_MEMORY",
    "LIMIT_OUTPUT",
    "LIMIT_PROCESSES",
    "LIMIT_TIME",
    "OPEN_FILES_LIMIT",
    "TIMEOUT_EXIT_CODE",
    "WORK_DIR_CHECK_S",
    "SandboxLimits",
]

# ---------------------------------------------------------------------------------------------

DEFAULT_TIMEOUT_S = 60.0
"""Wall-clock time one command may run before the whole sandbox is killed."""
DEFAULT_MEMORY_BYTES = 1024 * 1024 * 1024
"""Address-space limit (RLIMIT_AS) of each process in the sandbox."""
DEFAULT_MAX_PROCESSES = 128
"""Processes and threads the sandbox user may have at once (RLIMIT_NPROC)."""
DEFAULT_MAX_OUTPUT_BYTES = 64 * 1024
"""Bytes of combined stdout and stderr kept; the rest is read and dropped."""
DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
"""Largest file a process may write (RLIMIT_FSIZE)."""
DEFAULT_TMPFS_BYTES = 64 * 1024 * 1024
"""Size of each in-memory filesystem of the sandbox (``/tmp`` and ``/dev/shm``)."""
DEFAULT_WORK_DIR_BYTES = 1024 * 1024 * 1024
"""Disk space ``work_dir`` may hold in total (blocks allocated), across runs."""
DEFAULT_WORK_DIR_ENTRIES = 20_000
"""Files, directories and links ``work_dir`` may hold in total, across runs."""
WORK_DIR_CHECK_S = 0.1
"""How often the host measures ``work_dir`` while a command runs (at least; see ``disk``)."""
DISK_LIMIT_EXIT_CODE = 128 + 9
"""Exit code reported when the disk quota killed the command (as a SIGKILL)."""

CPU_GRACE_S = 1
"""CPU seconds allowed beyond the wall-clock timeout before SIGXCPU (a backstop only)."""
OPEN_FILES_LIMIT = 1024
"""Open file descriptors per process (RLIMIT_NOFILE)."""
TIMEOUT_EXIT_CODE = 124
"""Exit code reported when the wall-clock timeout killed the command (as timeout(1) does)."""
COMMAND_NOT_FOUND_EXIT_CODE = 127
"""Exit code when the command cannot be executed (as a shell reports it)."""

LIMIT_TIME = "time"
LIMIT_CPU = "cpu_time"
LIMIT_MEMORY = "memory"
LIMIT_PROCESSES = "processes"
LIMIT_FILE_SIZE = "file_size"
LIMIT_OUTPUT = "output"
LIMIT_DISK = "disk"


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one command; memory, file size and tmpfs sizes are in bytes."""

    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_bytes: int = DEFAULT_MEMORY_BYTES
    max_processes: int = DEFAULT_MAX_PROCESSES
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    tmpfs_bytes: int = DEFAULT_TMPFS_BYTES
    work_dir_bytes: int = DEFAULT_WORK_DIR_BYTES
    work_dir_entries: int = DEFAULT_WORK_DIR_ENTRIES

    def __post_init__(self) -> None:
        if isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, (int, float)) or not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be a positive number, got {self.timeout_s!r}")
        names = ("memory_bytes", "max_processes", "max_output_bytes", "max_file_bytes", "tmpfs_bytes")
        for name in (*names, "work_dir_bytes", "work_dir_entries"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")

    @property
    def cpu_seconds(self) -> int:
        """The CPU-time limit (RLIMIT_CPU) per process: the timeout rounded up plus a grace."""
        return math.ceil(self.timeout_s) + CPU_GRACE_S


#: The limits a sandboxed run gets unless the caller gives others.
DEFAULT_LIMITS = SandboxLimits()
