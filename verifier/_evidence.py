"""Check 7: every evidence content hashes to its step's receipt_hash."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any

from .._canonical import CanonicalizationError, is_plain, sorted_json
from .._content_hash import content_hash, hash_of_canonical
from .._limits import (
    MAX_COST_PER_BYTE,
    MAX_EVIDENCE_BYTES,
    MAX_EVIDENCE_DEPTH,
    MAX_EVIDENCE_LINE_BYTES,
    MAX_PARSE_COST_BYTES,
)
from .._receipt import EVIDENCE_TYPE, evidence_path_for
from ._parse import MalformedInput, check_parse_cost, open_regular, parse_strict
from ._report import CheckResult

__all__ = [
    "MAX_EVIDENCE_LINE_BYTES",
    "check_evidence",
    "evidence_for",
    "evidence_lines",
    "evidence_passed",
    "header_ok",
    "line_exact",
    "parse_evidence_line",
]


def evidence_lines(path: str) -> Any:
    """(number, line) for each line; no line is held beyond MAX_EVIDENCE_LINE_BYTES + 1 bytes."""
    with open_regular(path, what="an evidence file") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_EVIDENCE_BYTES:
            raise MalformedInput(f"{path} is {size} bytes, over the {MAX_EVIDENCE_BYTES}-byte evidence limit")
        number = 0
        while True:
            line = f.readline(MAX_EVIDENCE_LINE_BYTES + 1)
            if not line:
                return
            number += 1
            if len(line) > MAX_EVIDENCE_LINE_BYTES:
                raise MalformedInput(f"line {number} is over {MAX_EVIDENCE_LINE_BYTES} bytes")
            if not line.endswith(b"\n"):
                raise MalformedInput(f"line {number} is cut short (no newline at the end)")
            yield number, line


def parse_evidence_line(line: bytes, number: int) -> Any:
    """Parse one evidence line under the content limits (what ``record()`` accepts, this reads)."""
    return parse_strict(line, what=f"evidence line {number}", max_depth=MAX_EVIDENCE_DEPTH,
                        max_string=MAX_EVIDENCE_LINE_BYTES)


def line_exact(line: bytes, number: int, seq: int, want: str) -> bool:
    """True when the line is, byte for byte, the one our writer makes for step ``seq`` with hash ``want``.

    That is: ``{"seq":N,"receipt_hash":"H","content":C}`` with C already its own RFC 8785
    form (the sorted output of a plain value: no float, no unsafe integer, no reserved
    key, keys that sort the same by code point and by UTF-16; what ``exact_bytes`` writes),
    within the line limits, hashing to H. The
    strict path would then parse the same record and pass it; any other line (or any
    doubt) goes to the strict path, which decides and words it. The content is read by
    orjson when it is loaded, else by the standard library's parser: either way only a
    content written back byte for byte is taken.
    """
    prefix = b'{"seq":%d,"receipt_hash":"%s","content":' % (seq, want.encode())
    if not (line.startswith(prefix) and line.endswith(b"}\n")):
        return False
    content = line[len(prefix):-2]
    if hash_of_canonical(content) != want:
        return False
    orjson = sys.modules.get("orjson")
    try:
        value = orjson.loads(content) if orjson is not None else json.loads(content)
        if not is_plain(value) or sorted_json(value) != content:
            return False
    except (ValueError, TypeError, RecursionError):  # orjson's errors are ValueError and TypeError
        return False
    if len(line) * MAX_COST_PER_BYTE <= MAX_PARSE_COST_BYTES:
        return True  # too short to be costly (the other limits hold already: strings are shorter than the line)
    try:
        check_parse_cost(line, f"evidence line {number}")
    except MalformedInput:
        return False
    return True


def check_evidence(wf: Mapping[str, Any], path: str, result: CheckResult) -> None:
    """Recompute each step's receipt_hash from the evidence file at ``path``."""
    steps = wf["steps"]
    n = len(steps)
    seen = 0
    try:
        for number, line in evidence_lines(path):
            if number > 1 and seen < n and line_exact(line, number, seen + 1, steps[seen]["receipt_hash"]):
                seen += 1
                continue
            record = parse_evidence_line(line, number)
            if number == 1:
                if not isinstance(record, dict) or record.get("type") != EVIDENCE_TYPE:
                    result.fail(f"{path} is not an aer1 evidence file (line 1 is not its header)")
                    return
                if record.get("workflow_id") != wf.get("workflow_id"):
                    result.fail("evidence belongs to another workflow", expected=wf.get("workflow_id"),
                                actual=record.get("workflow_id"))
                    return
                continue
            if not isinstance(record, dict) or set(record) != {"seq", "receipt_hash", "content"}:
                result.fail(f"evidence line {number} is not {{seq, receipt_hash, content}}")
                return
            seq = record["seq"]
            if type(seq) is not int or seq != seen + 1:
                result.fail(f"evidence line {number} is out of order", seq=seq if type(seq) is int else None,
                            expected=seen + 1, actual=seq)
                return
            if seq > n:
                result.fail(f"evidence line {number} is for a step the receipt does not have", seq=seq)
                return
            seen = seq
            try:
                digest = content_hash(record["content"])  # never normalized
            except CanonicalizationError as e:
                result.fail(f"evidence content has no exact JSON form, so it is not what was hashed: {e}", seq=seq)
                return
            want = steps[seq - 1]["receipt_hash"]
            if record["receipt_hash"] != want:
                result.fail("evidence line's receipt_hash is not its step's receipt_hash", seq=seq,
                            expected=want, actual=repr(record["receipt_hash"]))
                return
            if digest != want:
                result.fail("evidence content does not hash to the step's receipt_hash", seq=seq,
                            expected=want, actual=digest)
                return
    except (MalformedInput, CanonicalizationError) as e:
        result.fail(f"evidence file {path} unreadable: {e}")
        return
    except OSError as e:
        result.fail(f"cannot read evidence file {path}: {e.strerror or e}")
        return
    if seen < n:
        result.fail(f"evidence ends after {seen} of {n} steps", seq=seen + 1)
        return
    evidence_passed(result, n, path)


def evidence_passed(result: CheckResult, n: int, path: str) -> None:
    """Check 7 passed: every one of the ``n`` step contents in ``path`` hashes to its receipt_hash."""
    result.passed(f"{n} step contents hash to their receipt_hash ({os.path.basename(path)})")


def header_ok(line: bytes, workflow_id: Any) -> bool:
    """True when ``line`` (the file's first, with its newline) is an evidence header for ``workflow_id``."""
    try:
        record = parse_evidence_line(line, 1)
    except MalformedInput:
        return False
    return isinstance(record, dict) and record.get("type") == EVIDENCE_TYPE and record.get(
        "workflow_id") == workflow_id


def evidence_for(receipt: str | None, explicit: str | os.PathLike[str] | None) -> str | None:
    """The evidence file the verifier used for ``receipt``: ``--evidence`` or the one beside it."""
    if explicit is not None:
        return os.fspath(explicit)
    if receipt is None:
        return None
    beside = evidence_path_for(receipt)
    return beside if os.path.lexists(beside) else None
