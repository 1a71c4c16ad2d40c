"""The pages in a real browser (the system Chromium, driven by Playwright): what a person sees and clicks.

Each test loads a page from file:// and holds it to: no request but the page's own file,
no console error (a blocked script or a CSP violation would log one), hostile content
never run. Screenshots go to out/report/ for people to look at.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.report._browser import Watched, browser, write_page
from tests.report.conftest import hostile_collector, save

__all__ = ["browser"]  # the module's one browser (tests/report/_browser.py)

def test_receipt_page_draws_the_run_and_never_runs_its_content(browser: object, tmp_path: Path) -> None:
    html = write_page(save(hostile_collector(), tmp_path), tmp_path / "hostile.html")
    w = Watched(browser, html)
    page = w.page
    assert page.text_content("#verdict-text") == "VALID"
    assert "evidence: checked" in (page.text_content("#basis") or "")
    assert page.locator("article.step").count() == 7
    assert page.locator("svg#timeline g.lane").count() == 4  # user, the hostile name, <b>bob</b>, aer1
    assert page.locator("svg#timeline .arrow").count() == 1  # the handoff
    assert page.evaluate("window.__pwned") is None, "hostile content ran"
    assert page.locator("img").count() == 0 and page.locator("b").count() == 0
    assert '<script>window.__pwned = 1</script>' in (page.text_content("#step-2 pre") or "")
    page.click('svg#timeline g.step-mark[data-seq="4"]')
    assert page.evaluate("location.hash") == "#step-4"
    assert page.locator("#step-4 details.full").get_attribute("open") is not None, "the step linked to did not open"
    w.shot("receipt-hostile.png")
    w.clean()


@pytest.mark.unverified_receipts
def test_tampered_receipt_shows_its_failing_step(browser: object, tampered_receipt: Path, tmp_path: Path) -> None:
    w = Watched(browser, write_page(tampered_receipt, tmp_path / "tampered.html"))
    page = w.page
    assert page.text_content("#verdict-text") == "INVALID"
    failing = page.locator("article.step.failing")
    assert failing.count() == 1 and failing.get_attribute("id") == "step-3"
    assert failing.locator("details.full").get_attribute("open") is not None
    assert failing.locator(".expected-actual").is_visible()
    assert page.locator("svg#timeline rect.step-box.failing").count() == 1
    page.click("#first-failing")
    assert page.evaluate("location.hash") == "#step-3"
    w.shot("receipt-tampered.png")
    w.clean()


def test_policy_violations_link_to_their_steps(browser: object, honest_receipt: Path, policy_file: Path,
                                               tmp_path: Path) -> None:
    w = Watched(browser, write_page(honest_receipt, tmp_path / "policy.html", "--policy", str(policy_file)))
    page = w.page
    assert page.text_content("#verdict-text") == "INVALID"
    links = page.locator("a.violation-link")
    assert sorted(links.evaluate_all("els => els.map(e => e.getAttribute('href'))")) == ["#step-3", "#step-5"]
    links.filter(has_text="step 5").click()
    assert page.locator("#step-5 details.full").get_attribute("open") is not None
    assert page.locator("article.step.violating").count() == 2
    w.clean()


@pytest.mark.unverified_receipts
def test_archive_page_filters_sorts_and_links(browser: object, honest_receipt: Path, tampered_receipt: Path,
                                              tmp_path: Path) -> None:
    folder = tmp_path / "archive"
    for source in (honest_receipt, tampered_receipt):
        shutil.copytree(source.parent, folder / source.parent.name)
    save(hostile_collector(goal="a third run"), folder / "third")
    site = tmp_path / "site"
    site.mkdir()
    w = Watched(browser, write_page(folder, site / "index.html"))
    page = w.page
    rows = page.locator("#receipts tbody tr")
    assert page.text_content("#verdict-text") == "INVALID" and rows.count() == 3
    page.select_option("#verdict-filter", "INVALID")
    assert page.locator("#receipts tbody tr:not([hidden])").count() == 1
    assert page.text_content("#shown") == "1"
    page.select_option("#verdict-filter", "")
    page.fill("#filter", "third")
    page.wait_for_function("() => document.getElementById('shown').textContent === '1'")  # applied after a pause
    visible = page.locator("#receipts tbody tr:not([hidden])")
    assert visible.count() == 1 and "a third run" in (visible.text_content() or "")
    page.fill("#filter", "")
    page.wait_for_function("() => document.getElementById('shown').textContent === '3'")
    page.click("#receipts thead th:nth-child(5)")  # steps, ascending
    steps = rows.evaluate_all("rs => rs.map(r => Number(r.cells[4].textContent))")
    assert steps == sorted(steps), f"got {steps}, want ascending"
    page.click("#receipts thead th:nth-child(5)")
    assert rows.evaluate_all("rs => rs.map(r => Number(r.cells[4].textContent))") == sorted(steps, reverse=True)
    w.shot("archive.png")
    w.clean()
    page.locator("#receipts tbody tr", has_text="a third run").locator("a").click()
    assert page.text_content("#verdict-text") == "VALID" and page.locator("article.step").count() == 7
