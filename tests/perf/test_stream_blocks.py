"""The streaming verifier's quick path (steps checked in blocks by ``_fast``) reports as the in-memory path.

Blocks are made small here (``LEVELS`` 3, 16 steps a block) so that receipts of a few dozen
steps cross many block seams. Every receipt, honest or tampered, streamed, must get the
in-memory report field for field; an honest one must take the quick path, a tampered one
must be read again by the reference.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector
from aer1._layout import receipt_json
from aer1.verifier import _stream, verify_receipt
from aer1.verifier._driver import verify_on_paths
from aer1.verifier._parse import parse_line_quick, parse_strict
from aer1.verifier._paths import Paths

from ..helpers import KEYS
from .test_quick_steps import _rechained

_LEVELS = 3
_BLOCK = 2 * (1 << _LEVELS)
#: Every file streamed, in blocks of ``_BLOCK`` steps.
_STREAMED = Paths(stream_min_bytes=0, levels=_LEVELS, stream_block_steps=_BLOCK)


def _receipt(n: int) -> dict[str, Any]:
    """A finalized, signed receipt of ``n`` steps (the close step included)."""
    c = Collector(goal="blocks", session_id="blocks", signing_key=KEYS / "trusted.key")
    for k in range(n - 1):
        c.record("message", {"k": k}, agent="a", reply_to="u" if k % 3 == 0 else None)
    return c.finalize("done")


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Yields, per streamed pass (``_streamed``), whether the quick path passed."""
    passes: list[bool] = []
    settle = _stream._Walker.settle_quick

    def spy(walker: Any) -> None:
        try:
            settle(walker)
        except _stream._Quit:
            passes.append(False)
            raise
        passes.append(walker.checker is not None and walker.checker.root is not None)

    monkeypatch.setattr(_stream._Walker, "settle_quick", spy)
    yield passes


class _ReferenceWalker(_stream._Walker):
    """The streaming path as it was before blocks: the step checker alone."""

    def __init__(self, text: Any, spill: Any, quick: bool, paths: Paths) -> None:
        super().__init__(text, spill, False, paths)


def _streamed(path: Path) -> dict[str, Any]:
    """The report of the file streamed in blocks of ``_BLOCK`` steps."""
    return verify_on_paths(path, paths=_STREAMED).to_dict()


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, Any], dict[str, Any]]:
    """(streamed report, in-memory report) of the file."""
    streamed = _streamed(path)
    in_memory = verify_receipt(path).to_dict()  # a small file: held parsed
    return streamed, in_memory


