"""The crash-safe journal: every recorded step appended to a file the moment it is recorded.

A journal is JSON lines, one object per line, each ending in ``\\n``:

* line 1, the header: ``{"type":"aer1-journal","version":"1","profile":...,"workflow_id":...,
  "receipt_id":...,"session_id":...,"goal":...,"verify_url":...,"evidence":true,"created_at":...}``;
* ``{"type":"agent","agent":{...}}`` when an agent is registered (members in registration order);
* ``{"type":"step","step":{"receipt_id":...,<the hashed step members>},"content":<canonical content>}``
  for every step, the close step included (``content`` is left out when the collector keeps no
  evidence);
* ``{"type":"final",...}`` once ``finalize()`` has built the receipt.

Each line is written with a single ``write`` on a file opened for appending, so a
process crash leaves at most one torn last line. The ``fsync`` policy decides what
survives a power loss (``spec/journal.md``): ``step`` syncs before ``record()`` returns,
``interval`` syncs from a background thread at most every ``fsync_interval_ms``, and
``never`` leaves it to the operating system. ``aer1 recover`` turns a journal into a
receipt (:mod:`aer1._recover`).

A journal that cannot be written (disk full, I/O error) never breaks the observed run:
the error is logged on logger ``aer1``, kept in :attr:`Journal.error`, and journaling
stops (the in-memory receipt is unaffected).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import weakref
from collections.abc import Mapping
from typing import Any

import orjson

from . import _timefmt as timefmt
from ._chain import PROFILE
from .errors import Aer1Error

__all__ = [
    "DEFAULT_FSYNC",
    "DEFAULT_FSYNC_INTERVAL_MS",
    "FSYNC_POLICIES",
    "JOURNAL_TYPE",
    "JOURNAL_VERSION",
    "MAX_FSYNC_INTERVAL_MS",
    "MIN_FSYNC_INTERVAL_MS",
    "Journal",
    "JournalError",
    "durable_sync",
    "hold_writer_lock",
    "journal_header",
    "writer_holds_lock",
]

log = logging.getLogger("aer1")

JOURNAL_TYPE = "aer1-journal"
JOURNAL_VERSION = "1"
#: ``step``: durable when record() returns; ``interval``: synced by a background thread; ``never``: by the OS.
FSYNC_POLICIES = ("step", "interval", "never")
DEFAULT_FSYNC = "interval"
DEFAULT_FSYNC_INTERVAL_MS = 100
MIN_FSYNC_INTERVAL_MS = 1
MAX_FSYNC_INTERVAL_MS = 60_000
_MS_PER_S = 1000
#: How long close() waits for the background sync thread to stop.
_JOIN_TIMEOUT_S = 5.0
_FILE_MODE = 0o644

try:  # macOS: fsync() does not reach the platter; F_FULLFSYNC does.
    import fcntl

    _FULLFSYNC: int | None = getattr(fcntl, "F_FULLFSYNC", None)
except ImportError:  # pragma: no cover - Windows
    _FULLFSYNC = None
    fcntl = None  # type: ignore[assignment]


def hold_writer_lock(fd: int) -> None:
    """Mark the journal as being written: an exclusive advisory ``flock`` held while the writer has it open.

    The operating system drops it when the file is closed or the process ends, however it
    ends (``SIGKILL`` included), so a reader can tell a live run from a dead one
    (:func:`writer_holds_lock`). A lock that cannot be taken changes nothing else.
    """
    if fcntl is not None:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def writer_holds_lock(path: str) -> bool | None:
    """True while some process holds the journal's writer lock, False when none does, None when it cannot be
    told (no ``flock`` here, or the file cannot be opened)."""
    if fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return None
    finally:
        os.close(fd)  # closing drops the shared lock taken just now, if it was
    return False


class JournalError(Aer1Error, OSError):
    """The journal cannot be created (it exists, or its directory is missing or not writable)."""


def durable_sync(fd: int) -> None:
    """Make everything written to ``fd`` durable: F_FULLFSYNC, fdatasync or fsync."""
    if _FULLFSYNC is not None:
        fcntl.fcntl(fd, _FULLFSYNC)
    elif hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:  # pragma: no cover - platforms without fdatasync
        os.fsync(fd)


def _sync_directory(path: str) -> None:
    """Make a new file's directory entry durable (POSIX; a no-op where directories cannot be opened)."""
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - file systems that refuse directory fsync
        pass
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """One ``write`` (the usual case), looping only if the kernel took part of it."""
    written = os.write(fd, data)
    if written == len(data):
        return
    view = memoryview(data)[written:]
    while view:
        view = view[os.write(fd, view):]


