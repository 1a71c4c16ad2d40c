"""examples/agent_framework_handoff.py runs offline, and ours and the peers accept its receipt."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from ...receipts import Peers, verify_everywhere

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_example_handoff_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str], peers: Peers | None,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))  # the example imports its sibling _outdir
    path = EXAMPLES / "agent_framework_handoff.py"
    spec = importlib.util.spec_from_file_location("agent_framework_handoff_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(tmp_path) == 0
    out = capsys.readouterr().out
    assert "verdict: VALID" in out and "signature    PASS" in out
    receipt = json.loads((tmp_path / "receipt.json").read_text(encoding="utf-8"))
    kinds = [(s["kind"], s["agent"], s.get("target") or s.get("call_id")) for s in receipt["steps"]]
    assert [k for k in kinds if k[0] == "handoff"] == [("handoff", "triage", "billing")]
    assert [k for k in kinds if k[0] in ("approval", "tool_call")] == [
        ("approval", "billing", "r1"),
        ("approval", "ops-lead", "r1"),
        ("tool_call", "billing", "r1"),
    ]
    assert [k[:1] for k in kinds[-2:]] == [("termination",), ("close",)]
    assert kinds[-2][1].startswith("workflow:Handoff/") and kinds[-1][1] == "aer1"
    verify_everywhere(tmp_path / "receipt.json", receipt, peers)
    assert "agent_framework_handoff_example" not in sys.modules
