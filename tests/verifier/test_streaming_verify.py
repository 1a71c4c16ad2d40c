"""The streaming verifier gives the in-memory verifier's report, check for check, on every input."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from aer1 import Collector
from aer1._merkle import leaf_seq_output, merkle_root
from aer1._receipt import evidence_path_for
from aer1._signing import key_id, load_public_key
from aer1.verifier import _stream, verify_receipt
from aer1.verifier._driver import verify_on_paths
from aer1.verifier._paths import DEFAULT_PATHS, Paths
from aer1.verifier._stream import verify_streaming

from ..journal.conftest import T0, TRUSTED_KEY, TRUSTED_PUB

FIXTURES = Path(__file__).parent.parent / "fixtures" / "adversarial"
#: Fixtures that fail parsing: the streaming path reports them MALFORMED too (it never hands a file back).
PARSE_LEVEL = {"input_deep_nesting.json", "input_duplicate_keys.json", "input_nan.json", "input_not_json.json",
               "input_not_utf8.json", "input_truncated.json"}
TRUSTED = {key_id(load_public_key(TRUSTED_PUB))}
Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(params=[DEFAULT_PATHS.stream_read_bytes, 61, 1], ids=["chunk-4MiB", "chunk-61", "chunk-1"])
def chunk(request: pytest.FixtureRequest) -> int:
    """Chunk sizes that put chunk boundaries everywhere, including inside UTF-8 sequences."""
    return int(request.param)


def _both(path: Path, chunk: int, **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(in-memory report, report of the file streamed ``chunk`` bytes a read)."""
    in_memory = verify_receipt(path, **kw).to_dict()
    streamed = verify_streaming(str(path), evidence=kw.get("evidence"), trusted_key_ids=kw.get("trusted_key_ids"),
                                expected_root=kw.get("expected_root"), expected_head=kw.get("expected_head"),
                                paths=Paths(stream_read_bytes=chunk))
    return in_memory, streamed.to_dict()


def test_every_adversarial_fixture(chunk: int) -> None:
    files = sorted(FIXTURES.glob("*.json"))
    assert len(files) > 30
    for path in files:
        if path.name == "manifest.json":
            continue
        for kw in ({}, {"trusted_key_ids": TRUSTED}):
            in_memory, streamed = _both(path, chunk, **kw)
            if path.name in PARSE_LEVEL:
                statuses = [c["status"] for c in streamed["checks"]]
                assert statuses == [c["status"] for c in in_memory["checks"]], path.name
                assert statuses == ["FAIL"] + ["NOT CHECKED"] * (len(statuses) - 1), path.name
            else:
                assert streamed == in_memory, path.name


def _receipt(tmp_path: Path, steps: int = 12) -> dict[str, Any]:
    c = Collector("stream me ✓ — 東京", session_id="s-stream", signing_key=str(TRUSTED_KEY))
    c.register_agent("alice", type="AssistantAgent", description="ünïcode")
    for i in range(1, steps + 1):
        c.record("message", {"content": f"step {i} 💡", "x": 1.5 * i}, agent="alice", started_at=T0 + i,
                 ended_at=T0 + i + 0.5, reply_to="bob" if i % 2 else None)
    receipt = c.finalize("answer")
    c.save(tmp_path / "base.json", receipt)
    return receipt


def _write(tmp_path: Path, name: str, receipt: dict[str, Any], evidence_from: Path | None = None) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_bytes(orjson.dumps(receipt, option=orjson.OPT_INDENT_2))
    if evidence_from is not None:
        Path(evidence_path_for(str(path))).write_bytes(Path(evidence_path_for(str(evidence_from))).read_bytes())
    return path


def _order(keys: list[str]) -> Edit:
    def edit(r: dict[str, Any]) -> None:
        items = dict(r)
        r.clear()
        r.update({k: items[k] for k in keys if k in items})
        r.update({k: v for k, v in items.items() if k not in keys})

    return edit


def _set_step(i: int, member: str, value: Any) -> Edit:
    def edit(r: dict[str, Any]) -> None:
        r["steps"][i][member] = value

    return edit


def _del_step(i: int, member: str) -> Edit:
    def edit(r: dict[str, Any]) -> None:
        del r["steps"][i][member]

    return edit


def _steps(change: Callable[[list[Any]], list[Any]]) -> Edit:
    def edit(r: dict[str, Any]) -> None:
        r["steps"] = change(r["steps"])

    return edit


def _set(member: str, value: Any) -> Edit:
    def edit(r: dict[str, Any]) -> None:
        r[member] = value

    return edit


def _many_bad_steps(r: dict[str, Any]) -> None:
    for s in r["steps"]:
        s["tool"] = ""
        s["status"] = 7
    r["goal"] = ""


def _base_profile(seq_output: bool, bad_output_at: int | None = None) -> Edit:
    """Strip our profile: an AER-1 base receipt (seq-output-v1 with output hashes when asked)."""

    def edit(r: dict[str, Any]) -> None:
        for k in ("profile", "chain_head", "agents", "signature"):
            r.pop(k, None)
        for i, s in enumerate(r["steps"]):
            for k in ("prev_digest", "kind", "agent", "reply_to"):
                s.pop(k, None)
            if seq_output:
                s["output_hash"] = hashlib.sha256(str(i).encode()).hexdigest()
        if seq_output:
            r["merkle_version"] = "seq-output-v1"
            r["merkle_root"] = merkle_root([leaf_seq_output(s["seq"], s["output_hash"]) for s in r["steps"]]).hex()
            if bad_output_at is not None:
                r["steps"][bad_output_at]["output_hash"] = "nope"
        else:
            del r["merkle_version"]

    return edit


