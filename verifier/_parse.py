"""Strict JSON reading: UTF-8, no duplicate keys, no NaN or Infinity, bounded size and depth."""

from __future__ import annotations

import gc
import json
import math
import os
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_INPUT_BYTES",
    "MAX_STRING_CHARS",
    "MalformedInput",
    "check_json_value",
    "parse_strict",
    "read_limited",
]

#: Largest receipt, proof or evidence line read (bytes).
MAX_INPUT_BYTES = 2 * 1024**3
#: Deepest nesting accepted in a receipt or proof.
MAX_DEPTH = 64
#: Longest string accepted in a receipt or proof (characters).
MAX_STRING_CHARS = 1024 * 1024


class MalformedInput(ValueError):
    """The input cannot be read as JSON under the strict rules."""


def _no_constants(name: str) -> Any:
    raise MalformedInput(f"{name} is not valid JSON (no NaN or Infinity)")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise MalformedInput(f"duplicate key {key!r}")
            seen.add(key)
    return obj


def read_limited(path: str | os.PathLike[str], limit: int = MAX_INPUT_BYTES) -> bytes:
    """Read a file, refusing directories and files over ``limit`` bytes."""
    p = os.fspath(path)
    try:
        if os.path.isdir(p):
            raise MalformedInput(f"{p} is a directory, not a receipt file")
        size = os.path.getsize(p)
        if size > limit:
            raise MalformedInput(f"{p} is {size} bytes, over the {limit}-byte limit")
        with open(p, "rb") as f:
            return f.read()
    except OSError as e:
        raise MalformedInput(f"cannot read {p}: {e.strerror or e}") from e


def check_json_value(value: Any, *, max_depth: int = MAX_DEPTH, max_string: int = MAX_STRING_CHARS) -> None:
    """Check an already-parsed value: JSON types only, finite numbers, bounded depth and strings."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        t = type(v)
        if t is str:
            if len(v) > max_string:
                raise MalformedInput(f"a string of {len(v)} characters exceeds the {max_string} limit")
        elif t is dict or t is list:
            if depth >= max_depth:
                raise MalformedInput(f"nesting deeper than {max_depth} levels")
            if t is dict:
                for k, item in v.items():
                    if type(k) is not str:
                        raise MalformedInput(f"object key {k!r} is not a string")
                    if type(item) is not str:
                        stack.append((item, depth + 1))
                    elif len(item) > max_string:
                        raise MalformedInput(
                            f"member {k!r}: a string of {len(item)} characters exceeds the {max_string} limit"
                        )
            else:
                stack.extend((item, depth + 1) for item in v)
        elif t is float:
            if not math.isfinite(v):
                raise MalformedInput(f"number {v!r} is not valid JSON")
        elif v is None or t is bool or t is int:
            pass
        else:
            raise MalformedInput(f"{t.__name__} is not a JSON value")


def parse_strict(data: bytes, *, what: str = "input") -> Any:
    """Parse UTF-8 JSON strictly; raise :class:`MalformedInput` naming the problem."""
    if len(data) > MAX_INPUT_BYTES:
        raise MalformedInput(f"{what} is {len(data)} bytes, over the {MAX_INPUT_BYTES}-byte limit")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MalformedInput(f"{what} is not valid UTF-8 (byte {e.start})") from e
    if text.startswith("\ufeff"):
        raise MalformedInput(f"{what} starts with a byte order mark")
    if not text.strip():
        raise MalformedInput(f"{what} is empty")
    was_enabled = gc.isenabled()
    gc.disable()  # a large receipt is millions of new dicts, none in a cycle: no collections
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constants)
    except MalformedInput:
        raise
    except RecursionError as e:
        raise MalformedInput(f"{what} is nested too deeply") from e
    except json.JSONDecodeError as e:
        raise MalformedInput(f"{what} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
    finally:
        if was_enabled:
            gc.enable()
    check_json_value(value)
    return value
