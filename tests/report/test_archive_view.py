"""The archive page at 10,000 receipts, in the system Chromium: a page of rows at a time, failing first,
filters and paging over all of them, summaries, and row data that stays data."""

from __future__ import annotations

import json
import re
from pathlib import Path

from aer1._report import render_archive
from aer1._report._archive import ROWS_PER_PAGE
from tests.report._browser import Watched, browser, write_page
from tests.report.conftest import HOSTILE_ATTRIBUTE, HOSTILE_SCRIPT, save, shapes_collector

__all__ = ["browser"]

RECEIPTS = 10_000
#: Ends a data block if the page ever wrote row text into it unescaped.
BREAKOUT = "</script><script>window.__pwned = 3</script>"


def row(n: int) -> dict:  # type: ignore[type-arg]
    """One receipt's row as archive_row gives it: one in 50 invalid, times over 200 days."""
    day = n % 200
    verdict = "INVALID" if n % 50 == 7 else "VALID"
    agent = {"name": f"agent-{n % 5}", "short": f"agent-{n % 5}", "calls": 3, "errors": n % 2, "time": 0.5}
    return {"verdict": verdict, "reason": "chain: step 2: edited" if verdict == "INVALID" else "ok",
            "failed": "chain" if verdict == "INVALID" else "", "goal": f"task {n}" + (BREAKOUT if n == 4242 else ""),
            "status": "ok", "agents": agent["name"], "steps": n % 30 + 2, "signer": "trusted key",
            "time": f"2026-{1 + day // 30:02d}-{1 + day % 28:02d}T10:00:00.000000Z", "source": f"r{n:05d}.json",
            "page": f"index-{n + 1:05d}.html", "violations": {"no bob": 1} if n % 100 == 3 else {},
            "agent_totals": [agent], "tool_totals": []}


def test_ten_thousand_receipts_page_filter_and_failing_first(browser: object, tmp_path: Path) -> None:
    html = tmp_path / "index.html"
    html.write_text(render_archive("Receipts", [row(n) for n in range(RECEIPTS)], "p", []), encoding="utf-8")
    w = Watched(browser, html)
    page = w.page
    rows = page.locator("#receipts tbody tr")
    invalid = len([n for n in range(RECEIPTS) if n % 50 == 7])
    assert rows.count() == ROWS_PER_PAGE and page.text_content("#pages") == str(RECEIPTS // ROWS_PER_PAGE)
    verdicts = rows.evaluate_all("rs => rs.map(r => r.dataset.verdict)")
    assert verdicts == ["INVALID"] * ROWS_PER_PAGE, f"want the {invalid} failing receipts first"
    for _ in range(invalid // ROWS_PER_PAGE):
        page.click("#next")
    assert page.text_content("#page-no") == str(invalid // ROWS_PER_PAGE + 1) and rows.count() == ROWS_PER_PAGE
    assert rows.first.get_attribute("data-verdict") == "VALID"
    page.fill("#filter", "r09999.json")
    page.wait_for_function("() => document.getElementById('shown').textContent === '1'")
    assert rows.count() == 1 and "task 9999" in (rows.text_content() or "")
    page.fill("#filter", "")
    page.wait_for_function("n => document.getElementById('shown').textContent === n", arg=str(RECEIPTS))
    page.select_option("#verdict-filter", "INVALID")
    assert page.text_content("#shown") == str(invalid)
    page.click("#receipts thead th:nth-child(5)")  # steps, ascending, over every shown receipt
    steps = rows.evaluate_all("rs => rs.map(r => Number(r.cells[4].textContent))")
    assert steps == sorted(steps) and steps[0] == 9  # the failing receipts have 9, 19 or 29 steps
    # the row whose goal tries to end the data block is a row like any other
    page.select_option("#verdict-filter", "")
    page.fill("#filter", "task 4242")
    page.wait_for_function("() => document.getElementById('shown').textContent === '1'")
    assert BREAKOUT in (rows.text_content() or "") and page.evaluate("window.__pwned") is None
    # the summaries: rules, agents, and the chart over time
    assert page.locator("#rules tbody tr[data-rule='no bob'] td").nth(1).text_content() == str(RECEIPTS // 100)
    assert page.locator("#totals-agent tbody tr").count() == 5
    # 200 days are more bars than the chart draws: one bar a month, January to July
    assert page.locator("#verdict-chart g.bar").count() == 7 and "per month" in (page.text_content("#over-time") or "")
    assert page.evaluate("document.querySelectorAll('#receipts tbody tr').length") == 1
    numbers = page.evaluate("""() => { const n = performance.getEntriesByType('navigation')[0];
        return {dom_content_loaded_ms: Math.round(n.domContentLoadedEventEnd)}; }""")
    numbers["html_bytes"] = html.stat().st_size
    print(f"\n10,000-receipt archive page: {json.dumps(numbers)}")
    w.shot("archive-10000.png")
    w.clean()


def test_hostile_receipts_in_a_real_archive_stay_text(browser: object, tmp_path: Path) -> None:
    folder = tmp_path / "archive"
    save(shapes_collector(HOSTILE_SCRIPT + HOSTILE_ATTRIBUTE), folder / "hostile")
    save(shapes_collector(), folder / "plain")
    site = tmp_path / "site"
    site.mkdir()
    w = Watched(browser, write_page(folder, site / "index.html"))
    page = w.page
    assert page.locator("#receipts tbody tr").count() == 2 and page.evaluate("window.__pwned") is None
    assert page.locator("img").count() == 0
    text = site.joinpath("index.html").read_text()
    block = re.search(r'<script type="application/json" id="rows">(.*?)</script>', text, re.S)
    assert block is not None and "<" not in block.group(1), "want no markup character inside the data block"
    names = page.locator("#totals-agent tbody tr").evaluate_all("rs => rs.map(r => r.dataset.name)")
    assert f"bob{HOSTILE_SCRIPT}{HOSTILE_ATTRIBUTE}" in names
    w.clean()
    page.locator("#receipts tbody tr a").first.click()
    assert page.locator("article.step").count() == 10
