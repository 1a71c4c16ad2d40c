"""``aer1 log witness``: gather witness cosignatures onto a log's checkpoint (the tlog-witness client).

For each witness the log's current checkpoint is sent with a consistency proof from the
size the witness holds. That size is learned the protocol's way: the first request says
``old 0``; a witness that holds more answers 409 with its size, and the request is sent
again with the proof from there (at most :data:`MAX_ATTEMPTS` times, since a log that
grows meanwhile may move the target). A witness that holds a size larger than the log's
checkpoint has seen another history (a fork, or a log rolled back): that is reported,
never worked around.

The cosignature lines a witness returns are kept only if they verify over the checkpoint
(with ``--witness-key``: only lines by those keys, each checked; without, every
well-formed line). They are then written onto the checkpoint file under the log's own
lock, and only if the checkpoint is still the one they cosign: a signed note with extra
signature lines is still the same checkpoint to every verifier, which ignores keys it
does not know. A line by the same key as one already there replaces it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING

from ._witness import SIZE_CONTENT_TYPE, format_add_checkpoint
from .errors import Aer1Error, LogInvalid, LogMalformed, UsageError

if TYPE_CHECKING:
    from ._logdir import LogDir
    from ._tlog._checkpoint import Checkpoint
    from ._tlog._note import Note, Signature, Verifier
    from ._tlog._tree import HashAt

__all__ = [
    "DEFAULT_WITNESS_TIMEOUT_S",
    "MAX_ATTEMPTS",
    "MAX_WITNESS_ANSWER_BYTES",
    "WitnessOutcome",
    "WitnessRun",
    "add_log_witness_arguments",
    "cosign_once",
    "gather_cosignatures",
    "gather_for",
]

#: Requests sent to one witness for one checkpoint: old 0, then the size it names (twice, if it moves).
MAX_ATTEMPTS = 3
#: Longest answer read from a witness (bytes): 16 post-quantum cosignature lines fit.
MAX_WITNESS_ANSWER_BYTES = 128 * 1024
#: How long one request to a witness may take, by default (seconds).
DEFAULT_WITNESS_TIMEOUT_S = 10.0
#: Rounds of gathering when the log's checkpoint changes under it.
MAX_ROUNDS = 3


class _WitnessFailed(Aer1Error):
    """One witness did not cosign (unreachable, refused, or answered nonsense)."""


@dataclass
class WitnessOutcome:
    """What one witness did: the cosignature lines it gave, or why it gave none."""

    url: str
    signatures: list[Signature] = field(default_factory=list)
    error: str | None = None


@dataclass
class WitnessRun:
    """One ``aer1 log witness`` run: the checkpoint cosigned, and each witness's outcome."""

    checkpoint: Checkpoint
    outcomes: list[WitnessOutcome]
    written: int = 0


def _current(log: LogDir) -> tuple[bytes, Note, Checkpoint]:
    """The log's checkpoint (its log signature checked): its bytes, note and body."""
    from ._tlog._note import parse_note

    checkpoint, data = log.checkpoint()
    return data, parse_note(data), checkpoint


def _parse_answer(note_bytes: bytes, note: Note, answer: bytes, keys: Sequence[Verifier]) -> list[Signature]:
    """The cosignature lines of a 200 answer that verify over the checkpoint (by ``keys``, when given)."""
    from ._tlog._note import Note as NoteType
    from ._tlog._note import check_signatures, parse_note

    if not answer or not answer.endswith(b"\n"):
        raise _WitnessFailed("answered 200 without signature lines")
    try:
        extended = parse_note(note_bytes + answer)
    except LogMalformed as e:
        raise _WitnessFailed(f"answered 200 with lines that are not note signatures: {e}") from e
    if extended.text != note.text:  # the answer held a blank line: it moved the note's split
        raise _WitnessFailed("answered 200 with a blank line among its signature lines")
    lines = list(extended.signatures[len(note.signatures):])
    if not keys:
        return lines
    try:
        good = check_signatures(NoteType(note.text, tuple(lines)), keys)
    except LogInvalid as e:
        raise _WitnessFailed(f"returned a bad cosignature: {e}") from e
    if not good:
        raise _WitnessFailed("returned no cosignature by a --witness-key")
    return [s for _, s in good]


