"""Salted commitments: personal fields kept out of what is hashed, so they can be erased later.

A collector told which content fields are personal (``Collector(personal=...)``) replaces
each such value, in the content it hashes, by ``{"$aer1:commit": hex(SHA-256(JCS([salt,
path, value])))}`` and writes the disclosure ``[salt, path, value]`` to a disclosures file
beside the evidence, never into the receipt or the evidence. Erasing a value deletes its
disclosure: the content, its ``receipt_hash``, the chain, root and signature are untouched.
The bytes are in ``spec/erasure.md``.

This module is the one implementation of the format (the tag, the path text, the
commitment, the disclosures file's lines) for producers and the verifier alike.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ._canonical import TAG_OBJECT, TAG_PREFIX, exact_bytes
from ._content_hash import content_hash

__all__ = [
    "COMMIT_TAG",
    "DISCLOSURES_TYPE",
    "DISCLOSURES_VERSION",
    "SALT_BYTES",
    "Marker",
    "Personal",
    "commit_content",
    "commitment",
    "commitments_in",
    "disclosure_line",
    "disclosures_header",
    "disclosures_path_for",
    "erasures_path_for",
    "has_commitment",
    "leaves",
    "marker_for",
    "new_salt",
    "parse_path",
    "pointer",
    "reveal",
    "salt_ok",
]

#: The tag of a committed value: ``{"$aer1:commit": "<64 hex>"}``.
COMMIT_TAG = TAG_PREFIX + "commit"
#: Line 1 of a disclosures file names its type and version.
DISCLOSURES_TYPE = "aer1-disclosures"
DISCLOSURES_VERSION = "1"
#: Random bytes in a fresh salt (128 bits, as SD-JWT, RFC 9901, recommends at least).
SALT_BYTES = 16
#: Shortest salt text a verifier accepts: base64url of SALT_BYTES bytes, unpadded.
_MIN_SALT_CHARS = 22
#: Longest salt text a verifier accepts (a salt is a nonce, not data).
_MAX_SALT_CHARS = 256
_B64URL = re.compile(r"[A-Za-z0-9_-]+")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_COMMIT_BYTES = b'"' + COMMIT_TAG.encode() + b'"'

#: One step of a path into content: an object member's name or an array index.
Segment = str | int
#: A predicate over (path, value): True marks the value personal.
Marker = Callable[[tuple[Segment, ...], Any], bool]
#: What ``Collector(personal=...)`` takes: path patterns, or a predicate.
Personal = Sequence[str] | Marker


# ---------------------------------------------------------------------------- paths


def pointer(path: Sequence[Segment]) -> str:
    """The RFC 6901 JSON Pointer of ``path`` (``("arguments", "email")`` -> ``/arguments/email``)."""
    return "".join("/" + str(s).replace("~", "~0").replace("/", "~1") for s in path)


def parse_path(text: str) -> tuple[str, ...]:
    """Segments of a path: a JSON Pointer (``/a/0/b``) or dotted (``a.0.b``); every segment as text.

    Raises ValueError for an empty path or an empty dotted segment.
    """
    if not isinstance(text, str) or not text:
        raise ValueError(f"a path must be a non-empty string, got {text!r}")
    if text.startswith("/"):
        parts = text[1:].split("/")
        return tuple(p.replace("~1", "/").replace("~0", "~") for p in parts)
    parts = text.split(".")
    if any(p == "" for p in parts):
        raise ValueError(f"path {text!r} has an empty segment (use a JSON Pointer, /a/b, for such names)")
    return tuple(parts)


def _matches(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """``*`` matches one segment, ``**`` any number (none included), anything else itself."""
    if not pattern:
        return not path
    head = pattern[0]
    if head == "**":
        return any(_matches(pattern[1:], path[i:]) for i in range(len(path) + 1))
    return bool(path) and (head == "*" or head == path[0]) and _matches(pattern[1:], path[1:])


def marker_for(personal: Personal | None) -> Marker | None:
    """The predicate ``personal`` stands for (None: nothing is personal); a bad pattern is refused here."""
    if personal is None:
        return None
    if callable(personal):
        return personal
    if isinstance(personal, (str, bytes)) or not isinstance(personal, Sequence):
        raise TypeError(f"personal must be a list of paths or a callable, got {type(personal).__name__}")
    patterns = tuple(parse_path(p) for p in personal)
    if not patterns:
        return None

    def marked(path: tuple[Segment, ...], value: Any) -> bool:
        text = tuple(str(s) for s in path)
        return any(_matches(p, text) for p in patterns)

    return marked


# ---------------------------------------------------------------------- commitments


def salt_ok(salt: Any) -> bool:
    """A salt a verifier takes: unpadded base64url text of at least 16 bytes (and not absurdly long)."""
    return (type(salt) is str and _MIN_SALT_CHARS <= len(salt) <= _MAX_SALT_CHARS and len(salt) % 4 != 1
            and _B64URL.fullmatch(salt) is not None)


def new_salt() -> str:
    """A fresh random salt: SALT_BYTES from the OS's CSPRNG, base64url without padding."""
    import base64  # producers only: a verifier never makes a salt
    import secrets

    return base64.urlsafe_b64encode(secrets.token_bytes(SALT_BYTES)).rstrip(b"=").decode("ascii")


def commitment(salt: str, path: str, value: Any) -> str:
    """hex(SHA-256(JCS([salt, path, value]))): what a committed value is replaced by."""
    return content_hash([salt, path, value])


