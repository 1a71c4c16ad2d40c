"""examples/erasure.py runs offline, erases one customer's fields and the receipt stays VALID, byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "erasure.py"


def test_example_runs(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(EXAMPLE), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "3 disclosed and checked" in lines[0]
    assert "3 erased (3 by key" in lines[-2] and "GDPR Art. 17 request 42" in lines[-2]
    assert lines[-1] == "receipt bytes unchanged by the erasure: True"
    assert "alice@example.com" not in (tmp_path / "receipt.disclosures.jsonl").read_text()
    assert "alice@example.com" not in (tmp_path / "receipt.evidence.jsonl").read_text()
