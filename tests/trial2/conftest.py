"""Fixtures for the second hostile trial: the verifier CLI in-process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector
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
def receipt(tmp_path: Path) -> Path:
    """A short unsigned run saved as ``receipt.json`` with its evidence."""
    c = Collector(goal="a receipt to verify")
    c.record("lookup", {"arguments": {"q": "x"}, "result": "y"}, agent="alice", kind="tool_call", call_id="c1")
    path = tmp_path / "receipt.json"
    c.save(path, workflow=c.finalize("done"))
    return path


from ..timestamp.conftest import rogue_tsa, trusted_pki, tsa, tsa_roots, untrusted_pki  # noqa: E402,F401
