"""``aer1 report --trace-url``: the run and each step with a span link to the trace viewer, and nothing else does.

Real OpenTelemetry SDK spans give the steps their ids. The template is the user's and is
checked; the ids are the receipt's (untrusted) and enter a link only in their exact W3C form.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from aer1 import Collector
from aer1._report._trace_url import MAX_TRACE_URL_CHARS, TraceUrl
from tests.report.conftest import HOSTILE_SCRIPT, save
from tests.report.test_page import run

_TRACER = TracerProvider().get_tracer("tests")
TEMPLATE = "https://jaeger.example/trace/{trace_id}?uiFind={span_id}"


class Links(HTMLParser):
    """The trace links of a page: (where, href) with where the step's seq or "run"."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.step = "run"

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "article" and a.get("data-seq"):
            self.step = str(a["data-seq"])
        if tag == "a" and "trace-link" in (a.get("class") or ""):
            self.links.append((self.step, str(a.get("href"))))


def traced(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    c = Collector("traced run")
    c.record("task", {"task": "t"}, agent="user")  # under no span: no link
    with _TRACER.start_as_current_span("invoke_agent a"):
        c.record("message", {"text": "hi"}, agent="a")
        with _TRACER.start_as_current_span("execute_tool lookup"):
            c.record("lookup", {"k": 1}, agent="a", call_id="call_1")
    return save(c, tmp_path), {}


def links(page: Path) -> list[tuple[str, str]]:
    parser = Links()
    parser.feed(page.read_text())
    return parser.links


def test_the_run_and_each_step_with_a_span_link_to_its_span(tmp_path: Path) -> None:
    path, _ = traced(tmp_path)
    receipt = json.loads(path.read_text())
    out = tmp_path / "page.html"
    code, _, err = run(["report", str(path), "-o", str(out), "--trace-url", TEMPLATE])
    assert code == 0, err
    steps = {str(s["seq"]): s for s in receipt["steps"]}
    want_steps = [(seq, TEMPLATE.replace("{trace_id}", s["trace_id"]).replace("{span_id}", s["span_id"]))
                  for seq, s in steps.items() if "trace_id" in s]
    assert len(want_steps) == 2
    first = steps["2"]  # the run's one trace, at its first step's span
    run_link = ("run", TEMPLATE.replace("{trace_id}", first["trace_id"]).replace("{span_id}", first["span_id"]))
    assert links(out) == [run_link, *want_steps]
    # without the option, no trace link at all
    plain = tmp_path / "plain.html"
    assert run(["report", str(path), "-o", str(plain)])[0] == 0
    assert links(plain) == []


def test_an_archive_page_passes_the_template_to_every_receipt_page(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    traced(folder)
    out = tmp_path / "site" / "index.html"
    code, _, err = run(["report", str(folder), "-o", str(out), "--trace-url", "https://t.example/{trace_id}"])
    assert code == 0, err
    pages = sorted(out.parent.glob("index-*.html"))
    assert len(pages) == 1 and len(links(pages[0])) == 3


def _refused(template: str, tmp_path: Path) -> str:
    """The one line ``aer1 report --trace-url template`` exits 2 with (no page written)."""
    path, _ = traced(tmp_path)
    out = tmp_path / "page.html"
    code, _, err = run(["report", str(path), "-o", str(out), "--trace-url", template])
    assert code == 2 and "--trace-url" in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and not out.exists()
    return err


@pytest.mark.parametrize("template", [
    "javascript:alert(1)//{trace_id}",
    "https://x.example/{trace_id}\" onmouseover=\"alert(1)",
    "https://x.example/{trace_id}'><script>alert(1)</script>",
    "https://x.example/{trace_id} space",
    "https://x.example/{trace_id}/{service}",
    "https://x.example/{trace_id",
    "https://x.example/trace",
    "ftp://x.example/{trace_id}",
    "/relative/{trace_id}",
    "https:///{trace_id}",
    "",
    "https://x.example/{trace_id}/" + "a" * MAX_TRACE_URL_CHARS,
], ids=lambda t: t[:40] or "empty")
def test_a_bad_template_is_refused_in_one_line(template: str, tmp_path: Path) -> None:
    _refused(template, tmp_path)


@pytest.mark.parametrize("trace_id, span_id", [
    (HOSTILE_SCRIPT, "0123456789abcdef"),
    ("0123456789ABCDEF0123456789ABCDEF", "0123456789abcdef"),  # not lowercase
    ("0" * 32, "0123456789abcdef"),  # all zero: no trace
    ("0123456789abcdef0123456789abcdef", "\"><img src=x onerror=alert(1)>"),
    (["0123456789abcdef0123456789abcdef"], "0123456789abcdef"),
])
def test_ids_not_of_the_w3c_form_give_no_link(trace_id: object, span_id: object, tmp_path: Path) -> None:
    """A receipt edited to hold hostile ids: the page renders (the chain check fails), with no link from them."""
    path, _ = traced(tmp_path)
    receipt = json.loads(path.read_text())
    receipt["steps"][2]["trace_id"], receipt["steps"][2]["span_id"] = trace_id, span_id
    path.write_text(json.dumps(receipt))
    out = tmp_path / "page.html"
    code, _, err = run(["report", str(path), "-o", str(out), "--trace-url", TEMPLATE])
    assert code in (1, 2) and "Traceback" not in err
    html = out.read_text()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert all(seq != "3" for seq, _ in links(out))
    assert TraceUrl(TEMPLATE).link(trace_id, span_id) is None


def test_a_template_without_span_id_links_every_traced_step_to_its_trace() -> None:
    url = TraceUrl("https://t.example/trace/{trace_id}")
    assert url.link("0123456789abcdef0123456789abcdef") == "https://t.example/trace/0123456789abcdef0123456789abcdef"
    assert url.link("0123456789abcdef0123456789abcdef", "bad") is None  # a span id is checked when given
    assert TraceUrl("https://t.example/{trace_id}?s={span_id}").link("0123456789abcdef0123456789abcdef") is None


@pytest.mark.parametrize("template", [
    "{trace_id}https://x.example/",  # a link of scheme '<hex>https', or relative, to nowhere the user wrote
    "https:{trace_id}//x.example/",  # a browser reads the trace id as the host
    "https://{trace_id}.x.example/",
    "https://{trace_id}@x.example/",
    "https://x.example{span_id}/{trace_id}",
])
def test_a_placeholder_before_the_path_is_refused_rather_than_making_the_scheme_or_host(
        template: str, tmp_path: Path) -> None:
    _refused(template, tmp_path)
    with pytest.raises(ValueError):
        TraceUrl(template)


@pytest.mark.parametrize("character", ["\u2028", "\u2029", "\u00a0", "\u3000", "\u200b", "\u202e", "\ufeff",
                                       "\udcff", "\u0085"], ids=ascii)
def test_a_character_that_is_not_printable_is_refused_rather_than_altered_in_the_link(
        character: str, tmp_path: Path) -> None:
    """Unicode whitespace (which the refusal names) went into the link unseen, and a format character such as U+202E
    was written into it as the page's visible escape (``\\u202e``), a link the template does not give."""
    err = _refused(f"https://x.example/{{trace_id}}?q={character}", tmp_path)
    assert ascii(character)[1:-1] in err


@pytest.mark.parametrize("template", ["https://x.example:99999/{trace_id}", "https://x.example:port/{trace_id}"])
def test_a_port_that_is_not_one_is_refused_in_one_line(template: str, tmp_path: Path) -> None:
    assert "Port" in _refused(template, tmp_path)


def test_printable_non_ascii_characters_and_a_port_stay_in_the_link() -> None:
    url = TraceUrl("https://ü.example:8443/trace/{trace_id}?q=é")
    assert url.link("0123456789abcdef0123456789abcdef") == (
        "https://ü.example:8443/trace/0123456789abcdef0123456789abcdef?q=é")
