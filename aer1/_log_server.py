"""``aer1 log serve``: a log's files served read-only over HTTP, and entries taken in through a bounded queue.

GET (c2sp.org/tlog-tiles): ``/checkpoint`` (``text/plain; charset=utf-8``, not cached),
``/tile/<L>/<N>[.p/<W>]`` and ``/tile/entries/<N>[.p/<W>]`` (``application/octet-stream``;
a full tile or bundle is immutable and cached for a year, a partial one for an hour).
Only paths in the canonical tile form are served, read through the log's own tile
readers; every other path is 404, so no path reaches outside the log.

POST ``/add``: one receipt (``application/json``) or one log entry
(``application/octet-stream``). The entry joins a queue of at most ``queue_size``
(full: 503 with ``Retry-After``); one sequencer thread appends the queue in batches with
the log's own writer, which takes the log's lock, so ``aer1 log append`` in other
processes stays safe beside it. The answer comes once a checkpoint includes the entry:
200 with the entry's offline proof (c2sp.org/tlog-proof@v1, its ``index`` line gives the
index). If that takes longer than ``answer_timeout`` seconds the answer is 503 when the
entry was never taken from the queue (it is not in the log; send it again) or 504 when
it was being appended (it may be in the log).
"""

from __future__ import annotations

import argparse
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Generic, TypeVar

from ._limits import MAX_RECEIPT_POST_BYTES
from .errors import LogInvalid, LogMalformed, UsageError
from .verifier._output import CliError
from .verifier._storage_cli import add_storage_argument, use_storage_options

if TYPE_CHECKING:  # http.server is loaded when a server starts, not for every `aer1 log` command
    from ._httpserve import BoundedHandler
    from ._logdir import LogDir
    from ._tlog._note import Verifier

__all__ = [
    "DEFAULT_ANSWER_TIMEOUT_S",
    "DEFAULT_BATCH_MAX",
    "DEFAULT_BATCH_WAIT_S",
    "DEFAULT_QUEUE_SIZE",
    "PROOF_CONTENT_TYPE",
    "Sequencer",
    "add_serve_arguments",
    "batch_appender",
    "log_handler",
]

#: Most entries waiting to be appended; one more is answered 503.
DEFAULT_QUEUE_SIZE = 32
#: Most entries appended in one batch (one checkpoint).
DEFAULT_BATCH_MAX = 256
#: Longest the sequencer waits for more entries before appending a batch (seconds). 0: a batch is what
#: is queued when the writer is free (entries arriving while it writes form the next one).
DEFAULT_BATCH_WAIT_S = 0.0
#: Longest a POST waits for its entry to be in a checkpoint (seconds).
DEFAULT_ANSWER_TIMEOUT_S = 30.0
#: Largest receipt taken by POST (bytes); a larger one is logged by sending its entry instead.
#: The content type of the 200 answer to a POST: an offline inclusion proof.
PROOF_CONTENT_TYPE = "text/plain; charset=utf-8"
_FULL_CACHE = "public, max-age=31536000, immutable"
_PARTIAL_CACHE = "public, max-age=3600"
_OCTETS = "application/octet-stream"
_TEXT = "text/plain; charset=utf-8"
_DEFAULT_LISTEN = "127.0.0.1:8481"

_log = logging.getLogger("aer1.log.serve")

#: What the writer gives back for one appended entry (the log server's: the entry's offline proof).
R = TypeVar("R")
#: Appends a batch of entries with the log's writer, durably: one result per entry, in order.
AppendBatch = Callable[[Sequence[bytes]], list[R]]


@dataclass
class _Pending(Generic[R]):
    """One entry waiting for its index: the request's thread waits on ``done``."""

    entry: bytes
    done: threading.Event = field(default_factory=threading.Event)
    result: R | None = None
    error: str | None = None
    taken: bool = False
    cancelled: bool = False


