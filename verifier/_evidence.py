"""Check 7: every evidence content hashes to its step's receipt_hash."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any

from ..canonical import CanonicalizationError, exact_bytes
from ..evidence import EVIDENCE_TYPE
from ._parse import MAX_INPUT_BYTES, MalformedInput, parse_strict
from ._report import CheckResult

__all__ = ["MAX_EVIDENCE_LINE_BYTES", "check_evidence"]

#: Longest evidence line read (bytes).
MAX_EVIDENCE_LINE_BYTES = 256 * 1024 * 1024


def _lines(path: str) -> Any:
    if os.path.isdir(path):
        raise MalformedInput(f"{path} is a directory, not an evidence file")
    size = os.path.getsize(path)
    if size > MAX_INPUT_BYTES * 4:
        raise MalformedInput(f"{path} is {size} bytes, over the evidence size limit")
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            if len(line) > MAX_EVIDENCE_LINE_BYTES:
                raise MalformedInput(f"line {number} is over {MAX_EVIDENCE_LINE_BYTES} bytes")
            if not line.endswith(b"\n"):
                raise MalformedInput(f"line {number} is cut short (no newline at the end)")
            yield number, line


def check_evidence(wf: Mapping[str, Any], path: str, result: CheckResult) -> None:
    """Recompute each step's receipt_hash from the evidence file at ``path``."""
    steps = wf["steps"]
    n = len(steps)
    seen = 0
    try:
        for number, line in _lines(path):
            record = parse_strict(line, what=f"evidence line {number}")
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
            if seq != seen + 1:
                result.fail(f"evidence line {number} is out of order", seq=seq if type(seq) is int else None,
                            expected=seen + 1, actual=seq)
                return
            if seq > n:
                result.fail(f"evidence line {number} is for a step the receipt does not have", seq=seq)
                return
            seen = seq
            try:
                digest = hashlib.sha256(exact_bytes(record["content"])).hexdigest()  # never normalized
            except CanonicalizationError as e:
                result.fail(f"evidence content has no exact JSON form, so it is not what was hashed: {e}", seq=seq)
                return
            want = steps[seq - 1]["receipt_hash"]
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
    result.passed(f"{n} step contents hash to their receipt_hash ({os.path.basename(path)})")
