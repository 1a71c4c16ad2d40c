"""Fixtures for the second hostile trial: the verifier CLI in-process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from aer1.verifier.cli import main as verify_main

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Run:
    """``aer1-verify`` in-process: (exit code, stdout, stderr)."""

    def run(*args: Any) -> tuple[int, str, str]:
        code = verify_main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


from ..timestamp.conftest import rogue_tsa, trusted_pki, tsa, tsa_roots, untrusted_pki  # noqa: E402,F401
