"""Shared fixtures for tests that run the command lines in-process, and a saved receipt to run them on.

A folder's ``conftest.py`` imports the fixtures it needs from here (``from ..cli_runs import ...``);
``Run`` is the type of what each fixture returns.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector
from aer1._cli import main as aer1_main
from aer1.verifier._cli import main as verify_main

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Run:
    """``aer1-verify`` in-process: (exit code, stdout, stderr)."""

    def run(*args: Any) -> tuple[int, str, str]:
        code = verify_main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def run_aer1(capsys: pytest.CaptureFixture[str]) -> Run:
    """``aer1`` in-process: (exit code, stdout, stderr)."""

    def run(*args: Any) -> tuple[int, str, str]:
        code = aer1_main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def receipt(tmp_path: Path) -> Path:
    """A short unsigned run saved as ``receipt.json`` with its evidence."""
    c = Collector(goal="a receipt to verify")
    c.record("lookup", {"arguments": {"q": "x"}, "result": "y"}, agent="alice", kind="tool_call", call_id="c1")
    path = tmp_path / "receipt.json"
    c.save(path, workflow=c.finalize("done"))
    return path
