"""The steps as checks 6 and 7 need them when the receipt's step dicts are not all held.

The streaming and the process-split paths keep, of each step, its receipt hash (32 bytes)
and, for a signed receipt, its RFC 8785 bytes in a spill file; the in-memory path, when
the quick step checks passed every step, writes its steps' bytes at C speed instead of
walking them twice in Python. Each builds the signed bytes with
:func:`aer1._signing.signing_input_of_parts`, the one writer of the spilled form.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .._canonical import check_exact, sorted_json
from .._signing import signing_input_of_parts

__all__ = ["Hashes", "passed_steps_bytes", "signing_input_of_passed"]

_LEAF = 32


class Hashes(Sequence[Mapping[str, str]]):
    """The steps as the evidence check sees them: only each step's receipt_hash."""

    def __init__(self, raw: bytearray) -> None:
        self._raw = raw

    def __len__(self) -> int:
        return len(self._raw) // _LEAF

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            raise TypeError("slices are not supported")
        if i < 0:
            i += len(self)
        return {"receipt_hash": self._raw[i * _LEAF:(i + 1) * _LEAF].hex()}

    def __iter__(self) -> Iterator[Mapping[str, str]]:
        return (self[i] for i in range(len(self)))


def passed_steps_bytes(steps: Sequence[Any]) -> bytes:
    """The RFC 8785 bytes of steps the quick step checks passed, comma-separated, as the signed bytes hold them.

    Such steps hold only ASCII member names, strings without a lone surrogate and safe
    integers: their sorted JSON is their RFC 8785 form.
    """
    return b",".join([sorted_json(step) for step in steps])


def signing_input_of_passed(wf: Mapping[str, Any]) -> bytearray:
    """The signed bytes of a receipt whose steps all passed the quick step checks (``_fast``).

    Such steps hold only ASCII member names, strings without a lone surrogate and safe
    integers, so their sorted JSON is their RFC 8785 form (what ``exact_bytes`` would write
    after walking each of them twice); the other members go through ``exact_bytes``.
    """
    rest = {k: v for k, v in wf.items() if k != "steps"}
    check_exact({k: v for k, v in rest.items() if k != "signature"})  # the first problem the whole walk would meet
    data = passed_steps_bytes(wf["steps"])
    return signing_input_of_parts(rest, [(io.BytesIO(data), len(data))], None)