class Sequencer(Generic[R]):
    """The one thread that appends queued entries in batches; requests wait for their entry's index."""

    def __init__(self, append: AppendBatch[R], *, queue_size: int = DEFAULT_QUEUE_SIZE,
                 batch_max: int = DEFAULT_BATCH_MAX, batch_wait: float = DEFAULT_BATCH_WAIT_S) -> None:
        if queue_size < 1 or batch_max < 1 or batch_wait < 0:
            raise ValueError("queue_size and batch_max must be at least 1, batch_wait not negative")
        self._append = append
        self._queue: queue.Queue[_Pending[R]] = queue.Queue(maxsize=queue_size)
        self._batch_max = batch_max
        self._batch_wait = batch_wait
        self._state = threading.Lock()  # guards taken/cancelled, so a timed-out request knows which it was
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="aer1-log-sequencer", daemon=True)
        self.appended = 0
        self.batches = 0

    def start(self) -> Sequencer[R]:
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop after the batch in hand; entries still queued are answered as not logged."""
        self._stop.set()
        self._thread.join(timeout=timeout)
        while True:
            try:
                pending = self._queue.get_nowait()
            except queue.Empty:
                return
            pending.error = "the log server stopped before appending the entry"
            pending.done.set()

    def submit(self, entry: bytes, timeout: float) -> R:
        """Queue ``entry`` and wait for the writer's result for it; HttpFailure 503 (queue full, or never
        taken) or 504 (taken, not appended in time)."""
        from ._httpserve import HttpFailure

        pending: _Pending[R] = _Pending(entry)
        if self._stop.is_set():
            raise HttpFailure(HTTPStatus.SERVICE_UNAVAILABLE, "the log server is stopping", [("Retry-After", "5")])
        try:
            self._queue.put_nowait(pending)
        except queue.Full:
            raise HttpFailure(HTTPStatus.SERVICE_UNAVAILABLE, "the queue of entries is full: try again shortly",
                              [("Retry-After", "1")]) from None
        if not pending.done.wait(timeout):
            with self._state:
                if not pending.taken:
                    pending.cancelled = True
            if pending.cancelled:
                raise HttpFailure(HTTPStatus.SERVICE_UNAVAILABLE,
                                  f"not logged: the entry waited {timeout:g} s in the queue; send it again",
                                  [("Retry-After", "5")])
            raise HttpFailure(HTTPStatus.GATEWAY_TIMEOUT,
                              f"the entry was being appended after {timeout:g} s: it may be in the log; "
                              "look for it before sending it again")
        if pending.result is None:
            raise HttpFailure(HTTPStatus.SERVICE_UNAVAILABLE, f"not logged: {pending.error}", [("Retry-After", "5")])
        return pending.result

    def _next_batch(self) -> list[_Pending[R]]:
        try:
            first = self._queue.get(timeout=0.1)
        except queue.Empty:
            return []
        batch = [first]
        deadline = time.monotonic() + self._batch_wait
        while len(batch) < self._batch_max:
            left = deadline - time.monotonic()
            try:
                batch.append(self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait())
            except queue.Empty:
                break
        with self._state:
            batch = [p for p in batch if not p.cancelled]
            for p in batch:
                p.taken = True
        return batch

    def _run(self) -> None:
        while not self._stop.is_set():
            batch = self._next_batch()
            if not batch:
                continue
            try:
                results = self._append([p.entry for p in batch])
                if len(results) != len(batch):
                    raise LogInvalid(f"the writer gave {len(results)} results, want {len(batch)}")
            except Exception as e:  # the writer's failure is every waiting request's answer, never a crash
                _log.error("append of %d entries failed: %s: %s", len(batch), type(e).__name__, e)
                for p in batch:
                    p.error = f"the log could not append it: {type(e).__name__}: {e}"
                    p.done.set()
                continue
            self.appended += len(batch)
            self.batches += 1
            for p, result in zip(batch, results, strict=True):
                p.result = result
                p.done.set()


def _tile_request(path: str) -> tuple[int | None, int, int]:
    """(level or None for entries, index, width) of a canonical tile path, or 404."""
    from ._httpserve import HttpFailure
    from ._tlog._tiles import parse_tile_path

    try:
        return parse_tile_path(path)
    except LogMalformed:
        raise HttpFailure(HTTPStatus.NOT_FOUND, "not found") from None


def _receipt_entry(body: bytes) -> bytes:
    """The log entry of a POSTed receipt, read under the verifier's limits (400 if it is not one, or its hash
    chain does not verify, as ``aer1 log append`` refuses it)."""
    from ._httpserve import HttpFailure
    from ._logdir import refuse_unchained
    from ._tlog._entry import entry_for_receipt
    from .verifier._parse import MalformedInput, parse_strict

    try:
        receipt = parse_strict(body, what="the receipt")
        if not isinstance(receipt, dict):
            raise LogMalformed("not a JSON object")
        entry = entry_for_receipt(receipt).encode()
    except (MalformedInput, LogMalformed) as e:
        raise HttpFailure(HTTPStatus.BAD_REQUEST, f"not a receipt: {e}") from e
    try:
        refuse_unchained(receipt, "the receipt")
    except LogMalformed as e:  # it names the receipt itself
        raise HttpFailure(HTTPStatus.BAD_REQUEST, str(e)) from e
    return entry


def _posted_entry(body: bytes) -> bytes:
    """A POSTed log entry, refused (400) unless it is one byte for byte."""
    from ._httpserve import HttpFailure
    from ._tlog._entry import parse_entry

    try:
        parse_entry(body)
    except LogMalformed as e:
        raise HttpFailure(HTTPStatus.BAD_REQUEST, f"not a log entry: {e}") from e
    return body


def batch_appender(log: LogDir, witnesses: Sequence[str] = (), witness_keys: Sequence[Verifier] = (),
                   witness_timeout: float = 10.0) -> AppendBatch[bytes]:
    """The sequencer's writer: one ``LogDir.append`` per batch (it takes the log's lock), then, with
    ``witnesses``, their cosignatures gathered onto the new checkpoint (``aer1 log witness``), then each
    entry's tlog-proof against that checkpoint, cosigned as far as the witnesses did."""
    from dataclasses import replace

    from ._tlog._note import parse_note
    from ._tlog._proof import format_tlog_proof

    def append(entries: Sequence[bytes]) -> list[bytes]:
        appended = log.append(entries)
        proofs = log.proofs(appended, [appended.index(k) for k in range(len(entries))])
        if witnesses:
            note = _cosigned(log, appended.note, witnesses, witness_keys, witness_timeout)
            proofs = [replace(p, checkpoint=note) for p in proofs]
        return [format_tlog_proof(p) for p in proofs]

    def _cosigned(log: LogDir, note: bytes, urls: Sequence[str], keys: Sequence[Verifier], timeout: float) -> bytes:
        """The checkpoint ``note`` with the cosignatures the witnesses gave (``note`` itself if none did,
        or if the log moved on meanwhile: the proofs are against ``note``'s tree)."""
        from ._log_witness import gather_for

        try:
            run = gather_for(log, urls, keys, timeout)
        except (LogInvalid, LogMalformed, OSError) as e:
            _log.warning("witnesses: %s", e)
            return note
        for outcome in run.outcomes:
            if outcome.error is not None:
                _log.warning("witness %s did not cosign size %d: %s", outcome.url, run.checkpoint.size, outcome.error)
        _, current = log.checkpoint()
        return current if parse_note(current).text == parse_note(note).text else note

    return append


