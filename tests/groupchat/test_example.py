"""The built-in group chat example runs end to end, offline, and its receipt verifies everywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "builtin_groupchat.py"
TIMEOUT_S = 120


def test_example_three_agents_with_tool_approval_and_sandbox(
    tmp_path: Path,
    peer_verify_cli: Callable[[str | os.PathLike[str]], tuple[int, str]],
    peer_verify_workflow: Callable[[dict[str, Any]], list[str]],
) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path)], capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().splitlines()[-1].startswith("verdict: VALID (aer1-chain-v1;")
    assert "stop reason: is_termination_msg; sandbox: bubblewrap" in done.stdout
    assert "signature    PASS        valid signature by trusted key" in done.stdout
    receipt = json.loads((tmp_path / "receipt.json").read_text())
    select = ("speaker_selection", "manager")
    assert [(s["kind"], s["agent"]) for s in receipt["steps"]] == [
        ("task", "user"),
        select, ("message", "analyst"),
        select, ("tool_call", "tools"), ("message", "tools"),
        select, ("message", "analyst"),
        select, ("code_execution", "runner"), ("message", "runner"),
        select, ("message", "analyst"),
        select, ("approval", "tools"), ("tool_call", "tools"), ("message", "tools"),
        select, ("message", "analyst"),
        ("termination", "manager"),
        ("close", "aer1"),
    ]  # fmt: skip
    calls = [(s["kind"], s["tool"], s["call_id"], s["status"]) for s in receipt["steps"] if "call_id" in s]
    assert calls == [
        ("tool_call", "get_sales", "call_sales", "ok"),
        ("approval", "approval", "call_report", "ok"),
        ("tool_call", "send_report", "call_report", "ok"),
    ]
    code_step = next(s for s in receipt["steps"] if s["kind"] == "code_execution")
    assert code_step["status"] == "ok"
    assert {a["name"] for a in receipt["agents"]} == {"manager", "analyst", "tools", "runner"}
    code, out = peer_verify_cli(tmp_path / "receipt.json")
    assert code == 0, out
    assert peer_verify_workflow(receipt) == []
