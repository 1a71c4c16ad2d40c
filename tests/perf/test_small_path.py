"""A small receipt file is verified without orjson, and decides exactly as the large-file path.

Below ``QUICK_PARSE_MIN_BYTES`` the strict parser reads the file and, while orjson is not
loaded, the standard library writes the sorted JSON the step digests, the evidence lines and
the signature's bytes are computed from (``aer1._canonical.sorted_json``). Each receipt file
here, honest or tampered (in its steps, its bytes, its evidence), is verified both ways: with
orjson hidden and the small-file parse, and with orjson loaded and the quick parse forced.
The two reports must be equal field for field, the small one must not load orjson, and every
honest receipt must pass the quick step checks without orjson (not fall back to the reference).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector, generate_key_pair
from aer1._layout import receipt_json
from aer1._receipt import evidence_path_for
from aer1.verifier import _parse, verify_receipt
from aer1.verifier._fast import check_run
from aer1.verifier._parse import _parse_exact

from ..helpers import make_collector
from .test_quick_steps import _RECEIPT_CHANGES, _STEP_CHANGES, _receipts, _rechained


def _write(path: Path, receipt: dict[str, Any]) -> Path:
    """The receipt in our saved layout (the standard library's writer for what orjson cannot write)."""
    try:
        data = receipt_json(receipt)
    except TypeError:
        data = json.dumps(receipt, indent=2).encode("utf-8", "surrogatepass")
    path.write_bytes(data)
    return path


def _both_paths(path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> dict[str, Any]:
    """The report of the small-file path (orjson hidden), held equal to the large-file path's."""
    with monkeypatch.context() as m:
        m.delitem(sys.modules, "orjson")
        small = verify_receipt(path, **options).to_dict()
        loaded = "orjson" in sys.modules
    if path.stat().st_size < _parse.QUICK_PARSE_MIN_BYTES:  # a larger one (a long string) is read by orjson
        assert not loaded, "got orjson loaded by the small-file path, want the standard library only"
    with monkeypatch.context() as m:
        m.setattr(_parse, "QUICK_PARSE_MIN_BYTES", 0)
        large = verify_receipt(path, **options).to_dict()
    assert small == large, f"got {small}, want the large-file path's {large}"
    return small


def _quick_without_orjson(receipt: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick step checks pass the receipt without orjson, with the run orjson's encoding gives."""
    steps = receipt["steps"]
    with_orjson = check_run(steps, 0, len(steps), last=True)
    with monkeypatch.context() as m:
        m.delitem(sys.modules, "orjson")
        without = check_run(steps, 0, len(steps), last=True)
    assert without is not None, "got the reference path without orjson, want the quick one"
    assert without == with_orjson


@pytest.mark.parametrize(("name", "receipt"), list(_receipts()), ids=[n for n, _ in _receipts()])
def test_every_receipt_we_write_takes_the_quick_path_without_orjson(name: str, receipt: dict[str, Any],
                                                                    tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "r.json", receipt)
    _quick_without_orjson(_parse_exact(path.read_bytes(), "r"), monkeypatch)
    assert _both_paths(path, monkeypatch)["verdict"] == "VALID"


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_a_saved_receipt_with_its_evidence_decides_alike(signed: bool, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    options: dict[str, Any] = {}
    if signed:
        options["signing_key"], _ = generate_key_pair()
    c = Collector("small", **options)
    for i in range(40):
        c.record("message", {"content": f"turn {i} \u00e9\U0001f600", "n": i, "x": [None, True, 1.5]},
                 agent="alice", kind="message")
    path = Path(c.save(str(tmp_path / "r.json"), workflow=c.finalize("done")))
    _quick_without_orjson(_parse_exact(path.read_bytes(), "r"), monkeypatch)  # required members only: the template
    report = _both_paths(path, monkeypatch)
    assert report["verdict"] == "VALID"
    assert {c["name"]: c["status"] for c in report["checks"]}["evidence"] == "PASS"
    if signed:
        assert {c["name"]: c["status"] for c in report["checks"]}["signature"] == "PASS"


#: Changes to one evidence line (line 3: step 2's); each is held to the large-file path's verdict.
_EVIDENCE_CHANGES: list[tuple[str, Callable[[bytes], bytes]]] = [
    ("content changed", lambda line: line.replace(b"turn", b"tUrn")),
    ("spacing", lambda line: line.replace(b'":', b'": ', 1)),
    ("an escape spelled out", lambda line: line.replace(b"turn", b"\\u0074urn")),
    ("a duplicate key", lambda line: line.replace(b'{"content"', b'{"n":0,"content"', 1)),
    ("NaN", lambda line: line.replace(b'"n":', b'"n":NaN,"m":', 1)),
    ("a lone surrogate", lambda line: line.replace(b"turn", b"\\ud800urn")),
    ("invalid UTF-8", lambda line: line.replace(b"turn", b"\xffurn")),
    ("not JSON", lambda line: line[:-3] + b"\n"),
    ("a large integer", lambda line: line.replace(b'"n":', b'"n":123456789012345678901234567890,"m":', 1)),
    ("deep", lambda line: line.replace(b'"n":', b'"n":' + b"[" * 300 + b"]" * 300 + b',"m":', 1)),
]


@pytest.mark.parametrize(("what", "change"), _EVIDENCE_CHANGES, ids=[w for w, _ in _EVIDENCE_CHANGES])
def test_a_changed_evidence_line_decides_alike(what: str, change: Callable[[bytes], bytes], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    c = Collector("small")
    for i in range(5):
        c.record("message", {"content": f"turn {i}", "n": i}, agent="alice", kind="message")
    path = Path(c.save(str(tmp_path / "r.json"), workflow=c.finalize("done")))
    evidence = Path(evidence_path_for(str(path)))
    lines = evidence.read_bytes().splitlines(keepends=True)
    lines[2] = change(lines[2])
    evidence.write_bytes(b"".join(lines))
    _both_paths(path, monkeypatch)


@pytest.mark.unverified_receipts
@pytest.mark.parametrize(("what", "change"), _STEP_CHANGES, ids=[w for w, _ in _STEP_CHANGES])
@pytest.mark.parametrize("forged", [False, True], ids=["as changed", "rechained"])
def test_a_changed_step_decides_alike(what: str, change: Callable[[dict[str, Any]], None], forged: bool,
                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    receipt = make_collector().finalize(final_answer="ok TERMINATE")
    steps = receipt["steps"]
    step = dict(steps[len(steps) // 2])
    change(step)
    steps[len(steps) // 2] = step
    if forged:
        _rechained(receipt)
    _both_paths(_write(tmp_path / "r.json", receipt), monkeypatch)


@pytest.mark.unverified_receipts
@pytest.mark.parametrize(("what", "change"), _RECEIPT_CHANGES, ids=[w for w, _ in _RECEIPT_CHANGES])
@pytest.mark.parametrize("forged", [False, True], ids=["as changed", "rechained"])
def test_a_changed_step_list_decides_alike(what: str, change: Callable[[list[Any]], None], forged: bool,
                                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    receipt = make_collector().finalize(final_answer="ok TERMINATE")
    change(receipt["steps"])
    if forged:
        _rechained(receipt)
    _both_paths(_write(tmp_path / "r.json", receipt), monkeypatch)


#: Byte-level changes to a saved receipt's text, each held to the large-file path's verdict.
_TEXT_CHANGES: list[tuple[str, Callable[[bytes], bytes]]] = [
    ("a duplicate member", lambda t: t.replace(b'\n  "goal"', b'\n  "goal": "x",\n  "goal"', 1)),
    ("a duplicate step member", lambda t: t.replace(b'{"seq":2,', b'{"seq":2,"seq":2,', 1)),
    ("an escape in a step", lambda t: t.replace(b'"agent":"a', b'"agent":"\\u0061', 1)),
    ("a lone surrogate in a step", lambda t: t.replace(b'"agent":"a', b'"agent":"\\ud800', 1)),
    ("NaN", lambda t: t.replace(b'"seq":2,', b'"seq":NaN,', 1)),
    ("seq 2.0", lambda t: t.replace(b'"seq":2,', b'"seq":2.0,', 1)),
    ("another layout", lambda t: json.dumps(json.loads(t)).encode()),
    ("compact", lambda t: json.dumps(json.loads(t), separators=(",", ":")).encode()),
    ("indented steps", lambda t: json.dumps(json.loads(t), indent=2).encode()),
    ("a byte order mark", lambda t: b"\xef\xbb\xbf" + t),
    ("invalid UTF-8", lambda t: t.replace(b'"agent":"a', b'"agent":"\xff', 1)),
    ("cut short", lambda t: t[: len(t) // 2]),
    ("trailing text", lambda t: t + b"x"),
    ("deep", lambda t: t.replace(b'\n  "goal"', b'\n  "deep": ' + b"[" * 70 + b"]" * 70 + b',\n  "goal"', 1)),
    ("a long string", lambda t: t.replace(b'\n  "goal"', b'\n  "long": "' + b"x" * (1 << 20) + b'",\n  "goal"', 1)),
    ("empty", lambda t: b""),
    ("an array", lambda t: b"[" + t + b"]"),
]


@pytest.mark.unverified_receipts
@pytest.mark.parametrize(("what", "change"), _TEXT_CHANGES, ids=[w for w, _ in _TEXT_CHANGES])
def test_a_changed_text_decides_alike(what: str, change: Callable[[bytes], bytes], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "r.json", make_collector().finalize(final_answer="ok TERMINATE"))
    path.write_bytes(change(path.read_bytes()))
    _both_paths(path, monkeypatch)


def test_the_calendar_check_decides_as_datetime() -> None:
    """Dates are checked without loading datetime: ``YYYY-MM-DD`` of ASCII digits as ``date.fromisoformat``
    decides it; every other text (the basic and week forms datetime also reads, other scripts' digits) is no date."""
    import datetime
    import re

    from aer1._timefmt import is_calendar_date

    def iso_ok(text: str) -> bool:
        if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text, re.ASCII) is None:
            return False
        try:
            datetime.date.fromisoformat(text)
        except ValueError:
            return False
        return True

    texts = [f"{y:04d}-{m:02d}-{d:02d}" for y in (0, 1, 4, 100, 200, 400, 1900, 1999, 2000, 2023, 2024, 2100, 2400,
                                                 9999) for m in range(14) for d in range(33)]
    texts += ["2026-1-01", "\uff12\uff10\uff12\uff16-01-01", "2026-\u0661\u0662-01", "20260101", "2026-01-01T",
              "", "2026-W01-1", "2026-01-0a", "+026-01-01", "2026/01/01", " 026-01-01", "2026-01-0\u0661"]
    wrong = [t for t in texts if is_calendar_date(t) != iso_ok(t)]
    assert wrong == [], f"got {wrong} decided unlike datetime, want none"