def log_handler(log: LogDir, sequencer: Sequencer[bytes],
                answer_timeout: float = DEFAULT_ANSWER_TIMEOUT_S) -> type[BoundedHandler]:
    """The request handler class for ``log``: its files read-only, entries through ``sequencer``."""
    from ._httpserve import BoundedHandler, HttpFailure
    from ._logdir import CHECKPOINT
    from ._tlog._entry import MAX_LOG_ENTRY_BYTES
    from ._tlog._note import MAX_NOTE_BYTES
    from ._tlog._tiles import TILE_WIDTH, at, dir_bundle_reader, dir_tile_reader, read_file_bounded

    read_tile = dir_tile_reader(log.root)
    read_bundle = dir_bundle_reader(log.root)

    class LogHandler(BoundedHandler):
        methods = ("GET", "POST")

        def get(self, path: str) -> None:
            if path == "/checkpoint":
                try:
                    data = read_file_bounded(at(log.root, CHECKPOINT), MAX_NOTE_BYTES)
                except (FileNotFoundError, LogMalformed):
                    raise HttpFailure(HTTPStatus.NOT_FOUND, "the log has no checkpoint") from None
                self.reply(HTTPStatus.OK, data, _TEXT, [("Cache-Control", "no-cache")])
                return
            if not path.startswith("/tile/"):
                raise HttpFailure(HTTPStatus.NOT_FOUND, "not found")
            level, index, width = _tile_request(path[1:])
            try:
                data = read_bundle(index, width) if level is None else read_tile(level, index, width)
            except (FileNotFoundError, LogMalformed):
                raise HttpFailure(HTTPStatus.NOT_FOUND, "not found") from None
            cache = _FULL_CACHE if width == TILE_WIDTH else _PARTIAL_CACHE
            self.reply(HTTPStatus.OK, data, _OCTETS, [("Cache-Control", cache)])

        def post(self, path: str) -> None:
            if path != "/add":
                raise HttpFailure(HTTPStatus.NOT_FOUND, "not found: POST /add takes a receipt or an entry")
            kind = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
            if kind == "application/json":
                entry = _receipt_entry(self.read_body(MAX_RECEIPT_POST_BYTES))
            elif kind == "application/octet-stream":
                entry = _posted_entry(self.read_body(MAX_LOG_ENTRY_BYTES))
            else:
                raise HttpFailure(HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                                  "send a receipt as application/json or an entry as application/octet-stream")
            proof = sequencer.submit(entry, answer_timeout)
            self.reply(HTTPStatus.OK, proof, PROOF_CONTENT_TYPE, [("Cache-Control", "no-store")])

    return LogHandler


