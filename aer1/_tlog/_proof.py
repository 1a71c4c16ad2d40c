"""Offline inclusion proofs (c2sp.org/tlog-proof@v1): an entry's index, path and checkpoint in one file.

The text: ``c2sp.org/tlog-proof@v1``, an optional ``extra <base64>`` line, ``index <N>``,
the inclusion proof hashes in base64 one a line (leaf's sibling first), an empty line,
then the signed (and perhaps cosigned) checkpoint note verbatim.

API:
    PROOF_HEADER, PROOF_SUFFIX, MAX_PROOF_BYTES
    proof_path_for(receipt_path) -> str               ``dir/name.json`` -> ``dir/name.tlog-proof``
    TlogProof(index, path, checkpoint, extra=None)   checkpoint: the note's bytes
    parse_tlog_proof(data) -> TlogProof               LogMalformed on a malformed file
    format_tlog_proof(proof) -> bytes
    VerifiedProof(checkpoint, index, log_key, cosigners)   what verify_tlog_proof established
    verify_tlog_proof(proof, entry, log_verifiers, witnesses=(), min_witnesses=0, origin=None)
        -> VerifiedProof: the log's signature, ``min_witnesses`` distinct witness cosignatures,
        and the entry's inclusion in the checkpoint's tree; LogInvalid otherwise
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import LogInvalid, LogMalformed
from ._checkpoint import Checkpoint, open_checkpoint, parse_checkpoint
from ._note import MAX_NOTE_BYTES, Verifier, check_length, decode_text, parse_note
from ._tree import HASH_SIZE, MAX_PROOF_HASHES, leaf_hash, verify_inclusion

__all__ = [
    "MAX_PROOF_BYTES",
    "PROOF_HEADER",
    "PROOF_SUFFIX",
    "TlogProof",
    "VerifiedProof",
    "format_tlog_proof",
    "parse_tlog_proof",
    "proof_path_for",
    "verify_tlog_proof",
]

PROOF_HEADER = "c2sp.org/tlog-proof@v1"
#: The file name ending of a receipt's proof: ``dir/name.json`` has ``dir/name.tlog-proof``.
PROOF_SUFFIX = ".tlog-proof"
#: Largest tlog-proof read (bytes): the checkpoint note and a few kilobytes of lines.
MAX_PROOF_BYTES = MAX_NOTE_BYTES + 64 * 1024
_MAX_EXTRA_BYTES = 16 * 1024
#: A SHA-256 hash in standard base64: 43 characters and one '='.
_HASH_B64 = re.compile("[A-Za-z0-9+/]{43}=")


@dataclass(frozen=True)
class TlogProof:
    """A parsed tlog-proof: the entry's index, its inclusion path, the checkpoint note's bytes."""

    index: int
    path: tuple[bytes, ...]
    checkpoint: bytes
    extra: bytes | None = None


@dataclass(frozen=True)
class VerifiedProof:
    """What a proof established: the checkpoint, the index, the log key and the cosigners' names."""

    checkpoint: Checkpoint
    index: int
    log_key: str
    cosigners: tuple[tuple[str, int], ...]  # (witness name, cosignature timestamp)


def proof_path_for(receipt_path: str) -> str:
    """``dir/name.json`` -> ``dir/name.tlog-proof``: where a receipt's log proof is written and looked for."""
    base = receipt_path[:-5] if receipt_path.endswith(".json") else receipt_path
    return base + PROOF_SUFFIX


def _b64(text: str, what: str) -> bytes:
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError) as e:
        raise LogMalformed(f"tlog-proof {what}: not standard base64: {e}") from e
    return raw


def format_tlog_proof(proof: TlogProof) -> bytes:
    """The text of a tlog-proof file."""
    lines = [PROOF_HEADER]
    if proof.extra is not None:
        lines.append("extra " + base64.b64encode(proof.extra).decode("ascii"))
    lines.append(f"index {proof.index}")
    lines.extend(base64.b64encode(h).decode("ascii") for h in proof.path)
    out = ("\n".join(lines) + "\n\n").encode("ascii") + proof.checkpoint
    parse_tlog_proof(out)  # never write what would not read back
    return out


