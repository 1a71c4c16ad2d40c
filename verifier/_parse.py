"""Strict JSON reading: UTF-8, no duplicate keys, no NaN or Infinity, bounded size and depth.

Two parsers decide alike. The quick one is orjson's, kept only when orjson writes the
parsed value back as exactly the bytes read (the layout our files are saved in): such a
text holds no duplicate key (a dropped member would be missing from the rewrite), no
escape or number spelled two ways, and the standard library's parser reads the same
value from it. Anything else (another layout, a duplicate key, NaN, a lone surrogate,
invalid UTF-8) goes to the strict parser below, which names the problem. A text shorter
than :data:`QUICK_PARSE_MIN_BYTES` goes to the strict parser at once: below that size loading
orjson (a tenth of a small run's start-up) costs more than its quick parse saves.

Files are opened with :func:`open_regular`: only regular files are read, so a FIFO, a
socket or a device (given directly, through a symlink or inside a folder) is refused at
once instead of blocking or feeding bytes forever.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import json
import math
import os
import re
import stat
import sys
from typing import IO, Any

from .._infile import NotRegularFile, kind_of
from .._infile import open_regular as _open_regular
from .._limits import (
    MAX_COST_PER_BYTE,
    MAX_INPUT_BYTES,
    MAX_INT_DIGITS,
    MAX_PARSE_COST_BYTES,
    MAX_RECEIPT_DEPTH,
    MAX_STRING_CHARS,
    parse_cost,
)
from .._limits import QUICK_PARSE_MIN_BYTES as _QUICK_PARSE_MIN_BYTES
from .._storage import is_url
from ..errors import MalformedInputError

__all__ = [
    "MAX_DEPTH",
    "MAX_INPUT_BYTES",
    "MAX_STRING_CHARS",
    "MalformedInput",
    "check_json_value",
    "check_parse_cost",
    "file_sha256",
    "open_regular",
    "parse_checked_cost",
    "parse_strict",
    "parse_unwalked",
    "read_input",
    "read_limited",
]

#: Deepest nesting accepted in a receipt or proof (see :mod:`aer1._limits`).
MAX_DEPTH = MAX_RECEIPT_DEPTH
#: Texts from this size on are read by the quick parser first (orjson, loaded then; see :mod:`aer1._limits`).
QUICK_PARSE_MIN_BYTES = _QUICK_PARSE_MIN_BYTES
#: What :func:`file_sha256` reads at a time.
DIGEST_CHUNK_BYTES = 1024 * 1024


class MalformedInput(MalformedInputError):
    """The input cannot be read as JSON under the strict rules."""


def no_constants(name: str) -> Any:
    raise MalformedInput(f"{name} is not valid JSON (no NaN or Infinity)")


def json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise MalformedInput(f"duplicate key {key!r}")
            seen.add(key)
    return obj


def json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise MalformedInput(f"an integer of {len(text)} digits exceeds the {MAX_INT_DIGITS}-digit limit")
    return int(text)


def json_float(text: str) -> float:
    if len(text) > MAX_INT_DIGITS:
        raise MalformedInput(f"a number of {len(text)} characters exceeds the {MAX_INT_DIGITS}-character limit")
    return float(text)


def _refuse_special(path: str, mode: int, what: str) -> None:
    if not stat.S_ISREG(mode):
        raise MalformedInput(f"{path} is {kind_of(mode)}, not {what}: only regular files are read")


def open_regular(path: str | os.PathLike[str], *, what: str = "a receipt file") -> IO[bytes]:
    """Open ``path`` for reading only if it is a regular file (symlinks followed); never blocks.

    ``what`` names the file expected, for the message (``a journal``, ``an evidence file``).
    """
    p = os.fspath(path)
    try:
        return _open_regular(p)
    except NotRegularFile as e:
        raise MalformedInput(f"{p} is {e.kind}, not {what}: only regular files are read") from e
    except OSError as e:
        with contextlib.suppress(OSError):  # a socket cannot be opened at all: name what it is
            _refuse_special(p, os.stat(p).st_mode, what)
        raise MalformedInput(f"cannot read {p}: {e.strerror or e}") from e
    except ValueError as e:  # a NUL character in the name
        raise MalformedInput(f"cannot read {p!r}: {e}") from e


def file_sha256(path: str) -> str:
    """SHA-256 of a regular file's (or a storage object's) bytes, read in chunks."""
    h = hashlib.sha256()
    if is_url(path):  # an object in storage, named in a signed summary
        from .._limits import MAX_EVIDENCE_BYTES
        from .._storage import chunks

        for chunk in chunks(path, MAX_EVIDENCE_BYTES):
            h.update(chunk)
        return h.hexdigest()
    with open_regular(path) as f:
        while chunk := f.read(DIGEST_CHUNK_BYTES):
            h.update(chunk)
    return h.hexdigest()


def read_limited(path: str | os.PathLike[str], limit: int = MAX_PARSE_COST_BYTES, *,
                 what: str = "a receipt file") -> bytes:
    """Read a regular file of at most ``limit`` bytes; never reads more than ``limit + 1``.

    The default is the in-memory parse budget: a longer file could not pass
    :func:`check_parse_cost` anyway (its cost is at least its length), so it is not held.
    """
    p = os.fspath(path)
    with open_regular(p, what=what) as f:
        try:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise MalformedInput(f"{p} is {size} bytes, over the {limit}-byte limit")
            # as much as fstat says, plus one byte to see growth: a read of limit + 1 would
            # allocate the whole limit first (and read in many calls)
            data = f.read(size + 1)
            if len(data) > size:  # the file grew since fstat: read on, still capped
                data += f.read(limit + 1 - len(data))
        except OSError as e:
            raise MalformedInput(f"cannot read {p}: {e.strerror or e}") from e
    if len(data) > limit:
        raise MalformedInput(f"{p} is over the {limit}-byte limit")
    return data


def read_input(path: str, limit: int = MAX_PARSE_COST_BYTES, *, what: str = "a receipt file") -> bytes:
    """A local file's bytes (:func:`read_limited`) or a storage object's (``path`` a URL), at most ``limit``."""
    if not is_url(path):
        return read_limited(path, limit, what=what)
    from .._storage import read_bounded
    from ..errors import StorageError

    try:
        return read_bounded(path, limit)
    except FileNotFoundError as e:
        raise MalformedInput(f"{path}: not found (no such object)") from e
    except StorageError as e:
        raise MalformedInput(str(e)) from e


def check_json_value(value: Any, *, max_depth: int = MAX_DEPTH, max_string: int = MAX_STRING_CHARS) -> None:
    """Check an already-parsed value: JSON types only, finite numbers, bounded depth and strings.

    Members and items that are strings, integers, booleans or null are checked where they
    are met; only objects, arrays and anything else go on the stack (a receipt's steps are
    objects of such scalars, so each step is one pop).
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        v, depth = pop()
        t = type(v)
        if t is dict:
            if depth >= max_depth:
                raise MalformedInput(f"nesting deeper than {max_depth} levels")
            for k, item in v.items():
                if type(k) is not str:
                    raise MalformedInput(f"object key {k!r} is not a string")
                ti = type(item)
                if ti is str:
                    if len(item) > max_string:
                        raise MalformedInput(
                            f"member {k!r}: a string of {len(item)} characters exceeds the {max_string} limit"
                        )
                elif ti is not int and ti is not bool and item is not None:
                    push((item, depth + 1))
        elif t is list:
            if depth >= max_depth:
                raise MalformedInput(f"nesting deeper than {max_depth} levels")
            for item in v:
                ti = type(item)
                if ti is str:
                    if len(item) > max_string:
                        raise MalformedInput(f"a string of {len(item)} characters exceeds the {max_string} limit")
                elif ti is not int and ti is not bool and item is not None:
                    push((item, depth + 1))
        elif t is str:
            if len(v) > max_string:
                raise MalformedInput(f"a string of {len(v)} characters exceeds the {max_string} limit")
        elif t is float:
            if not math.isfinite(v):
                raise MalformedInput(f"number {v!r} is not valid JSON")
        elif v is None or t is bool or t is int:
            pass
        else:
            raise MalformedInput(f"{t.__name__} is not a JSON value")