def _serve(args: argparse.Namespace) -> int:
    from ._httpserve import BoundedServer, check_seconds, parse_listen, serve_until_stopped
    from ._logdir import LogDir

    if args.queue_size <= 0:
        raise CliError(f"--queue-size: got {args.queue_size}, want a positive number")
    use_storage_options(args)
    try:
        check_seconds("--timeout", args.timeout)
        check_seconds("--stop-after", args.stop_after)
        host, port = parse_listen(args.listen)
        log = LogDir(args.dir)
        log.checkpoint()  # a log that cannot be read is refused now, not at the first request
        log.signer  # noqa: B018 - and one that cannot sign (its key file missing or another key's)
    except (ValueError, LogMalformed, LogInvalid, UsageError) as e:
        raise CliError(str(e)) from e
    from ._witness_server import load_witness_keys

    keys = load_witness_keys(args.witness_key)
    if args.witness_key and not args.witness:
        raise CliError("--witness-key goes with --witness URL")
    from ._httpclient import base_url

    for url in args.witness:
        try:
            base_url(url)
        except ValueError as e:
            raise CliError(f"--witness: {e}") from e
    sequencer = Sequencer(batch_appender(log, args.witness, keys), queue_size=args.queue_size).start()
    server = BoundedServer((host, port), log_handler(log, sequencer, args.timeout))
    print(f"listening on {server.url}", flush=True)
    serve_until_stopped(server, args.stop_after, on_stop=sequencer.stop)
    return 0


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    """``aer1 log serve`` arguments and handler."""
    add_storage_argument(p)
    p.add_argument("dir", metavar="DIR", help="the log folder or storage prefix (made by `aer1 log init`)")
    p.add_argument("--listen", default=_DEFAULT_LISTEN, metavar="HOST:PORT",
                   help=f"address to serve on (default {_DEFAULT_LISTEN}; port 0: any free port)")
    p.add_argument("--queue-size", type=int, default=DEFAULT_QUEUE_SIZE, metavar="N",
                   help=f"most entries waiting to be appended (default {DEFAULT_QUEUE_SIZE}); more: 503")
    p.add_argument("--timeout", type=float, default=DEFAULT_ANSWER_TIMEOUT_S, metavar="SECONDS",
                   help=f"longest a POST waits for its entry's checkpoint (default {DEFAULT_ANSWER_TIMEOUT_S:g})")
    p.add_argument("--witness", action="append", default=[], metavar="URL",
                   help="a witness asked to cosign each new checkpoint before the answer (as `aer1 log witness`); "
                        "repeat for more")
    p.add_argument("--witness-key", action="append", default=[], metavar="VKEY",
                   help="a trusted witness key (type 0x04): only cosignatures by these keys are kept, each checked")
    p.add_argument("--stop-after", type=float, metavar="SECONDS", help="stop serving after this many seconds")
    p.set_defaults(func=_serve)
