"""Fixtures for the new-user trial: ``aer1`` in-process, and a saved receipt (shared with the second trial)."""

from __future__ import annotations

from typing import Any

import pytest

from aer1._cli import main as aer1_main

from ..trial2.conftest import Run, receipt, run_cli

__all__ = ["Run", "receipt", "run_aer1", "run_cli"]


@pytest.fixture
def run_aer1(capsys: pytest.CaptureFixture[str]) -> Run:
    """``aer1`` in-process: (exit code, stdout, stderr)."""

    def run(*args: Any) -> tuple[int, str, str]:
        code = aer1_main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run
