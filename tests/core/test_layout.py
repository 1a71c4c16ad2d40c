"""One layout for every receipt file: indented members, a step per line, read by every reader.

* ``receipt_json`` gives back the receipt it was given, whatever its members hold (text
  that looks like the layout's own markers, lone surrogates, nested ``steps``);
* every writer of receipt files (``Collector.save``, ``aer1 recover``, ``aer1 timestamp``,
  bundles) writes exactly ``receipt_json`` of what it wrote;
* the streaming verifier reports on a file in this layout what the in-memory one does,
  and both peer verifiers accept it.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from aer1 import Collector
from aer1._cli import main as aer1_cli
from aer1._layout import STEP_INDENT, STEPS_PER_PIECE, receipt_json, receipt_pieces, write_receipt
from aer1._recover import recover_journal
from aer1.verifier import _stream, verify_receipt
from aer1.verifier._driver import verify_on_paths
from aer1.verifier._paths import DEFAULT_PATHS, Paths
from aer1.verifier._stream import verify_streaming

from ..helpers import KEYS, make_collector
from ..timestamp.tsa import LocalTSA, make_pki


def _steps_of(data: bytes) -> list[bytes]:
    """The step lines of a file in the layout (between the lines that open and close ``steps``)."""
    lines = data.split(b"\n")
    first = lines.index(b'  "steps": [') + 1
    last = next(i for i in range(first, len(lines)) if lines[i] in (b"  ]", b"  ],"))
    return lines[first:last]


def test_each_step_is_one_compact_line_and_the_rest_is_indented() -> None:
    receipt = make_collector().finalize("done")
    data = receipt_json(receipt)
    assert data.endswith(b"}\n") and data.startswith(b'{\n  "type": ')
    lines = _steps_of(data)
    assert len(lines) == len(receipt["steps"]), f"got {len(lines)} step lines, want {len(receipt['steps'])}"
    for i, (line, step) in enumerate(zip(lines, receipt["steps"], strict=True)):
        assert line.startswith(STEP_INDENT + b"{"), line
        body = line[len(STEP_INDENT):]
        want = orjson.dumps(step) + (b"," if i < len(lines) - 1 else b"")
        assert body == want, f"step {i + 1}: got {body!r}, want {want!r}"
    assert orjson.loads(data) == receipt
    assert json.loads(data) == receipt


#: Receipts whose members hold what could confuse a layout that splices the step lines in.
_AWKWARD: dict[str, dict[str, Any]] = {
    "goal_holding_the_placeholder_text": {"goal": '\n  "steps": []', "steps": [{"seq": 1}], "z": 1},
    "nested_steps_member_before_the_real_one": {"meta": {"steps": []}, "x": [{"steps": []}], "steps": [{"a": 1}]},
    "steps_first_and_last_member": {"steps": [{"a": "é"}, {"b": [1, {"c": None}]}]},
    "only_steps": {"steps": [1, "two", [3], {"four": 4.5}]},
    "empty_steps": {"goal": "g", "steps": [], "merkle_root": "0" * 64},
    "steps_not_a_list": {"goal": "g", "steps": {"seq": 1}},
    "no_steps": {"goal": "g"},
    "non_ascii_everywhere": {"goal": "東京 ✓ 💡", "steps": [{"agent": "ünï\u2028cøde", "tool": 'q"uo\\te\n'}]},
}


@pytest.mark.parametrize("name", sorted(_AWKWARD))
def test_receipt_json_gives_back_every_receipt(name: str) -> None:
    receipt = _AWKWARD[name]
    data = receipt_json(receipt)
    assert orjson.loads(data) == receipt, f"{name}: got {data!r}"
    if type(receipt.get("steps")) is list and receipt["steps"]:
        assert [orjson.loads(line.rstrip(b",")) for line in _steps_of(data)] == receipt["steps"]


def test_lone_surrogates_are_escaped_in_the_same_layout() -> None:
    receipt = {"goal": "caf\udead", "steps": [{"agent": "\ud800x"}, {"agent": "ok"}], "tail": "\udfff"}
    data = receipt_json(receipt)
    assert data.isascii()
    assert json.loads(data) == receipt
    assert [json.loads(line.rstrip(b",")) for line in _steps_of(data)] == receipt["steps"]


def test_pieces_make_the_whole_file_across_piece_boundaries() -> None:
    n = 2 * STEPS_PER_PIECE + 3
    steps: list[Any] = [{"seq": i, "agent": "ünï"} for i in range(1, n + 1)]
    steps[STEPS_PER_PIECE + 5]["agent"] = "lone \udc00"  # only this step needs escapes
    receipt = {"goal": "g", "steps": steps, "merkle_root": "0" * 64}
    pieces = list(receipt_pieces(receipt))
    assert len(pieces) == 5, f"got {len(pieces)} pieces, want head, 3 of steps, tail"
    data = receipt_json(receipt)
    assert data == b"".join(pieces)
    out = io.BytesIO()
    write_receipt(out, receipt)
    assert out.getvalue() == data
    assert json.loads(data) == receipt
    lines = _steps_of(data)
    assert len(lines) == n and [json.loads(line.rstrip(b",")) for line in lines] == steps
    escaped = [line for line in lines if b"\\u" in line]
    assert len(escaped) == 1 and b"\\udc00" in escaped[0], "escapes reach beyond the step that needs them"


def test_values_no_encoder_takes_are_refused_with_type_error() -> None:
    with pytest.raises(TypeError):
        receipt_json({"steps": [{"x": {1, 2}}]})
    loop: dict[str, Any] = {"steps": []}
    loop["steps"].append(loop)
    with pytest.raises(TypeError):
        receipt_json(loop)


# ----------------------------------------------------------------- every writer


@pytest.fixture(scope="module")
def tsa(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalTSA]:
    server = LocalTSA(make_pki(tmp_path_factory.mktemp("layout-pki"), "Layout"))
    yield server
    server.close()


def _aer1(*args: str | Path) -> int:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        return aer1_cli([str(a) for a in args])


def _assert_laid_out(path: Path) -> None:
    data = path.read_bytes()
    want = receipt_json(orjson.loads(data))
    assert data == want, f"{path.name}: got a file not in the one layout (first bytes {data[:80]!r})"
    assert len(_steps_of(data)) == len(orjson.loads(data)["steps"])


def test_every_writer_of_receipt_files_uses_the_one_layout(tmp_path: Path, tsa: LocalTSA) -> None:
    key = str(KEYS / "trusted.key")
    saved = tmp_path / "saved.json"
    c = make_collector(signing_key=key)
    c.save(saved, workflow=c.finalize("done"))
    _assert_laid_out(saved)

    journaled = Collector("crashed run", journal=tmp_path / "run.journal")
    journaled.record("message", {"content": "hi ✓"}, agent="alice", reply_to="bob")
    journaled.journal.close()  # type: ignore[union-attr]  # the run stops here, as in a crash
    recover_journal(tmp_path / "run.journal", tmp_path / "recovered.json")
    _assert_laid_out(tmp_path / "recovered.json")

    assert _aer1("timestamp", saved, "--tsa", tsa.url, "--key", key, "-o", tmp_path / "stamped.json") == 0
    _assert_laid_out(tmp_path / "stamped.json")

    parent = make_collector()
    child = Collector("child run")
    child.record("message", {"content": "inner"}, agent="carol")
    parent.link(child.finalize("inner done"))
    paths = parent.save_bundle(tmp_path / "bundle", parent.finalize("done"))
    assert len(paths) == 2
    for p in paths:
        _assert_laid_out(Path(p))


# ----------------------------------------------------------------- readers


@pytest.mark.parametrize("chunk", [DEFAULT_PATHS.stream_read_bytes, 61, 1], ids=["chunk-4MiB", "chunk-61", "chunk-1"])
def test_streaming_verifier_reads_the_layout_as_the_in_memory_one(tmp_path: Path, chunk: int,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    c = make_collector(signing_key=KEYS / "trusted.key")
    for i in range(40):
        c.record("message", {"content": f"line {i} ✓ 💡 \u2028"}, agent="alice ünï", reply_to="bob")
    path = Path(c.save(tmp_path / "r.json", workflow=c.finalize("done")))
    in_memory = verify_receipt(path).to_dict()
    streamed_files: list[Any] = []

    def streaming(*args: Any, **kwargs: Any) -> Any:
        streamed_files.append(args)
        return verify_streaming(*args, **kwargs)

    monkeypatch.setattr(_stream, "verify_streaming", streaming)
    # this file, small as it is, is streamed, ``chunk`` bytes a read
    streamed = verify_on_paths(path, paths=Paths(stream_min_bytes=0, stream_read_bytes=chunk)).to_dict()
    assert streamed_files, "got the in-memory path, want the streaming one"
    assert streamed == in_memory
    assert in_memory["verdict"] == "VALID", in_memory
    assert any(c["name"] == "evidence" and c["status"] == "PASS" for c in in_memory["checks"]), in_memory


def test_both_peer_verifiers_read_the_layout(tmp_path: Path, peer_verify_cli: Any, peer_verify_workflow: Any) -> None:
    c = make_collector()
    for i in range(25):
        c.record("tool_call", {"result": f"r{i} — ✓"}, agent="bob ø", call_id=f"c{i}")
    receipt = c.finalize("done")
    path = c.save(tmp_path / "r.json", workflow=receipt)
    code, out = peer_verify_cli(path)
    assert code == 0 and "VERDICT: PASS" in out, out
    with open(path, encoding="utf-8") as f:
        assert peer_verify_workflow(json.load(f)) == []
