"""The work directory's disk quota: how much a run's ``work_dir`` holds, measured from the host.

The tree is walked from an open descriptor, directory by directory with ``O_NOFOLLOW``, so
links the code planted are counted as links and never followed. Disk use is the blocks
allocated (``st_blocks``), each inode counted once (hard links), directories included.
The walk stops as soon as a limit is passed, so its cost is bounded by the limits.

Files unlinked while still open (or mapped) take disk space that no walk sees. When the
run's processes are known (their pids cgroup, see :mod:`.budget`), the regular files on
``work_dir``'s filesystem that they hold through ``/proc/<pid>/fd`` and
``/proc/<pid>/map_files`` with no link left are counted too.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .limits import SandboxLimits

WORK_DIR_MAX_DEPTH = 256
"""Deepest directory nesting measured in ``work_dir``; deeper counts as over the quota."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_BLOCK_BYTES = 512


@dataclass
class Usage:
    """What a walk found: bytes allocated, entries (files, directories, links...) seen."""

    bytes: int = 0
    entries: int = 0
    too_deep: bool = False

    def over(self, limits: SandboxLimits) -> str | None:
        """Why this usage is over the quota of ``limits``, or None."""
        if self.bytes > limits.work_dir_bytes:
            return f"work_dir holds more than {limits.work_dir_bytes} bytes"
        if self.entries > limits.work_dir_entries:
            return f"work_dir holds more than {limits.work_dir_entries} entries"
        if self.too_deep:
            return f"work_dir nests directories deeper than {WORK_DIR_MAX_DEPTH} levels"
        return None


@contextlib.contextmanager
def _opened(name: str, parent: int) -> Iterator[int | None]:
    """``name`` below ``parent`` as a directory descriptor; None when it is gone or not one."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError:  # removed, or replaced by a link or a file meanwhile
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _held_unlinked(holders: Path, device: int, seen: set[tuple[int, int]]) -> int:
    """Bytes of files on ``device`` with no link left that the processes listed in
    ``holders`` (a ``cgroup.procs`` file) keep open or mapped."""
    try:
        pids = holders.read_text().split()
    except OSError:
        return 0
    total = 0
    for pid in pids:
        for folder in (f"/proc/{pid}/fd", f"/proc/{pid}/map_files"):
            try:
                names = os.listdir(folder)
            except OSError:  # gone, or not ours to read
                continue
            for name in names:
                try:
                    info = os.stat(f"{folder}/{name}")
                except OSError:
                    continue
                inode = (info.st_dev, info.st_ino)
                if stat.S_ISREG(info.st_mode) and info.st_nlink == 0 and info.st_dev == device and inode not in seen:
                    seen.add(inode)
                    total += info.st_blocks * _BLOCK_BYTES
    return total


def measure(work_dir_fd: int, limits: SandboxLimits, holders: Path | None = None) -> Usage:
    """Walk ``work_dir`` (an open directory) until done or over the quota of ``limits``;
    with ``holders``, add what the run's processes hold unlinked (see the module doc)."""
    usage = Usage()
    seen: set[tuple[int, int]] = set()

    def walk(fd: int, depth: int) -> bool:
        """Add the entries below ``fd``; False once over the quota."""
        if depth > WORK_DIR_MAX_DEPTH:
            usage.too_deep = True
            return False
        subdirs: list[str] = []
        with os.scandir(fd) as entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                usage.entries += 1
                inode = (info.st_dev, info.st_ino)
                if info.st_nlink <= 1 or stat.S_ISDIR(info.st_mode) or inode not in seen:
                    usage.bytes += info.st_blocks * _BLOCK_BYTES
                    if info.st_nlink > 1:
                        seen.add(inode)
                if usage.over(limits):
                    return False
                if stat.S_ISDIR(info.st_mode):
                    subdirs.append(entry.name)
        for name in subdirs:
            with _opened(name, fd) as child:
                if child is not None and not walk(child, depth + 1):
                    return False
        return True

    with _opened(".", work_dir_fd) as root:
        if root is not None:
            usage.bytes += os.fstat(root).st_blocks * _BLOCK_BYTES
            walk(root, 1)
    if holders is not None and not usage.over(limits):
        usage.bytes += _held_unlinked(holders, os.fstat(work_dir_fd).st_dev, seen)
    return usage
