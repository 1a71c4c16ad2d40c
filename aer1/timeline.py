"""A short human-readable timeline of a receipt's steps (for examples and ``aer1 show``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .verifier._report import one_line

__all__ = ["format_timeline"]

_MAX_ROWS = 60


def format_timeline(receipt: Mapping[str, Any], max_rows: int = _MAX_ROWS) -> str:
    """One line per step: seq, time, kind, agent (-> recipient/target), tool, status."""
    steps = receipt.get("steps") or []
    lines = [f"goal: {receipt.get('goal')}  status: {receipt.get('status')}  steps: {len(steps)}"]
    shown = steps if len(steps) <= max_rows else [*steps[: max_rows - 5], None, *steps[-4:]]
    for s in shown:
        if s is None:
            lines.append(f"  ... {len(steps) - max_rows + 1} more steps ...")
            continue
        to = s.get("recipient") or s.get("target")
        who = f"{s.get('agent')} -> {to}" if to else str(s.get("agent"))
        clock = str(s.get("started_at", ""))[11:26]
        label = "" if s.get("tool") == s.get("kind") else f" [{s.get('tool')}]"
        flag = "" if s.get("status") == "ok" else f"  ({s.get('status')})"
        lines.append(f"  {s.get('seq'):>4} {clock} {s.get('kind', s.get('tool')):<17} {who}{label}{flag}")
    return "\n".join(one_line(line) for line in lines)  # a member's line breaks or escapes never forge a row
