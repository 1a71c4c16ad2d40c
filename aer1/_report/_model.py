"""What a page shows, built from a receipt, its evidence and the verifier's report (no HTML here).

Everything read from the receipt or the evidence is untrusted: it is only ever turned into
strings and numbers here, bounded by the limits below, and escaped by the templates.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from .._canonical import restore
from .._limits import MAX_INPUT_BYTES
from .._redact import REDACTED
from .._timeline import StepRow, evidence_contents, parse_time, step_rows
from ..verifier._archive import Outcome
from ..verifier._disclosures import Unrevealed, revealed
from ..verifier._parse import MalformedInput, parse_strict, read_limited
from ..verifier._policy import POLICY_CHECK, RuleViolation, evidence_for
from ..verifier._report import FAIL, MAX_FAILURES_SHOWN, PASS, Report
from ._content import essentials
from ._trace_url import TraceUrl

__all__ = ["INLINE_CHARS", "MAX_CONTENT_CHARS", "MAX_PAGE_CONTENT_CHARS", "MAX_STEPS_SHOWN", "MAX_TEXT_CHARS",
           "MAX_TIMELINE_STEPS", "archive_row", "load_receipt", "receipt_view", "short_id"]

#: Steps a receipt's page lists (a longer run keeps its first ones; the page says how many are left out).
MAX_STEPS_SHOWN = 20_000
#: Steps the timeline draws (a drawing of more is unreadable, and costly to lay out).
MAX_TIMELINE_STEPS = 2000
#: Characters of one essential field (arguments, result, text ...) shown inline; the whole value is one click away.
INLINE_CHARS = 240
#: Characters of full content a page holds over all its steps; past it a step shows its essentials only.
MAX_PAGE_CONTENT_CHARS = 8_000_000
#: An id longer than this is shown shortened (its head and tail), the whole id on hover and copy.
SHORT_ID_CHARS = 24
#: Characters of a name (agent, recipient, tool) held on a page: a longer one keeps its head and its tail.
MAX_NAME_CHARS = 200
#: Characters of one step's content shown on its page (the rest is cut, with a note).
MAX_CONTENT_CHARS = 16_000
#: Characters of any other single value shown (a goal, a check's detail, an expected or actual value).
MAX_TEXT_CHARS = 1_000

#: The timeline's drawing: width, the agents' label column, one lane's height.
SVG_WIDTH, SVG_LABEL, SVG_LANE = 1100, 170, 34
#: Characters of an agent's name in its lane's label (the whole name is its tooltip).
_LANE_LABEL = 24
#: Pixels a box is inset inside each box it overlaps, and the least height it keeps.
_INSET, _MIN_BOX = 3, 6
#: Pixels a step's box needs to carry its duration as text.
_LABELLED_WIDTH = 60


def clip(value: object, limit: int = MAX_TEXT_CHARS) -> str:
    """``value`` as text of at most ``limit`` characters (with a note of how much was cut)."""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more characters not shown]"


def clip_name(value: object) -> str:
    """A name as text of at most about MAX_NAME_CHARS characters: its head and its tail, the count of the rest
    between them, so that its short form (:func:`short_id`) still ends as the name does."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= MAX_NAME_CHARS:
        return text
    keep = MAX_NAME_CHARS // 2
    return f"{text[:keep]}… [{len(text) - 2 * keep} more characters not shown] …{text[-keep:]}"


def load_receipt(path: str, report: Report) -> tuple[dict[str, Any] | None, str | None]:
    """The receipt as a dict when its members are well-formed (check 2 passed), else why it is not drawn."""
    if report.malformed:
        return None, "the receipt could not be read"
    if report.check("members").status != PASS:
        return None, "the receipt's members are not well-formed: its steps are not drawn"
    try:
        wf = parse_strict(read_limited(path), what=path)
    except MalformedInput as e:
        return None, f"the receipt is too large to draw here (over {MAX_INPUT_BYTES} bytes): {clip(e)}"
    return (wf, None) if isinstance(wf, dict) else (None, "the receipt is not an object")


