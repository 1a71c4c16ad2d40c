"""Fixtures for the third hostile trial: the verifier CLI in-process (shared with the second), and policy files."""

from __future__ import annotations

import json
from pathlib import Path

from ..trial2.conftest import Run, receipt, run_cli

__all__ = ["Run", "policy_failures", "receipt", "run_cli", "write_policy"]


def write_policy(folder: Path, body: str) -> Path:
    """A policy file holding ``body`` after the format line."""
    path = folder / "policy.toml"
    path.write_text('format = "aer1-policy-v1"\n' + body)
    return path


def policy_failures(out: str) -> list[tuple[str, str]]:
    """(rule, message) of each failure of the policy check in a ``--json`` verdict."""
    return [(f["rule"], f["message"]) for f in json.loads(out)["failures"] if f["check"] == "policy"]