def check_parse_cost(data: bytes | str, what: str) -> None:
    """Refuse ``data`` whose parse would take more than MAX_PARSE_COST_BYTES (see :func:`parse_cost`)."""
    if len(data) * MAX_COST_PER_BYTE <= MAX_PARSE_COST_BYTES:
        return  # too short to be costly, whatever it holds
    cost = parse_cost(data)
    if cost > MAX_PARSE_COST_BYTES:
        raise MalformedInput(f"{what} would take about {cost >> 20} MiB to parse (limit {MAX_PARSE_COST_BYTES >> 20} "
                             "MiB): too many objects, arrays or items for its size")


def parse_strict(data: bytes, *, what: str = "input", max_depth: int = MAX_DEPTH,
                 max_string: int = MAX_STRING_CHARS) -> Any:
    """Parse UTF-8 JSON strictly; raise :class:`MalformedInput` naming the problem."""
    if len(data) > MAX_INPUT_BYTES:
        raise MalformedInput(f"{what} is {len(data)} bytes, over the {MAX_INPUT_BYTES}-byte limit")
    check_parse_cost(data, what)
    return parse_checked_cost(data, what=what, max_depth=max_depth, max_string=max_string)


def parse_checked_cost(data: bytes, *, what: str = "input", max_depth: int = MAX_DEPTH,
                       max_string: int = MAX_STRING_CHARS) -> Any:
    """:func:`parse_strict` for ``data`` whose size and :func:`parse_cost` the caller has checked already."""
    value, owed = parse_unwalked(data, what=what, max_depth=max_depth, max_string=max_string)
    if owed:
        check_json_value(value, max_depth=max_depth, max_string=max_string)
    return value


