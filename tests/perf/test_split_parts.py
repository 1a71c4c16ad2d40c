"""A large receipt file cut into runs of step lines, each checked in its own process, reports as the in-memory path.

Blocks are made small here (``LEVELS`` 3, 8 steps a block), files are cut however small
they are, and each process reads a few hundred bytes at a time, so receipts of a few dozen
steps cross block edges, read edges and process cuts. Every receipt, honest or tampered,
must get the in-memory report (one process) field for field; an honest one must take the
cut path, a tampered one must be handed back to the in-memory path.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import aer1.verifier as verifier
from aer1 import Collector
from aer1._layout import receipt_json
from aer1._signing import load_private_key, sign_receipt
from aer1.verifier import _split, _verify, verify_receipt

from ..helpers import KEYS
from .test_quick_steps import _rechained

_LEVELS = 3
_BLOCK = 1 << _LEVELS


def _receipt(n: int, *, signed: bool = True) -> dict[str, Any]:
    """A finalized receipt of ``n`` steps (the close step included), signed unless told."""
    c = Collector(goal="cuts", session_id="cuts", signing_key=KEYS / "trusted.key" if signed else None)
    for k in range(n - 1):
        c.record("message", {"k": k}, agent="a", reply_to="u" if k % 3 == 0 else None)
    return c.finalize("done")


@pytest.fixture
def small_cuts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Cut every file in small blocks and reads; yields, per verification, whether the cut path answered."""
    monkeypatch.setattr(_verify, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(_split, "SPLIT_MIN_BYTES", 0)
    monkeypatch.setattr(_split, "LEVELS", _LEVELS)
    monkeypatch.setattr(_split, "BLOCK_STEPS", _BLOCK)
    monkeypatch.setattr(_split, "_CHUNK", 700)
    answers: list[bool] = []
    real = _split.verify_split

    def spy(*args: Any, **kwargs: Any) -> Any:
        report = real(*args, **kwargs)
        answers.append(report is not None)
        return report

    monkeypatch.setattr(_split, "verify_split", spy)
    yield answers


def _both(path: Path, jobs: int = 3) -> tuple[dict[str, Any], dict[str, Any]]:
    """(report with the file cut for ``jobs`` processes, report of the in-memory path in one)."""
    return verify_receipt(path, jobs=jobs).to_dict(), verify_receipt(path, jobs=1).to_dict()


def test_the_cut_path_forks_in_this_test_process() -> None:
    names = [t.name for t in threading.enumerate()]
    assert _split.fork_safe(), f"got threads {names} (no fork then), want one: earlier tests left a thread running"


@pytest.mark.parametrize("n", [2 * _BLOCK, 2 * _BLOCK + 1, 3 * _BLOCK - 1, 5 * _BLOCK, 7 * _BLOCK + 3, 40 * _BLOCK + 5])
@pytest.mark.parametrize("jobs", [2, 3, 5])
def test_an_honest_receipt_cut_into_runs_gets_the_in_memory_report(n: int, jobs: int, tmp_path: Path,
                                                                   small_cuts: list[bool]) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(receipt_json(_receipt(n)))
    cut, in_memory = _both(path, jobs)
    assert cut == in_memory, f"got {cut}, want {in_memory}"
    assert in_memory["verdict"] == "VALID", in_memory
    assert small_cuts == [True], f"got cut-path answers {small_cuts}, want one"


def test_an_unsigned_receipt_with_its_evidence_is_cut_to_the_same_report(tmp_path: Path,
                                                                          small_cuts: list[bool]) -> None:
    c = Collector(goal="cuts", session_id="cuts")
    for k in range(6 * _BLOCK):
        c.record("search", {"k": k, "text": "é" * (k % 5)}, agent="b", kind="tool_call")
    path = Path(c.save(tmp_path / "r.json"))
    cut, in_memory = _both(path)
    assert cut == in_memory, f"got {cut}, want {in_memory}"
    assert in_memory["verdict"] == "VALID" and in_memory["basis"]["evidence"] == "checked", in_memory
    assert small_cuts == [True], small_cuts


def test_a_cut_file_keeps_the_digest_a_policy_reads_it_again_by(tmp_path: Path, small_cuts: list[bool]) -> None:
    path = tmp_path / "r.json"
    data = receipt_json(_receipt(4 * _BLOCK))
    path.write_bytes(data)
    report = verify_receipt(path, jobs=2)
    assert small_cuts == [True], small_cuts
    assert verifier._report.same_bytes(data, report), report.checks[0].facts


def _edit(k: int) -> Callable[[dict[str, Any]], None]:
    def change(r: dict[str, Any]) -> None:
        r["steps"][k]["agent"] = "mallory"
    return change


def _forged(r: dict[str, Any]) -> None:
    r["steps"][_BLOCK + 2]["agent"] = "mallory"
    _rechained(r)  # every link, id, the head and the root made to fit: only the signature refuses it


def _forged_duplicate(r: dict[str, Any]) -> None:
    r["steps"][3 * _BLOCK + 5] = copy.deepcopy(r["steps"][3])
    r["steps"][3 * _BLOCK + 5]["seq"] = 3 * _BLOCK + 6
    _rechained(r)


def _repeated_id(r: dict[str, Any]) -> None:
    r["steps"][6 * _BLOCK + 1]["receipt_id"] = r["steps"][2]["receipt_id"]


def _seam_link(k: int) -> Callable[[dict[str, Any]], None]:
    def change(r: dict[str, Any]) -> None:
        r["steps"][k]["prev_digest"] = r["steps"][0]["prev_digest"]
    return change


def _seq_shift(r: dict[str, Any]) -> None:
    """Every seq from the middle on one higher: a cut there claims a block edge that is not one."""
    for s in r["steps"][len(r["steps"]) // 2:]:
        s["seq"] += 1
    _rechained(r)


def _dropped(k: int) -> Callable[[dict[str, Any]], None]:
    def change(r: dict[str, Any]) -> None:
        del r["steps"][k]
    return change


def _swapped(r: dict[str, Any]) -> None:
    steps = r["steps"]
    steps[_BLOCK], steps[_BLOCK + 1] = steps[_BLOCK + 1], steps[_BLOCK]


_N = 8 * _BLOCK + 3
_TAMPERED: dict[str, Callable[[dict[str, Any]], None]] = {
    "first block": _edit(1),
    "last of a block": _edit(_BLOCK - 1),
    "first of a block": _edit(_BLOCK),
    "middle, where a cut falls": _edit(_N // 2),
    "last step": _edit(_N - 1),
    "a step id repeated in another run": _repeated_id,
    "seam link at a block": _seam_link(_BLOCK),
    "seam link in the middle": _seam_link(4 * _BLOCK),
    "re-chained forgery": _forged,
    "re-chained duplicate step in another run": _forged_duplicate,
    "re-chained seq shift": _seq_shift,
    "a step dropped at a block edge": _dropped(2 * _BLOCK),
    "a step dropped in the middle": _dropped(_N // 2),
    "two steps swapped": _swapped,
    "wrong merkle version": lambda r: r.update(merkle_version="other"),
    "no profile claim": lambda r: (r.pop("profile"), r.pop("chain_head")),
    "signature removed": lambda r: r.pop("signature"),
}


#: Changes after which every step still passes (the forger re-chained them, or only the signature went).
_STEPS_PASS = {"re-chained forgery", "re-chained duplicate step in another run", "signature removed"}


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("what", list(_TAMPERED))
@pytest.mark.parametrize("jobs", [2, 4])
def test_a_tampered_receipt_cut_into_runs_gets_the_in_memory_report(what: str, jobs: int, tmp_path: Path,
                                                                    small_cuts: list[bool]) -> None:
    r = _receipt(_N)
    _TAMPERED[what](r)
    path = tmp_path / "r.json"
    path.write_bytes(receipt_json(r))
    cut, in_memory = _both(path, jobs)
    assert cut == in_memory, f"got {cut}, want {in_memory}"
    if what in _STEPS_PASS:  # every step passes: the cut path answers, and only the signature check refuses it
        assert small_cuts == [True], f"got cut-path answers {small_cuts}, want its report"
    else:
        assert small_cuts == [False], f"got cut-path answers {small_cuts}, want it to hand the file back"
    if what != "signature removed":
        assert in_memory["verdict"] != "VALID", in_memory


def _line(data: bytes, seq: int) -> tuple[int, int]:
    at = data.index(b'\n    {"seq":%d,' % seq)
    return at, data.index(b"\n", at + 1)


def _replace_in_line(seq: int, old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        at, end = _line(data, seq)
        line = data[at:end]
        assert old in line, f"got no {old!r} in {line!r}"
        return data[:at] + line.replace(old, new, 1) + data[end:]
    return edit


def _two_steps_one_line(data: bytes) -> bytes:
    at, end = _line(data, 2 * _BLOCK + 1)
    return data[:at] + data[at:end] + data[end + 1 + 4:]  # the next line's break and indent removed


def _nested_steps(data: bytes) -> bytes:
    """The steps moved under another member, and a top-level steps array of their first line only."""
    at, end = _line(data, 1)
    first = data[at + 1:end].strip().rstrip(b",")
    return data.replace(b'\n  "steps": [', b'\n  "steps": [' + first + b'],\n  "old": {\n  "steps": [', 1).replace(
        b"\n  ],\n", b"\n  ]},\n", 1)


_TEXT_EDITS: dict[str, Callable[[bytes], bytes]] = {
    "duplicate key": _replace_in_line(2 * _BLOCK, b'{"seq":', b'{"agent":"x","seq":'),
    "duplicate key, one escaped": _replace_in_line(2 * _BLOCK, b'{"seq":', b'{"\\u0061gent":"x","seq":'),
    "escaped value": _replace_in_line(_N // 2, b'"agent":"a"', b'"agent":"\\u0061"'),
    "space after a colon": _replace_in_line(_N // 2, b'"agent":"a"', b'"agent": "a"'),
    "big int": _replace_in_line(_BLOCK + 1, b'{"seq":%d,' % (_BLOCK + 1), b'{"seq":100000000000000000000000,'),
    "float seq": _replace_in_line(_BLOCK + 1, b'{"seq":%d,' % (_BLOCK + 1), b'{"seq":%d.0,' % (_BLOCK + 1)),
    "NaN": _replace_in_line(_BLOCK + 1, b'{"seq":%d,' % (_BLOCK + 1), b'{"seq":NaN,'),
    "lone surrogate": _replace_in_line(3, b'"tool":"message"', b'"tool":"\\ud800"'),
    "invalid UTF-8": _replace_in_line(3, b'"tool":"message"', b'"tool":"\xff"'),
    "two steps on one line": _two_steps_one_line,
    "a trailing comma after the last step": lambda d: d.replace(b"}\n  ],", b"},\n  ],", 1),
    "no comma between two steps": _replace_in_line(_BLOCK + 3, b"},", b"}"),
    "CRLF line ends": lambda d: d.replace(b"\n", b"\r\n"),
    "a step line indented deeper": _replace_in_line(_BLOCK + 3, b'{"seq"', b'  {"seq"'),
    "steps twice at the top": lambda d: d.replace(b'\n  "steps": [', b'\n  "steps": [],\n  "steps": [', 1),
    "the steps nested in another member": _nested_steps,
    "byte order mark": lambda d: b"\xef\xbb\xbf" + d,
    "cut short": lambda d: d[: len(d) * 2 // 3],
    "text after the receipt": lambda d: d + b"{}",
}


#: Edits that leave the same JSON value: the receipt stays VALID, whichever path reads it.
_SAME_RECEIPT = {"escaped value", "space after a colon", "two steps on one line", "CRLF line ends",
                 "a step line indented deeper"}


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("what", list(_TEXT_EDITS))
def test_an_edited_file_cut_into_runs_gets_the_in_memory_report(what: str, tmp_path: Path,
                                                                small_cuts: list[bool]) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(_TEXT_EDITS[what](receipt_json(_receipt(_N))))
    cut, in_memory = _both(path)
    assert cut == in_memory, f"got {cut}, want {in_memory}"
    if what in _SAME_RECEIPT:  # the same receipt spelled or laid out another way: still VALID
        assert in_memory["verdict"] == "VALID", in_memory
    else:
        assert in_memory["verdict"] != "VALID", in_memory
        assert small_cuts == [False], f"got cut-path answers {small_cuts}, want it to hand the file back"


def test_a_worker_that_gives_no_answer_hands_the_file_back(tmp_path: Path, small_cuts: list[bool],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(receipt_json(_receipt(_N)))
    real, here = _split._check_part, os.getpid()

    def dying(*args: Any) -> Any:
        if os.getpid() != here:
            os._exit(3)
        return real(*args)

    monkeypatch.setattr(_split, "_check_part", dying)
    cut, in_memory = _both(path)
    assert cut == in_memory and in_memory["verdict"] == "VALID", cut
    assert small_cuts == [False], small_cuts


def test_a_file_below_the_size_is_not_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(receipt_json(_receipt(3 * _BLOCK)))
    monkeypatch.setattr(_split, "LEVELS", _LEVELS)
    monkeypatch.setattr(_split, "BLOCK_STEPS", _BLOCK)
    assert _split.verify_split(os.fspath(path), None, 2, evidence=None, trusted_key_ids=None, expected_root=None,
                               expected_head=None) is None


def _with_evidence(tmp_path: Path, n: int = 6 * _BLOCK + 1) -> Path:
    c = Collector(goal="cuts", session_id="cuts")
    for k in range(n - 1):
        c.record("search", {"k": k, "text": "é" * (k % 5)}, agent="b", kind="tool_call")
    return Path(c.save(tmp_path / "r.json"))


@pytest.fixture
def quick_evidence(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Evidence read in small pieces; the answers of the cut evidence check, per verification."""
    answers: list[bool] = []
    real = _split._evidence_quick

    def spy(*args: Any) -> bool:
        answers.append(real(*args))
        return answers[-1]

    monkeypatch.setattr(_split, "_evidence_quick", spy)
    monkeypatch.setattr(_split, "_HEADER_BYTES", 300)
    return answers


@pytest.mark.parametrize("jobs", [2, 3, 7])
def test_an_honest_evidence_file_is_checked_in_runs(jobs: int, tmp_path: Path, small_cuts: list[bool],
                                                     quick_evidence: list[bool]) -> None:
    path = _with_evidence(tmp_path)
    cut, in_memory = _both(path, jobs)
    assert cut == in_memory, f"got {cut}, want {in_memory}"
    assert in_memory["verdict"] == "VALID" and in_memory["basis"]["evidence"] == "checked", in_memory
    assert small_cuts == [True] and quick_evidence == [True], (small_cuts, quick_evidence)


def _evidence_line(k: int) -> Callable[[list[bytes]], None]:
    def change(lines: list[bytes]) -> None:
        lines[k] = lines[k].replace(b'"k":', b'"k":1', 1)
    return change


def _evidence_header(lines: list[bytes]) -> None:
    lines[0] = lines[0].replace(b'"workflow_id":"', b'"workflow_id":"0', 1)


_EVIDENCE_EDITS: dict[str, Callable[[list[bytes]], None]] = {
    "first content changed": _evidence_line(1),
    "a middle content changed": _evidence_line(3 * _BLOCK),
    "last content changed": _evidence_line(6 * _BLOCK - 1),
    "a line dropped": lambda lines: lines.pop(2 * _BLOCK),
    "the last line dropped": lambda lines: lines.pop(-2),
    "a line repeated": lambda lines: lines.insert(4, lines[4]),
    "two lines swapped": lambda lines: lines.insert(5, lines.pop(6)),
    "a line after the last step": lambda lines: lines.insert(-1, lines[-2].replace(b"seq", b"sEq")),
    "another workflow's header": _evidence_header,
    "no header": lambda lines: lines.pop(0),
    "no newline at the end": lambda lines: lines.pop(),
    "CRLF line ends": lambda lines: lines.__setitem__(slice(None), [x + b"\r" if x else x for x in lines]),
    "content spelled another way": lambda lines: lines.__setitem__(7, lines[7].replace(b'"k":', b'"\\u006b":')),
}


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("what", list(_EVIDENCE_EDITS))
def test_an_edited_evidence_file_checked_in_runs_gets_the_in_memory_report(what: str, tmp_path: Path,
                                                                           small_cuts: list[bool],
                                                                           quick_evidence: list[bool]) -> None:
    path = _with_evidence(tmp_path)
    evidence = Path(str(path).removesuffix(".json") + ".evidence.jsonl")
    lines = evidence.read_bytes().split(b"\n")
    assert lines[-1] == b"", "got an evidence file without a final newline, want our writer's"
    _EVIDENCE_EDITS[what](lines)
    evidence.write_bytes(b"\n".join(lines))
    cut, in_memory = _both(path)
    assert cut == in_memory, f"got {cut}, want {in_memory}"
    assert small_cuts == [True] and quick_evidence == [False], (small_cuts, quick_evidence)
    if what in ("content spelled another way", "CRLF line ends"):  # the same records: the reference passes them
        assert in_memory["verdict"] == "VALID", in_memory
    else:
        assert in_memory["verdict"] != "VALID", in_memory


def _lone_comma_at_a_read_edge() -> bytes:
    """A signed receipt with a line of only a comma where a read ends, a step line longer than a read after it.

    Each process reads its run in pieces cut before the last newline a read holds: the
    piece before the comma ends with its step's comma, the comma's line is a piece of its
    own (no newline follows it within the next read). The file holds ``},,{`` (no JSON).
    """
    long_at = 4  # the seq of the long step line
    pad = 1
    for _ in range(5):  # the agent's length moves the comma's line; the members before the steps may move too
        c = Collector(goal="cuts", session_id="cuts", signing_key=KEYS / "trusted.key")
        for k in range(_N - 1):
            c.record("x" * (_split._CHUNK + 200) if k == long_at - 1 else "message", {"k": k},
                     agent="a" * pad if k == 1 else "a")
        data = receipt_json(c.finalize("done"))
        begin = data.index(b'\n  "steps": [') + len(b'\n  "steps": [')
        at, _ = _line(data, long_at)
        edge = begin + ((at - begin) // _split._CHUNK + 1) * _split._CHUNK  # the first read edge after the line break
        if edge <= at + len(b"\n    ,"):
            return data[:at] + b"\n    ," + data[at:]
        pad += edge - at - 3
    raise AssertionError("got no agent length that puts the comma's line at a read edge")


@pytest.mark.unverified_receipts
def test_a_lone_comma_at_a_read_edge_is_not_read_as_a_piece_of_no_steps(tmp_path: Path,
                                                                       small_cuts: list[bool]) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(_lone_comma_at_a_read_edge())
    cut, in_memory = _both(path, 2)
    assert in_memory["verdict"] == "MALFORMED", in_memory
    assert cut == in_memory, f"got {cut}, want {in_memory}"
    assert small_cuts == [False], f"got cut-path answers {small_cuts}, want it to hand the file back"


def _evidence_with_a_line_of(tmp_path: Path, size: int) -> Path:
    """A receipt saved with its evidence, the line of step ``_BLOCK + 1`` ``size`` bytes long (its newline counted)."""
    text = 3
    for _ in range(2):  # the content's length moves the line's by as much
        c = Collector(goal="cuts", session_id="cuts")
        for k in range(6 * _BLOCK):
            c.record("search", {"k": k, "text": "y" * (text if k == _BLOCK else 3)}, agent="b", kind="tool_call")
        path = Path(c.save(tmp_path / "r.json"))
        evidence = Path(str(path).removesuffix(".json") + ".evidence.jsonl")
        now = len(evidence.read_bytes().split(b"\n")[_BLOCK + 1]) + 1
        text += size - now
    assert now == size, f"got a line of {now} bytes, want {size}"
    return path


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("over", [0, 1, 60])
@pytest.mark.parametrize("jobs", [2, 3])
def test_an_evidence_line_over_the_line_limit_is_left_to_the_reference(over: int, jobs: int, tmp_path: Path,
                                                                       small_cuts: list[bool],
                                                                       quick_evidence: list[bool],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A line longer than the limit within one read (each process bounded only what it carried over a read edge)."""
    limit = 600  # above the close step's line
    monkeypatch.setattr(_split, "MAX_EVIDENCE_LINE_BYTES", limit)
    monkeypatch.setattr(verifier._evidence, "MAX_EVIDENCE_LINE_BYTES", limit)
    path = _evidence_with_a_line_of(tmp_path, limit + over)
    assert limit + over < _split._CHUNK, "want the long line within one read"
    cut, in_memory = _both(path, jobs)
    assert cut == in_memory, f"got {cut}, want {in_memory}"
    if over:
        assert in_memory["verdict"] == "INVALID" and "over 600 bytes" in in_memory["checks"][6]["detail"], in_memory
        assert small_cuts == [True] and quick_evidence == [False], (small_cuts, quick_evidence)
    else:  # at the limit: read by both
        assert in_memory["verdict"] == "VALID" and in_memory["basis"]["evidence"] == "checked", in_memory
        assert small_cuts == [True] and quick_evidence == [True], (small_cuts, quick_evidence)


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("seq", [2, _N // 2, _N - 1])
def test_a_step_nested_deeper_than_orjson_writes_is_left_to_the_reference(seq: int, tmp_path: Path,
                                                                          small_cuts: list[bool]) -> None:
    """orjson reads 300 levels but refuses to write more than 255: the piece's write-back raised in this process."""
    path = tmp_path / "r.json"
    nested = b'"agent":' + b"[" * 300 + b"]" * 300 + b',"x":"'
    path.write_bytes(_replace_in_line(seq, b'"agent":"', nested)(receipt_json(_receipt(_N))))
    cut, in_memory = _both(path, 2)
    assert in_memory["verdict"] == "MALFORMED", in_memory
    assert cut == in_memory, f"got {cut}, want {in_memory}"
    assert small_cuts == [False], f"got cut-path answers {small_cuts}, want it to hand the file back"


# ------------------------------------------------------------ generated forgeries

_FIELDS = ("agent", "tool", "kind", "status", "reply_to", "started_at", "receipt_hash", "seq", "prev_digest")
_VALUES = st.one_of(st.text(max_size=6), st.integers(-2, 80), st.sampled_from(
    ["message", "close", "tool_call", "ok", "error", "2026-01-01T00:00:00.000000Z", "0" * 64]))


@st.composite
def _forgeries(draw: st.DrawFn) -> tuple[int, int, list[tuple[int, str, Any]], bool, bool]:
    n = draw(st.integers(2, 5 * _BLOCK + 3))
    edits = draw(st.lists(st.tuples(st.integers(0, n - 1), st.sampled_from(_FIELDS), _VALUES), max_size=3))
    return n, draw(st.integers(2, 5)), edits, draw(st.booleans()), draw(st.booleans())


@pytest.mark.unverified_receipts
@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=_forgeries())
def test_a_generated_forgery_cut_into_runs_gets_the_in_memory_report(case: tuple[int, int, list[tuple[int, str, Any]],
                                                                                bool, bool],
                                                                     tmp_path: Path, small_cuts: list[bool]) -> None:
    """Edits to steps, then (maybe) every link, id and root made to fit and the receipt signed again by another key."""
    n, jobs, edits, rechain, resign = case
    r = _receipt(n)
    original = copy.deepcopy(r)
    for k, name, value in edits:
        r["steps"][k][name] = value
    if rechain:
        _rechained(r)
    if resign:
        r.pop("signature")
        r["signature"] = sign_receipt(r, load_private_key(KEYS / "attacker.key"))
    path = tmp_path / f"forged-{os.urandom(4).hex()}.json"
    path.write_bytes(receipt_json(r))
    cut, in_memory = _both(path, jobs)
    assert cut == in_memory, f"got {cut}, want {in_memory}"
    event(f"cut path answered: {small_cuts[-1]}, verdict {in_memory['verdict']}")
    r.pop("signature")
    original.pop("signature")
    changed = r != original
    if changed and not (rechain and resign):  # a changed step breaks the chain or the signature
        assert in_memory["verdict"] != "VALID", in_memory
