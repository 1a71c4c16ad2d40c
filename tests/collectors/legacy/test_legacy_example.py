"""The legacy group chat example runs offline, verifies, and its receipt passes the peers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .support import rows

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "legacy_groupchat.py"
MANAGER = "chat_manager"


def test_example_runs_and_verifies(
    tmp_path: Path,
    peer_verify_cli: Callable[[str | os.PathLike[str]], tuple[int, str]],
    peer_verify_workflow: Callable[[dict[str, Any]], list[str]],
) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "verdict: VALID" in done.stdout
    assert "answer: Three widgets cost 59.97.\n" in done.stdout
    receipt = json.loads((tmp_path / "receipt.json").read_text(encoding="utf-8"))
    selection = ("speaker_selection", MANAGER, None)
    assert rows(receipt) == [
        ("message", "user", MANAGER),
        selection,
        ("message", "planner", MANAGER),
        selection,
        ("tool_call", "executor", None),
        ("message", "executor", MANAGER),
        selection,
        ("message", "planner", MANAGER),
        selection,
        ("code_execution", "executor", None),
        ("message", "executor", MANAGER),
        selection,
        ("message", "planner", MANAGER),
        ("termination", MANAGER, None),
        ("close", "aer1", None),
    ]
    tool = receipt["steps"][4]
    assert (tool["tool"], tool["call_id"], tool["status"]) == ("lookup_price", "call_price_1", "ok")
    assert peer_verify_workflow(receipt) == []
    code, output = peer_verify_cli(tmp_path / "receipt.json")
    assert code == 0, output
