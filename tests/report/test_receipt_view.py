"""The receipt page an auditor works with, in the system Chromium: essentials inline, search and filters,
expand and collapse, short ids, a 20,000-step run, and the printed PDF read back as text.

One browser for the module. The 20,000-step test measures in the page's own terms (its
performance entries, frames, and how many steps a filter touches) and prints the numbers;
it asserts what a filter must find and that it touches only the steps that change, never a time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from aer1 import Collector
from tests.report._browser import SHOTS, Watched, browser, write_page
from tests.report.conftest import HOSTILE_ATTRIBUTE, HOSTILE_SCRIPT, LONG_TEAM, save, shapes_collector

__all__ = ["browser"]

#: Steps the large run records (with its close step, 20,000): every third a tool call, one in 97 of those failing.
BIG_STEPS = 19_999
AGENTS = ("alice", "bob", "carol", LONG_TEAM)


def shown(page: object) -> list[int]:
    """The seqs of the steps the filters leave visible (a step, and its block of steps, not hidden)."""
    return page.locator("article.step").evaluate_all(  # type: ignore[attr-defined, no-any-return]
        "els => els.filter(e => !e.hidden && !e.parentNode.hidden).map(e => Number(e.dataset.seq))")


def search(page: object, text: str) -> None:
    """Type ``text`` into the search box and wait until the page has applied it (after its short pause)."""
    done = page.evaluate("() => performance.getEntriesByName('aer1-filter').length")  # type: ignore[attr-defined]
    page.fill("#q", text)  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        "n => performance.getEntriesByName('aer1-filter').length > n", arg=done)


def test_each_step_shows_its_essentials_inline(browser: object, tmp_path: Path) -> None:
    w = Watched(browser, write_page(save(shapes_collector(), tmp_path), tmp_path / "r.html"))
    page = w.page

    def fields(seq: int) -> dict[str, str]:
        return dict(page.locator(f"#step-{seq} .field").evaluate_all(
            "els => els.map(e => [e.querySelector('dt').textContent, e.querySelector('dd').textContent])"))

    assert fields(2) == {"arguments": '{"city": "Paris"}', "result": "sunny, 21C"}
    assert fields(3) == {"arguments": '{"city": "Atlantis"}', "error": "no such city"}
    assert fields(4) == {"arguments": '{"city": "Rome", "days": 3}', "result": "rain\nthen sun"}
    assert fields(5) == {"arguments": '{"city": "Oslo"}', "error": "upstream timed out"}
    assert fields(6) == {"text": "Paris is sunny, Rome rainy"}
    assert fields(7) == {"target": "carol", "text": "over to you"}
    assert fields(8) == {"choice": "carol", "mechanism": "round_robin"}
    assert fields(9)["decision"] == "approved"
    assert page.locator("#step-2 details.full").get_attribute("open") is None, "want full content one click away"
    assert page.locator("#step-2 details.full pre").is_hidden()
    page.click("#step-2 details.full summary")
    assert '"is_error": false' in (page.locator("#step-2 details.full pre").text_content() or "")
    # the team's 60-character id is shortened, whole on hover and in its copy button
    agent = page.locator("#step-8 .head .agent .id")
    assert agent.get_attribute("title") == LONG_TEAM and len(agent.text_content() or "") < 30
    assert page.locator("#step-8 .head button.copy").get_attribute("data-copy") == LONG_TEAM
    page.click("#step-8 .head button.copy")
    page.wait_for_function("() => document.querySelector('#step-8 button.copy').textContent !== 'copy'")
    totals = dict(page.locator("#totals-tool tbody tr").evaluate_all(
        "rs => rs.map(r => [r.cells[0].textContent, [r.cells[1].textContent, r.cells[2].textContent]])"))
    assert totals == {"get_weather": ["2", "1"], "forecast": ["2", "1"]}
    agents = dict(page.locator("#totals-agent tbody tr").evaluate_all(
        "rs => rs.map(r => [r.dataset.name, Number(r.cells[1].textContent)])"))
    assert agents == {"user": 1, "alice": 2, "bob": 4, LONG_TEAM: 1, "carol": 1}
    w.shot("receipt-essentials.png")
    w.clean()


def test_search_and_filters_find_the_right_steps(browser: object, tmp_path: Path) -> None:
    w = Watched(browser, write_page(save(shapes_collector(), tmp_path), tmp_path / "r.html"))
    page = w.page
    assert shown(page) == list(range(1, 11))
    search(page, "ATLANTIS")  # case does not matter; the legacy call's argument text
    assert shown(page) == [3]
    search(page, "rome city")  # every word must appear: steps 4 (arguments) only; 1 and 6 lack "city"
    assert shown(page) == [4]
    search(page, "")
    page.select_option("#f-kind", "tool_call")
    assert shown(page) == [2, 3, 4, 5]
    page.select_option("#f-status", "error")
    assert shown(page) == [3, 5]
    page.select_option("#f-agent", "bob")
    assert shown(page) == [5]
    page.select_option("#f-tool", "get_weather")
    assert shown(page) == [] and page.text_content("#step-count") == "0"
    for key in ("agent", "kind", "tool", "status"):
        page.select_option(f"#f-{key}", "")
    assert len(shown(page)) == 10
    # a step link opens its step even when a filter hides it
    page.select_option("#f-agent", "alice")
    page.evaluate("location.hash = '#step-7'")
    page.wait_for_function("() => !document.getElementById('step-7').hidden")
    assert page.locator("#step-7 details.full").get_attribute("open") is not None
    w.clean()


def test_expand_all_opens_the_shown_steps_and_collapse_all_closes_them(browser: object, tmp_path: Path) -> None:
    w = Watched(browser, write_page(save(shapes_collector(), tmp_path), tmp_path / "r.html"))
    page = w.page
    opened = "() => [...document.querySelectorAll('article.step details.full')].filter(d => d.open).length"
    page.select_option("#f-agent", "bob")
    page.click("#expand-all")
    assert page.evaluate(opened) == 4, "want only the 4 shown steps opened"
    page.select_option("#f-agent", "")
    page.click("#expand-all")
    total = page.locator("article.step details.full").count()
    assert page.evaluate(opened) == total == 10
    assert page.locator("#step-10 details.full pre").is_visible()
    page.click("#collapse-all")
    assert page.evaluate(opened) == 0
    w.clean()


def test_hostile_content_in_every_new_field_stays_inert(browser: object, tmp_path: Path) -> None:
    hostile = HOSTILE_SCRIPT + HOSTILE_ATTRIBUTE
    w = Watched(browser, write_page(save(shapes_collector(hostile), tmp_path), tmp_path / "r.html"))
    page = w.page
    page.click("#expand-all")
    page.select_option("#f-agent", f"bob{hostile}")  # an option built from a hostile name
    assert shown(page) == [4, 5, 6, 7]
    page.select_option("#f-agent", "")
    search(page, "onerror")  # the hostile text is in every step but the close step's, as text
    assert len(shown(page)) == 10
    page.click("#step-8 .head button.copy")
    assert page.evaluate("window.__pwned") is None, "hostile content ran"
    assert page.locator("img").count() == 0 and page.locator("main b, header b").count() == 0
    for seq, field in ((2, "arguments"), (2, "result"), (3, "error"), (5, "error"), (6, "text"), (7, "target"),
                       (8, "choice"), (8, "mechanism")):
        assert HOSTILE_SCRIPT in (page.locator(f"#step-{seq} .f-{field} dd").text_content() or ""), (seq, field)
    assert page.locator("#totals-tool tbody tr").first.get_attribute("data-name") == f"forecast{hostile}"
    assert page.locator("#totals-tool tbody tr .id").first.get_attribute("title") == f"forecast{hostile}"
    assert page.locator("#step-8 .agent button.copy").get_attribute("data-copy") == LONG_TEAM + hostile
    w.clean()


def test_printed_pdf_holds_the_verdict_the_checks_and_every_step(browser: object, tmp_path: Path) -> None:
    pdftotext = shutil.which("pdftotext")
    if pdftotext is None:
        if os.environ.get("CI") == "true":
            pytest.fail("pdftotext is missing: .ci/run installs Debian's poppler-utils")
        pytest.skip("pdftotext is missing (apt-get install poppler-utils)")
    w = Watched(browser, write_page(save(shapes_collector(), tmp_path), tmp_path / "r.html"))
    page = w.page
    page.select_option("#f-agent", "bob")  # a filter on screen does not thin the printed record
    pdf = tmp_path / "r.pdf"
    page.pdf(path=str(pdf), format="A4", print_background=True)
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(pdf, SHOTS / "receipt.pdf")
    text = subprocess.run([pdftotext, "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pages = text.split("\f")
    assert "VALID" in pages[0] and "Checks" in pages[0], "want the verdict and the checks on the first page"
    steps = json.loads((tmp_path / "receipt.json").read_text())["steps"]
    for s in steps:
        header = f"#{s['seq']} {s['kind']}"
        assert header in " ".join(text.split()), f"want the step header {header!r} in the PDF"
    for heading in ("Totals", "Timeline", "Steps"):
        starts = [p for p in pages if p.strip().startswith(heading)]
        assert starts, f"want the section {heading!r} to begin a page"
    assert "search steps" not in text and "expand all" not in text, "want the controls left out of print"
    w.clean()


def longest_gap(page: object) -> int:
    """The longest time between two frames since the last call (ms), after letting a few frames pass."""
    page.wait_for_timeout(200)  # type: ignore[attr-defined]
    return page.evaluate(  # type: ignore[attr-defined, no-any-return]
        "() => { const g = Math.round(Math.max(0, ...window.__gaps)); window.__gaps = []; return g; }")


def big_collector() -> Collector:
    c = Collector(goal="a long run")
    for i in range(BIG_STEPS):
        agent = AGENTS[i % len(AGENTS)]
        if i % 3 == 0:
            failed = i % 97 == 0
            c.record("search", {"name": "search", "arguments": {"q": f"query {i}"}, "result": f"result {i}",
                                "is_error": failed}, agent=agent, kind="tool_call", status="error" if failed else "ok")
        else:
            c.record("message", {"type": "TextMessage", "content": f"message {i} from {agent}"}, agent=agent)
    return c


def test_a_20000_step_receipt_renders_and_filters_touching_only_what_changes(browser: object,
                                                                             tmp_path: Path) -> None:
    html = write_page(save(big_collector(), tmp_path), tmp_path / "big.html")
    w = Watched(browser, html)
    page = w.page
    total = BIG_STEPS + 1  # and the close step: 20,000
    assert page.locator("article.step").count() == total
    page.wait_for_function("() => performance.getEntriesByName('aer1-index').length === 1")
    page.evaluate("""() => {
        window.__frames = 0; window.__gaps = []; window.__mutations = 0;
        let last = performance.now();
        const tick = t => {
            window.__frames += 1; window.__gaps.push(t - last); last = t; requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
        new MutationObserver(ms => { window.__mutations += ms.filter(m => m.target.tagName === 'ARTICLE').length; })
            .observe(document.getElementById('steps'), {attributes: true, subtree: true, attributeFilter: ['hidden']});
    }""")
    # the error tool calls: i % 3 == 0 and i % 97 == 0, i < BIG_STEPS
    errors = [i + 1 for i in range(0, BIG_STEPS, 3 * 97)]
    page.select_option("#f-status", "error")  # applied at once: a choice is not typed
    assert page.text_content("#step-count") == str(len(errors))
    mutations_status = page.evaluate("window.__mutations")
    gaps = {"status filter": longest_gap(page)}
    # the steps far from the screen are written when they come near
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.wait_for_function("n => !document.getElementById('step-' + n).hidden && "
                           "document.getElementById('step-' + (n + 1)).hidden", arg=errors[-1])
    gaps["scroll to the end"] = longest_gap(page)
    page.evaluate("window.scrollTo(0, 0)")
    page.select_option("#f-status", "")
    gaps["status filter off"] = longest_gap(page)
    search(page, "query 19998")  # one step's argument, found through the whole run's text
    assert shown(page) == [19999]
    gaps["search one"] = longest_gap(page)
    search(page, "")
    gaps["search off"] = longest_gap(page)
    search(page, "from carol")
    carol = len([i for i in range(BIG_STEPS) if i % 3 and AGENTS[i % 4] == "carol"])
    assert page.text_content("#step-count") == str(carol)
    gaps["search a quarter"] = longest_gap(page)
    page.click("#expand-all")
    gaps["expand all"] = longest_gap(page)
    numbers = page.evaluate("""() => {
        const nav = performance.getEntriesByType('navigation')[0];
        const m = name => performance.getEntriesByName(name).map(e => Math.round(e.duration));
        return {dom_content_loaded_ms: Math.round(nav.domContentLoadedEventEnd), load_ms: Math.round(nav.loadEventEnd),
                index_ms: m('aer1-index')[0], filter_ms: m('aer1-filter'), frames: window.__frames,
                mutations: window.__mutations};
    }""")
    numbers["longest_frame_gap_ms"] = gaps
    numbers["html_bytes"] = html.stat().st_size
    numbers["mutations_status_filter"] = mutations_status
    print(f"\n20,000-step receipt page: {json.dumps(numbers)}")
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / "big-receipt-numbers.json").write_text(json.dumps(numbers, indent=2))
    # the budget: a filter that changes every step writes at most a tenth of them (those near the screen)
    assert 0 < mutations_status <= total // 10, f"got {mutations_status} steps written, want 1 to {total // 10}"
    assert numbers["index_ms"] is not None and len(numbers["filter_ms"]) >= 5
    w.clean()