def parse_unwalked(data: bytes, *, what: str = "input", max_depth: int = MAX_DEPTH,
                   max_string: int = MAX_STRING_CHARS) -> tuple[Any, bool]:
    """:func:`parse_checked_cost` but for the last step: (value, whether :func:`check_json_value` is owed).

    The caller owing the walk runs it (with the same limits) before using the value; a
    receipt's verifier walks only what its quick step checks did not prove to be JSON data.
    """
    was_enabled = gc.isenabled()
    gc.disable()  # a large receipt is millions of new dicts, none in a cycle: no collections
    try:
        # orjson once loaded (a large file, a folder of receipts) reads any size quicker
        value = _parse_quick(data) if len(data) >= QUICK_PARSE_MIN_BYTES or "orjson" in sys.modules else _MISS
        quick = value is not _MISS
        if not quick:
            value = _parse_exact(data, what)
    finally:
        if was_enabled:
            gc.enable()
    return value, not (quick and _limits_shown(data, max_depth, max_string))


@functools.lru_cache(maxsize=8)
def _line_longer_than(chars: int) -> re.Pattern[bytes]:
    return re.compile(rb"\n[^\n]{%d}" % (chars + 1))


def _limits_shown(data: bytes, max_depth: int, max_string: int) -> bool:
    """Whether the text of a quick parse shows, at C speed, that :func:`check_json_value` cannot refuse it.

    orjson gives JSON types and finite numbers only, so depth and string length are left.
    A short text: no string is longer than the text, no nesting deeper than its brackets.
    The indented layout (verified byte for byte by the quick parse): a member or item at
    nesting level D sits on its own line indented 2 * D spaces, and a string never holds a
    raw newline, so no line indented 2 * max_depth spaces means no container that deep, and
    no line longer than max_string bytes means no string that long. Otherwise: False.
    """
    if len(data) <= max_string and data.count(b"{") + data.count(b"[") < max_depth:
        return True
    if data[1:2] != b"\n" or b"\n" + b" " * (2 * max_depth) in data:
        return False
    steps = _one_line_steps(data)
    if steps is not None:
        # a step on one line: its members sit one level deeper than its indentation says, and
        # a bracket after its opening brace (a deeper container, or one inside a string) is
        # left to the value walk
        at, end = steps
        if (max_depth <= _STEP_LINE_DEPTH or end < 0 or data.count(b"[", at, end) != 1
                or data.count(b"{", at, end) != data.count(_STEP_LINE, at, end)):
            return False
    return data.find(b"\n") <= max_string and _line_longer_than(max_string).search(data) is None