def _content_text(content: Any) -> tuple[str, bool]:
    """Pretty JSON of a content (tags restored), cut to MAX_CONTENT_CHARS; and whether it was cut."""
    text = json.dumps(restore(content), indent=2, ensure_ascii=False, default=str)
    if len(text) <= MAX_CONTENT_CHARS:
        return text, False
    return text[:MAX_CONTENT_CHARS], True


def shown_content(report: Report) -> Callable[[int, Any], Any] | None:
    """What a page or timeline shows of step ``seq``'s content: committed fields as disclosed, or saying they
    were erased or withheld (never the commitment); None when the receipt commits no field."""
    fields = report.committed_fields()
    if fields is None:
        return None
    return lambda seq, content: _as_shown(revealed(content, seq, fields))


def _as_shown(value: Any) -> Any:
    """A revealed content for display: each erased or withheld field as a bracketed sentence saying so."""
    if isinstance(value, Unrevealed):
        return f"[{value.describe()}]"
    if type(value) is dict:
        return {k: _as_shown(v) for k, v in value.items()}
    if type(value) is list:
        return [_as_shown(v) for v in value]
    return value


def _marker(row: StepRow, content: Any) -> str:
    """A short mark for the timeline: an approval's decision, a code execution's exit code."""
    value = restore(content) if isinstance(content, dict) else None
    if row.kind == "approval" and isinstance(value, dict):
        if value.get("decision") == "approved" or value.get("approved") is True:
            return "approved"
        if value.get("decision") in ("denied", "rejected") or value.get("approved") is False:
            return "denied"
        return "pending"
    if row.kind == "speaker_selection" and row.to is not None:
        return clip(f"→ {row.to}", _LANE_LABEL)
    if row.kind == "code_execution" and isinstance(value, dict):
        code = value.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool):
            return f"exit {code}"
    return ""


def _violations(report: Report) -> list[RuleViolation]:
    checks = [c for c in report.checks if c.name == POLICY_CHECK]
    return [f for c in checks for f in c.failures if isinstance(f, RuleViolation)]


def _checks(report: Report) -> list[dict[str, Any]]:
    return [{
        "number": c.number, "name": c.name, "status": c.status, "detail": clip(c.detail),
        "failures": [{"seq": f.seq, "reason": clip(f.reason)} for f in c.failures[:MAX_FAILURES_SHOWN]],
        "more": max(len(c.failures) - MAX_FAILURES_SHOWN, 0),
    } for c in report.checks]


def verdict_line(report: Report) -> str:
    """What the verdict rests on (VALID) or the first reason it is not."""
    if report.verdict == "VALID":
        return clip(report.basis_text())
    return clip(report.failures[0].reason if report.failures else "see the checks")


def _basis(report: Report) -> list[tuple[str, str]]:
    """The verdict's basis as (what, how) pairs: chain, signer, evidence, timestamp, key, policy."""
    if report.malformed:
        return []
    b = report.basis()
    status = {c.name: c.status for c in report.checks}

    def shown(check: str, value: str) -> str:  # a check that ran and failed is "FAILED", never "not checked"
        return "FAILED" if status.get(check) == FAIL else value

    signer = shown("signature", b["signature"] + (f" {b['key_id']}" if b.get("key_id") else ""))
    chain = "FAILED" if status.get("chain") == FAIL else f"{b['chain']} ({b['level']})"
    pairs = [("chain", chain), ("signer", signer), ("evidence", shown("evidence", b["evidence"])),
             ("root", b["root"]), ("timestamp", b["timestamp"] + (f" at {b['tsa_time']}" if b["tsa_time"] else "")),
             ("key validity", b["key_validity"])]
    if "log" in b:  # a transparency log check ran (spec/log.md)
        pairs.append(("log", shown("log", b["log"])))
    policy = next((c for c in report.checks if c.name == POLICY_CHECK), None)
    pairs.append(("policy", "not given" if policy is None else policy.status))
    return [(k, clip(v)) for k, v in pairs]


