"""The log writer: a transparency log of receipts as a directory of C2SP tiles (spec/log.md).

``DIR/checkpoint`` (the signed checkpoint), ``DIR/tile/...`` (hash tiles and entry
bundles), ``DIR/log.vkey`` (the log's verifier key), ``DIR/log-config.json`` (origin and
where the signing key is: never served), ``DIR/lock`` (held by the one sequencer at a time).

One sequencer at a time holds ``DIR/lock`` (``flock``), so processes on one machine may
append at once; each append is one batch and one new checkpoint. Crash safety: the tiles
and bundles an append adds are written (temporary file, fsync, rename) and their folders
synced before the new checkpoint is written and renamed into place, so a SIGKILL at any
point leaves a checkpoint that describes only what is on disk; the next append starts from
that checkpoint. A tile or bundle a checkpoint covers is never written again (files beyond
the checkpoint are an interrupted append's leftovers and are replaced); the checkpoint's
size never goes down.

API (for ``aer1 log``, ``Collector(log=...)`` and the log server):
    LOG_CONFIG, LOG_VKEY, CHECKPOINT, LOCK
    init_log(dir, origin, key_path) -> vkey        create an empty log (size 0, signed)
    LogDir(dir, key=None)                          an existing log; ``key`` overrides the configured key file
        .origin, .verifier, .signer
        .locked() -> context manager               hold the sequencer lock (blocking)
        .checkpoint() -> (Checkpoint, note bytes)  the current one (read under the lock or not)
        .append(entries) -> Appended               sequence a batch (takes the lock itself)
        .hash_reader() -> TileHashReader           over the current checkpoint's tiles
        .proofs(appended, indexes) -> [TlogProof]  inclusion proofs in ``appended``'s checkpoint
        .proofs_at(note, indexes) -> [TlogProof]   the same in the checkpoint of ``note``
        .replace_checkpoint(note)                  under the lock: the same checkpoint body with more
                                                   signatures (a witness's cosignatures), atomically
    append_receipts(dir, [(path, receipt)], key=None) -> [Logged(path, index, before)]   log parsed
                                                   receipts as one batch (those logged before: not again),
                                                   then write each NAME.tlog-proof beside it; a receipt
                                                   whose hash chain does not verify is refused first
    refuse_unchained(receipt, what)                LogMalformed unless its hash chain verifies
    write_durable(path, data)                      temporary file, fsync, rename, fsync the folder
    prove_receipts(dir, [(path, receipt)]) -> [(path, index)]  NAME.tlog-proof again, against the current
                                                   (e.g. newly cosigned) checkpoint
    ReceiptLog(dir, key=None)                      a collector's log: .opened(...), .closed(receipt),
                                                   .write_proof(receipt_path); failures kept, never raised
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import secrets
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NamedTuple

import orjson

from . import _storage
from ._limits import STORAGE_LOCK_WAIT_SECONDS
from ._outfile import TEMP_FLAGS, replace_file, temp_path
from ._signing import load_private_key
from ._storage import is_url
from ._tlog import (
    EMPTY_ROOT,
    MAX_ENTRY_BYTES,
    MAX_PROOF_BYTES,
    TILE_WIDTH,
    Checkpoint,
    Ed25519Signer,
    Ed25519Verifier,
    TileHashReader,
    TlogProof,
    at,
    check_key_name,
    decode_bundle,
    dir_bundle_reader,
    dir_tile_reader,
    edge_root,
    encode_bundle,
    entries_path,
    format_tlog_proof,
    grow_tiles,
    inclusion_proof,
    leaf_hash,
    open_checkpoint,
    parse_checkpoint,
    parse_note,
    parse_vkey,
    proof_path_for,
    read_file_bounded,
    sign_note,
    tile_path,
)
from ._tlog._entry import entry_for_receipt
from .errors import Aer1Error, LogInvalid, LogMalformed, UsageError

__all__ = [
    "CHECKPOINT",
    "LOCK",
    "LOG_CONFIG",
    "LOG_FORMAT",
    "LOG_VKEY",
    "MAX_QUEUED_BYTES",
    "PENDING",
    "SEQUENCING",
    "Appended",
    "LogDir",
    "ReceiptLog",
    "append_receipts",
    "init_log",
    "prove_receipts",
    "refuse_unchained",
    "write_durable",
]

_logger = logging.getLogger("aer1")

CHECKPOINT = "checkpoint"
LOG_VKEY = "log.vkey"
LOG_CONFIG = "log-config.json"
LOCK = "lock"
#: Batches queued by appenders waiting for the lock (``NAME.entries``) and their answers (``NAME.done``).
PENDING = "pending"
#: What a sequencer integrating queued batches is about to make true, written before its checkpoint.
SEQUENCING = "sequencing.json"
LOG_FORMAT = "aer1-log-v1"
#: Most entries one append takes (bounds the memory of one batch).
MAX_BATCH = 1_000_000
_MAX_CONFIG_BYTES = 64 * 1024
_MAX_CHECKPOINT_BYTES = 1024 * 1024
#: Largest batch an appender queues (a larger one waits for the lock and is sequenced alone).
MAX_QUEUED_BYTES = 64 * 1024 * 1024
_MAX_RECORD_BYTES = 64 * 1024 * 1024
_QUEUED, _DONE = ".entries", ".done"
#: Answers and leftovers in ``pending/`` older than this are removed (their appender is gone).
_STALE_S = 3600.0
#: Seconds between a writer's first tries at a lock in storage, and at most between later ones.
_LOCK_FIRST_DELAY = 0.02
_LOCK_MAX_DELAY = 1.0


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durable(path: Path | str, data: bytes, *, sync_dir: bool = True) -> None:
    """Write ``path`` whole: a temporary file beside it, fsync, rename over it (and fsync the folder).

    A URL is an object in storage, written whole by one request.
    """
    if is_url(path):
        _storage.write(str(path), data)
        return
    path = Path(path)
    tmp = temp_path(str(path))
    fd = os.open(tmp, TEMP_FLAGS, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if sync_dir:
        _fsync_dir(path.parent)


def init_log(directory: str | os.PathLike[str], origin: str, key_path: str) -> str:
    """Create an empty log in ``directory`` (made if missing, else it must be empty); returns its vkey."""
    check_key_name(origin)
    root = _root(directory)
    if isinstance(root, Path):
        root.mkdir(parents=True, exist_ok=True)
        if any(root.iterdir()):
            raise UsageError(f"{root}: not empty (a log is created in a new or empty folder)")
    elif not _storage.conditional(root):
        raise UsageError(f"{root}: a log in storage needs conditional writes, which only s3:// gives here")
    elif _storage.find_any(root):
        raise UsageError(f"{root}: not empty (a log is created under a new or empty prefix)")
    signer = Ed25519Signer(origin, load_private_key(key_path))
    config = {"format": LOG_FORMAT, "origin": origin, "key": os.path.abspath(key_path)}
    vkey = signer.verifier().vkey
    note = sign_note(Checkpoint(origin, 0, EMPTY_ROOT).text(), [signer])  # all made before anything is written
    write_durable(at(root, LOG_CONFIG), orjson.dumps(config, option=orjson.OPT_INDENT_2) + b"\n")
    write_durable(at(root, LOG_VKEY), vkey.encode("utf-8") + b"\n")  # a key name (the origin) is UTF-8
    if isinstance(root, Path):
        write_durable(root / CHECKPOINT, note)
    else:  # created only if absent: two inits of one prefix cannot both win
        try:
            _storage.write(at_url(root, CHECKPOINT), note, create=True)
        except _storage.StorageConflict as e:
            raise UsageError(f"{root}: another writer created a log here first") from e
    return vkey


def _root(directory: str | os.PathLike[str]) -> Path | str:
    """A log's root: a local folder (Path), or a storage prefix (its URL, no trailing slash)."""
    if is_url(directory):
        _storage.require_place(str(directory))  # before the slashes go: "s3://" is no prefix
        return str(directory).rstrip("/")
    return Path(directory)


