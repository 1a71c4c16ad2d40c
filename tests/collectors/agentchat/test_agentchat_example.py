"""The README's main command: examples/agentchat_team.py runs offline and verifies."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import pairs

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "agentchat_team.py"


def test_example_team_offline(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    peer_verify_cli: Callable[[str | os.PathLike[str]], tuple[int, str]],
    peer_verify_workflow: Callable[[dict[str, Any]], list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE.parent))  # the example imports its sibling _outdir
    spec = importlib.util.spec_from_file_location("agentchat_team_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(tmp_path) == 0
    out = capsys.readouterr().out
    assert "verdict: VALID" in out and "signature    PASS" in out
    receipt = json.loads((tmp_path / "receipt.json").read_text(encoding="utf-8"))
    assert pairs(receipt) == [
        ("task", "team"),
        ("speaker_selection", "team"),
        ("tool_call", "planner"),
        ("handoff", "planner"),
        ("speaker_selection", "team"),
        ("approval", "analyst"),
        ("code_execution", "analyst"),
        ("message", "analyst"),
        ("termination", "team"),
        ("close", "aer1"),
    ]
    code, text = peer_verify_cli(tmp_path / "receipt.json")
    assert code == 0, text
    assert peer_verify_workflow(receipt) == []
