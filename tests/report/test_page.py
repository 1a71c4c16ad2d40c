"""The HTML page as text: escaping, bounds, the verdict's basis, failing steps and policy links."""

from __future__ import annotations

import contextlib
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from aer1 import Collector
from aer1._cli import main as aer1_main
from aer1._report._model import MAX_CONTENT_CHARS
from tests.report.conftest import HOSTILE_ATTRIBUTE, HOSTILE_SCRIPT, save


class Elements(HTMLParser):
    """Every element and event-handler attribute of a page, as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.handlers: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.handlers += [name for name, _ in attrs if name.startswith("on")]


def run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = aer1_main(argv)
    return code, out.getvalue(), err.getvalue()


def report(path: Path, out: Path, *options: str) -> tuple[int, str]:
    code, stdout, err = run(["report", str(path), "-o", str(out), *options])
    assert "Traceback" not in stdout + err and "internal error" not in err, err
    return code, out.read_text(encoding="utf-8") if out.exists() else ""


def test_hostile_content_is_escaped_text_and_no_script_but_ours(hostile_receipt: Path, tmp_path: Path) -> None:
    code, html = report(hostile_receipt, tmp_path / "r.html")
    assert code == 0
    assert "window.__pwned" in html  # the text is there ...
    assert HOSTILE_SCRIPT not in html and HOSTILE_ATTRIBUTE not in html and "<b>bob" not in html  # ... as text
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    elements = Elements()
    elements.feed(html)
    assert elements.tags.count("script") == 1, "got a second script element, want only the page's own"
    assert "img" not in elements.tags and "b" not in elements.tags, f"got elements {set(elements.tags)}"
    assert not elements.handlers, f"got event handler attributes {elements.handlers}"
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None and "default-src 'none'" in csp.group(1) and "unsafe-inline" not in csp.group(1).split(
        "script-src")[1], f"got CSP {csp and csp.group(1)!r}, want scripts by hash only"


def test_large_content_is_cut_with_a_note_and_redaction_shown(hostile_receipt: Path, tmp_path: Path) -> None:
    _, html = report(hostile_receipt, tmp_path / "r.html")
    assert "x" * MAX_CONTENT_CHARS not in html, "got the whole 50,000-character content, want it cut"
    assert f"content cut at {MAX_CONTENT_CHARS} characters" in html
    assert '<span class="redacted">[REDACTED]</span>' in html and "sk-not-a-real-key" not in html
    assert "exit 3" in html and ">approved<" in html


def test_valid_page_names_what_the_verdict_rests_on(honest_receipt: Path, tmp_path: Path) -> None:
    code, html = report(honest_receipt, tmp_path / "r.html")
    assert code == 0
    assert 'id="verdict-text">VALID<' in html
    for basis in ("chain: checked", "signer: unsigned", "evidence: checked", "timestamp: not verified",
                  "policy: not given"):
        assert basis in html, f"want the basis {basis!r} on the page"
    assert html.count('<article class="step') == 6 and 'id="step-6"' in html
    assert html.count('class="lane"') == 4  # user, alice, bob, aer1 (the close step)


@pytest.mark.unverified_receipts
def test_tampered_receipt_highlights_its_first_failing_step(tampered_receipt: Path, tmp_path: Path) -> None:
    code, html = report(tampered_receipt, tmp_path / "r.html")
    assert code == 1
    assert 'id="verdict-text">INVALID<' in html and 'href="#step-3" id="first-failing"' in html
    failing = re.findall(r'<article class="step failing[^"]*" id="step-(\d+)"', html)
    assert failing == ["3"], f"got failing steps {failing}, want [3]"
    uuid = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    shown = re.search(rf"<th>expected</th><td>({uuid})</td></tr><tr><th>actual</th><td>({uuid})</td>", html)
    assert shown is not None and shown.group(1) != shown.group(2), "want the expected and actual receipt ids"
    assert "receipt_id is not derived" in html


def test_policy_violations_link_to_their_steps(honest_receipt: Path, policy_file: Path, tmp_path: Path) -> None:
    code, html = report(honest_receipt, tmp_path / "r.html", "--policy", str(policy_file))
    assert code == 1
    links = re.findall(r'class="violation-link" href="#step-(\d+)"', html)
    assert sorted(links) == ["3", "5"], f"got violation links {links}, want steps 3 (tool call) and 5 (bob)"
    assert "policy: FAIL" in html


def test_archive_page_lists_each_receipt_and_links_its_page(honest_receipt: Path, hostile_receipt: Path,
                                                            tmp_path: Path) -> None:
    folder = honest_receipt.parent.parent
    (tmp_path / "site").mkdir()
    code, html = report(folder, tmp_path / "site" / "index.html")
    assert code == 0
    assert html.count('<tr class="receipt"') == 2
    pages = re.findall(r'<a href="(index-\d{4}\.html)">', html)
    assert len(pages) == 2 and all((tmp_path / "site" / p).is_file() for p in pages)
    assert HOSTILE_ATTRIBUTE not in html


def test_show_puts_the_verdict_first_and_previews_each_step(honest_receipt: Path) -> None:
    code, out, _ = run(["show", str(honest_receipt)])
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("verdict: VALID (aer1-chain-v1; chain checked"), lines[0]
    step3 = next(line for line in lines if line.split()[:1] == ["3"])
    assert re.search(r"\+\d+\.\d{3}s +\d+ms tool_call +alice \[lookup\]  \[1, 2\.5\]", step3), step3
    code, out, _ = run(["show", "--json", str(honest_receipt)])
    doc = json.loads(out)
    assert doc["verdict"] == "VALID" and len(doc["steps"]) == 6
    assert doc["steps"][1]["preview"] == "draft" and doc["steps"][0]["start"] == 0.0
    assert all(s["content_matches"] is True and s["duration"] >= 0 for s in doc["steps"])


@pytest.mark.unverified_receipts
def test_show_of_a_tampered_receipt_says_invalid_first(tampered_receipt: Path) -> None:
    code, out, _ = run(["show", str(tampered_receipt)])
    assert code == 0
    assert out.splitlines()[0].startswith("verdict: INVALID: chain: step 3:"), out.splitlines()[0]


@pytest.mark.parametrize("argv", [
    ["report", "missing.json", "-o", "x.html"],
    ["report", "{folder}", "-o", "{folder}"],
    ["report", "{receipt}", "-o", "{receipt}"],
    ["report", "{receipt}", "-o", "{folder}/no/such/dir/x.html"],
    ["report", "{receipt}", "-o", "x.html", "--key", "missing.pub"],
    ["report", "{receipt}", "-o", "x.html", "--policy", "{receipt}"],
    ["report", "-", "-o", "x.html"],
    ["show", "{folder}"],
    ["show", "--json", "missing.json"],
    ["show", "{receipt}", "--rows", "1"],
])
def test_bad_arguments_give_one_line_and_exit_2(argv: list[str], honest_receipt: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = [a.format(folder=honest_receipt.parent, receipt=honest_receipt) for a in argv]
    code, out, err = run(args)
    assert code == 2, f"got exit {code}, want 2 ({args})"
    assert "Traceback" not in out + err and "internal error" not in err, err
    if "--json" in args:
        assert isinstance(json.loads(out), dict)
    else:
        assert len(err.strip().splitlines()) == 1, err


def test_lone_surrogate_and_tagged_values_are_written_restored(tmp_path: Path) -> None:
    c = Collector(goal="odd values")
    c.record("message", {"content": "caf\udead", "big": 2**70, "ratio": float("nan")}, agent="alice")
    code, html = report(save(c, tmp_path), tmp_path / "r.html")
    assert code == 0
    assert "caf\\udead" in html, "want the lone surrogate written as its escape"
    assert str(2**70) in html and "NaN" in html and "$aer1:" not in html, "want tagged values restored"


def test_a_failed_check_is_shown_as_failed_in_the_basis_never_as_not_checked(tmp_path: Path) -> None:
    from ..helpers import make_receipt

    receipt = make_receipt()
    receipt["steps"][2]["agent"] = "mallory"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(receipt), encoding="utf-8")
    code, html = report(path, tmp_path / "r.html")
    assert code == 1
    assert "chain: FAILED" in html and "chain: not checked" not in html


def test_bidi_overrides_and_control_characters_are_shown_escaped_on_every_page(tmp_path: Path) -> None:
    """New user: an agent named ``"\\u202eevil"`` showed as ``live`` on the receipt's page, and its override
    reversed the rest of the step's header (tool, times); a NUL in a message showed as nothing. Every page
    (a receipt's, an archive's index and its data block, a diff's) now writes each bidirectional formatting or
    control character as its escape, as ``aer1 show`` does; line breaks and tabs stay."""
    hidden = ["\u202e", "\u202c", "\u2066", "\u200f", "\x00", "\x1b", "\x85"]
    folder = tmp_path / "archive"
    for name, agent in (("a", "\u202eevil\u202c"), ("b", "\u2066bob\u200f")):
        c = Collector(goal="goal \u202eRTL")
        c.record("lookup", {"arguments": {"q": "nul\x00 esc\x1b[31m"}, "result": "r\u202eesult\x85"},
                 agent=agent, kind="tool_call")
        c.record("message", {"content": "line one\n\tline two \u202edone"}, agent=agent)
        (folder / name).mkdir(parents=True)
        c.save(folder / name / "receipt.json", workflow=c.finalize())
    code, page = report(folder / "a" / "receipt.json", tmp_path / "a.html")
    assert code == 0 and "\\u202eevil\\u202c" in page and "r\\u202eesult\\x85" in page
    assert "line one\n\tline two \\u202edone" in page  # the line break and tab are the text's own
    (tmp_path / "site").mkdir()
    code, index = report(folder, tmp_path / "site" / "index.html")
    assert code == 0
    diff = tmp_path / "d.html"
    assert run(["diff", str(folder / "a" / "receipt.json"), str(folder / "b" / "receipt.json"),
                "--html", str(diff)])[0] == 1
    pages = {"receipt": page, "index": index, "diff": diff.read_text(encoding="utf-8"),
             "index's receipt": (tmp_path / "site" / "index-0002.html").read_text(encoding="utf-8")}
    for what, html in pages.items():
        assert not [c for c in hidden if c in html], f"the {what} page holds a raw {[c for c in hidden if c in html]}"
    assert "\\\\u202eRTL" in index  # in the data block the rows' escape is itself JSON-escaped


def test_a_name_over_200_characters_keeps_its_own_tail_in_its_short_form_and_on_hover(tmp_path: Path) -> None:
    """New user: an agent (or tool) name of 400 characters was cut to its first 200 with a note, so its short
    form ended in the note's tail (``@aaaa… shown]``) and its hover and copy held no end of the name at all; two
    long names differing only at the end looked the same. A long name now keeps its head and its tail, the
    count of the rest between them, in the step list, the totals, the filters and the timeline."""
    tail_a, tail_b = "-instance-0001", "-instance-0002"
    c = Collector(goal="long names")
    for tail in (tail_a, tail_b):
        c.record("t" * 300 + tail, {"arguments": {}, "result": "r"}, agent="@" + "a" * 400 + tail, kind="tool_call")
    (tmp_path / "run").mkdir()
    code, page = report(save_run(c, tmp_path / "run"), tmp_path / "r.html")
    assert code == 0 and not [s for s in re.findall(r'class="id" title="[^"]*">([^<]*)<', page) if "shown]" in s]
    for tail in (tail_a, tail_b):
        shorts = re.findall(r'class="id" title="([^"]*)">([^<]*)<', page)
        held = [(full, short) for full, short in shorts if full.endswith(tail)]
        assert len(held) >= 3, f"got {len(held)} ids ending {tail}, want the agent in the list, both in the totals"
        assert all(short.endswith(tail[-7:]) and full.startswith(("@aaaa", "tttt")) for full, short in held), held
        assert "more characters not shown] …" in held[0][0]
        assert re.search(rf'<option value="[^"]*{tail}">[^<]*{tail[-7:]}</option>', page), "the filter's option"


def save_run(c: Collector, folder: Path) -> Path:
    path = folder / "receipt.json"
    c.save(path, workflow=c.finalize())
    return path