def journal_header(
    *,
    workflow_id: str,
    receipt_id: str,
    session_id: str,
    goal: str,
    verify_url: str,
    evidence: bool,
) -> dict[str, Any]:
    """The journal's first line: what recovery needs to rebuild the workflow members."""
    return {
        "type": JOURNAL_TYPE,
        "version": JOURNAL_VERSION,
        "profile": PROFILE,
        "workflow_id": workflow_id,
        "receipt_id": receipt_id,
        "session_id": session_id,
        "goal": goal,
        "verify_url": verify_url,
        "evidence": evidence,
        "created_at": timefmt.format_ns(timefmt.now_ns()),
    }


def _dumps(value: Any, *, sort: bool = True) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS if sort else None)
    except orjson.JSONEncodeError as e:
        raise ValueError(f"journal record is not valid text: {e}") from e


def _sync_loop(ref: weakref.ref[Journal], fd: int, stop: threading.Event, interval_s: float) -> None:
    """Background thread of the ``interval`` policy: sync when something new was written."""
    try:
        while not stop.wait(interval_s):
            journal = ref()
            if journal is None:
                return
            journal._sync_written(fd)
            del journal
    finally:
        os.close(fd)


def _shutdown(fd: int, stop: threading.Event, policy: str) -> None:
    """Finalizer: stop the sync thread, make the journal durable (unless ``never``) and close it."""
    stop.set()
    try:
        if policy != "never":
            durable_sync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class Journal:
    """An append-only journal file fed by a :class:`~aer1._collector.Collector`.

    The collector calls :meth:`write_step` inside its lock (so lines are in seq order)
    and :meth:`sync_step` after releasing it; with policy ``step`` that makes the step
    durable before ``record()`` returns.
    """

    def __init__(self, path: str | os.PathLike[str], header: Mapping[str, Any], *,
                 fsync: str = DEFAULT_FSYNC, fsync_interval_ms: int = DEFAULT_FSYNC_INTERVAL_MS) -> None:
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync must be one of {', '.join(FSYNC_POLICIES)}; got {fsync!r}")
        if (type(fsync_interval_ms) is not int
                or not MIN_FSYNC_INTERVAL_MS <= fsync_interval_ms <= MAX_FSYNC_INTERVAL_MS):
            raise ValueError(f"fsync_interval_ms must be an integer from {MIN_FSYNC_INTERVAL_MS} "
                             f"to {MAX_FSYNC_INTERVAL_MS}; got {fsync_interval_ms!r}")
        self.path = os.fspath(path)
        self.fsync = fsync
        self.fsync_interval_ms = fsync_interval_ms
        #: The first write or sync error; journaling stopped when it happened.
        self.error: OSError | None = None
        self.finished = False
        self._live = True  # neither finished nor failed
        self._step_sync = fsync == "step"
        first = _dumps(dict(header)) + b"\n"
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, _FILE_MODE)
        except FileExistsError as e:
            raise JournalError(f"journal {self.path} already exists: recover it with 'aer1 recover' "
                               "or choose another path") from e
        except OSError as e:
            raise JournalError(f"cannot create journal {self.path}: {e.strerror or e}") from e
        hold_writer_lock(fd)  # before the header: a reader that sees a line sees the lock
        try:
            _write_all(fd, first)
            if fsync != "never":
                durable_sync(fd)
                _sync_directory(self.path)
        except OSError as e:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(self.path)  # ours, and holding no step yet
            raise JournalError(f"cannot write journal {self.path}: {e.strerror or e}") from e
        self._fd = fd
        self._written = 0  # lines written after the header
        self._synced = 0
        self._sync_lock = threading.Lock()
        self._stop = threading.Event()
        self._closer = weakref.finalize(self, _shutdown, fd, self._stop, fsync)
        if fsync == "interval":
            thread = threading.Thread(
                target=_sync_loop,
                args=(weakref.ref(self), os.dup(fd), self._stop, fsync_interval_ms / _MS_PER_S),
                name=f"aer1-journal-sync-{os.path.basename(self.path)}",
                daemon=True,
            )
            self._thread: threading.Thread | None = thread
            thread.start()
        else:
            self._thread = None

    # ---------------------------------------------------------------- writing

    @property
    def active(self) -> bool:
        """True while lines are still being written (not finished, no error)."""
        return self._live

    @property
    def lines_written(self) -> int:
        """Lines written after the header."""
        return self._written

    @property
    def lines_synced(self) -> int:
        """Lines after the header known to be on disk (fsync returned after they were written)."""
        return self._synced

    @property
    def syncing_in_background(self) -> bool:
        """True while the ``interval`` policy's background thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def _fail(self, what: str, error: OSError) -> None:
        self._live = False
        if self.error is None:
            self.error = error
            log.error("aer1: journal %s: %s failed (%s); journaling stopped, the run goes on "
                      "and the in-memory receipt is unaffected", self.path, what, error)

    def _append(self, line: bytes) -> None:
        if not self._live:
            return
        try:
            _write_all(self._fd, line)
        except OSError as e:
            self._fail("write", e)
            return
        self._written += 1

    def write_step(self, receipt_id: str, header_bytes: bytes, content: bytes | None) -> None:
        """Append one step: its hashed members (``header_bytes``, canonical), its id and its content."""
        if not self._live:
            return
        if content is None:
            line = b'{"type":"step","step":{"receipt_id":"%s",%s}\n' % (receipt_id.encode(), header_bytes[1:])
        else:
            line = b'{"type":"step","step":{"receipt_id":"%s",%s,"content":%s}\n' % (
                receipt_id.encode(), header_bytes[1:], content)
        self._append(line)

    def write_agent(self, identity: Mapping[str, Any]) -> None:
        """Append a registered agent's identity."""
        self._append(b'{"type":"agent","agent":%s}\n' % _dumps(dict(identity), sort=False))

    def sync_step(self) -> None:
        """Policy ``step``: make every line written so far durable (called outside the collector lock)."""
        if self._step_sync and self._live:
            self._sync_written(self._fd)

    def _sync_written(self, fd: int) -> None:
        target = self._written
        if target == self._synced or self.error is not None:
            return
        with self._sync_lock:
            if target <= self._synced:
                return
            try:
                durable_sync(fd)
            except OSError as e:
                self._fail("sync", e)
                return
            self._synced = max(self._synced, target)

    def finish(self, receipt: Mapping[str, Any]) -> None:
        """Append the final line (the journal is finalized), make it durable and close the file."""
        if not self.active:
            self.close()
            return
        final: dict[str, Any] = {
            "type": "final",
            "status": receipt["status"],
            "step_count": len(receipt["steps"]),
            "merkle_root": receipt["merkle_root"],
            "chain_head": receipt["chain_head"],
        }
        if "signature" in receipt:
            final["signature"] = receipt["signature"]
        self._append(_dumps(final) + b"\n")
        self.finished = True
        self._live = False
        self.close()

    def close(self) -> None:
        """Stop the sync thread, make the journal durable (unless ``never``) and close the file."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(_JOIN_TIMEOUT_S)
        if not self._closer.alive:
            return
        self._closer.detach()
        try:
            if self.fsync != "never" and self.error is None:
                durable_sync(self._fd)
        except OSError as e:
            self._fail("sync", e)
        finally:
            os.close(self._fd)