def parse_tlog_proof(data: bytes) -> TlogProof:
    """Parse a tlog-proof; checks its shape and the checkpoint's, never a signature."""
    check_length(data, MAX_PROOF_BYTES, "tlog-proof")
    head, sep, note = data.partition(b"\n\n")
    if not sep:
        raise LogMalformed("tlog-proof: got no empty line before the checkpoint")
    lines = decode_text(head, "tlog-proof", ascii_only=True).split("\n")
    if lines[0] != PROOF_HEADER:
        raise LogMalformed(f"tlog-proof: got first line {lines[0][:60]!r}, want {PROOF_HEADER!r}")
    pos = 1
    extra = None
    if pos < len(lines) and lines[pos].startswith("extra "):
        if len(lines[pos]) > 2 * _MAX_EXTRA_BYTES:
            raise LogMalformed(f"tlog-proof extra: longer than {_MAX_EXTRA_BYTES} bytes")
        extra = _b64(lines[pos][6:], "extra")
        pos += 1
    if pos >= len(lines) or not lines[pos].startswith("index "):
        raise LogMalformed("tlog-proof: want an 'index <N>' line")
    digits = lines[pos][6:]
    if not digits.isdigit() or len(digits) > 19 or (digits != "0" and digits.startswith("0")):
        raise LogMalformed(f"tlog-proof index: got {digits[:30]!r}, want a decimal without leading zeros")
    index = int(digits)
    hashes = lines[pos + 1 :]
    if len(hashes) > MAX_PROOF_HASHES:
        raise LogMalformed(f"tlog-proof: got {len(hashes)} proof hashes, want at most {MAX_PROOF_HASHES}")
    path = []
    for i, line in enumerate(hashes):
        if _HASH_B64.fullmatch(line):  # the one form a 32-byte hash has: decoded without the general checks
            path.append(binascii.a2b_base64(line))
            continue
        h = _b64(line, f"proof hash {i}")
        if len(h) != HASH_SIZE:
            raise LogMalformed(f"tlog-proof hash {i}: got {len(h)} bytes, want {HASH_SIZE}")
        path.append(h)
    _check_note(bytes(note))
    return TlogProof(index, tuple(path), note, extra)


@functools.lru_cache(maxsize=16)
def _check_note(note: bytes) -> None:
    """The proof's checkpoint note parses (remembered: the proofs of one batch share one note)."""
    parse_checkpoint(parse_note(note).text)


def verify_tlog_proof(
    proof: TlogProof,
    entry: bytes,
    log_verifiers: Iterable[Verifier],
    witnesses: Sequence[Verifier] = (),
    min_witnesses: int = 0,
    origin: str | None = None,
    *,
    opener: Callable[..., Any] = open_checkpoint,
) -> VerifiedProof:
    """Check ``proof`` for ``entry``: the log's signature, the witness quorum, the inclusion.

    The steps of the tlog-proof specification in order: the leaf hash, the checkpoint's
    origin and log signature, the known witnesses' cosignatures (at least
    ``min_witnesses`` distinct ones), the inclusion proof to the checkpoint's root.
    ``opener``: :func:`open_checkpoint` or a caller's cache of it (many proofs share a checkpoint).
    """
    leaf = leaf_hash(entry)
    cp, _, log_sigs, cosigned = opener(proof.checkpoint, log_verifiers, witnesses, origin)
    if len(cosigned) < min_witnesses:
        raise LogInvalid(f"checkpoint cosignatures: got {len(cosigned)} by trusted witnesses, want at least "
                         f"{min_witnesses}")
    if proof.index >= cp.size:
        raise LogInvalid(f"tlog-proof index: got {proof.index}, want below the checkpoint's size {cp.size}")
    verify_inclusion(leaf, proof.index, cp.size, proof.path, cp.root)
    from ._cosig import cosignature_timestamp

    cosigners = []
    for w, s in cosigned:
        try:
            ts = cosignature_timestamp(s.sig)
        except LogMalformed:
            ts = -1
        cosigners.append((w.name, ts))
    sig = log_sigs[0]
    return VerifiedProof(cp, proof.index, f"{sig.name}+{sig.key_id:08x}", tuple(cosigners))
