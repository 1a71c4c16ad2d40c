"""Output files written whole and replaced at once: never through a device, FIFO or other special file.

Receipts, evidence and proofs are written to a new temporary file beside the target and
renamed over it. A rename replaces whatever the name held, so a target that exists and is
not a regular file (``/dev/stdout``, a FIFO, a device, a folder) is refused instead of
being swapped for a regular file; the temporary file is created exclusively, never
through a link planted at its name.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Callable
from typing import IO

from ._storage import is_url

__all__ = ["TEMP_FLAGS", "check_folder", "check_output", "replace_file", "temp_path"]

#: Flags that create a temporary output file: exclusively, never through a link at its name.
TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
_TMP_MODE = 0o666  # less the umask, as open() gives


def check_output(path: str) -> None:
    """Raise OSError when ``path`` exists (links followed) and is not a regular file, or its folder is missing.

    A URL (an object in storage) has no folder to check and is never a special file.
    """
    if is_url(path):
        return
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ENOTDIR):
            check_folder(path)
            return
        raise
    if not stat.S_ISREG(mode):
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise OSError(errno.EINVAL, f"output is {what}: refusing to replace it", path)


def check_folder(path: str) -> None:
    """Raise OSError saying what to do when the folder ``path`` would be written in does not exist."""
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise OSError(errno.ENOENT, f"the folder {folder} does not exist: create it first, or name another", path)


def temp_path(target: str) -> str:
    """A fresh name beside ``target`` for its temporary file (a crashed run's leftover never collides)."""
    return f"{target}.tmp-{os.getpid()}-{secrets.token_hex(4)}"


def replace_file(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object], *, durable: bool = False) -> None:
    """Write ``path`` whole through ``write(file)`` into a temporary file, then rename it over ``path``.

    ``durable``: the file's bytes are synced before the rename and its folder after, so a
    crash or power loss leaves the old file or the new one, never a torn or empty one.
    """
    target = os.fspath(path)
    if is_url(target):  # an object in storage is written whole at close: no temporary name needed
        from ._storage import open_write

        with open_write(target) as f:
            write(f)
        return
    check_output(target)
    tmp = temp_path(target)
    fd = os.open(tmp, TEMP_FLAGS, _TMP_MODE)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    if durable:
        folder = os.open(os.path.dirname(target) or ".", os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