def _walk(value: Any, path: tuple[Segment, ...]) -> Iterator[tuple[tuple[Segment, ...], Any, Any, Any]]:
    """(path, value, container, key) below ``value``, in document order; ``$aer1:object`` wrappers are
    looked through (their members keep the wrapped object's path), other tags are values."""
    if type(value) is dict:
        if len(value) == 1 and TAG_OBJECT in value and type(value[TAG_OBJECT]) is dict:
            value = value[TAG_OBJECT]
        elif any(type(k) is str and k.startswith(TAG_PREFIX) for k in value):
            return  # a tag: a leaf
        for k, v in value.items():
            yield (*path, k), v, value, k
    elif type(value) is list:
        for i, v in enumerate(value):
            yield (*path, i), v, value, i


def commit_content(cbytes: bytes, marked: Marker) -> tuple[bytes, list[list[Any]]]:
    """Commit every marked field of the canonical content ``cbytes``: (new canonical bytes, disclosures).

    The outermost marked value is committed whole (a marked value below it is part of it).
    When nothing is marked the bytes are returned as they are, and no disclosure.
    """
    import orjson  # producers only

    content = _loads(cbytes)
    # When orjson writes these very bytes, it writes the committed content exactly too (what is left of the
    # content is a part of it, and a commitment is one ASCII member holding hex): no pure-Python encoding.
    try:
        orjson_exact = orjson.dumps(content, option=orjson.OPT_SORT_KEYS) == cbytes
    except (orjson.JSONEncodeError, TypeError):
        orjson_exact = False
    disclosures: list[list[Any]] = []
    stack = [((), content)]
    while stack:
        path, node = stack.pop()
        children = list(_walk(node, path))
        for child_path, value, container, key in reversed(children):
            if marked(child_path, value):
                salt, where = new_salt(), pointer(child_path)
                container[key] = {COMMIT_TAG: commitment(salt, where, value)}
                disclosures.append([salt, where, value])
            else:
                stack.append((child_path, value))
    if not disclosures:
        return cbytes, disclosures
    disclosures.sort(key=lambda d: d[1])
    return (orjson.dumps(content, option=orjson.OPT_SORT_KEYS) if orjson_exact else exact_bytes(content)), disclosures


def _loads(data: bytes) -> Any:
    """Canonical bytes read back as exact JSON data (the standard parser when orjson refuses a long integer)."""
    import orjson

    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def commitments_in(content: Any) -> dict[str, str]:
    """Each commitment in ``content``: pointer -> digest. Raises ValueError for a malformed tag."""
    found: dict[str, str] = {}
    stack: list[tuple[tuple[Segment, ...], Any]] = [((), content)]
    while stack:
        path, node = stack.pop()
        if type(node) is dict and COMMIT_TAG in node:
            digest = node[COMMIT_TAG]
            if len(node) != 1 or type(digest) is not str or _HEX64.fullmatch(digest) is None:
                raise ValueError(f"malformed commitment at {pointer(path) or '/'}: want "
                                 f'{{"{COMMIT_TAG}": "<64 lowercase hex>"}}')
            found[pointer(path)] = digest
            continue
        stack.extend((p, v) for p, v, _, _ in _walk(node, path))
    return found


def leaves(value: Any) -> Iterator[Any]:
    """Every value inside ``value`` that is not an object or an array (object members by value)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is dict:
            stack.extend(v.values())
        elif type(v) is list:
            stack.extend(v)
        else:
            yield v


def has_commitment(line: bytes) -> bool:
    """True when an evidence line may hold a commitment (its tag's bytes appear in it)."""
    return _COMMIT_BYTES in line


# ------------------------------------------------------------------------- files


def disclosures_header(workflow_id: str) -> bytes:
    """Line 1 of a disclosures file."""
    return json.dumps({"type": DISCLOSURES_TYPE, "version": DISCLOSURES_VERSION, "workflow_id": workflow_id},
                      separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def disclosure_line(seq: int, disclosure: list[Any]) -> bytes:
    """One disclosure's line: ``{"seq":N,"disclosure":[salt,path,value]}`` in RFC 8785 form."""
    return exact_bytes({"seq": seq, "disclosure": disclosure}) + b"\n"


def _stem(evidence: str) -> str:
    for suffix in (".evidence.jsonl", ".jsonl"):
        if evidence.endswith(suffix):
            return evidence[: -len(suffix)]
    return evidence


def disclosures_path_for(evidence: str | os.PathLike[str]) -> str:
    """The disclosures file beside an evidence file: ``NAME.evidence.jsonl`` -> ``NAME.disclosures.jsonl``."""
    return _stem(os.fspath(evidence)) + ".disclosures.jsonl"


def erasures_path_for(evidence: str | os.PathLike[str]) -> str:
    """The erasure records beside an evidence file: ``NAME.evidence.jsonl`` -> ``NAME.erasures.jsonl``."""
    return _stem(os.fspath(evidence)) + ".erasures.jsonl"


def reveal(content: Any, found: Callable[[str], Any]) -> Any:
    """``content`` with each commitment replaced by ``found(pointer)`` (a disclosed value, or a placeholder)."""
    def swap(node: Any, path: tuple[Segment, ...]) -> Any:
        if type(node) is dict and COMMIT_TAG in node and len(node) == 1:
            return found(pointer(path))
        if type(node) is dict:
            inner = node
            wrapped = len(node) == 1 and TAG_OBJECT in node and type(node[TAG_OBJECT]) is dict
            if wrapped:
                inner = node[TAG_OBJECT]
            elif any(type(k) is str and k.startswith(TAG_PREFIX) for k in node):
                return node
            out = {k: swap(v, (*path, k)) for k, v in inner.items()}
            return {TAG_OBJECT: out} if wrapped else out
        if type(node) is list:
            return [swap(v, (*path, i)) for i, v in enumerate(node)]
        return node

    return swap(content, ())