#: The saved layout (``aer1._layout``): how the steps open, how each step's line starts, how
#: the steps close. Each step sits on one line; its members are at this depth.
_STEPS_OPEN = b'\n  "steps": [\n    {'
_STEP_LINE = b"\n    {"
_STEPS_CLOSE = b"\n  ]"
_STEP_LINE_DEPTH = 3


def _one_line_steps(data: bytes) -> tuple[int, int] | None:
    """Where the steps of a text in the saved layout lie (from the steps' opening to their close), or None.

    None for any other text, including an indented receipt, whose first step's brace ends its line.
    """
    at = data.find(_STEPS_OPEN)
    if at < 0 or data[at + len(_STEPS_OPEN):at + len(_STEPS_OPEN) + 1] in (b"\n", b""):
        return None
    return at, data.find(_STEPS_CLOSE, at)


#: What :func:`_parse_quick` gives when it cannot vouch for its parse.
_MISS: Any = object()
_NEWLINE = 0x0A



def _parse_quick(data: bytes) -> Any:
    """orjson's parse of ``data`` if it is written back byte for byte, else _MISS.

    Written back compactly, indented, or in the saved receipt layout (``aer1._layout``: indented,
    a step per line), whichever the text's shape asks for.

    The rewrite is compared in place (no copy of ``data``); one trailing newline is allowed.
    """
    import orjson

    from .._layout import receipt_json

    try:
        value = orjson.loads(data)
        if data[1:2] != b"\n":
            again = orjson.dumps(value)
        elif type(value) is dict and _one_line_steps(data) is not None:
            again = receipt_json(value)
        else:
            again = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, TypeError):
        return _MISS
    n = len(again)
    if len(data) - n in (0, 1) and data.startswith(again) and (len(data) == n or data[n] == _NEWLINE):
        return value
    return _MISS


def parse_line_quick(text: str) -> Any:
    """orjson's parse of one compact line (a step of the saved layout) if it writes it back exactly, else None.

    A text orjson would read differently from the strict parser (a repeated key, an escape,
    spacing, a number in another spelling) is not written back the same, so it goes to the
    strict parser; what orjson refuses (NaN, a lone surrogate, a number past 64 bits) too.
    Limits on values are the caller's. (A line ``null`` also gives None: the strict parser reads it then.)
    """
    import orjson  # loaded already: the streaming verifier uses it

    try:
        value = orjson.loads(text)
        again = orjson.dumps(value)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, TypeError):
        return None
    return value if again == text.encode() else None


def _parse_exact(data: bytes, what: str) -> Any:
    """The standard library's parser with every strict rule enforced; errors name the problem."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MalformedInput(f"{what} is not valid UTF-8 (byte {e.start})") from e
    if text.startswith("\ufeff"):
        raise MalformedInput(f"{what} starts with a byte order mark")
    if not text.strip():
        raise MalformedInput(f"{what} is empty")
    try:
        return json.loads(text, object_pairs_hook=json_pairs, parse_constant=no_constants, parse_int=json_int,
                          parse_float=json_float)
    except MalformedInput:
        raise
    except RecursionError as e:
        raise MalformedInput(f"{what} is nested too deeply") from e
    except json.JSONDecodeError as e:
        raise MalformedInput(f"{what} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
