"""Input files opened safely: only regular files are read, and opening never blocks.

A FIFO, a device or a socket given where a file is expected (a receipt, evidence, a key,
a journal) would block the reader or feed it without end. Each is opened without blocking
and refused by its type before a byte is read; symlinks are followed to what they name.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import IO

from .errors import Aer1Error

__all__ = ["READ_FLAGS", "NotRegularFile", "kind_of", "open_regular"]

#: Flags that open an input: read only, never blocking on a FIFO or device, never a terminal.
READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, for messages: ``a directory``, ``a FIFO``, ..."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


class NotRegularFile(Aer1Error, OSError):
    """The path names a directory, FIFO, socket or device: it is never read (an OSError too)."""

    def __init__(self, path: str, mode: int) -> None:
        self.kind = kind_of(mode)
        super().__init__(errno.EINVAL, f"{self.kind}, not a regular file", path)


def open_regular(path: str | os.PathLike[str]) -> IO[bytes]:
    """Open ``path`` for reading if it is a regular file; NotRegularFile if it is not.

    Other failures are the OSError of ``os.open`` (and ValueError for a NUL in the name).
    """
    p = os.fspath(path)
    fd = os.open(p, READ_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(p, mode)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