def cosign_once(url: str, note_bytes: bytes, note: Note, checkpoint: Checkpoint, hash_at: HashAt,
                keys: Sequence[Verifier], timeout: float) -> list[Signature]:
    """Ask one witness to cosign ``checkpoint``: the verified cosignature lines, or _WitnessFailed."""
    from ._httpclient import HttpClientError, request
    from ._tlog._tree import consistency_proof

    old = 0
    for _ in range(MAX_ATTEMPTS):
        proof = consistency_proof(old, checkpoint.size, hash_at) if 0 < old < checkpoint.size else []
        try:
            answer = request("POST", url, "/add-checkpoint", body=format_add_checkpoint(old, proof, note_bytes),
                             content_type="text/plain; charset=utf-8", timeout=timeout,
                             max_answer=MAX_WITNESS_ANSWER_BYTES)
        except HttpClientError as e:
            raise _WitnessFailed(str(e)) from e
        if answer.status == HTTPStatus.OK:
            return _parse_answer(note_bytes, note, answer.body, keys)
        if answer.status == HTTPStatus.CONFLICT and answer.content_type == SIZE_CONTENT_TYPE:
            old = _witness_size(answer.body, checkpoint.size)
            continue
        first = answer.body.split(b"\n", 1)[0][:200].decode("utf-8", "backslashreplace")
        raise _WitnessFailed(f"refused with {answer.status}: {first}")
    raise _WitnessFailed(f"still answered 409 after {MAX_ATTEMPTS} requests (its size keeps changing)")


def _witness_size(body: bytes, size: int) -> int:
    """The size in a 409 answer: at most the checkpoint's, else the witness has seen another history."""
    text = body[:-1] if body.endswith(b"\n") else b"!"
    if not text.isdigit() or (len(text) > 1 and text[:1] == b"0") or len(text) > 19:
        raise _WitnessFailed(f"answered 409 with {body[:40]!r}, want a size and a newline")
    held = int(text)
    if held > size:
        raise _WitnessFailed(f"holds size {held}, larger than this checkpoint's {size}: it has seen another "
                             "history of this log (a fork, or a log rolled back)")
    return held


def gather_cosignatures(directory: str | Path, urls: Sequence[str], keys: Sequence[Verifier] = (),
                        timeout: float = DEFAULT_WITNESS_TIMEOUT_S) -> WitnessRun:
    """Ask every witness in ``urls`` to cosign the log's checkpoint and write their cosignatures onto it."""
    from ._logdir import LogDir

    return gather_for(LogDir(directory), urls, keys, timeout)


def gather_for(log: LogDir, urls: Sequence[str], keys: Sequence[Verifier] = (),
               timeout: float = DEFAULT_WITNESS_TIMEOUT_S) -> WitnessRun:
    """:func:`gather_cosignatures` for an open log (the log server keeps one)."""
    for _ in range(MAX_ROUNDS):
        note_bytes, note, checkpoint = _current(log)
        reader = log.hash_reader(checkpoint)
        outcomes: list[WitnessOutcome] = []
        for url in urls:
            outcome = WitnessOutcome(url)
            try:
                outcome.signatures = cosign_once(url, note_bytes, note, checkpoint, reader.hash_at, keys, timeout)
            except _WitnessFailed as e:
                outcome.error = str(e)
            outcomes.append(outcome)
        new = [s for o in outcomes for s in o.signatures]
        if not new:
            return WitnessRun(checkpoint, outcomes)
        written = _write_cosignatures(log, note.text, new)
        if written is not None:
            return WitnessRun(checkpoint, outcomes, written)
    raise LogInvalid(f"the log's checkpoint changed during each of {MAX_ROUNDS} rounds: run again when it is quiet")


