"""Shared benchmark helpers: the peer collector, sized messages, best-of timing."""

from __future__ import annotations

import gc
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

__all__ = ["MEASURE_CHILD", "PEER_DIR", "REPO", "alternating", "best_us_per_step", "message", "peer", "timed"]

REPO = Path(__file__).resolve().parent.parent
PEER_DIR = REPO / "tests" / ".peers"
PEER_PACKAGES = ("aer1-verify==0.2.19", "aer1-autogen==0.1.15")
_PIP_TIMEOUT_S = 300
#: ``python -c MEASURE_CHILD ARGV...`` runs ARGV with its output to /dev/null and prints, as JSON, its wall
#: time, exit code and the peak RSS of its largest process (as the system reports waited-for children).
MEASURE_CHILD = """
import json, resource, subprocess, sys, time
t = time.perf_counter()
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
wall = time.perf_counter() - t
print(json.dumps({"wall_s": wall, "rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, "code": code}))
"""
_WORDS = ("the", "agent", "reads", "a", "file", "and", "writes", "its", "summary", "to", "report", "with",
          "three", "tool", "calls", "then", "hands", "off", "review", "plan")


def peer() -> Any:
    """The aer1-autogen 0.1.15 package, installed beside the tests (never into the environment)."""
    if not (PEER_DIR / "aer1_autogen").is_dir():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(PEER_DIR),
                        *PEER_PACKAGES], check=True, timeout=_PIP_TIMEOUT_S)
    if str(PEER_DIR) not in sys.path:
        sys.path.append(str(PEER_DIR))
    import aer1_autogen

    return aer1_autogen


def message(size: int) -> dict[str, Any]:
    """An AgentChat-like message whose canonical JSON is exactly ``size`` bytes of plain text."""
    base: dict[str, Any] = {"source": "alice", "type": "TextMessage", "content": ""}
    room = size - len(orjson.dumps(base))
    words: list[str] = []
    length = 0
    i = 0
    while length < room:
        w = _WORDS[i % len(_WORDS)]
        words.append(w)
        length += len(w) + 1
        i += 1
    base["content"] = " ".join(words)[:room]
    assert len(orjson.dumps(base, option=orjson.OPT_SORT_KEYS)) == size
    return base


def best_us_per_step(run: Callable[[], float], steps: int, repeat: int) -> float:
    """Best of ``repeat`` runs of ``run()`` (which returns seconds for ``steps`` steps), in µs per step."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        best = min(best, run())
    return best / steps * 1e6


def alternating(ours: Callable[[], float], theirs: Callable[[], float], rounds: int) -> tuple[float, float]:
    """Best of ``rounds`` alternating runs of each (seconds each run returns), ours first in every round.

    On a shared machine a burst of other work then falls on both sides alike, not on one.
    """
    best_ours = best_theirs = float("inf")
    for _ in range(rounds):
        gc.collect()
        best_ours = min(best_ours, ours())
        gc.collect()
        best_theirs = min(best_theirs, theirs())
    return best_ours, best_theirs


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of one call."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out
