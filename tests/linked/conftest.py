"""Fixtures for the linked-receipt tests: ``aer1-verify`` in-process."""

from __future__ import annotations

from ..cli_runs import run_cli

__all__ = ["run_cli"]
