"""The witness's durable state: the last checkpoint it cosigned, one file per log origin.

``DIR/<hex SHA-256 of the origin>.checkpoint`` holds that checkpoint as a signed note
(the log's signature and the witness's cosignature). A new one is written as the log
writer writes its checkpoint (a temporary file, synced, renamed over the old one, the
folder synced), so a crash leaves the old state or the new, never a torn one.
:meth:`WitnessState.locked` is the one lock the witness holds from reading a state to
persisting the next: a thread lock for the
requests of one process and an exclusive ``flock`` on ``DIR/lock`` for other processes
sharing the folder, so two requests can never both advance a log from the same size.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._infile import NotRegularFile, open_regular
from .errors import Aer1Error

__all__ = ["MAX_STATE_BYTES", "WitnessState", "WitnessStateError", "origin_hash"]

#: Largest state file read (bytes): one checkpoint note with its signatures.
MAX_STATE_BYTES = 1024 * 1024
_LOCK_NAME = "lock"
_SUFFIX = ".checkpoint"
_DIR_MODE = 0o700
_FILE_MODE = 0o600


class WitnessStateError(Aer1Error, OSError):
    """The state folder cannot be used (missing parent, not a folder, an unreadable state file)."""


def origin_hash(origin: str) -> str:
    """Lowercase hex SHA-256 of the origin line (without its newline): the state's file name, and the
    monitoring path of tlog-witness."""
    return hashlib.sha256(origin.encode("utf-8")).hexdigest()


class WitnessState:
    """The state folder of one witness: :meth:`load` and :meth:`store` inside :meth:`locked`."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = os.fspath(directory)
        try:
            os.makedirs(self.directory, mode=_DIR_MODE, exist_ok=True)
        except OSError as e:
            raise WitnessStateError(e.errno or errno.EIO, f"cannot create the state folder: {e.strerror or e}",
                                    self.directory) from e
        if not os.path.isdir(self.directory):
            raise WitnessStateError(errno.ENOTDIR, "the state path is not a folder", self.directory)
        self._lock_path = os.path.join(self.directory, _LOCK_NAME)
        self._thread_lock = threading.Lock()

    def path_for(self, origin: str) -> str:
        """The file holding ``origin``'s state."""
        return os.path.join(self.directory, origin_hash(origin) + _SUFFIX)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the state exclusively, against this process's other threads and other processes."""
        with self._thread_lock:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), _FILE_MODE)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # closing releases the flock

    def load(self, origin: str) -> bytes | None:
        """The last cosigned checkpoint of ``origin`` as stored, or None if the witness never cosigned one."""
        path = self.path_for(origin)
        try:
            with open_regular(path) as f:
                data = f.read(MAX_STATE_BYTES + 1)
        except FileNotFoundError:
            return None
        except (NotRegularFile, OSError) as e:
            raise WitnessStateError(getattr(e, "errno", None) or errno.EIO,
                                    f"cannot read the state of {origin!r}: {e}", path) from e
        if len(data) > MAX_STATE_BYTES:
            raise WitnessStateError(errno.EFBIG, f"the state of {origin!r} is larger than {MAX_STATE_BYTES} bytes",
                                    path)
        return data

    def store(self, origin: str, note: bytes) -> None:
        """Make ``note`` the state of ``origin``, durably, before returning (call inside :meth:`locked`)."""
        from ._logdir import write_durable

        write_durable(Path(self.path_for(origin)), note)
