"""The one layout of a saved receipt file: indented members, one line per step.

Every writer of a receipt file (``Collector.save``, ``aer1 recover``, ``aer1 timestamp``,
bundles of linked receipts) takes its bytes from :func:`receipt_json`. The receipt's
members are indented by two spaces, as ``json.dumps(indent=2)`` writes them, except each
element of ``steps``, which is written compactly on a line of its own::

    {
      "type": "aer1-workflow",
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
RFC 8785 bytes, never the file's). A step on one line is about a third of its indented
size and stays readable (and ``grep``-able) one step per line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import orjson

__all__ = ["STEP_INDENT", "receipt_json"]

#: What precedes each step's line: steps sit two levels deep.
STEP_INDENT = b"    "
_STEPS = "steps"
# How orjson's and json's indented output write the empty placeholder list that the steps replace.
_PLACEHOLDER = b'\n  "steps": []'
_OPEN = b'\n  "steps": [\n' + STEP_INDENT
_BETWEEN = b",\n" + STEP_INDENT
_CLOSE = b"\n  ]"

Encoder = Callable[[Any], bytes]


def _orjson_indented(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2)


def _json_indented(value: Any) -> bytes:
    # the standard library writes a lone surrogate as its escape, where orjson refuses it
    return json.dumps(value, indent=2, ensure_ascii=True).encode("ascii")


def _json_compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def receipt_json(receipt: Mapping[str, Any]) -> bytes:
    """The bytes of a receipt file: ``receipt`` in the layout above, ending with a newline.

    A receipt with no ``steps`` list (or an empty one) is indented throughout. Text orjson
    cannot encode (a lone surrogate, in a receipt read from elsewhere) is written with
    ``\\u`` escapes in the same layout; a value neither encoder takes raises ``TypeError``.
    """
    try:
        return _layout(receipt, _orjson_indented, orjson.dumps)
    except orjson.JSONEncodeError:
        try:
            return _layout(receipt, _json_indented, _json_compact)
        except ValueError as e:  # e.g. a circular reference
            raise TypeError(f"receipt is not JSON data: {e}") from e


def _layout(receipt: Mapping[str, Any], indented: Encoder, compact: Encoder) -> bytes:
    steps = receipt.get(_STEPS)
    if type(steps) is not list or not steps:
        return indented(dict(receipt)) + b"\n"
    head = indented({k: ([] if k == _STEPS else v) for k, v in receipt.items()})
    # The placeholder is found once: only a top-level member starts a line with exactly two
    # spaces and a quote, and JSON strings hold no raw newline.
    at = head.index(_PLACEHOLDER)
    lines = _BETWEEN.join([compact(step) for step in steps])
    return b"".join((head[:at], _OPEN, lines, _CLOSE, head[at + len(_PLACEHOLDER):], b"\n"))
