"""A transparency-log witness (c2sp.org/tlog-witness@v1.0.0): add-checkpoint, cosign, remember.

:meth:`Witness.add_checkpoint` takes the body of one ``POST /add-checkpoint`` and gives
the HTTP answer: the witness's Ed25519 cosignature (c2sp.org/tlog-cosignature, type 0x04,
timestamped) when the checkpoint is signed by a key it trusts for its origin and
provably extends the last checkpoint it cosigned for that origin; else the status the
protocol names (400 malformed, 403 bad log signature, 404 unknown origin, 409 wrong old
size with the witness's size, 422 bad consistency proof). Checking the old size and
persisting the new checkpoint happen under one lock, so concurrent requests cannot
both advance a log from the same size (or roll it back). Notes, cosignatures,
checkpoints and proofs are read and checked by ``aer1._tlog``; this module adds only
the protocol's framing and rules.
"""

from __future__ import annotations

import base64
import binascii
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus

from ._tlog._checkpoint import parse_checkpoint
from ._tlog._cosig import CosignatureSigner
from ._tlog._note import Note, Verifier, check_length, format_note, open_note, parse_note
from ._tlog._tree import EMPTY_ROOT, HASH_SIZE, verify_consistency
from ._witness_state import WitnessState, WitnessStateError, origin_hash
from .errors import LogInvalid, LogMalformed

__all__ = [
    "MAX_ADD_CHECKPOINT_BYTES",
    "MAX_PROOF_LINES",
    "SIZE_CONTENT_TYPE",
    "AddCheckpoint",
    "Answer",
    "Witness",
    "format_add_checkpoint",
    "parse_add_checkpoint",
]

#: Most consistency-proof lines in one add-checkpoint request (tlog-witness: a client sends at most 63).
MAX_PROOF_LINES = 63
#: The old-size line at its longest: "old " and 19 digits (a size below 2**63) and a newline.
_MAX_OLD_LINE = 4 + 19 + 1
#: A base64 hash line: 44 characters and a newline.
_HASH_LINE = 45
#: Largest add-checkpoint body read (bytes): the old-size line, 63 proof lines, the blank line, one note.
MAX_ADD_CHECKPOINT_BYTES = _MAX_OLD_LINE + MAX_PROOF_LINES * _HASH_LINE + 1 + 1024 * 1024
#: The content type of a 409 answer, whose body is the witness's size and a newline.
SIZE_CONTENT_TYPE = "text/x.tlog.size"
_TEXT = "text/plain; charset=utf-8"

_log = logging.getLogger("aer1.witness")