def _nest(items: list[dict[str, Any]]) -> None:
    """Draw wide boxes first and inset each box inside those it overlaps on its lane, so none hides another."""
    items.sort(key=lambda i: -i["w"])
    drawn: list[dict[str, Any]] = []
    for item in items:
        depth = sum(1 for d in drawn if d["y0"] == item["y"] and d["x"] < item["x"] + item["w"]
                    and item["x"] < d["x"] + d["w"])
        item["y0"] = item["y"]
        inset = min(depth * _INSET, (item["h"] - _MIN_BOX) // 2)
        item["y"], item["h"] = item["y"] + inset, item["h"] - 2 * inset
        drawn.append(item)
    for item in items:  # a duration label gives way to a mark (approval, exit code) drawn over it
        if item["label"] and any(o is not item and o["mark"] and o["y0"] == item["y0"]
                                 and item["x"] <= o["x"] + o["w"] <= item["x"] + _LABELLED_WIDTH for o in items):
            item["label"] = ""


def _timeline(rows: list[StepRow], markers: dict[int, str]) -> dict[str, Any]:
    """The SVG drawing: one lane per agent, a box per step from its start to its end, arrows for handoffs."""
    lanes: list[str] = []
    for r in rows:
        for name in (r.agent, r.to if r.kind == "handoff" else None):
            if name is not None and name not in lanes:
                lanes.append(name)
    span = max([(r.start or 0.0) + (r.duration or 0.0) for r in rows] + [1e-6])
    plot = SVG_WIDTH - SVG_LABEL - 20

    def x(t: float | None) -> float:
        return round(SVG_LABEL + (t or 0.0) / span * plot, 2)

    def y(name: str) -> int:
        return 24 + lanes.index(name) * SVG_LANE

    items = []
    for r in rows:
        if r.seq is None:
            continue
        left = x(r.start)
        width = max(round(x((r.start or 0.0) + (r.duration or 0.0)) - left, 2), 4.0)
        label = f"{r.duration:.3f}s" if r.duration is not None and width >= _LABELLED_WIDTH else ""
        title = f"#{r.seq} {r.kind} {r.agent}" + (f" -> {r.to}" if r.to else "")
        item: dict[str, Any] = {
            "seq": r.seq, "kind": r.kind, "x": left, "y": y(r.agent) + 6, "w": width, "h": SVG_LANE - 12,
            "label": label, "mark": markers.get(r.seq, ""), "status": r.status, "arrow": None,
            "title": clip(f"{title} [{r.tool}] {r.duration or 0:.3f}s {r.preview}", 300),
        }
        if r.kind == "handoff" and r.to is not None:
            item["arrow"] = {"y1": y(r.agent) + SVG_LANE // 2, "y2": y(r.to) + SVG_LANE // 2}
        items.append(item)
    _nest(items)
    ticks = [{"x": x(span * i / 5), "label": f"{span * i / 5:.2f}s"} for i in range(6)]
    drawn = [{"name": clip_name(n), "label": n if len(n) <= _LANE_LABEL else n[: _LANE_LABEL - 1] + "…", "y": y(n)}
             for n in lanes]
    return {"width": SVG_WIDTH, "height": 34 + len(lanes) * SVG_LANE, "label": SVG_LABEL,
            "lanes": drawn, "marks": items, "ticks": ticks,
            "span": round(span, 6)}


def short_id(value: str) -> str:
    """A long id as its head and tail (``team:3f2a…9c01``); a short one as it is."""
    if len(value) <= SHORT_ID_CHARS:
        return value
    keep = SHORT_ID_CHARS - 1
    return f"{value[: keep - keep // 3]}…{value[-(keep // 3):]}"


def totals(rows: list[StepRow], key: str, reported: frozenset[int] = frozenset()) -> list[dict[str, Any]]:
    """Per agent or per tool (``key``): steps, those not ``ok``, and the time they took (seconds), most first.

    A step is not ok when its status is not ``ok`` or its seq is in ``reported`` (its content
    reports a failure: an error, ``is_error``, ``success`` false...), as its row on the page shows it."""
    table: dict[str, dict[str, Any]] = {}
    for r in rows:
        if r.kind == "close" or (key == "tool" and r.kind != "tool_call"):
            continue
        name = getattr(r, key)
        t = table.setdefault(name, {"name": clip_name(name), "short": short_id(clip_name(name)), "calls": 0,
                                    "errors": 0, "time": 0.0})
        t["calls"] += 1
        t["errors"] += r.status != "ok" or r.seq in reported
        t["time"] += r.duration or 0.0
    return sorted(table.values(), key=lambda t: (-t["calls"], t["name"]))


def _inline(kind: str, r: StepRow, content: Any) -> tuple[list[dict[str, Any]], bool]:
    """A step's essential fields, each cut to INLINE_CHARS (``cut`` says so), and whether the content reports a
    failure."""
    found = essentials(kind, content, tool=r.tool, target=r.to)
    fields = [{"name": k, "value": v[:INLINE_CHARS], "cut": max(len(v) - INLINE_CHARS, 0)} for k, v in found.fields
              if not (k == "tool" and v == r.tool)]  # the header names the step's own tool
    return fields, found.failed


def receipt_view(path: str, outcome: Outcome, evidence: str | None,
                 trace_url: TraceUrl | None = None) -> dict[str, Any]:
    """Everything a receipt's page shows, as plain strings, numbers and lists (with ``trace_url``: trace links)."""
    report = outcome.report
    wf, why = load_receipt(path, report)
    notes = [clip(n) for n in report.notes]
    if why:
        notes.append(why)
    view: dict[str, Any] = {
        "totals": {"agent": [], "tool": []}, "choices": {},
        "source": clip(path), "verdict": report.verdict, "verdict_line": verdict_line(report),
        "basis": _basis(report), "checks": _checks(report), "notes": notes, "steps": [], "timeline": None,
        "goal": "", "status": "", "workflow_id": clip(report.workflow_id or ""), "total_steps": 0,
        "violations": [], "first_failing": None, "traces": [], "reported": [],
    }
    failing = next((f for f in report.failures if f.seq is not None and f.check != POLICY_CHECK), None)
    view["violations"] = [{"rule": clip(v.rule, 200), "message": clip(v.message), "seqs": list(v.seqs)}
                          for v in _violations(report)]
    if wf is None:
        return view
    if report.check("chain").status != PASS:
        notes.append("the chain check did not pass: the steps below (agents, times, order) are as the file "
                     "says, not as they were recorded")
    steps = wf["steps"]
    evidence_file = evidence_for(path, evidence)
    contents, unread = evidence_contents(evidence_file, MAX_STEPS_SHOWN)
    if unread and evidence_file is not None:
        notes.append(clip(unread))
    rows = step_rows({"steps": steps[:MAX_STEPS_SHOWN]}, contents, shown_content(report))
    if len(steps) > MAX_STEPS_SHOWN:
        notes.append(f"the first {MAX_STEPS_SHOWN} of {len(steps)} steps are shown")
    violated: dict[int, list[str]] = {}
    for v in view["violations"]:
        for seq in v["seqs"]:
            violated.setdefault(seq, []).append(v["rule"])
    markers: dict[int, str] = {}
    shown = []
    shown_as = shown_content(report)
    by_seq = {s.get("seq"): s for s in steps[:MAX_STEPS_SHOWN] if isinstance(s, Mapping)} if trace_url else {}
    budget = MAX_PAGE_CONTENT_CHARS
    reported: set[int] = set()
    for r in rows:
        content = contents.get(r.seq) if r.seq is not None else None
        if shown_as is not None and r.seq is not None and content is not None:  # never a commitment's digest
            content = shown_as(r.seq, content)
        if r.seq is not None:
            markers[r.seq] = _marker(r, content)
        text, cut = _content_text(content) if r.seq in contents else ("", False)
        held = len(text) <= budget
        budget -= len(text) if held else 0
        fields, reports_failure = _inline(r.kind, r, content) if r.seq in contents else ([], False)
        if reports_failure and r.seq is not None:
            reported.add(r.seq)
        is_failing = failing is not None and failing.seq == r.seq
        agent, to = clip_name(r.agent), None if r.to is None else clip_name(r.to)
        shown.append({
            "seq": r.seq, "kind": clip(r.kind, 100), "agent": agent, "agent_short": short_id(agent), "to": to,
            "to_short": None if to is None else short_id(to), "tool": clip_name(r.tool), "status": clip(r.status, 100),
            "start": r.start, "duration": r.duration, "preview": r.preview, "content": text if held else "",
            "cut": cut, "held": held, "fields": fields, "reports_failure": reports_failure,
            "has_content": r.seq in contents, "matches": r.content_matches, "redacted": REDACTED in text,
            "mark": markers.get(r.seq, "") if r.seq is not None else "", "violations": violated.get(r.seq or -1, []),
            "failing": is_failing,
            "trace_url": None if trace_url is None or r.seq not in by_seq else trace_url.link(
                by_seq[r.seq].get("trace_id"), by_seq[r.seq].get("span_id")),
            "failure": None if not is_failing or failing is None else {
                "reason": clip(failing.reason), "expected": clip(failing.expected or "-"),
                "actual": clip(failing.actual or "-")},
        })
    if any(not s["held"] for s in shown):
        notes.append(f"full contents past {MAX_PAGE_CONTENT_CHARS} characters in all are left out of this page: "
                     "those steps show their essentials only (aer1 show --jsonl gives every content)")
    drawn = rows[:MAX_TIMELINE_STEPS]
    if len(rows) > MAX_TIMELINE_STEPS:
        notes.append(f"the timeline draws the first {MAX_TIMELINE_STEPS} of {len(rows)} steps; all are listed")
    if trace_url is not None:
        view["traces"] = trace_url.run_links(s for s in steps if isinstance(s, Mapping))
    view.update(goal=clip(wf.get("goal", "")), status=clip(wf.get("status", "")), steps=shown,
                total_steps=len(steps), timeline=_timeline(drawn, markers),
                first_failing=failing.seq if failing is not None else None,
                totals={key: totals(rows, key, frozenset(reported)) for key in ("agent", "tool")},
                reported=sorted(reported),
                choices={k: sorted({s[k] for s in shown}) for k in ("agent", "kind", "tool", "status")})
    return view


def archive_row(path: str, outcome: Outcome, page: str, folder: str,
                reported: frozenset[int] = frozenset()) -> dict[str, Any]:
    """One receipt's row on an archive page: verdict, goal, status, agents, steps, signer, time.

    ``reported``: the seqs whose content reports a failure, as the receipt's own page read them
    (its view's ``reported``), so the index's totals agree with that page."""
    report = outcome.report
    wf, _ = load_receipt(path, report)
    basis = report.basis() if not report.malformed else {}
    agents: list[str] = []
    started = ""
    if wf is not None:
        agents = [clip(a.get("name"), 80) for a in wf.get("agents") or [] if isinstance(a, Mapping)]
        if not agents:  # a run that registered none: the agents that acted
            agents = list(dict.fromkeys(clip(s.get("agent"), 80) for s in wf["steps"] if s.get("kind") != "close"))
        starts = [s.get("started_at") for s in wf["steps"] if parse_time(s.get("started_at")) is not None]
        started = clip(min(starts, key=lambda t: parse_time(t) or 0.0), 64) if starts else ""
    key = basis.get("key_id")
    rows = step_rows(wf) if wf is not None else []
    return {
        "violations": dict(Counter(clip(v.rule, 200) for v in _violations(report))),
        "agent_totals": totals(rows, "agent", reported), "tool_totals": totals(rows, "tool", reported),
        "verdict": report.verdict, "reason": verdict_line(report), "goal": clip(wf.get("goal", "") if wf else "", 300),
        "status": clip(outcome.status or (wf.get("status", "") if wf else "")), "agents": ", ".join(agents[:20]),
        "steps": report.steps if report.steps is not None else "", "time": started,
        "signer": clip(basis.get("signature", "-") + (f" {key[:16]}" if isinstance(key, str) else "")),
        "source": clip(os.path.relpath(path, folder), 300), "page": page,
        "failed": report.failures[0].check if report.failures else "",
    }
