"""What an archive page shows over many receipts: verdicts over time, violations by policy rule, totals per
agent and tool, and the rows (failing receipts first), built from each receipt's row (no HTML here).

The rows reach the page as one JSON data block that the page's script reads and draws one
page of rows at a time (``ROWS_PER_PAGE``), so 10,000 receipts are never 10,000 table rows.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections import Counter
from typing import Any

from .._timeline import parse_time
from ._visible import visible

__all__ = ["ROWS_PER_PAGE", "archive_view", "data_block"]

#: Rows drawn at a time on an archive page (the first page is also in the HTML itself).
ROWS_PER_PAGE = 100
#: Bars of the verdicts-over-time chart: days, or months when the receipts span more days than this.
MAX_BARS = 120
#: The chart's drawing: width, height of the bars' area, left margin for the scale.
CHART_WIDTH, CHART_HEIGHT, CHART_LEFT = 1100, 120, 40
#: Rules and agents or tools listed in the summaries (the most frequent first).
MAX_LISTED = 50
_ORDER = {"MALFORMED": 0, "INVALID": 1, "VALID": 2}


def _day(row: dict[str, Any]) -> str | None:
    t = parse_time(row.get("time"))
    return None if t is None else _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%d")


def _chart(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Stacked bars of verdicts per day (or per month over long spans), oldest first."""
    days = [(d, r["verdict"]) for r in rows if (d := _day(r)) is not None]
    if not days:
        return None
    by_month = len({d for d, _ in days}) > MAX_BARS
    buckets: dict[str, Counter[str]] = {}
    for d, verdict in days:
        buckets.setdefault(d[:7] if by_month else d, Counter())[verdict] += 1
    keys = sorted(buckets)[-MAX_BARS:]
    top = max(sum(buckets[k].values()) for k in keys)
    step = (CHART_WIDTH - CHART_LEFT) / len(keys)
    bars = []
    for n, k in enumerate(keys):
        y = float(CHART_HEIGHT + 10)
        parts = []
        for verdict in ("VALID", "INVALID", "MALFORMED"):
            h = round(buckets[k][verdict] / top * CHART_HEIGHT, 2)
            if h:
                y -= h
                parts.append({"verdict": verdict, "y": round(y, 2), "h": h})
        bars.append({"x": round(CHART_LEFT + n * step, 2), "w": round(max(step - 2, 1), 2), "label": k,
                     "parts": parts, "title": f"{k}: " + ", ".join(f"{buckets[k][v]} {v.lower()}"
                                                              for v in ("VALID", "INVALID", "MALFORMED")
                                                              if buckets[k][v])})
    return {"width": CHART_WIDTH, "height": CHART_HEIGHT + 30, "bars": bars, "top": top, "by": "month" if by_month
            else "day", "first": keys[0], "last": keys[-1], "left": CHART_LEFT, "base": CHART_HEIGHT + 10}


def _span_days(rows: list[dict[str, Any]]) -> float | None:
    """Days between the earliest and the latest receipt's first step (None when no time parses)."""
    times = [t for r in rows if (t := parse_time(r.get("time"))) is not None]
    return None if not times else round((max(times) - min(times)) / 86400, 2)


def _merge(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    for r in rows:
        for t in r.get(key, []):
            m = table.setdefault(t["name"], {"name": t["name"], "short": t["short"], "calls": 0, "errors": 0,
                                             "time": 0.0, "receipts": 0})
            m["calls"] += t["calls"]
            m["errors"] += t["errors"]
            m["time"] += t["time"]
            m["receipts"] += 1
    return sorted(table.values(), key=lambda t: (-t["calls"], t["name"]))[:MAX_LISTED]


def archive_view(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The summaries and the rows in their first order: failing receipts first, then the newest first."""
    ordered = sorted(rows, key=lambda r: (-(parse_time(r.get("time")) or 0.0)))
    ordered.sort(key=lambda r: _ORDER.get(r["verdict"], 0))
    rules: dict[str, dict[str, Any]] = {}
    for r in rows:
        for rule, count in r.get("violations", {}).items():
            v = rules.setdefault(rule, {"rule": rule, "receipts": 0, "violations": 0})
            v["receipts"] += 1
            v["violations"] += count
    return {
        "rows": ordered, "first_page": ordered[:ROWS_PER_PAGE], "per_page": ROWS_PER_PAGE,
        "chart": _chart(rows), "span_days": _span_days(rows),
        "rules": sorted(rules.values(), key=lambda v: (-v["receipts"], v["rule"]))[:MAX_LISTED],
        "agents": _merge(rows, "agent_totals"), "tools": _merge(rows, "tool_totals"),
    }


#: The row members the page's script draws (and searches).
ROW_KEYS = ("verdict", "failed", "reason", "goal", "status", "agents", "steps", "signer", "time", "source", "page")


def data_block(rows: list[dict[str, Any]]) -> str:
    """The rows as JSON for a ``<script type="application/json">`` data block: never run, and with ``<``, ``>``
    and ``&`` escaped so no text in it can end the element or start markup."""
    text = json.dumps([[visible(r[k]) for k in ROW_KEYS] for r in rows], ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
