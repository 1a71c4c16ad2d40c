"""The work directory: which directories may be one, and opening it without following links.

A work directory is reached component by component from ``/`` with ``O_NOFOLLOW``: a
symbolic link anywhere on the way is refused, never resolved, and the missing components
are created the same way. The sandbox then uses the open descriptor, not the path, so a
link planted after the check changes nothing. Started as root, a directory the sandbox
user could write (its own, or one writable by everyone or by its group without the sticky
bit) may not be on the way either: sandboxed code could have replaced what lies below it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .api import SandboxError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_DIR_MODE = 0o755


class WorkDirError(SandboxError, ValueError):
    """``work_dir`` cannot be used as a work directory; the message says why."""


def interpreter_dirs() -> list[str]:
    """The directories the running interpreter needs: its prefixes, as given and resolved."""
    dirs: list[str] = []
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        for candidate in (os.path.abspath(prefix), os.path.realpath(prefix)):
            if candidate not in dirs and candidate != "/":
                dirs.append(candidate)
    return dirs


@dataclass(frozen=True)
class WorkDir:
    """An open work directory: its absolute path (free of links) and a descriptor of it."""

    path: Path
    fd: int


def _check_path(path: Path) -> None:
    """Refuse the root, the home directory and any directory holding the Python installation:
    sandboxed code may rewrite everything in ``work_dir``, and the host would then run it."""
    if path == Path(path.anchor):
        raise WorkDirError("work_dir must not be the filesystem root")
    home = os.path.expanduser("~")
    if os.path.isabs(home) and path == Path(home).resolve():
        raise WorkDirError(f"work_dir must not be the home directory ({path}); use a dedicated directory")
    for directory in interpreter_dirs():
        if Path(directory).resolve().is_relative_to(path):
            raise WorkDirError(f"work_dir {path} holds the Python installation {directory}; use a dedicated directory")


def _writable_by(info: os.stat_result, uid: int, gid: int) -> bool:
    """Whether user ``uid`` (group ``gid``, no capabilities) could add or replace entries."""
    if info.st_uid == uid:
        return True
    if info.st_mode & stat.S_ISVTX:
        return False
    return bool(info.st_mode & stat.S_IWOTH or (info.st_gid == gid and info.st_mode & stat.S_IWGRP))


def _step(parent: int, name: str, shown: Path, *, create: bool) -> int:
    """Open directory ``name`` below ``parent`` without following a link, creating it if asked."""
    for attempt in (0, 1):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not create or attempt:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, _NEW_DIR_MODE, dir_fd=parent)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                kind = "a symbolic link" if os.path.islink(shown) else "not a directory"
                raise WorkDirError(f"work_dir is reached through {shown}, which is {kind}; pass a real path") from e
            raise
    raise AssertionError("unreachable")


@contextlib.contextmanager
def open_work_dir(
    work_dir: str | os.PathLike[str], *, guard: tuple[int, int] | None = None, create: bool = True
) -> Iterator[WorkDir]:
    """Open ``work_dir`` (creating what is missing) and close it afterwards.

    ``guard`` is the sandbox user's ``(uid, gid)`` when that user is not the caller: no
    directory on the way to ``work_dir`` may then be writable by it. Raises
    ``WorkDirError`` for a refused directory.
    """
    path = Path(os.path.abspath(work_dir))
    _check_path(path)
    fd = os.open("/", _DIR_FLAGS)
    try:
        shown = Path("/")
        for name in path.parts[1:]:
            if guard is not None and _writable_by(os.fstat(fd), *guard):
                raise WorkDirError(
                    f"work_dir {path} lies inside {shown}, which the sandbox user (uid {guard[0]}) can write; "
                    "code run there could have planted links in it. Use a directory outside every work_dir."
                )
            shown = shown / name
            try:
                child = _step(fd, name, shown, create=create)
            except FileNotFoundError as e:
                raise WorkDirError(f"work_dir {path} does not exist ({shown} is missing)") from e
            os.close(fd)
            fd = child
        yield WorkDir(path, fd)
    finally:
        os.close(fd)


def create_work_dir(work_dir: str | os.PathLike[str], *, guard: tuple[int, int] | None = None) -> Path:
    """Check and create ``work_dir`` (without following links; ``guard`` as for
    :func:`open_work_dir`); returns its absolute path."""
    with open_work_dir(work_dir, guard=guard) as opened:
        return opened.path


def hand_over(opened: WorkDir, uid: int, gid: int) -> None:
    """As root, make the work directory ``uid``'s; only a new or empty one is taken over."""
    info = os.fstat(opened.fd)
    if info.st_uid == uid:
        return
    if os.listdir(opened.fd):
        raise WorkDirError(
            f"work_dir {opened.path} belongs to uid {info.st_uid} and is not empty; code runs as uid "
            f"{uid} and could not write there. Use a new directory, or give it to that user (chown {uid}:{gid})."
        )
    os.fchown(opened.fd, uid, gid)
