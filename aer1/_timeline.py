"""A receipt's steps as rows: relative start, duration, a content preview (``aer1 show``, the HTML report).

Everything here reads untrusted input: member values of any type, times that do not
parse, evidence that does not match. A row never fails; what cannot be read is ``None``.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ._canonical import CanonicalizationError, restore
from ._content_hash import content_hash
from .verifier._evidence import evidence_lines, parse_evidence_line
from .verifier._parse import MalformedInput
from .verifier._report import one_line

__all__ = ["PREVIEW_CHARS", "UNMATCHED", "StepRow", "evidence_contents", "format_row", "format_timeline", "preview",
           "step_rows"]

_MAX_ROWS = 60
#: Characters of a step's content shown on its one-line preview.
PREVIEW_CHARS = 80
#: What a step's line says of evidence content that does not hash to the step's receipt_hash.
UNMATCHED = "content does not match its hash"
#: Members of a content object that say best what a step was, in order of preference.
_PREVIEW_KEYS = ("content", "result", "output", "text", "reason", "task", "decision", "selected", "stop_reason",
                 "final_answer")


@dataclass(frozen=True)
class StepRow:
    """One step as a person reads it; times are seconds from the run's first start."""

    seq: Any
    kind: str
    agent: str
    to: str | None
    tool: str
    status: str
    start: float | None
    duration: float | None
    preview: str
    #: True: the content hashes to the step's receipt_hash; False: it does not; None: no content.
    content_matches: bool | None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``aer1 show --json``)."""
        return asdict(self)


def parse_time(value: object) -> float | None:
    """Epoch seconds from an RFC 3339 time, or None when it is not one."""
    if not isinstance(value, str) or len(value) > 64:
        return None
    try:
        t = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        return None
    return t.timestamp()


def evidence_contents(path: str | None, max_steps: int) -> tuple[dict[int, Any], str | None]:
    """Each step's content (tags restored) from an evidence file, up to ``max_steps`` steps.

    Returns the contents by seq and why the file could not be read entirely (or None). The
    file is read under the verifier's limits; a line that does not parse ends the reading.
    """
    out: dict[int, Any] = {}
    if path is None:
        return out, "no evidence file"
    try:
        for number, line in evidence_lines(path):
            if number == 1:
                continue
            record = parse_evidence_line(line, number)
            if isinstance(record, dict) and type(record.get("seq")) is int and "content" in record:
                if len(out) >= max_steps:
                    return out, f"contents after {max_steps} steps are not shown"
                out[record["seq"]] = record["content"]
    except MalformedInput as e:
        return out, f"evidence {path} unreadable: {e}"
    except OSError as e:
        return out, f"cannot read evidence {path}: {e.strerror or e}"
    return out, None


def content_matches(step: Mapping[str, Any], content: Any) -> bool:
    """True when ``content`` hashes to the step's receipt_hash (so it is what was recorded)."""
    try:
        return content_hash(content) == step.get("receipt_hash")
    except CanonicalizationError:
        return False


def preview(content: Any, limit: int = PREVIEW_CHARS) -> str:
    """One printable line saying what a content holds, at most ``limit`` characters."""
    if content is None:
        return ""
    value = restore(content)
    if isinstance(value, dict):
        for key in _PREVIEW_KEYS:
            if key in value and value[key] not in (None, "", [], {}):
                value = value[key]
                break
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))[: limit * 4]
    text = one_line(" ".join(value[: limit * 4].split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(value: object) -> str:
    return value if isinstance(value, str) else str(value)


def step_rows(receipt: Mapping[str, Any], contents: Mapping[int, Any] | None = None,
              display: Callable[[int, Any], Any] | None = None) -> list[StepRow]:
    """One row per step, in seq order, timed from the earliest start among the steps.

    ``display(seq, content)``: what a preview shows of a content (committed fields as disclosed or erased).
    """
    steps = [s for s in receipt.get("steps") or [] if isinstance(s, Mapping)]
    starts = [t for t in (parse_time(s.get("started_at")) for s in steps) if t is not None]
    origin = min(starts) if starts else None
    rows = []
    for s in steps:
        begun, ended = parse_time(s.get("started_at")), parse_time(s.get("ended_at"))
        seq = s.get("seq")
        number = seq if type(seq) is int else None
        has = contents is not None and number is not None and number in contents
        content = contents.get(number) if contents is not None and number is not None else None
        to = s.get("recipient") or s.get("target")
        rows.append(StepRow(
            seq=number,
            kind=_text(s.get("kind", s.get("tool"))),
            agent=_text(s.get("agent")),
            to=None if to is None else _text(to),
            tool=_text(s.get("tool")),
            status=_text(s.get("status")),
            start=None if begun is None or origin is None else round(begun - origin, 6),
            duration=None if begun is None or ended is None else round(max(ended - begun, 0.0), 6),
            preview=("" if not has else preview(content) if display is None or number is None
                     else preview(display(number, content))),
            content_matches=content_matches(s, content) if has else None,
        ))
    return rows


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value * 1000:.0f}ms" if value < 1 else f"{value:.2f}s"


def format_row(r: StepRow) -> str:
    """One step's line: seq, start from the run's start, duration, kind, agent (-> recipient/target), tool,
    status when not ok, preview (flagged when the content does not match its hash)."""
    who = f"{r.agent} -> {r.to}" if r.to else r.agent
    label = "" if r.tool == r.kind else f" [{r.tool}]"
    flag = "" if r.status == "ok" else f"  ({r.status})"
    start = "+?" if r.start is None else f"+{r.start:.3f}s"
    text = f"  {r.preview}" if r.preview else ""
    if r.content_matches is False:
        text = f"  ({UNMATCHED}){text}"
    return one_line(f"  {r.seq if r.seq is not None else '?':>4} {start:>10} {_seconds(r.duration):>7} "
                    f"{r.kind:<17} {who}{label}{flag}{text}")


def format_timeline(receipt: Mapping[str, Any], max_rows: int = _MAX_ROWS, *,
                    contents: Mapping[int, Any] | None = None, verdict: str | None = None,
                    display: Callable[[int, Any], Any] | None = None) -> str:
    """A verdict line (when given), a summary line, then one line per step:
    seq, start from the run's start, duration, kind, agent (-> recipient/target), tool, status, preview."""
    rows = step_rows(receipt, contents, display)
    lines = [verdict] if verdict else []
    lines.append(f"goal: {receipt.get('goal')}  status: {receipt.get('status')}  steps: {len(rows)}")
    shown: list[StepRow | None] = list(rows) if len(rows) <= max_rows else [*rows[: max_rows - 5], None, *rows[-4:]]
    for r in shown:
        if r is None:
            lines.append(f"  ... {len(rows) - max_rows + 1} more steps (--rows shows more, --json every one) ...")
            continue
        lines.append(format_row(r))
    return "\n".join(one_line(line) for line in lines)  # a member's line breaks or escapes never forge a row
