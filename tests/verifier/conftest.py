"""Fixtures for the verifier's tests: both command lines in-process, and a saved receipt."""

from __future__ import annotations

from ..cli_runs import receipt, run_aer1, run_cli

__all__ = ["receipt", "run_aer1", "run_cli"]