EDITS: dict[str, Edit] = {
    "as-saved": lambda r: None,
    "members-reversed": lambda r: _order(list(reversed(list(r))))(r),
    "steps-first": _order(["steps"]),
    "signature-first-workflow-id-last": lambda r: _order(["signature", *[k for k in r if k != "workflow_id"]])(r),
    "goal-edited": _set("goal", "another goal"),
    "status-edited": _set("status", "error"),
    "workflow-id-edited": _set("workflow_id", "00000000-0000-4000-8000-000000000000"),
    "chain-head-edited": _set("chain_head", "0" * 64),
    "merkle-root-edited": _set("merkle_root", "f" * 64),
    "signature-value-edited": lambda r: r["signature"].update(value="A" * 86 + "=="),
    "signature-malformed": _set("signature", {"alg": "Ed25519"}),
    "unknown-member": _set("extra", 1),
    "step-agent-renamed": _set_step(4, "agent", "mallory"),
    "step-kind-changed": _set_step(4, "kind", "handoff"),
    "step-seq-edited": _set_step(4, "seq", 40),
    "step-id-edited": _set_step(4, "receipt_id", "00000000-0000-8000-8000-000000000000"),
    "step-prev-edited": _set_step(4, "prev_digest", "a" * 64),
    "step-hash-edited": _set_step(4, "receipt_hash", "b" * 64),
    "step-time-not-a-date": _set_step(4, "started_at", "2026-02-30T00:00:00.000000Z"),
    "step-member-added": _set_step(4, "note", "x"),
    "step-status-missing": _del_step(4, "status"),
    "step-not-an-object": _steps(lambda s: [*s[:3], "step", *s[4:]]),
    "steps-swapped": _steps(lambda s: [*s[:3], s[4], s[3], *s[5:]]),
    "step-dropped": _steps(lambda s: [*s[:3], *s[4:]]),
    "step-duplicated": _steps(lambda s: [*s[:5], copy.deepcopy(s[4]), *s[5:]]),
    "close-step-dropped": _steps(lambda s: s[:-1]),
    "close-step-moved": _steps(lambda s: [*s[:3], s[-1], *s[3:-1]]),
    "many-bad-steps": _many_bad_steps,
    "base-profile": _base_profile(seq_output=False),
    "base-profile-seq-output": _base_profile(seq_output=True),
    "base-profile-bad-output-hash": _base_profile(seq_output=True, bad_output_at=6),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_edited_receipts(tmp_path: Path, chunk: int, name: str) -> None:
    base = _receipt(tmp_path)
    receipt = copy.deepcopy(base)
    EDITS[name](receipt)
    path = _write(tmp_path, name, receipt, evidence_from=tmp_path / "base.json")
    for kw in ({}, {"trusted_key_ids": TRUSTED}, {"trusted_key_ids": {"0" * 64}},
               {"expected_root": base["merkle_root"], "expected_head": "1" * 64}):
        in_memory, streamed = _both(path, chunk, **kw)
        if name == "many-bad-steps":  # streaming stops reading once the failures settle the verdict
            assert streamed is not None and streamed["checks"][0]["status"] == "NOT CHECKED"
            assert streamed["notes"] == ["reading stopped early: the members after the steps and the rest of the "
                                         "file were not checked"]
            streamed = {**streamed, "notes": in_memory["notes"],
                        "checks": [in_memory["checks"][0], *streamed["checks"][1:]]}
        assert streamed == in_memory, (name, kw)


def test_edited_evidence_and_no_evidence(tmp_path: Path, chunk: int) -> None:
    _receipt(tmp_path)
    base = tmp_path / "base.json"
    evidence = Path(evidence_path_for(str(base)))
    lines = evidence.read_bytes().splitlines(keepends=True)
    record = orjson.loads(lines[3])
    record["content"]["content"] = "edited"
    (tmp_path / "edited.jsonl").write_bytes(b"".join([*lines[:3], orjson.dumps(record) + b"\n", *lines[4:]]))
    for kw in ({}, {"evidence": tmp_path / "edited.jsonl"}):
        in_memory, streamed = _both(base, chunk, **kw)
        assert streamed == in_memory
    evidence.unlink()
    in_memory, streamed = _both(base, chunk)
    assert streamed == in_memory and in_memory["checks"][6]["status"] == "NOT CHECKED"


def test_large_files_take_the_streaming_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _receipt(tmp_path, steps=50)
    path = tmp_path / "base.json"
    expected = verify_receipt(path, trusted_key_ids=TRUSTED).to_dict()
    calls: list[str] = []

    def spy(source: str, **kw: Any) -> Any:
        calls.append(source)
        return verify_streaming(source, **kw)

    monkeypatch.setattr(_stream, "verify_streaming", spy)
    # an iterator: read once, used twice
    report = verify_on_paths(path, trusted_key_ids=iter(TRUSTED), paths=Paths(stream_min_bytes=0))
    assert calls == [str(path)]
    assert report.to_dict() == expected and report.valid
    assert report.check("evidence").status == "PASS" and report.check("signature").status == "PASS"
