"""``aer1 report``: a self-contained HTML page for a receipt, or for a folder of receipts.

One file per page, everything inline (CSS, SVG, a few lines of script whose hash the page's
Content-Security-Policy names, so no other script can run and nothing is fetched). Pages
are rendered by Jinja2 with autoescaping on: receipt and evidence content is data, never markup.
See spec/report.md.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections import Counter
from typing import TYPE_CHECKING, Any

import jinja2

from .._outfile import replace_file
from ..verifier._archive import Outcome
from ._archive import archive_view, data_block
from ._frame import Frame, assess_archive, assess_receipt
from ._model import MAX_CONTENT_CHARS, archive_row, receipt_view, short_id
from ._trace_url import TraceUrl
from ._verify import ViewOptions, verify_for_view
from ._visible import visible

if TYPE_CHECKING:
    from ._log import LogFact, LogRun

__all__ = ["render_archive", "render_receipt", "write_archive", "write_diff_page", "write_receipt_page"]

#: Steps in one block of the step list: the browser lays out and styles only the blocks on screen.
CHUNK_STEPS = 25

#: Step kinds the timeline colours by name; any other kind is drawn in one neutral colour.
_KINDS = frozenset({"message", "tool_call", "handoff", "approval", "code_execution", "speaker_selection",
                    "termination", "task", "close", "error"})


def _shown(value: Any) -> Any:
    """Every value a template writes, but markup of the page's own (its stylesheet and script): as :func:`visible`."""
    return value if hasattr(value, "__html__") else visible(value)


_env = jinja2.Environment(loader=jinja2.PackageLoader("aer1._report", "templates"), autoescape=True,
                          undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                          finalize=_shown)
_env.globals["short_id"] = short_id


def _asset(name: str) -> str:
    source, _, _ = _env.loader.get_source(_env, name) if _env.loader else ("", None, None)
    return source


def _page(template: str, script: str, **values: Any) -> str:
    """Render ``template`` with the stylesheet and ``script`` inline; the CSP allows that script only."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return _env.get_template(template).render(css=_asset("style.css"), script=script,
                                              script_hash=f"sha256-{digest}", **values)


def _frame_section(frame: Frame | None, items: list[dict[str, Any]] | None, log: LogFact | None = None,
                   log_on: str | None = None) -> dict[str, Any] | None:
    """The frame's part of a page; ``log``: the log walked, shown here; ``log_on``: the page that shows it."""
    if frame is None or items is None:
        return None
    shown = None if log is None else {"verdict": log.section["verdict"], "lines": log.lines}
    return {"name": frame.name, "title": frame.title, "items": items, "log": shown, "log_on": log_on}


def render_receipt(path: str, outcome: Outcome, evidence: str | None, back: str | None = None,
                   frame: Frame | None = None, trace_url: TraceUrl | None = None, log: LogFact | None = None,
                   log_on: str | None = None, view: dict[str, Any] | None = None) -> str:
    """The HTML page of one verified receipt (with ``frame``: what was verified, mapped onto its obligations;
    with ``trace_url``: a link to the trace viewer on the run and on each step that has a span; with ``log``:
    the log walked over this receipt, shown in the frame's section; ``log_on``: the index page that shows the
    log walked over the archive instead; ``view``: its :func:`receipt_view`, when the caller made it already)."""
    items = assess_receipt(frame, outcome.report) if frame is not None else None
    v = view if view is not None else receipt_view(path, outcome, evidence, trace_url)
    return _page("receipt.html.j2", _asset("receipt.js"), v=v,
                 back=back,
                 kinds=_KINDS, max_content=MAX_CONTENT_CHARS, chunk_steps=CHUNK_STEPS,
                 frame=_frame_section(frame, items, log, log_on))


def render_archive(title: str, rows: list[dict[str, Any]], policy: str | None, notes: list[str],
                   frame: dict[str, Any] | None = None) -> str:
    """The HTML page over many receipts: summaries, then the rows a page at a time (failing first)."""
    counts = Counter(r["verdict"] for r in rows)
    verdict = "MALFORMED" if counts["MALFORMED"] else "INVALID" if counts["INVALID"] else "VALID"
    view = archive_view(rows)
    return _page("archive.html.j2", _asset("archive.js"), title=title, rows=rows, verdict=verdict, a=view,
                 data=data_block(view["rows"]), counts={k: counts[k] for k in ("VALID", "INVALID", "MALFORMED")},
                 policy=policy, notes=notes, frame=frame)


def _write(path: str, html: str) -> None:
    # a lone surrogate from the input is written as its escape, never refused
    data = html.encode("utf-8", "backslashreplace")
    replace_file(path, lambda f: f.write(data))


def write_receipt_page(task: tuple[str, bool, str | None], opts: ViewOptions, output: str,
                       frame: Frame | None = None, trace_url: TraceUrl | None = None,
                       log: LogRun | None = None) -> Outcome:
    """Verify one receipt and write its page to ``output``; returns the verification's outcome.

    ``log``: the log walked (``--log``): the receipt's log check is answered from it, and the
    receipt alone is compared with the log's entries."""
    outcome = verify_for_view(task, opts)
    fact = None
    if log is not None:
        log.see(outcome)
        fact = log.finish()
    _write(output, render_receipt(task[0], outcome, opts.evidence, frame=frame, trace_url=trace_url, log=fact))
    return outcome


def write_diff_page(output: str, sides: list[dict[str, Any]], diff: Any, code: int) -> None:
    """The HTML page of ``aer1 diff``: both verdicts, then every aligned step with what differs."""
    _write(output, _page("diff.html.j2", "", sides=sides, diff=diff, counts=diff.counts(), same=code == 0))


def write_archive(folder: str, tasks: list[tuple[str, bool, str | None]], opts: ViewOptions,
                  output: str, frame: Frame | None = None, trace_url: TraceUrl | None = None,
                  log: LogRun | None = None) -> list[Outcome]:
    """Verify every receipt; write each one's page beside ``output`` and the index to ``output``.

    ``log``: the log walked (``--log``): each receipt's log check is answered from it before its
    page is written, then the archive is compared with the log's entries (the frame's ``log_complete``)."""
    where = os.path.dirname(os.path.abspath(output))
    stem = os.path.splitext(os.path.basename(output))[0]
    rows, outcomes = [], []
    for number, task in enumerate(tasks, 1):
        page = f"{stem}-{number:04d}.html"
        outcome = verify_for_view(task, opts)
        if log is not None:
            log.see(outcome)
        view = receipt_view(task[0], outcome, None, trace_url)
        _write(os.path.join(where, page), render_receipt(task[0], outcome, None, back=os.path.basename(output),
                                                         frame=frame, trace_url=trace_url,
                                                         log_on=None if log is None else os.path.basename(output),
                                                         view=view))
        rows.append(archive_row(task[0], outcome, page, folder, frozenset(view["reported"])))
        outcomes.append(outcome)
    policy = None if opts.policy is None else (opts.policy.name or "given")
    fact = None if log is None else log.finish()
    section = None if frame is None else _frame_section(frame, assess_archive(
        frame, [(r["source"], o.report, r["time"]) for r, o in zip(rows, outcomes, strict=True)], fact), fact)
    notes = [] if fact is None else [fact.summary()]
    _write(output, render_archive(f"Receipts under {folder}", rows, policy, notes, frame=section))
    return outcomes
