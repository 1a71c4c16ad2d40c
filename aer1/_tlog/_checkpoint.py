"""Checkpoints (c2sp.org/tlog-checkpoint@v1.0.0): the note text a log signs for its tree.

The text is the origin line, the tree size in decimal without leading zeros, the root
hash in standard base64, then optional non-empty extension lines; every line ends in a
newline. It is signed as a note (aer1._tlog._note).

API:
    MAX_ORIGIN_CHARS, MAX_EXTENSION_LINES
    Checkpoint(origin, size, root, extensions=())    .text() -> str (the note text)
    parse_checkpoint(text) -> Checkpoint             LogMalformed on a malformed body
    format_checkpoint(cp) -> str                     the same as cp.text()
    open_checkpoint(data, log_verifiers, witnesses=(), origin=None)
        -> (Checkpoint, Note, log_sigs, cosigs)      a signed checkpoint, checked: the log's
        signature by a key named the origin (LogInvalid if none verifies or a known one fails),
        its origin (LogInvalid if not ``origin``), and each known witness's cosignature (a
        failing one is LogInvalid)
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .._limits import MAX_COSIGNATURE_AHEAD_SECONDS
from ..errors import LogInvalid, LogMalformed
from ._note import Note, Signature, Verifier, check_signatures, decode_text, open_note, parse_note
from ._tree import HASH_SIZE, MAX_TREE_SIZE

__all__ = [
    "MAX_EXTENSION_LINES",
    "MAX_ORIGIN_CHARS",
    "Checkpoint",
    "format_checkpoint",
    "open_checkpoint",
    "parse_checkpoint",
]

#: Longest origin line (characters).
MAX_ORIGIN_CHARS = 1024
#: Most extension lines held.
MAX_EXTENSION_LINES = 16
_MAX_SIZE_DIGITS = len(str(MAX_TREE_SIZE))


@dataclass(frozen=True)
class Checkpoint:
    """A log's tree head: its origin, the tree size and root, and any extension lines."""

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def text(self) -> str:
        """The checkpoint's note text."""
        return format_checkpoint(self)


def format_checkpoint(cp: Checkpoint) -> str:
    """The note text of ``cp``; refuses what :func:`parse_checkpoint` would refuse."""
    text = f"{cp.origin}\n{cp.size}\n{base64.b64encode(cp.root).decode('ascii')}\n" + "".join(
        f"{line}\n" for line in cp.extensions)
    if parse_checkpoint(text) != cp:
        raise LogMalformed(f"checkpoint {cp.origin[:80]!r} {cp.size}: not representable as a checkpoint")
    return text


def parse_checkpoint(text: str | bytes) -> Checkpoint:
    """The checkpoint in a note text (ending in a newline)."""
    if isinstance(text, bytes):
        text = decode_text(text, "checkpoint")
    if not text.endswith("\n"):
        raise LogMalformed("checkpoint: want its last line to end in a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3:
        raise LogMalformed(f"checkpoint: got {len(lines)} lines, want origin, size and root hash")
    origin, size_text, root64, *extensions = lines
    if not origin or len(origin) > MAX_ORIGIN_CHARS:
        raise LogMalformed(f"checkpoint origin: got {len(origin)} characters, want 1..{MAX_ORIGIN_CHARS}")
    if any(ord(c) < 0x20 for c in origin):
        raise LogMalformed("checkpoint origin: got a control character")
    if (not size_text or len(size_text) > _MAX_SIZE_DIGITS or not size_text.isascii() or not size_text.isdigit()
            or (size_text != "0" and size_text.startswith("0"))):
        raise LogMalformed(f"checkpoint size: got {size_text[:40]!r}, want a decimal without leading zeros")
    size = int(size_text)
    if size > MAX_TREE_SIZE:
        raise LogMalformed(f"checkpoint size: got {size}, want at most {MAX_TREE_SIZE}")
    try:
        root = base64.b64decode(root64.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError) as e:
        raise LogMalformed(f"checkpoint root hash: not standard base64: {e}") from e
    if len(root) != HASH_SIZE or base64.b64encode(root).decode("ascii") != root64:
        raise LogMalformed(f"checkpoint root hash: got {len(root)} bytes, want {HASH_SIZE} in canonical base64")
    if len(extensions) > MAX_EXTENSION_LINES:
        raise LogMalformed(f"checkpoint: got {len(extensions)} extension lines, want at most {MAX_EXTENSION_LINES}")
    for i, line in enumerate(extensions, 1):
        if not line:
            raise LogMalformed(f"checkpoint extension line {i}: got an empty line, want none")
        if any(ord(c) < 0x20 for c in line):
            raise LogMalformed(f"checkpoint extension line {i}: got a control character")
    return Checkpoint(origin, size, root, tuple(extensions))


def open_checkpoint(
    data: bytes | str,
    log_verifiers: Iterable[Verifier],
    witnesses: Sequence[Verifier] = (),
    origin: str | None = None,
) -> tuple[Checkpoint, Note, list[Signature], list[tuple[Verifier, Signature]]]:
    """Check a signed checkpoint: a trusted log signature, the origin, and the witnesses' cosignatures.

    Returns the checkpoint, the note, the log's verified signatures and the verified
    cosignatures (verifier, signature) of ``witnesses`` (each public key once, whatever names
    it is trusted under; none is not an error here: how many are needed is the caller's policy).
    """
    note = parse_note(data)
    cp = parse_checkpoint(note.text)
    logs = list(log_verifiers)
    _, signed = open_note(note, logs)
    if origin is not None and cp.origin != origin:
        raise LogInvalid(f"checkpoint origin: got {cp.origin[:80]!r}, want {origin[:80]!r}")
    named = [s for _, s in signed if s.name == cp.origin]  # the log's key is named after its origin
    if not named:
        raise LogInvalid(f"checkpoint origin {cp.origin[:80]!r}: got signatures by trusted log keys named "
                         f"{', '.join(sorted({s.name[:80] for _, s in signed}))}, want one named the origin")
    log_ids = {(v.name, v.key_id) for v in logs}
    cosigned = _one_per_key(check_signatures(note, [w for w in witnesses if (w.name, w.key_id) not in log_ids]))
    _refuse_future(cosigned)
    return cp, note, named, cosigned


def _one_per_key(cosigned: Sequence[tuple[Verifier, Signature]]) -> list[tuple[Verifier, Signature]]:
    """The cosignatures, one per public key (the first in note order).

    A cosignature's signed message does not hold the witness's name, so one key trusted under
    two names (two key IDs) verifies a line copied under the other name: that is one witness,
    and counting it twice would let one key meet a K of 2.
    """
    seen: set[object] = set()
    out: list[tuple[Verifier, Signature]] = []
    for w, s in cosigned:
        key = getattr(w, "public", None) or (w.name, w.key_id)
        if key not in seen:
            seen.add(key)
            out.append((w, s))
    return out


def _refuse_future(cosigned: Sequence[tuple[Verifier, Signature]]) -> None:
    """A verified cosignature dated after this clock (beyond the drift allowed) cannot have been made yet."""
    from ._cosig import cosignature_timestamp

    latest = int(time.time()) + MAX_COSIGNATURE_AHEAD_SECONDS
    for w, s in cosigned:
        ts = cosignature_timestamp(s.sig)
        if ts > latest:
            raise LogInvalid(f"cosignature by {w.name[:80]}: got timestamp {ts}, want at most {latest} (this clock "
                             f"plus {MAX_COSIGNATURE_AHEAD_SECONDS} s): a witness cannot have cosigned in the future")
