"""Shared helpers for the journal and recovery tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from aer1 import Collector
from aer1 import _timefmt as timefmt

#: Fixed ids and times, so two collectors fed the same steps build the same bytes.
WORKFLOW_ID = "0b6f7a52-8f0e-4c1b-9d8e-6a4f3c2b1a00"
RECEIPT_ID = "5d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
FIXED_NS = 1_767_225_700_000_000_000
TRUSTED_KEY = Path(__file__).parent.parent / "fixtures" / "keys" / "trusted.key"
TRUSTED_PUB = Path(__file__).parent.parent / "fixtures" / "keys" / "trusted.pub"
STEPS = 7


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The close step's time (taken inside finalize()) is fixed."""
    monkeypatch.setattr(timefmt, "now_ns", lambda: FIXED_NS)


def feed(c: Collector, n: int = STEPS) -> list[dict[str, Any]]:
    """Record ``n`` steps with fixed times and varied members; returns the step headers."""
    c.register_agent("alice", type="AssistantAgent", description="writes", config={"model": "m", "api_key": "k"})
    c.register_agent("bob", type="UserProxyAgent")
    out = []
    for i in range(1, n + 1):
        who = "alice" if i % 2 else "bob"
        out.append(c.record(
            "message" if i % 3 else "search",
            {"content": f"step {i}", "n": i, "nested": {"ok": True, "list": [1, 2, i]}},
            agent=who, status="error" if i == 5 else "ok",
            started_at=T0 + i, ended_at=T0 + i + 0.25,
            reply_to="bob" if who == "alice" else "alice", call_id=f"call-{i}" if i % 3 == 0 else None,
        ))
    return out


def journal_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a journal, parsed."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


@pytest.fixture
def run_recover() -> Callable[..., tuple[int, dict[str, Any] | str, str]]:
    """Run the real ``aer1 recover`` command: (exit code, parsed --json output or stdout, stderr)."""

    def run(*args: str | Path, json: bool = True) -> tuple[int, dict[str, Any] | str, str]:
        cmd = [sys.executable, "-m", "aer1._cli", "recover", *map(str, args)] + (["--json"] if json else [])
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        out: dict[str, Any] | str = done.stdout
        if json and done.stdout.strip():
            out = orjson.loads(done.stdout)
        return done.returncode, out, done.stderr

    return run
