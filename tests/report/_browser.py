"""The system Chromium, driven by Playwright, for the report's browser tests: one browser per test module.

A module imports ``browser`` (its fixture, module-scoped) and ``Watched``: a page loaded from
file:// with every request, console error and page error it caused recorded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from aer1._cli import main as aer1_main

playwright = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"
#: How Chromium is started: as root it needs --no-sandbox; nothing may reach the network.
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOTS = Path(__file__).resolve().parents[2] / "out" / "report"


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Watched:
    """A page with every request, console error and page error it caused recorded."""

    def __init__(self, browser: object, html: Path) -> None:
        self.url = html.resolve().as_uri()
        self.page = browser.new_page(viewport={"width": 1200, "height": 900})  # type: ignore[attr-defined]
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(self.url)

    def clean(self) -> None:
        """Nothing fetched but the page itself; nothing went wrong in the console."""
        assert self.requests == [self.url], f"got requests {self.requests}, want only {self.url}"
        assert self.errors == [], f"got console errors {self.errors}"

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / name), full_page=True)


def write_page(source: Path, out: Path, *options: str) -> Path:
    assert aer1_main(["report", str(source), "-o", str(out), *options]) in (0, 1)
    return out


