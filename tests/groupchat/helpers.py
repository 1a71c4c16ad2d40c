"""Helpers for the group chat tests: step sequences and recorded contents."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from aer1.groupchat import ChatResult

from ..receipts import evidence_contents

_counter = itertools.count()


def step_pairs(result: ChatResult) -> list[tuple[str, str]]:
    """(kind, agent) of every step, close included."""
    return [(s["kind"], s["agent"]) for s in result.receipt["steps"]]


def step_contents(result: ChatResult, folder: Path) -> list[Any]:
    """Every step's recorded content in seq order, read back from the saved evidence."""
    path = folder / f"contents-{next(_counter)}.json"
    result.save(str(path))
    return list(evidence_contents(path).values())
