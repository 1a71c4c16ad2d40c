"""Shared by the collector test suites: verify a saved receipt everywhere, read its evidence.

Imports only aer1 and orjson, so the legacy suite can use it in the ag2 environment too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from aer1 import verify_receipt
from aer1._receipt import evidence_path_for
from aer1.verifier import PASS

PeerCli = Callable[[str | os.PathLike[str]], tuple[int, str]]
PeerWorkflow = Callable[[dict[str, Any]], list[str]]


class Peers(NamedTuple):
    """Both peer verifiers: the ``aer1-verify`` 0.2.19 CLI and ``verify_workflow_receipt`` 0.1.15."""

    cli: PeerCli
    workflow: PeerWorkflow


def verify_everywhere(path: str | os.PathLike[str], receipt: dict[str, Any], peers: Peers | None) -> None:
    """The saved receipt verifies with ours (evidence included) and with both peers when installed.

    Our checks never depend on the peers; ``peers`` is None only outside CI when ``make`` has
    not installed them (under ``CI=true`` the fixture fails instead).
    """
    report = verify_receipt(path)
    assert report.valid, [f.reason for f in report.failures]
    assert report.check("evidence").status == PASS, report.check("evidence").detail
    if peers is None:
        return
    code, out = peers.cli(path)
    assert code == 0, out
    assert peers.workflow(receipt) == []


def evidence_contents(path: str | os.PathLike[str]) -> dict[int, Any]:
    """Every step's recorded content by seq, read back from the evidence saved beside ``path``."""
    lines = Path(evidence_path_for(os.fspath(path))).read_bytes().splitlines()
    entries = [orjson.loads(line) for line in lines[1:]]
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    return {e["seq"]: e["content"] for e in entries}
