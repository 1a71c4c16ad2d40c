"""A receipt's steps as rows for spreadsheets and notebooks (``aer1 show --csv`` and ``--jsonl``).

One row per step, in seq order: the step's own members, its time from the run's first
start, whether its content from the evidence hashes to its ``receipt_hash``, and the content's
essential fields (one reader of content shapes: aer1/_report/_content.py), tags restored.
``--jsonl`` also carries the whole content as the evidence holds it (the exact JSON that
hashes to ``receipt_hash``, normalization tags kept: spec/canonical.md). Everything is untrusted data: a CSV cell that a
spreadsheet would read as a formula (one starting with ``= + - @``, a tab or a carriage
return) is prefixed with ``'``, and cells are cut at a spreadsheet cell's size.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from typing import Any

from ._report._content import FIELDS, essentials
from ._timeline import step_rows

__all__ = ["COLUMNS", "CSV_CELL_CHARS", "csv_text", "export_rows", "jsonl_lines", "neutralise"]

#: Characters of one CSV cell (a spreadsheet holds 32,767); a longer value is cut with a note.
CSV_CELL_CHARS = 32_000
#: The row's columns, in order: the step's members, then its content's essential fields.
COLUMNS = ("seq", "kind", "agent", "to", "tool", "status", "started_at", "ended_at", "start", "duration",
           "receipt_id", "call_id", "content_matches", *(f for f in FIELDS if f != "tool"))
#: What a spreadsheet takes as the start of a formula (OWASP's list for CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _member(step: Mapping[str, Any], name: str) -> str | None:
    value = step.get(name)
    return None if value is None else value if isinstance(value, str) else json.dumps(value, default=str)


def export_rows(receipt: Mapping[str, Any], contents: Mapping[int, Any]) -> Iterator[dict[str, Any]]:
    """One dict per step (``COLUMNS``, and ``content``: the whole content as recorded, or None)."""
    steps = [s for s in receipt.get("steps") or [] if isinstance(s, Mapping)]
    for step, row in zip(steps, step_rows(receipt, contents), strict=True):
        content = contents.get(row.seq) if row.seq is not None else None
        found = essentials(row.kind, content, tool=row.tool, target=row.to).as_dict() if content is not None else {}
        out: dict[str, Any] = {
            "seq": row.seq, "kind": row.kind, "agent": row.agent, "to": row.to, "tool": row.tool,
            "status": row.status, "started_at": _member(step, "started_at"), "ended_at": _member(step, "ended_at"),
            "start": row.start, "duration": row.duration, "receipt_id": _member(step, "receipt_id"),
            "call_id": _member(step, "call_id"), "content_matches": row.content_matches,
        }
        out.update({f: found.get(f) for f in COLUMNS[len(out):]})
        out["content"] = content
        yield out


def neutralise(cell: str) -> str:
    """A cell a spreadsheet shows as text, never evaluates; cut to CSV_CELL_CHARS."""
    if len(cell) > CSV_CELL_CHARS:
        cell = f"{cell[:CSV_CELL_CHARS]}… [{len(cell) - CSV_CELL_CHARS} more characters not shown]"
    return "'" + cell if cell.startswith(_FORMULA_START) else cell


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return neutralise(value if isinstance(value, str) else str(value))


def csv_text(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    """The rows as CSV (RFC 4180, a header line first), one line of text at a time."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([_cell(row[c]) for c in COLUMNS])
        if buffer.tell() > 1 << 16:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def jsonl_lines(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    """The rows as JSON Lines: one object per line, ASCII (a lone surrogate written as its escape)."""
    for row in rows:
        yield json.dumps(row, ensure_ascii=True, allow_nan=False, separators=(",", ":")) + "\n"
