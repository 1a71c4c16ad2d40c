"""The one layout of a saved receipt file: indented members, one line per step.

Every writer of a receipt file (``Collector.save``, ``aer1 recover``, ``aer1 timestamp``,
bundles of linked receipts) takes its bytes from :func:`receipt_pieces`. The receipt's
members are indented by two spaces, as ``json.dumps(indent=2)`` writes them, except each
element of ``steps``, which is written compactly on a line of its own::

    {
      "type": "verifiable-workflow-receipt",
      ...
      "steps": [
        {"seq":1,"receipt_id":"...","tool":"message",...},
        {"seq":2,...}
      ],
      "merkle_root": "...",
      ...
    }

This is layout only: the file is plain JSON that every JSON reader and every AER-1
verifier reads, and nothing hashed or signed depends on it (hashes and signatures cover
RFC 8785 bytes, never the file's). A step of ours on one line takes about a fifth fewer
bytes than indented, and the file stays readable (and ``grep``-able) a step per line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import IO, Any

import orjson

__all__ = ["STEPS_PER_PIECE", "STEP_INDENT", "receipt_json", "receipt_pieces", "write_receipt"]

#: What precedes each step's line: steps sit two levels deep.
STEP_INDENT = b"    "
_STEPS = "steps"
# How orjson's and json's indented output write the empty placeholder list that the steps replace.
_PLACEHOLDER = b'\n  "steps": []'
_OPEN = b'\n  "steps": [\n' + STEP_INDENT
_BETWEEN = b",\n" + STEP_INDENT
_CLOSE = b"\n  ]"

#: Step lines joined and handed on at a time: a file is written in pieces of about this many steps.
STEPS_PER_PIECE = 1024


def _indented(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError:
        # the standard library writes a lone surrogate as its escape, where orjson refuses it
        return _standard(value, indent=2)


def _compact(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return _standard(value, separators=(",", ":"))


def _standard(value: Any, **options: Any) -> bytes:
    try:
        return json.dumps(value, ensure_ascii=True, **options).encode("ascii")
    except ValueError as e:  # e.g. a circular reference
        raise TypeError(f"receipt is not JSON data: {e}") from e


def receipt_pieces(receipt: Mapping[str, Any]) -> Iterator[bytes]:
    """The bytes of a receipt file in the layout above, in pieces (about STEPS_PER_PIECE steps each).

    A receipt with no ``steps`` list (or an empty one) is indented throughout. A step (or
    the other members) holding text orjson cannot encode (a lone surrogate, in a receipt
    read from elsewhere) is written with ``\\u`` escapes instead, in the same layout; a
    value neither encoder takes raises ``TypeError``.
    """
    steps = receipt.get(_STEPS)
    if type(steps) is not list or not steps:
        yield _indented(dict(receipt)) + b"\n"
        return
    head = _indented({k: ([] if k == _STEPS else v) for k, v in receipt.items()})
    # The placeholder is found once: only a top-level member starts a line with exactly two
    # spaces and a quote, and JSON strings hold no raw newline.
    at = head.index(_PLACEHOLDER)
    yield head[:at] + _OPEN
    for start in range(0, len(steps), STEPS_PER_PIECE):
        piece = _BETWEEN.join([_compact(step) for step in steps[start:start + STEPS_PER_PIECE]])
        yield piece if start == 0 else _BETWEEN + piece
    yield _CLOSE + head[at + len(_PLACEHOLDER):] + b"\n"


def receipt_json(receipt: Mapping[str, Any]) -> bytes:
    """The bytes of a receipt file, whole (see :func:`receipt_pieces`)."""
    return b"".join(receipt_pieces(receipt))


def write_receipt(file: IO[bytes], receipt: Mapping[str, Any]) -> None:
    """Write a receipt file's bytes to ``file`` piece by piece: never the whole file in memory at once."""
    for piece in receipt_pieces(receipt):
        file.write(piece)
