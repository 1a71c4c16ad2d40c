"""The evidence check's quick line test decides exactly as the strict parse and exact re-encoding.

A line the quick test takes is, byte for byte, the one our writer makes; every other line
goes to the strict path. So the report with the quick test equals the strict path's on
every evidence file here, our own and lines rewritten by a forger who also rewrites the
step's receipt_hash and the chain (so only the line's form is in question).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
import pytest

from aer1 import Collector
from aer1._limits import MAX_EVIDENCE_DEPTH
from aer1._receipt import evidence_path_for
from aer1.verifier import _evidence, verify_receipt

from .test_quick_steps import _rechained

_STEP = 2  # the step whose evidence line is rewritten (line 3 of the file: the header is line 1)


def _saved(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    c = Collector(goal="evidence", session_id="e")
    c.record("message", {"type": "TextMessage", "content": "hello"}, agent="a")
    c.record("tool", {"arguments": {"q": "x", "n": [1, 2, None, True]}, "result": "ok"}, agent="a", call_id="c")
    c.record("message", {"content": "bye"}, agent="b")
    receipt = c.finalize("done")
    path = tmp_path / "r.json"
    c.save(str(path), workflow=receipt)
    return receipt, path


def _reports(receipt: dict[str, Any], path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The report with the quick line test, after checking it equals the strict path's."""
    evidence = evidence_path_for(str(path))
    quick = verify_receipt(receipt, evidence=evidence).to_dict()
    with monkeypatch.context() as m:
        m.setattr(_evidence, "line_exact", lambda *a: False)
        strict = verify_receipt(receipt, evidence=evidence).to_dict()
    assert quick == strict, f"got {quick['checks'][6]}, want the strict path's {strict['checks'][6]}"
    return quick


def test_our_evidence_takes_the_quick_test_on_every_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    receipt, path = _saved(tmp_path)
    lines = Path(evidence_path_for(str(path))).read_bytes().splitlines(keepends=True)
    for k, line in enumerate(lines[1:], start=1):
        want = receipt["steps"][k - 1]["receipt_hash"]
        assert _evidence.line_exact(line, k + 1, k, want), f"line {k + 1}: got the strict path, want the quick one"
    assert _reports(receipt, path, monkeypatch)["verdict"] == "VALID"


def _deep(levels: int) -> bytes:
    return b'{"a":' * levels + b"1" + b"}" * levels


#: Lines for step _STEP: (what, line bytes given the step's seq and the content's hash, content bytes).
_LINES: list[tuple[str, bytes]] = [
    ("space after a colon", b'{"content": "bye"}'),
    ("members unsorted", b'{"b":1,"a":2}'),
    ("a repeated key", b'{"a":1,"a":2}'),
    ("a float", b'{"a":1.5}'),
    ("a float written long", b'{"a":1.50}'),
    ("an integer beyond 2^53", b'{"a":9007199254740993}'),
    ("an integer beyond 2^64", b'{"a":36893488147419103232}'),
    ("non-ASCII text", '{"a":"\u00e9"}'.encode()),
    ("an escaped slash", b'{"a":"\\/"}'),
    ("an escaped letter", b'{"a":"\\u0061"}'),
    ("a lone surrogate escape", b'{"a":"\\ud800"}'),
    ("NaN", b'{"a":NaN}'),
    ("a reserved key", b'{"$aer1:int":"1"}'),
    ("nested at the limit", _deep(MAX_EVIDENCE_DEPTH - 1)),
    ("nested past the limit", _deep(MAX_EVIDENCE_DEPTH)),
    ("nested far past the limit", _deep(MAX_EVIDENCE_DEPTH + 40)),
    ("two values", b'1,"content":2'),
    ("not JSON", b'{"a":'),
]


@pytest.mark.unverified_receipts
@pytest.mark.parametrize(("what", "content"), _LINES, ids=[w for w, _ in _LINES])
def test_a_rewritten_line_gets_the_strict_report(what: str, content: bytes, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    receipt, path = _saved(tmp_path)
    receipt["steps"][_STEP - 1]["receipt_hash"] = hashlib.sha256(content).hexdigest()  # the forger's hash
    _rechained(receipt)
    evidence = Path(evidence_path_for(str(path)))
    lines = evidence.read_bytes().splitlines(keepends=True)
    lines[_STEP] = (b'{"seq":%d,"receipt_hash":"%s","content":' % (_STEP, receipt["steps"][_STEP - 1]
                                                                    ["receipt_hash"].encode()) + content + b"}\n")
    evidence.write_bytes(b"".join(lines))
    _reports(receipt, path, monkeypatch)


_FRAMES: list[tuple[str, Any]] = [
    ("members reordered", lambda seq, h, c: b'{"receipt_hash":"%s","seq":%d,"content":%s}\n' % (h, seq, c)),
    ("seq one ahead", lambda seq, h, c: b'{"seq":%d,"receipt_hash":"%s","content":%s}\n' % (seq + 1, h, c)),
    ("seq as a float", lambda seq, h, c: b'{"seq":%d.0,"receipt_hash":"%s","content":%s}\n' % (seq, h, c)),
    ("another step's hash", lambda seq, h, c: b'{"seq":%d,"receipt_hash":"%s","content":%s}\n' % (seq, b"0" * 64,
                                                                                                   c)),
    ("an extra member", lambda seq, h, c: b'{"seq":%d,"receipt_hash":"%s","content":%s,"x":1}\n' % (seq, h, c)),
    ("no newline", lambda seq, h, c: b'{"seq":%d,"receipt_hash":"%s","content":%s}' % (seq, h, c)),
    ("content changed", lambda seq, h, c: b'{"seq":%d,"receipt_hash":"%s","content":%s}\n'
     % (seq, h, c.replace(b"ok", b"no"))),
    ("closing brace missing", lambda seq, h, c: b'{"seq":%d,"receipt_hash":"%s","content":%s \n' % (seq, h, c)),
    ("a carriage return", lambda seq, h, c: b'{"seq":%d,"receipt_hash":"%s","content":%s}\r\n' % (seq, h, c)),
]


@pytest.mark.unverified_receipts
@pytest.mark.parametrize(("what", "frame"), _FRAMES, ids=[w for w, _ in _FRAMES])
def test_a_reframed_line_gets_the_strict_report(what: str, frame: Any, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    receipt, path = _saved(tmp_path)
    evidence = Path(evidence_path_for(str(path)))
    lines = evidence.read_bytes().splitlines(keepends=True)
    record = orjson.loads(lines[_STEP])
    content = orjson.dumps(record["content"], option=orjson.OPT_SORT_KEYS)
    lines[_STEP] = frame(_STEP, record["receipt_hash"].encode(), content)
    if what == "no newline":
        lines = lines[:_STEP + 1]
    evidence.write_bytes(b"".join(lines))
    _reports(receipt, path, monkeypatch)