@dataclass(frozen=True)
class AddCheckpoint:
    """One add-checkpoint request: the size the client believes the witness has, the proof from it, the note."""

    old_size: int
    proof: tuple[bytes, ...]
    note: bytes


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: status, content type and body."""

    status: int
    content_type: str
    body: bytes

    @classmethod
    def error(cls, status: int, message: str) -> Answer:
        return cls(status, _TEXT, message.encode("utf-8", "backslashreplace") + b"\n")


class _Refused(Exception):
    """The request is answered ``status`` with ``message`` (and, for 409, the witness's size)."""

    def __init__(self, status: int, message: str, size: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.size = size


def _decimal(text: bytes, what: str) -> int:
    """A size in ASCII decimal with no leading zeros (``0`` itself allowed), below 2**63."""
    if not text.isdigit() or (len(text) > 1 and text[:1] == b"0") or len(text) > 19 or int(text) >= 2**63:
        raise LogMalformed(f"{what}: got {text[:30]!r}, want a decimal size without leading zeros")
    return int(text)


def _hash_line(line: bytes, number: int) -> bytes:
    try:
        raw = base64.b64decode(line, validate=True)
    except (binascii.Error, ValueError) as e:
        raise LogMalformed(f"proof line {number}: not standard base64: {e}") from e
    if len(raw) != HASH_SIZE:
        raise LogMalformed(f"proof line {number}: got {len(raw)} bytes, want a {HASH_SIZE}-byte hash")
    return raw


def parse_add_checkpoint(body: bytes) -> AddCheckpoint:
    """Split an add-checkpoint body: ``old <size>``, up to 63 base64 hash lines, a blank line, the note.

    Raises LogMalformed (400) when the body is not framed so; the note itself is read later.
    """
    check_length(body, MAX_ADD_CHECKPOINT_BYTES, "body")
    end = body.find(b"\n")
    if end < 0 or not body.startswith(b"old "):
        raise LogMalformed("body: want it to start with the line 'old <size>'")
    old = _decimal(body[4:end], "old size")
    proof: list[bytes] = []
    at = end + 1
    while True:
        end = body.find(b"\n", at)
        if end < 0:
            raise LogMalformed("body: got no empty line after the proof, want one before the checkpoint")
        if end == at:
            break
        if len(proof) == MAX_PROOF_LINES:
            raise LogMalformed(f"body: got more than {MAX_PROOF_LINES} consistency proof lines")
        proof.append(_hash_line(body[at:end], len(proof) + 1))
        at = end + 1
    return AddCheckpoint(old, tuple(proof), body[end + 1:])


def format_add_checkpoint(old_size: int, proof: Sequence[bytes], note: bytes) -> bytes:
    """The body of an add-checkpoint request (the client's side of :func:`parse_add_checkpoint`)."""
    if len(proof) > MAX_PROOF_LINES:
        raise LogMalformed(f"proof: got {len(proof)} hashes, want at most {MAX_PROOF_LINES}")
    lines = [b"old %d\n" % old_size, *(base64.b64encode(h) + b"\n" for h in proof), b"\n"]
    return b"".join(lines) + note


class Witness:
    """One witness key cosigning the logs it is configured with, its state kept in ``state``.

    ``logs`` maps each origin to the verifiers of the log keys trusted for it (more than
    one during a key rotation).
    """

    def __init__(self, signer: CosignatureSigner, logs: Mapping[str, Iterable[Verifier]], state: WitnessState,
                 clock: Callable[[], float] = time.time) -> None:
        self.signer = signer
        self.logs = {origin: tuple(keys) for origin, keys in logs.items()}
        for origin, keys in self.logs.items():
            if not keys:
                raise ValueError(f"log {origin!r}: no trusted key")
        self.state = state
        self._clock = clock

    @property
    def vkey(self) -> str:
        """The witness's verifier key string (cosignature type 0x04)."""
        return self.signer.verifier().vkey

    def add_checkpoint(self, body: bytes) -> Answer:
        """The answer to one add-checkpoint request body."""
        try:
            return self._add(body)
        except _Refused as e:
            if e.size is not None:
                return Answer(e.status, SIZE_CONTENT_TYPE, b"%d\n" % e.size)
            return Answer.error(e.status, str(e))

    def _add(self, body: bytes) -> Answer:
        try:
            request = parse_add_checkpoint(body)
            note = parse_note(request.note)
            checkpoint = parse_checkpoint(note.text)
        except LogMalformed as e:
            raise _Refused(HTTPStatus.BAD_REQUEST, str(e)) from e
        keys = self.logs.get(checkpoint.origin)
        if keys is None:
            raise _Refused(HTTPStatus.NOT_FOUND, f"unknown log origin {checkpoint.origin[:200]!r}")
        try:
            _, good = open_note(note, keys)
        except LogInvalid as e:
            raise _Refused(HTTPStatus.FORBIDDEN, f"checkpoint signature: {e}") from e
        if request.old_size > checkpoint.size:
            raise _Refused(HTTPStatus.BAD_REQUEST,
                           f"old size {request.old_size} is larger than the checkpoint's size {checkpoint.size}")
        if checkpoint.size == 0 and checkpoint.root != EMPTY_ROOT:
            raise _Refused(HTTPStatus.UNPROCESSABLE_ENTITY, "a checkpoint of size 0 must have the empty tree's root")
        log_signatures = tuple(s for _, s in good)
        text = note.text.encode("utf-8")
        with self.state.locked():
            old_size, old_root = self._last(checkpoint.origin)
            if request.old_size != old_size:
                raise _Refused(HTTPStatus.CONFLICT, "old size is not the witness's size", size=old_size)
            self._check_consistent(request, old_root, checkpoint.size, checkpoint.root)
            cosignature = self.signer.sign_at(text, self._timestamp())
            self.state.store(checkpoint.origin, format_note(Note(note.text, (*log_signatures, cosignature))))
        _log.info("cosigned %s at size %d", checkpoint.origin, checkpoint.size)
        return Answer(HTTPStatus.OK, _TEXT, cosignature.line().encode("utf-8"))

    def last_size(self, origin: str) -> int:
        """The size of the last checkpoint cosigned for ``origin`` (0 if none); WitnessStateError if unreadable."""
        with self.state.locked():
            return self._last(origin)[0]

    def _timestamp(self) -> int:
        """Now in POSIX seconds; never 0 (tlog-witness forbids a zero cosignature timestamp)."""
        return max(1, int(self._clock()))

    def _last(self, origin: str) -> tuple[int, bytes]:
        """The size and root of the last checkpoint cosigned for ``origin``: (0, empty root) if none."""
        stored = self.state.load(origin)
        if stored is None:
            return 0, EMPTY_ROOT
        try:
            checkpoint = parse_checkpoint(parse_note(stored).text)
        except LogMalformed as e:
            raise WitnessStateError(f"the stored state of {origin!r} is unreadable: {e}") from e
        if checkpoint.origin != origin:
            raise WitnessStateError(f"the stored state of {origin!r} names another origin")
        return checkpoint.size, checkpoint.root

    @staticmethod
    def _check_consistent(request: AddCheckpoint, old_root: bytes, size: int, root: bytes) -> None:
        """Refuse (422) a checkpoint not proven to extend the witness's (``request.old_size``, ``old_root``)."""
        old = request.old_size
        if old == 0:
            if request.proof:
                raise _Refused(HTTPStatus.UNPROCESSABLE_ENTITY, "old size 0 takes no consistency proof")
            return
        if old == size:
            if request.proof:
                raise _Refused(HTTPStatus.UNPROCESSABLE_ENTITY, "a checkpoint of the witness's size takes no proof")
            if root != old_root:
                raise _Refused(HTTPStatus.UNPROCESSABLE_ENTITY,
                               f"checkpoint root differs from the one cosigned at size {old}: a fork")
            return
        try:
            verify_consistency(old, size, old_root, root, list(request.proof))
        except (LogInvalid, LogMalformed) as e:
            raise _Refused(HTTPStatus.UNPROCESSABLE_ENTITY, f"consistency proof {old} -> {size}: {e}") from e

    def checkpoint_for(self, origin_hex: str) -> bytes | None:
        """The last cosigned checkpoint of the log whose origin hashes to ``origin_hex`` (monitoring), or None."""
        for origin in self.logs:
            if origin_hash(origin) == origin_hex:
                with self.state.locked():
                    return self.state.load(origin)
        return None
