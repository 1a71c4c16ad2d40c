"""The step hash chain: domain-separated digests and the UUIDv8 step ids derived from them.

Each step's digest is SHA-256 over a domain tag and the RFC 8785 bytes of the step
without its ``receipt_id``; the step's ``prev_digest`` is the digest of the step before
(for step 1, a genesis digest binding the workflow id). The step ``receipt_id`` is an
RFC 9562 version-8 UUID made from the first 16 bytes of the digest, so the Section 8.1
Merkle root over receipt ids commits to every member of every step and to their order.

This module is the only one that writes these rules: the producers (collector, recovery)
and every verifier path call it. Each rule has a single form (one step) and, where a
verifier path checks many steps at once, a batch form (:func:`step_digests`,
:func:`derived_ids_hex`) that ``tests/core/test_chain.py`` holds equal to it.
"""

from __future__ import annotations

import hashlib
import re
import struct
import sys
from collections.abc import Mapping, Sequence
from functools import partial
from itertools import chain
from json.encoder import encode_basestring as _json_string
from operator import itemgetter
from typing import Any

from ._canonical import exact_bytes, sorted_json
from ._receipt import PROFILE, STEP_REQUIRED_MEMBERS

__all__ = [
    "DERIVED_ID_PATTERN",
    "GENESIS_TAG",
    "PROFILE",
    "STEP_TAG",
    "derived_ids_hex",
    "genesis_digest",
    "is_derived_id",
    "sha256_hex",
    "step_digest",
    "step_digest_from_bytes",
    "step_digest_hex",
    "step_digests",
    "step_link",
    "uuid8_from_digest",
    "uuid8_from_hex",
]

#: Domain tag of the genesis digest (step 1's ``prev_digest``).
GENESIS_TAG = b"aer1-chain-v1/genesis\x00"
#: Domain tag of every step digest.
STEP_TAG = b"aer1-chain-v1/step\x00"
#: A step id derived by the chain: RFC 9562 version 8, variant 10.
DERIVED_ID_PATTERN = r"[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
_DERIVED_ID = re.compile(DERIVED_ID_PATTERN, re.ASCII)
_DIGEST_LEN = 32
_sha256 = hashlib.sha256
#: SHA-256 with the step tag already absorbed: copied per step, so the tag is hashed once.
_STEP_HASH = _sha256(STEP_TAG)
# hex digit -> the same digit with its top two bits set to the RFC 9562 variant 10
_VARIANT = {f"{i:x}": f"{(i & 0x3) | 0x8:x}" for i in range(16)}
# a step id is the digest's first 16 bytes with the version (8) and variant (10) bits set
_ID_KEEP = bytes.fromhex("ffffffffffff0fff3fffffffffffffff")
_ID_SET = bytes.fromhex("00000000000080008000000000000000")
_PREFIX = struct.Struct("16s16x")
#: The types a step's values may have for the batch encoding (exactly these: no subclass).
_STEP_VALUE_TYPES = frozenset((str, int))
#: A step of the required members only, without receipt_id, in RFC 8785 form: its members
#: (ASCII names) in sorted order, each ``%s`` a value already written as JSON.
_BODY = sorted(m for m in STEP_REQUIRED_MEMBERS if m != "receipt_id")
_BODY_TEMPLATE = "{" + ",".join(f'"{m}":%s' for m in _BODY) + "}"
_BODY_AT = tuple(STEP_REQUIRED_MEMBERS.index(m) for m in _BODY)
_SEQ_AT = STEP_REQUIRED_MEMBERS.index("seq")


def sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data`` as 64 lowercase hex characters."""
    return _sha256(data).hexdigest()


def genesis_digest(workflow_id: str) -> str:
    """The ``prev_digest`` of step 1: binds the chain to its workflow."""
    return _sha256(GENESIS_TAG + workflow_id.encode("utf-8")).hexdigest()


# ------------------------------------------------------------------ one step


def step_digest_from_bytes(step_bytes: bytes) -> bytes:
    """Digest of a step given the canonical bytes of the step without ``receipt_id``."""
    digest = _STEP_HASH.copy()
    digest.update(step_bytes)
    return digest.digest()


def step_link(step_bytes: bytes) -> tuple[str, str]:
    """``(digest hex, derived receipt_id)`` of a step given its canonical bytes without ``receipt_id``.

    What a producer needs to chain a step it has just written: the digest is the next
    step's ``prev_digest``, the id is this step's ``receipt_id``.
    """
    digest = _STEP_HASH.copy()
    digest.update(step_bytes)
    h = digest.hexdigest()
    return h, f"{h[:8]}-{h[8:12]}-8{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


def step_digest(step: Mapping[str, Any]) -> bytes:
    """Digest of a step: SHA-256(STEP_TAG || JCS(step without receipt_id))."""
    body = {k: v for k, v in step.items() if k != "receipt_id"}
    return step_digest_from_bytes(exact_bytes(body))


def step_digest_hex(step: Mapping[str, Any], *, flat: bool = False) -> str:
    """``hex(step_digest(step))``: what the next step's ``prev_digest`` must be.

    ``flat=True`` promises what a verified profile step guarantees (ASCII member names,
    string values, an integer seq within 2**53): then the sorted output is already
    the JCS encoding and the plainness walk is skipped. Raises
    :class:`~aer1._canonical.CanonicalizationError` if the step is not JSON data.
    """
    body = dict(step)
    body.pop("receipt_id", None)
    if flat:
        try:
            encoded = sorted_json(body)
        except (TypeError, ValueError):
            pass  # e.g. a lone surrogate: the exact encoder names the problem
        else:
            digest = _STEP_HASH.copy()
            digest.update(encoded)
            return digest.hexdigest()
    digest = _STEP_HASH.copy()
    digest.update(exact_bytes(body))
    return digest.hexdigest()


def uuid8_from_digest(digest: bytes) -> str:
    """RFC 9562 version-8 UUID from the first 16 bytes of a digest, lowercase.

    Byte 6's high nibble becomes the version (8) and byte 8's top two bits the
    variant (10); the other 122 bits are the digest's.
    """
    if len(digest) != _DIGEST_LEN:
        raise ValueError(f"digest length: got {len(digest)} bytes, want {_DIGEST_LEN}")
    return uuid8_from_hex(digest.hex())


def uuid8_from_hex(digest_hex: str) -> str:
    """:func:`uuid8_from_digest` given the digest as lowercase hex (the hot path)."""
    h = digest_hex
    return f"{h[:8]}-{h[8:12]}-8{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


def is_derived_id(v: Any) -> bool:
    """True when ``v`` has the layout of a derived step id (a string, version 8, variant 10)."""
    return type(v) is str and _DERIVED_ID.fullmatch(v) is not None


# ------------------------------------------------------------------ many steps


def step_digests(steps: Sequence[dict[str, Any]], columns: Sequence[tuple[Any, ...]] | None = None) -> bytes:
    """Each step's :func:`step_digest`, concatenated: the batch form for steps a verifier checks at once.

    Only for steps whose sorted encoding is their RFC 8785 form (ASCII member names,
    strings, safe integers: what a verifier's member checks establish). The encoding refuses
    any value that is not exactly a JSON type (TypeError), so the steps it takes are JSON
    data. With orjson loaded it writes them (refusing subclasses itself); otherwise the
    standard library's encoder does (:func:`~aer1._canonical.sorted_json`, the same bytes),
    once every value is seen to be exactly a ``str`` or an ``int``. ``columns``, given when
    every step holds the required members only (each member's values, in
    STEP_REQUIRED_MEMBERS order): without orjson the steps are then written column by column
    into one template. Each step must hold a ``receipt_id`` (KeyError otherwise).
    """
    orjson = sys.modules.get("orjson")
    if orjson is None and columns is not None:
        return _digests_of_columns(columns)
    if orjson is not None:
        option = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS  # subclasses refused (no ``default``)
        dumps: Any = partial(orjson.dumps, option=option)
    elif set(map(type, chain.from_iterable(map(dict.values, steps)))) <= _STEP_VALUE_TYPES:
        dumps = sorted_json
    else:
        raise TypeError("a step value is not exactly a string or an integer")
    out: list[bytes] = []
    append, copy = out.append, _STEP_HASH.copy
    for step in steps:
        body = step.copy()
        del body["receipt_id"]
        digest = copy()
        digest.update(dumps(body))
        append(digest.digest())
    return b"".join(out)


def _digests_of_columns(columns: Sequence[tuple[Any, ...]]) -> bytes:
    """:func:`step_digests` of steps holding the required members only, written without orjson.

    Every value must be exactly a ``str`` (seq exactly an ``int``, checked by the caller): each
    string is written by the standard library's JSON string encoder (``ensure_ascii=False``,
    which escapes only ``"``, ``\\`` and control characters, as RFC 8785 does), seq as its
    digits, and the members fall into the template in sorted order. A lone surrogate is
    written as it is and refused when the text is encoded (UnicodeEncodeError, a ValueError).
    """
    written: list[Any] = []
    for at, values in enumerate(columns):
        if at == _SEQ_AT:
            written.append(map(str, values))
        elif set(map(type, values)) != {str}:
            raise TypeError("a step value is not exactly a string")
        else:
            written.append(map(_json_string, values))
    texts = map(_BODY_TEMPLATE.__mod__, zip(*(written[at] for at in _BODY_AT), strict=True))
    copy = _STEP_HASH.copy
    out: list[bytes] = []
    for text in texts:
        digest = copy()
        digest.update(text.encode())
        out.append(digest.digest())
    return b"".join(out)


def derived_ids_hex(digests: bytes) -> str:
    """The step ids (:func:`uuid8_from_digest`) of concatenated 32-byte digests, as lowercase hex without dashes."""
    n = len(digests) // _DIGEST_LEN
    prefixes = b"".join(map(itemgetter(0), _PREFIX.iter_unpack(digests)))
    value = int.from_bytes(prefixes, "big") & int.from_bytes(_ID_KEEP * n, "big") | int.from_bytes(_ID_SET * n, "big")
    return value.to_bytes(16 * n, "big").hex()