def at_url(root: str, name: str) -> str:
    """The URL of ``name`` under the storage prefix ``root``."""
    return str(at(root, name))


@dataclass(frozen=True)
class Appended:
    """What one append did: the old and new tree sizes, the first new index, the new checkpoint's note."""

    old_size: int
    size: int
    first: int
    note: bytes

    def index(self, k: int) -> int:
        """The log index of the batch's ``k``-th entry."""
        return self.first + k


class LogDir:
    """An existing log directory, for appending and reading its own tiles."""

    def __init__(self, directory: str | os.PathLike[str], key: str | None = None) -> None:
        self.root = _root(directory)
        try:
            raw = read_file_bounded(at(self.root, LOG_CONFIG), _MAX_CONFIG_BYTES)
            config = orjson.loads(raw)
        except FileNotFoundError as e:
            raise LogMalformed(f"{self.root}: not a log (no {LOG_CONFIG}; create one with `aer1 log init`)") from e
        except orjson.JSONDecodeError as e:
            raise LogMalformed(f"{at(self.root, LOG_CONFIG)}: not JSON: {e}") from e
        if not isinstance(config, dict) or config.get("format") != LOG_FORMAT:
            raise LogMalformed(f"{at(self.root, LOG_CONFIG)}: want format {LOG_FORMAT!r}")
        origin, key_file = config.get("origin"), key or config.get("key")
        if not isinstance(origin, str):
            raise LogMalformed(f"{at(self.root, LOG_CONFIG)}: no origin named")
        check_key_name(origin)
        if not isinstance(key_file, str):
            raise LogMalformed(f"{at(self.root, LOG_CONFIG)}: no signing key file named")
        self.origin: str = origin
        self._key_file = key_file
        self._signer: Ed25519Signer | None = None
        try:
            self.verifier = Ed25519Verifier(origin, _vkey_public(at(self.root, LOG_VKEY), origin))
        except FileNotFoundError as e:
            raise LogMalformed(f"{self.root}: no {LOG_VKEY}") from e

    @property
    def signer(self) -> Ed25519Signer:
        """The log's signer (the key is loaded on first use: reading a log never needs it)."""
        if self._signer is None:
            signer = Ed25519Signer(self.origin, load_private_key(self._key_file))
            if signer.key_id != self.verifier.key_id or signer.public != self.verifier.public:
                raise UsageError(f"signing key {self._key_file} is not the key of {at(self.root, LOG_VKEY)}")
            self._signer = signer
        return self._signer

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the sequencer lock of this log (blocks until it is free)."""
        if isinstance(self.root, str):
            with object_lock(at_url(self.root, LOCK)):
                yield
            return
        fd = self._lock_fd()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._finish_interrupted()
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _version(self) -> str | None:
        """The checkpoint object's ETag, read before the checkpoint itself (None for a folder).

        Replacing the checkpoint only if it still has this tag means a checkpoint another
        writer put after this one was read is never overwritten.
        """
        if isinstance(self.root, Path):
            return None
        tag = _storage.etag(at_url(self.root, CHECKPOINT))
        if tag is None:
            raise LogMalformed(f"{self.root}: no {CHECKPOINT}")
        return tag

    def _put_checkpoint(self, note: bytes, version: str | None) -> None:
        """Write the checkpoint: in storage, only over the version read (else LogInvalid, nothing replaced)."""
        if isinstance(self.root, Path):
            write_durable(self.root / CHECKPOINT, note)
            return
        try:
            _storage.write(at_url(self.root, CHECKPOINT), note, if_match=version)
        except _storage.StorageConflict as e:
            raise LogInvalid(f"{self.root}: the checkpoint changed while this writer held the lock (another "
                             "writer without it?): this append's checkpoint was not written; append again") from e

    def checkpoint(self) -> tuple[Checkpoint, bytes]:
        """The current checkpoint, its log signature checked, and its note's bytes."""
        try:
            note = read_file_bounded(at(self.root, CHECKPOINT), _MAX_CHECKPOINT_BYTES)
        except FileNotFoundError as e:
            raise LogMalformed(f"{self.root}: no {CHECKPOINT}") from e
        cp, _, _, _ = open_checkpoint(note, [self.verifier], origin=self.origin)
        return cp, note

    def hash_reader(self, cp: Checkpoint | None = None) -> TileHashReader:
        """A checked hash source over the tiles of ``cp`` (default: the current checkpoint)."""
        cp = cp or self.checkpoint()[0]
        return TileHashReader(cp.size, cp.root, dir_tile_reader(self.root))

    def append(self, entries: Sequence[bytes]) -> Appended:
        """Sequence ``entries`` as one batch, durable when this returns.

        When another process holds the lock, the batch is queued in ``DIR/pending/`` first;
        whichever appender holds the lock next integrates every queued batch in one
        checkpoint (group commit), and each waiting appender finds its indexes there.
        """
        if not entries:
            raise UsageError("nothing to append")
        if len(entries) > MAX_BATCH:
            raise UsageError(f"got {len(entries)} entries, want at most {MAX_BATCH} per append")
        for i, e in enumerate(entries):
            if len(e) > MAX_ENTRY_BYTES:
                raise LogMalformed(f"entry {i}: got {len(e)} bytes, want at most {MAX_ENTRY_BYTES}")
        signer = self.signer  # a wrong key is refused before anything is written
        if isinstance(self.root, str):
            return self._append_in_storage(signer, entries)
        fd = self._lock_fd()
        try:
            queued = None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # a sequencer is at work: queue the batch for the next one, then wait
                if sum(2 + len(e) for e in entries) <= MAX_QUEUED_BYTES:
                    queued = self._queue(entries)
                fcntl.flock(fd, fcntl.LOCK_EX)
            self._finish_interrupted()
            if queued is not None:
                done = self._take_done(queued)
                if done is not None:  # another appender integrated it
                    return done
                if not (self._folder / PENDING / f"{queued}{_QUEUED}").exists():
                    raise LogInvalid(f"{self.root}: the queued batch {queued} was neither integrated nor kept")
            return self._sequence(signer, None if queued is not None else entries, queued)
        finally:
            os.close(fd)  # closing releases the lock

    def _append_in_storage(self, signer: Ed25519Signer, entries: Sequence[bytes]) -> Appended:
        """Append in object storage: under the lock object, the checkpoint replaced only if unchanged."""
        with self.locked():
            version = self._version()
            cp, _ = self.checkpoint()
            reader = self.hash_reader(cp)
            size = cp.size + len(entries)
            tiles, edge = grow_tiles(cp.size, reader.edge, [leaf_hash(e) for e in entries])
            files = {at(self.root, tile_path(level, index, width)): data for level, index, width, data in tiles}
            files.update(self._bundles(cp.size, entries))
            for path, data in files.items():
                if isinstance(path, Path):
                    path.parent.mkdir(parents=True, exist_ok=True)
                write_durable(path, data, sync_dir=False)
            for folder in {p.parent for p in files if isinstance(p, Path)}:  # durable before the checkpoint names it
                _fsync_dir(folder)
            note = sign_note(Checkpoint(self.origin, size, edge_root(size, edge)).text(), [signer])
            self._put_checkpoint(note, version)
        return Appended(cp.size, size, cp.size, note)

    @property
    def _folder(self) -> Path:
        """The log's local folder (queueing and the lock file exist only for a log on disk)."""
        if not isinstance(self.root, Path):
            raise UsageError(f"{self.root}: a log in storage has no local folder")
        return self.root

    def _lock_fd(self) -> int:
        return os.open(self._folder / LOCK, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)

    def _queue(self, entries: Sequence[bytes]) -> str:
        """Write ``entries`` durably to ``pending/NAME.entries``; returns NAME (sorts by time of queueing)."""
        folder = self._folder / PENDING
        folder.mkdir(exist_ok=True)
        name = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}"
        # Its bytes are synced (a torn file must never read as entries); its name need not be: until an answer
        # it is not acknowledged, and an appender gone with a crash waits for none.
        write_durable(folder / f"{name}{_QUEUED}", b"".join(len(e).to_bytes(2, "big") + e for e in entries),
                      sync_dir=False)
        return name

    def _queued(self, first: str | None) -> list[tuple[str, list[bytes]]]:
        """The queued batches, oldest first (``first`` ahead of all), up to MAX_BATCH entries in all."""
        folder = self._folder / PENDING
        if not folder.is_dir():
            return []
        names = sorted(p.name[:-len(_QUEUED)] for p in folder.iterdir() if p.name.endswith(_QUEUED))
        if first is not None and first in names:
            names.remove(first)
            names.insert(0, first)
        out: list[tuple[str, list[bytes]]] = []
        total = 0
        for name in names:
            try:
                batch = _decode_queued(read_file_bounded(folder / f"{name}{_QUEUED}", MAX_QUEUED_BYTES))
            except (OSError, LogMalformed) as e:  # never integrated, never blocking the others
                _logger.warning("aer1: log %s: queued batch %s refused: %s", self.root, name, e)
                with contextlib.suppress(OSError):
                    os.replace(folder / f"{name}{_QUEUED}", folder / f"{name}.refused")
                continue
            if out and total + len(batch) > MAX_BATCH:
                break
            out.append((name, batch))
            total += len(batch)
        return out

    def _sequence(self, signer: Ed25519Signer, own: Sequence[bytes] | None, queued: str | None) -> Appended:
        """Under the lock: ``own`` entries and the queued batches as one batch, one new checkpoint."""
        cp, _ = self.checkpoint()
        reader = self.hash_reader(cp)
        batches = self._queued(queued)
        entries: list[bytes] = list(own or ())
        placed: list[tuple[str, int, int]] = []  # (queued name, first index, count)
        for name, batch in batches:
            placed.append((name, cp.size + len(entries), len(batch)))
            entries.extend(batch)
        size = cp.size + len(entries)
        tiles, edge = grow_tiles(cp.size, reader.edge, [leaf_hash(e) for e in entries])
        files = {self._folder / tile_path(level, index, width): data for level, index, width, data in tiles}
        files.update((Path(p), data) for p, data in self._bundles(cp.size, entries).items())
        for path, data in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_durable(path, data, sync_dir=False)
        for folder in {p.parent for p in files}:  # every new file durable before the checkpoint names it
            _fsync_dir(folder)
        note = sign_note(Checkpoint(self.origin, size, edge_root(size, edge)).text(), [signer])
        record = {"old_size": cp.size, "size": size, "note": note.decode("utf-8"),
                  "batches": [list(p) for p in placed]}
        if placed:  # what the queued batches became, durable before the checkpoint that makes it true
            write_durable(self._folder / SEQUENCING, orjson.dumps(record))
        write_durable(self._folder / CHECKPOINT, note)
        if placed:
            self._tell_queued(record)
        self._sweep()
        if queued is not None:
            done = self._take_done(queued)
            if done is None:
                raise LogInvalid(f"{self.root}: the queued batch {queued} was not integrated")
            return done
        return Appended(cp.size, size, cp.size, note)

    def _tell_queued(self, record: dict[str, Any]) -> None:
        """Each queued batch's place (``pending/NAME.done``), its queue file removed, then the record.

        The answers are not synced: they are for appenders that wait now, and a machine crash ends those
        too. The queue files' removal is synced before the record goes: a record lost with a crash while
        its queue files came back would have them integrated twice. The record's removal is not synced: a
        record that comes back makes the next sequencer answer again, which changes nothing.
        """
        folder = self._folder / PENDING
        for name, first, count in record["batches"]:
            done = {"old_size": record["old_size"], "size": record["size"], "first": first, "count": count,
                    "note": record["note"]}
            replace_file(folder / f"{name}{_DONE}", functools.partial(_write_bytes, orjson.dumps(done)))
            with contextlib.suppress(FileNotFoundError):
                os.unlink(folder / f"{name}{_QUEUED}")
        _fsync_dir(folder)
        os.unlink(self._folder / SEQUENCING)

    def _finish_interrupted(self) -> None:
        """Under the lock: a sequencer killed between its record and its answers is finished or undone."""
        try:
            record = orjson.loads(read_file_bounded(self._folder / SEQUENCING, _MAX_RECORD_BYTES))
        except FileNotFoundError:
            return
        except (orjson.JSONDecodeError, LogMalformed) as e:
            raise LogMalformed(f"{self._folder / SEQUENCING}: unreadable: {e}") from e
        _check_record(record, self._folder / SEQUENCING, ("old_size", "size"), batches=True)
        cp, _ = self.checkpoint()
        if cp.size == record.get("size"):  # its checkpoint was written: tell the queued batches
            self._tell_queued(record)
        elif cp.size == record.get("old_size"):  # killed before its checkpoint: the batches stay queued
            os.unlink(self._folder / SEQUENCING)
            _fsync_dir(self._folder)
        else:
            raise LogInvalid(f"{self._folder / SEQUENCING}: names sizes {record.get('old_size')} -> "
                             f"{record.get('size')}, but the checkpoint's size is {cp.size}")

    def _take_done(self, name: str) -> Appended | None:
        """The answer to queued batch ``name`` (its file removed), or None when it was not integrated yet."""
        path = self._folder / PENDING / f"{name}{_DONE}"
        try:
            done = orjson.loads(read_file_bounded(path, _MAX_RECORD_BYTES))
        except FileNotFoundError:
            return None
        except (orjson.JSONDecodeError, LogMalformed) as e:
            raise LogMalformed(f"{path}: unreadable: {e}") from e
        _check_record(done, path, ("old_size", "size", "first", "count"))
        os.unlink(path)
        return Appended(done["old_size"], done["size"], done["first"], done["note"].encode("utf-8"))

    def _sweep(self) -> None:
        """Remove answers and leftovers in ``pending/`` older than an hour (their appender is gone)."""
        folder = self._folder / PENDING
        if not folder.is_dir():
            return
        cutoff = time.time() - _STALE_S
        for p in folder.iterdir():
            if not p.name.endswith(_QUEUED):
                with contextlib.suppress(OSError):
                    if p.stat().st_mtime < cutoff:
                        p.unlink()

    def _bundles(self, size: int, entries: Sequence[bytes]) -> dict[Path | str, bytes]:
        """The entry bundles an append writes: the partial one extended, then new ones."""
        first = size // TILE_WIDTH
        have = size % TILE_WIDTH
        pending = list(entries)
        if have:
            pending = decode_bundle(dir_bundle_reader(self.root)(first, have), have) + pending
        return {at(self.root, entries_path(first + k // TILE_WIDTH, len(pending[k:k + TILE_WIDTH]))):
                encode_bundle(pending[k:k + TILE_WIDTH]) for k in range(0, len(pending), TILE_WIDTH)}

    def proofs(self, appended: Appended, indexes: Sequence[int]) -> list[TlogProof]:
        """Inclusion proofs of ``indexes`` in the checkpoint ``appended`` wrote (read back from the tiles)."""
        return self.proofs_at(appended.note, indexes)

    def proofs_at(self, note: bytes, indexes: Sequence[int]) -> list[TlogProof]:
        """Inclusion proofs of ``indexes`` in the checkpoint whose note is ``note`` (read back from the tiles)."""
        cp = parse_checkpoint(parse_note(note).text)
        reader = TileHashReader(cp.size, cp.root, dir_tile_reader(self.root))
        return [TlogProof(i, tuple(inclusion_proof(i, cp.size, reader.hash_at)), note) for i in indexes]

    def replace_checkpoint(self, note: bytes) -> None:
        """Replace the checkpoint with ``note``: the same body, the log's signature, more signatures.

        Call it holding :meth:`locked`. For gathering witness cosignatures: the tree is not
        changed, so nothing but the signature lines may differ.
        """
        version = self._version()
        _, current = self.checkpoint()
        if parse_note(note).text != parse_note(current).text:
            raise LogInvalid("new checkpoint: got another body than the current checkpoint's, want the same")
        open_checkpoint(note, [self.verifier], origin=self.origin)
        self._put_checkpoint(note, version)


@contextlib.contextmanager
def object_lock(url: str) -> Iterator[None]:
    """Hold a lock in storage: the object ``url``, created only if absent, removed when done.

    A writer that finds it waits (backing off) up to STORAGE_LOCK_WAIT_SECONDS, then gives up
    with a UsageError naming it: a writer that crashed holding it leaves it, and it is
    removed by hand once no writer runs (spec/storage.md). Removal is conditional on the
    lock still being this writer's own, so it never removes another writer's lock.
    """
    token = secrets.token_hex(16).encode("ascii")
    deadline = time.monotonic() + STORAGE_LOCK_WAIT_SECONDS
    delay = _LOCK_FIRST_DELAY
    while True:
        try:
            mine = _storage.write(url, token, create=True)
            break
        except _storage.StorageConflict:
            if time.monotonic() >= deadline:
                raise UsageError(f"{url}: held by another writer for {STORAGE_LOCK_WAIT_SECONDS:g} s (one that "
                                 "crashed leaves it: remove it when no writer runs)") from None
            time.sleep(delay * (0.5 + secrets.randbelow(1000) / 1000))
            delay = min(delay * 2, _LOCK_MAX_DELAY)
    try:
        yield
    finally:
        _storage.delete(url, if_match=mine)


def _check_record(record: Any, path: Path, sizes: tuple[str, ...], batches: bool = False) -> None:
    """A ``sequencing.json`` (``batches``) or ``pending/NAME.done`` as the writer makes them, else LogMalformed.

    Its batch names become paths under ``pending/``: each must be a plain file name, so that a
    record edited by hand never makes the writer write or remove a file outside the log."""
    def bad(what: str) -> LogMalformed:
        return LogMalformed(f"{path}: not a record of the log's writer: {what}")

    if not isinstance(record, dict):
        raise bad(f"a JSON {type(record).__name__}, not an object")
    for name in sizes:
        value = record.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise bad(f"{name}: got {str(value)[:40]!r}, want a size")
    if not isinstance(record.get("note"), str):
        raise bad("note: want the checkpoint's text")
    if not batches:
        return
    placed = record.get("batches")
    if not isinstance(placed, list):
        raise bad("batches: want a list")
    for batch in placed:
        if not (isinstance(batch, list) and len(batch) == 3 and isinstance(batch[0], str)
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in batch[1:])):
            raise bad(f"batches: got {str(batch)[:80]!r}, want [NAME, first index, count]")
        name = batch[0]
        if name in ("", ".", "..") or os.path.basename(name) != name or "\x00" in name:
            raise bad(f"batches: got the name {name[:80]!r}, want a file name in {PENDING}/")


def _write_bytes(data: bytes, f: IO[bytes]) -> None:
    f.write(data)


def _decode_queued(data: bytes) -> list[bytes]:
    """The entries of a queue file: each a big-endian uint16 length, then its bytes."""
    out, pos = [], 0
    while pos < len(data):
        if pos + 2 > len(data):
            raise LogMalformed("queued batch: cut inside a length")
        n = int.from_bytes(data[pos:pos + 2], "big")
        if pos + 2 + n > len(data):
            raise LogMalformed("queued batch: cut inside an entry")
        out.append(data[pos + 2:pos + 2 + n])
        pos += 2 + n
    if not out:
        raise LogMalformed("queued batch: empty")
    return out


def _vkey_public(path: Path | str, origin: str) -> bytes:
    text = read_file_bounded(path, 8192).decode("utf-8", "replace").strip()
    v = parse_vkey(text)
    if not isinstance(v, Ed25519Verifier) or v.name != origin:
        raise LogMalformed(f"{path}: want the Ed25519 verifier key of {origin!r}")
    return v.public


class Logged(NamedTuple):
    """One receipt of an append: its path, its entry's index, and whether the log held it already."""

    path: str
    log_index: int
    before: bool = False


def append_receipts(directory: str | os.PathLike[str], receipts: Sequence[tuple[str, dict[str, Any]]],
                    key: str | None = None) -> list[Logged]:
    """Log each (path, parsed receipt) as one batch, then write ``NAME.tlog-proof`` beside each.

    A receipt whose proof beside it already names its entry in this log is not logged again
    (running the same append twice adds nothing), nor is a receipt named twice in one batch;
    every receipt gets its proof against the new checkpoint. The entries are durable in the
    log before any proof is written; a proof is written whole (temporary file, rename).
    """
    log = LogDir(directory, key)
    entries = [entry_for_receipt(r).encode() for _, r in receipts]
    for path, r in receipts:
        refuse_unchained(r, path)
    _refuse_shared_proofs([path for path, _ in receipts], entries, "nothing was logged")
    log.signer  # noqa: B018 - a wrong or missing key is refused even when every receipt was logged before
    for path, _ in receipts:
        _refuse_unwritable_proof(proof_path_for(path))
    cp, note = log.checkpoint()
    reader = log.hash_reader(cp)
    index: dict[bytes, int] = {}
    for (path, _), entry in zip(receipts, entries, strict=True):
        found = _index_by_proof(log, reader, path, entry)
        if found is not None:
            index.setdefault(entry, found)
    before = set(index)
    new = list(dict.fromkeys(e for e in entries if e not in before))
    if new:
        done = log.append(new)
        index.update((e, done.index(k)) for k, e in enumerate(new))
        note = done.note
    indexes = [index[e] for e in entries]
    for (path, _), proof in zip(receipts, log.proofs_at(note, indexes), strict=True):
        try:
            write_durable(proof_path_for(path), format_tlog_proof(proof))
        except OSError as e:  # the entries are in the log already: say so, and how to get the proofs
            raise OSError(e.errno, f"{e.strerror or e}; the batch is logged (entries {min(indexes)} to "
                          f"{max(indexes)}): `aer1 log prove` writes the proofs again", proof_path_for(path)) from e
    return [Logged(path, i, e in before) for (path, _), i, e in zip(receipts, indexes, entries, strict=True)]


def refuse_unchained(receipt: Mapping[str, Any], what: str) -> None:
    """Refuse (LogMalformed) a receipt whose members, sequence, ``merkle_root`` or hash chain do not verify.

    The entry binds the receipt through ``chain_head`` and states its ``merkle_root``; when the
    chain does not verify (a step, a workflow member or ``chain_head`` changed after the run)
    the entry binds nothing, the verifier's log check cannot pass for it, and an append-only
    log would keep it for ever. So such a receipt is refused before anything is written,
    naming ``what`` and the first failure of checks 2 to 5, those that need nothing but the
    receipt. The signature is not checked here: the entry names the key the receipt names,
    and whether that key signed and is trusted is the verifier's to say (checks 6 and 10).
    """
    from .verifier import FAIL, verify_receipt

    report = verify_receipt(receipt)  # the one driver; only checks 2 to 5 are read
    failed = next((c for c in report.checks if 2 <= c.number <= 5 and c.status == FAIL and c.failures), None)
    if failed is None:
        return
    reason = failed.failures[0].reason
    if failed.number == 2:
        raise LogMalformed(f"{what} is not a well-formed receipt: {reason}: nothing was logged")
    raise LogMalformed(f"{what}: its hash chain does not verify ({reason}): its entry would bind nothing; "
                       "nothing was logged")


def _refuse_shared_proofs(paths: Sequence[str], entries: Sequence[bytes], nothing: str) -> None:
    """Two receipts of one batch whose ``NAME.tlog-proof`` is one file (``x.json`` and ``x``, or one path
    spelt two ways) are refused (UsageError) unless they are the same receipt: else the second proof
    replaces the first, and the first receipt's log check fails though the command said it was logged."""
    first: dict[str, tuple[str, bytes]] = {}
    for path, entry in zip(paths, entries, strict=True):
        proof = proof_path_for(path)
        key = proof if is_url(proof) else os.path.realpath(proof)
        seen = first.setdefault(key, (path, entry))
        if seen[1] != entry:
            raise UsageError(f"{seen[0]} and {path} are two receipts whose proof would be one file, {proof}: "
                             f"rename one; {nothing}")


def _refuse_unwritable_proof(proof: str) -> None:
    """A local ``NAME.tlog-proof`` that exists but is not a regular file is refused before anything is logged
    (else the receipt is logged, its proof cannot be written, and every retry logs it again)."""
    if is_url(proof):
        return
    try:
        mode = os.lstat(proof).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise UsageError(f"{proof}: cannot be written: {e.strerror or e}") from e
    if not stat.S_ISREG(mode):
        raise UsageError(f"{proof}: exists and is not a regular file: nothing was logged")


def _index_by_proof(log: LogDir, reader: TileHashReader, path: str, entry: bytes) -> int | None:
    """The index of ``entry`` in ``reader``'s tree when the proof beside ``path`` names it there; else None."""
    from ._tlog import parse_tlog_proof

    try:
        index = parse_tlog_proof(read_file_bounded(proof_path_for(path), MAX_PROOF_BYTES)).index
        if index < reader.size and _entry_at(log, reader, index) == entry:
            return index
    except (OSError, LogMalformed):
        pass
    return None


def _entry_at(log: LogDir, reader: TileHashReader, index: int) -> bytes:
    """The entry at ``index``, checked against the tiles of ``reader``'s tree."""
    from ._tlog import check_bundle

    t = index // TILE_WIDTH
    width = min(TILE_WIDTH, reader.size - t * TILE_WIDTH)
    return check_bundle(dir_bundle_reader(log.root)(t, width), reader.leaf_hashes(t))[index % TILE_WIDTH]


def prove_receipts(directory: str | os.PathLike[str], receipts: Sequence[tuple[str, dict[str, Any]]]
                   ) -> list[tuple[str, int]]:
    """Write each receipt's ``NAME.tlog-proof`` again, against the log's current (perhaps cosigned) checkpoint.

    The entry's index comes from the proof already beside the receipt when it still names
    the receipt's entry, else from a scan of the log. A receipt the log does not hold is
    refused (LogInvalid), and no proof is written for it.
    """
    log = LogDir(directory)
    cp, note = log.checkpoint()
    reader = log.hash_reader(cp)
    entry_of = {path: entry_for_receipt(r).encode() for path, r in receipts}
    _refuse_shared_proofs(list(entry_of), list(entry_of.values()), "no proof was written")
    found: dict[bytes, int] = {}  # entry -> its index (a receipt named twice is looked for once)
    for path, entry in entry_of.items():
        if entry not in found:
            index = _index_by_proof(log, reader, path, entry)
            if index is not None:
                found[entry] = index
    left = {e: p for p, e in entry_of.items() if e not in found}
    for t in range(-(-cp.size // TILE_WIDTH)) if left else ():
        from ._tlog import check_bundle

        width = min(TILE_WIDTH, cp.size - t * TILE_WIDTH)
        for k, entry in enumerate(check_bundle(dir_bundle_reader(log.root)(t, width), reader.leaf_hashes(t))):
            if left.pop(entry, None) is not None:
                found[entry] = t * TILE_WIDTH + k
        if not left:
            break
    if left:
        raise LogInvalid(f"{next(iter(left.values()))}: its entry is not in the log {log.root} (size {cp.size})")
    out = []
    for path, _ in receipts:
        index = found[entry_of[path]]
        proof = TlogProof(index, tuple(inclusion_proof(index, cp.size, reader.hash_at)), note)
        write_durable(proof_path_for(path), format_tlog_proof(proof))
        out.append((path, index))
    return out


class _ProofUnavailable(Aer1Error):
    """The entry was appended but its proof could not be read back (kept in the log's errors)."""


class ReceiptLog:
    """A collector's log (``Collector(log=DIR)``): the run's opened entry, then its receipt at finalize.

    A failure to log never breaks the run and is never silent: it is logged as a warning,
    kept in :attr:`errors`, and (for the opened entry, which comes before the receipt is
    closed) counted by the collector as a recording failure.
    """

    def __init__(self, directory: str | os.PathLike[str], key: str | None = None) -> None:
        self.directory = os.fspath(directory)
        self._key = key
        self.errors: list[str] = []
        self.proof: bytes | None = None
        self.index: int | None = None

    @property
    def _where(self) -> str:
        """The log, as failures name it."""
        return self.directory

    def _log(self, entry: bytes, proof: bool = True) -> tuple[int, bytes | None]:
        """Append one entry: its index and (with ``proof``) its tlog-proof. Raises on any failure."""
        log = LogDir(self.directory, self._key)
        appended = log.append([entry])
        if not proof:
            return appended.first, None
        try:
            return appended.first, format_tlog_proof(log.proofs(appended, [appended.first])[0])
        except Exception as e:  # the entry is logged; only its proof could not be read back
            raise _ProofUnavailable(f"logged, but its proof could not be built: {type(e).__name__}: {e}") from e

    def _append(self, entry: bytes, proof: bool = True) -> tuple[int, bytes | None] | None:
        """:meth:`_log`, with a failure kept in :attr:`errors` and logged, never raised."""
        try:
            return self._log(entry, proof)
        except Exception as e:  # logging must never break the run
            self.errors.append(f"{type(e).__name__}: {e}")
            _logger.warning("aer1: could not append to the log %s: %s", self._where, e)
            return None

    def opened(self, workflow_id: str, receipt_id: str, started_at: str) -> bool:
        """Log that the run started; False (and the error kept) when it could not be logged."""
        from ._tlog._entry import opened_entry

        return self._append(opened_entry(workflow_id, receipt_id, started_at).encode(), proof=False) is not None

    def closed(self, receipt: dict[str, Any]) -> bool:
        """Log the finished receipt and keep its proof for :meth:`write_proof`."""
        try:
            entry = entry_for_receipt(receipt).encode()
        except LogMalformed as e:
            self.errors.append(str(e))
            _logger.warning("aer1: the receipt cannot be logged: %s", e)
            return False
        done = self._append(entry)
        if done is None:
            return False
        self.index, self.proof = done
        return True

    def write_proof(self, receipt_path: str) -> str | None:
        """Write the kept proof beside the saved receipt (``NAME.tlog-proof``); its path, or None."""
        if self.proof is None:
            return None
        target = proof_path_for(receipt_path)
        try:
            write_durable(target, self.proof)
        except OSError as e:
            self.errors.append(f"{target}: {e.strerror or e}")
            _logger.warning("aer1: could not write %s: %s", target, e.strerror or e)
            return None
        return target