@pytest.mark.parametrize("n", [1, 5, _BLOCK - 1, _BLOCK, _BLOCK + 1, 2 * _BLOCK, 3 * _BLOCK + 1, 7 * _BLOCK - 3])
def test_an_honest_receipt_streams_by_blocks_to_the_in_memory_report(n: int, tmp_path: Path, small_blocks: list[bool],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(receipt_json(_receipt(n)))
    streamed, in_memory = _both(path, monkeypatch)
    assert streamed == in_memory, f"got {streamed}, want {in_memory}"
    assert in_memory["verdict"] == "VALID", in_memory
    assert small_blocks == [True], f"got quick passes {small_blocks}, want one that passed"


def _edit(k: int) -> Callable[[dict[str, Any]], None]:
    def change(r: dict[str, Any]) -> None:
        r["steps"][k]["agent"] = "mallory"
    return change


def _duplicate_id(r: dict[str, Any]) -> None:
    r["steps"][2 * _BLOCK + 3]["receipt_id"] = r["steps"][4]["receipt_id"]


def _forged(r: dict[str, Any]) -> None:
    r["steps"][_BLOCK + 2]["agent"] = "mallory"
    _rechained(r)  # every link, id, the head and the root made to fit, as a forger would


def _forged_duplicate(r: dict[str, Any]) -> None:
    r["steps"][_BLOCK + 5] = copy.deepcopy(r["steps"][3])
    r["steps"][_BLOCK + 5]["seq"] = _BLOCK + 6
    _rechained(r)


def _seam_link(r: dict[str, Any]) -> None:
    """Block 2's first step links to the genesis digest: each block passes alone, the seam does not."""
    steps = r["steps"]
    steps[_BLOCK]["prev_digest"] = steps[0]["prev_digest"]


_N = 4 * _BLOCK + 3
#: How the receipt is changed, and whether its steps alone still pass (a re-chained forgery's do:
#: only the signature over the streamed steps' bytes refuses it).
_TAMPERED: dict[str, tuple[Callable[[dict[str, Any]], None], bool]] = {
    "first block": (_edit(1), False),
    "seam, last of a block": (_edit(_BLOCK - 1), False),
    "seam, first of a block": (_edit(_BLOCK), False),
    "last block": (_edit(_N - 2), False),
    "duplicate id across blocks": (_duplicate_id, False),
    "seam link": (_seam_link, False),
    "wrong merkle version": (lambda r: r.update(merkle_version="other"), False),
    "re-chained forgery": (_forged, True),
    "re-chained duplicate step across blocks": (_forged_duplicate, True),
}


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("what", list(_TAMPERED))
def test_a_tampered_receipt_streams_to_the_in_memory_report(what: str, tmp_path: Path, small_blocks: list[bool],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    r = _receipt(_N)
    change, steps_pass = _TAMPERED[what]
    change(r)
    path = tmp_path / "r.json"
    path.write_bytes(receipt_json(r))
    streamed, in_memory = _both(path, monkeypatch)
    assert streamed == in_memory, f"got {streamed}, want {in_memory}"
    assert in_memory["verdict"] != "VALID", in_memory
    got = "quick pass" if small_blocks == [True] else "read again" if True not in small_blocks else small_blocks
    want = "quick pass" if steps_pass else "read again"
    assert got == want, f"got {got}, want {want}"


_LINE_EDITS: dict[str, tuple[bytes, bytes]] = {
    "duplicate key": (b'{"seq":20,', b'{"seq":20,"seq":20,'),
    "escaped name": (b'"agent":"a"', b'"agent":"\\u0061"'),
    "escape variant of a key": (b'{"seq":20,', b'{"s\\u0065q":20,'),
    "duplicate key, one escaped": (b'{"seq":20,', b'{"seq":20,"s\\u0065q":20,'),
    "big int": (b'{"seq":20,', b'{"seq":20000000000000000000000,'),
    "float seq": (b'{"seq":20,', b'{"seq":20.0,'),
    "NaN": (b'{"seq":20,', b'{"seq":NaN,'),
    "lone surrogate": (b'"tool":"message"', b'"tool":"\\ud800"'),
}


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("what", list(_LINE_EDITS))
def test_an_edited_step_line_streams_to_the_in_memory_report(what: str, tmp_path: Path, small_blocks: list[bool],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = _LINE_EDITS[what]
    data = receipt_json(_receipt(_N))
    assert data.count(old) >= 1, f"got no {old!r} in the receipt, want the line to edit"
    at = data.index(old)
    path = tmp_path / "r.json"
    path.write_bytes(data[:at] + new + data[at + len(old):])
    streamed, in_memory = _both(path, monkeypatch)
    if in_memory["verdict"] == "MALFORMED":  # both paths refuse it; the streaming path words "not read" its own way
        with monkeypatch.context() as m:
            m.setattr(_stream, "_Walker", _ReferenceWalker)
            in_memory = _streamed(path)
    assert streamed == in_memory, f"got {streamed}, want {in_memory}"
    if what.startswith("escape"):  # the same text spelled another way: still the honest receipt
        assert in_memory["verdict"] == "VALID", in_memory
    else:
        assert in_memory["verdict"] != "VALID", in_memory


def _without_profile(r: dict[str, Any]) -> dict[str, Any]:
    """The receipt as a plain (not profile) receipt: the reference alone decides it."""
    for k in ("profile", "chain_head", "signature"):
        r.pop(k, None)
    for s in r["steps"]:
        s.pop("prev_digest")
    return r


_SHAPES: dict[str, Callable[[], dict[str, Any]]] = {
    "no profile": lambda: _without_profile(_receipt(_N)),
    "profile claimed after the steps": lambda: {k: v for k, v in _receipt(_N).items() if k != "profile"},
    "no steps, chain_head after them": lambda: {**_receipt(3), "steps": []},
}


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("what", list(_SHAPES))
def test_a_receipt_the_quick_path_does_not_stand_in_for_streams_as_before(what: str, tmp_path: Path,
                                                                           small_blocks: list[bool],
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(receipt_json(_SHAPES[what]()))
    streamed = _streamed(path)
    with monkeypatch.context() as m:
        m.setattr(_stream, "_Walker", _ReferenceWalker)
        before = _streamed(path)
    assert streamed == before, f"got {streamed}, want {before}"
    assert True not in small_blocks, f"got quick passes {small_blocks}, want none"


@pytest.mark.parametrize("line", [
    '{"a":1,"a":2}', '{"a":"\\u0061"}', '{"a":1.00}', '{"a":1e2}', '{"a":NaN}', '{"a":"\\ud800"}', '{"a": 1}',
    '{"a":123456789012345678901234567890}', '{"a":-0}', '{"a":"\\/"}', '{"a":1}x', '{"a":1} ', 'null',
], ids=lambda s: s)
def test_a_line_orjson_would_misread_goes_to_the_strict_parser(line: str) -> None:
    got = parse_line_quick(line)
    assert got is None, f"got the quick parse {got!r} of {line!r}, want the strict parser's"


def test_a_saved_step_line_takes_the_quick_parse() -> None:
    lines = [x.strip().rstrip(b",") for x in receipt_json(_receipt(2)).split(b"\n")]
    line = next(x for x in lines if x.startswith(b'{"seq": 1,') or x.startswith(b'{"seq":1,')).decode()
    got = parse_line_quick(line)
    assert got is not None and got == parse_strict(line.encode()), f"got {got!r} for {line!r}"
