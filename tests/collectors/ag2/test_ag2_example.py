"""examples/ag2_network.py runs offline, and ours and the peers accept its receipt."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from ...receipts import Peers, evidence_contents, verify_everywhere

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_example_network_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str], peers: Peers | None,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))  # the example imports its sibling _outdir
    spec = importlib.util.spec_from_file_location("ag2_network_example", EXAMPLES / "ag2_network.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(tmp_path) == 0
    out = capsys.readouterr().out
    assert "verdict: VALID" in out and "signature    PASS" in out and "channel closed: resolved" in out
    path = tmp_path / "receipt.json"
    receipt = json.loads(path.read_text(encoding="utf-8"))
    kinds = [(s["kind"], s["agent"], s.get("target") or s.get("call_id")) for s in receipt["steps"]]
    assert [k for k in kinds if k[0] == "handoff"] == [("handoff", "triage", "billing")]
    assert [k for k in kinds if k[0] in ("approval", "tool_call")] == [
        ("tool_call", "triage", "t1"), ("approval", "billing", "b1"), ("tool_call", "billing", "b1"),
        ("tool_call", "billing", "b2")]
    contents = evidence_contents(path)
    [approval] = [contents[s["seq"]] for s in receipt["steps"] if s["kind"] == "approval"]
    [refund] = [contents[s["seq"]] for s in receipt["steps"] if s.get("call_id") == "b1" and s["kind"] == "tool_call"]
    assert approval["decision"] == "approved" and approval["arguments_digest"] == refund["arguments_digest"]
    assert [k[0] for k in kinds[-2:]] == ["termination", "close"]
    verify_everywhere(path, receipt, peers)
    assert "ag2_network_example" not in sys.modules