def _merged(note: Note, new: Sequence[Signature]) -> Note:
    """``note`` with ``new`` added; a line by a key already there (same name and ID) is replaced."""
    from ._tlog._note import Note as NoteType

    replaced = {(s.name, s.key_id) for s in new}
    kept = [s for s in note.signatures if (s.name, s.key_id) not in replaced]
    return NoteType(note.text, (*kept, *new))


def _write_cosignatures(log: LogDir, text: str, new: Sequence[Signature]) -> int | None:
    """Add ``new`` to the checkpoint file under the log's lock, if it still has ``text``; the lines written,
    or None when the log moved on (the cosignatures are for a checkpoint it no longer serves)."""
    from ._tlog._note import format_note

    with log.locked():
        _, current, _ = _current(log)
        if current.text != text:
            return None
        log.replace_checkpoint(format_note(_merged(current, new)))
    return len(new)


def _witness_command(args: argparse.Namespace) -> int:
    """``aer1 log witness``: one line per witness; exit 0 if all cosigned, 1 if some did not."""
    from ._httpclient import base_url
    from ._httpserve import check_seconds
    from ._witness_server import load_witness_keys
    from .verifier._output import CliError, one_line

    keys = load_witness_keys(args.witness_key)
    for url in args.witness:
        try:
            base_url(url)
        except ValueError as e:
            raise CliError(f"--witness: {e}") from e
    try:
        check_seconds("--timeout", args.timeout)
    except ValueError as e:
        raise CliError(str(e)) from e
    try:
        run = gather_cosignatures(args.dir, args.witness, keys, args.timeout)
    except (LogMalformed, LogInvalid, UsageError) as e:
        raise CliError(str(e)) from e
    note = "" if keys else " (not verified: no --witness-key)"
    code = 0 if all(o.error is None for o in run.outcomes) else 1
    if args.json:
        from ._cli_json import checkpoint_json, emit

        return emit(args, "log witness", {
            "dir": args.dir, "checkpoint": checkpoint_json(run.checkpoint),
            "verified": bool(keys), "written": run.written,
            "witnesses": [{"url": o.url, "cosigned": o.error is None,
                           "signatures": [f"{s.name}+{s.key_id:08x}" for s in o.signatures], "error": o.error}
                          for o in run.outcomes]}, [], code)
    for outcome in run.outcomes:
        if outcome.error is None:
            names = ", ".join(f"{s.name}+{s.key_id:08x}" for s in outcome.signatures)
            print(one_line(f"cosigned: {outcome.url} ({names}){note}"))
        else:
            print(one_line(f"failed: {outcome.url}: {outcome.error}"), file=sys.stderr)
    print(f"checkpoint {run.checkpoint.origin} size {run.checkpoint.size}: {run.written} cosignature(s) written")
    return code


def add_log_witness_arguments(p: argparse.ArgumentParser) -> None:
    """``aer1 log witness`` arguments and handler."""
    p.add_argument("dir", metavar="DIR", help="the log folder (made by `aer1 log init`)")
    p.add_argument("--witness", action="append", required=True, metavar="URL",
                   help="a witness's submission prefix (http://HOST:PORT); repeat for more witnesses")
    p.add_argument("--witness-key", action="append", default=[], metavar="VKEY",
                   help="a trusted witness verifier key (type 0x04), inline or in a file: only cosignatures "
                        "by these keys are kept, each checked; repeat for more")
    p.add_argument("--timeout", type=float, default=DEFAULT_WITNESS_TIMEOUT_S, metavar="SECONDS",
                   help=f"longest one request to a witness may take (default {DEFAULT_WITNESS_TIMEOUT_S:g})")
    p.add_argument("--json", action="store_true", help="one JSON object on standard output (errors too)")
    p.set_defaults(func=_witness_command)
