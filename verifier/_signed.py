"""The steps as checks 6 and 7 need them when the receipt's step dicts are not all held.

The streaming and the process-split paths keep, of each step, its receipt hash (32 bytes)
and, for a signed receipt, its RFC 8785 bytes in a spill file; the in-memory path, when
the quick step checks passed every step, writes its steps' bytes at C speed instead of
walking them twice in Python. Each builds the signed bytes here, in one place.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

from .._canonical import CanonicalizationError, check_exact, exact_bytes, sorted_json
from .._signing import PAYLOAD_TYPE, pae

__all__ = ["Hashes", "passed_steps_bytes", "signing_input", "signing_input_of_passed"]

_LEAF = 32
_LEN_FIELD = 8
#: Bytes copied from a spill file at a time.
_COPY_BYTES = 4 * 1024 * 1024


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


def _jcs_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def signing_input(rest: Mapping[str, Any], spills: Sequence[tuple[IO[bytes], int]],
                  unencodable: str | None) -> bytearray:
    """``pae(PAYLOAD_TYPE, JCS(receipt without signature))`` from its members and its steps' spilled bytes.

    ``spills``: files holding the steps' JCS bytes, comma-separated, in order, each with
    its length (joined here by commas). CanonicalizationError (``unencodable``'s message)
    when a step has no exact JCS form: the receipt then has no signed bytes.
    """
    if unencodable is not None:
        raise CanonicalizationError(unencodable)
    body = {k: v for k, v in rest.items() if k != "signature"}
    keys = sorted([*body, "steps"], key=_jcs_key)
    cut = keys.index("steps")

    def members(names: list[str]) -> bytes:
        return b",".join(exact_bytes(k) + b":" + exact_bytes(body[k]) for k in names)

    before, after = members(keys[:cut]), members(keys[cut + 1:])
    head = pae(PAYLOAD_TYPE, b"")[:-_LEN_FIELD]  # the domain and the type; the body's length comes next
    front = b"{" + before + (b"," if before else b"") + b'"steps":['
    back = b"]" + (b"," if after else b"") + after + b"}"
    parts = [(spill, n) for spill, n in spills if n]
    steps_len = sum(n for _, n in parts) + max(len(parts) - 1, 0)
    msg = bytearray(len(head) + _LEN_FIELD + len(front) + steps_len + len(back))
    view = memoryview(msg)
    at = len(head) + _LEN_FIELD
    view[:len(head)] = head
    view[len(head):at] = struct.pack(">Q", len(msg) - at)
    view[at:at + len(front)] = front
    at += len(front)
    for k, (spill, n) in enumerate(parts):
        if k:
            view[at:at + 1] = b","
            at += 1
        spill.seek(0)
        end = at + n
        while at < end:
            chunk = spill.read(min(_COPY_BYTES, end - at))
            if not chunk:
                raise OSError("the spilled step bytes ended early")
            view[at:at + len(chunk)] = chunk
            at += len(chunk)
    view[at:] = back
    view.release()
    return msg


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
    return signing_input(rest, [(io.BytesIO(data), len(data))], None)
