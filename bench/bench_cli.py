"""Verify a receipt file from the command line: wall time, ours beside the peer's console script.

Each run is a fresh process started the way a user starts it: our ``aer1-verify`` console
script, and the ``aer1-verify`` 0.2.19 console script the peer package installs (run from
``tests/.peers``). Receipts of 100 to 200,000 steps of a 200-byte message (ours; the
peer's verifier reads them too) are verified in alternating rounds, so a busy moment hits
each side alike; the best run of each side is kept and the ratios of every round are
given as a range. Ours runs twice per round: without the evidence file (what the peer
checks: members, ids, the root, plus our chain and close step) and with it beside the
receipt (ours also hashes every content; the peer reads no evidence).
Up to 1,000 steps a round takes milliseconds, so those sizes run 15 rounds.

Both sides run with their bytecode cached, as after ``pip install`` (which compiles it):
the runs share a fresh ``PYTHONPYCACHEPREFIX`` and ``PYTHONDONTWRITEBYTECODE`` is cleared,
with one run of each side first to fill the cache. Start-up rows: ``--help`` of each
side, and the interpreter alone (``python -c pass``), the floor of any run.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import PEER_DIR, message, peer
from _table import make_row

from aer1 import Collector
from aer1._receipt import evidence_path_for

SIZES = {False: (100, 1_000, 20_000, 200_000), True: (100, 2_000)}
#: Alternating rounds per size (each round: ours, the peer, ours with evidence).
ROUNDS = {False: 7, True: 3}
#: More rounds up to this size: a round takes milliseconds, and a busy moment weighs more.
_SHORT_STEPS = 1_000
_SHORT_ROUNDS = 15
#: Fewer rounds from this size on: a round takes seconds there, and start-up noise is small.
_LONG_STEPS = 100_000
_LONG_ROUNDS = 3
_START_ROUNDS = 15
_TIMEOUT_S = 900


def _env(cache: str, *, peer_path: bool = False) -> dict[str, str]:
    """The environment of a timed run: bytecode cached under ``cache``; the peer's folder on the path for it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    env["PYTHONPYCACHEPREFIX"] = cache
    if peer_path:
        env["PYTHONPATH"] = str(PEER_DIR)
    return env


def _wall(argv: list[str], env: dict[str, str]) -> float:
    """Seconds one CLI run takes; it must exit 0 (the receipt verifies)."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, timeout=_TIMEOUT_S)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:2]} exited {done.returncode}, want 0: {done.stderr.decode()[-500:]}")
    return elapsed


def _receipt(folder: str, steps: int) -> tuple[str, str]:
    """(receipt with its evidence beside it, the same receipt bytes with no evidence beside them)."""
    content = message(200)
    c = Collector("bench", session_id="bench")
    for _ in range(steps - 1):  # the close step makes it ``steps``
        c.record("message", content, agent="alice", kind="message")
    path = c.save(os.path.join(folder, f"run{steps}.json"))
    bare = os.path.join(folder, f"bare{steps}.json")
    Path(bare).write_bytes(Path(path).read_bytes())
    assert os.path.exists(evidence_path_for(path)) and not os.path.exists(evidence_path_for(bare))
    return path, bare


def _ratios(ours: list[float], theirs: list[float]) -> str:
    """The ratios of the rounds: range and median."""
    r = sorted(a / b for a, b in zip(ours, theirs, strict=True))
    return f"{r[0]:.2f}-{r[-1]:.2f}, median {statistics.median(r):.2f}"


def run(quick: bool) -> list[dict[str, Any]]:
    """Rows: start-up, then CLI wall time per step at each size, ours without and with evidence, beside the peer."""
    peer()  # installs the peer beside the tests when it is not there yet
    ours_cli = [str(Path(sys.executable).with_name("aer1-verify"))]
    peer_cli = [sys.executable, str(PEER_DIR / "bin" / "aer1-verify")]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="aer1-cli-bench-") as d:
        cache = os.path.join(d, "pycache")
        ours_env, peer_env = _env(cache), _env(cache, peer_path=True)
        _wall([*ours_cli, "--help"], ours_env)  # fills the bytecode cache
        _wall([*peer_cli, "--help"], peer_env)
        times: dict[str, list[float]] = {"ours": [], "peer": [], "python": []}
        for _ in range(_START_ROUNDS if not quick else 3):
            times["ours"].append(_wall([*ours_cli, "--help"], ours_env))
            times["peer"].append(_wall([*peer_cli, "--help"], peer_env))
            times["python"].append(_wall([sys.executable, "-c", "pass"], ours_env))
        rows.append(make_row(f"CLI start-up: aer1-verify --help (peer: aer1-verify 0.2.19; round ratios "
                             f"{_ratios(times['ours'], times['peer'])})",
                             min(times["ours"]) * 1e3, min(times["peer"]) * 1e3, "ms"))
        rows.append(make_row("CLI start-up floor: the interpreter alone (python -c pass)",
                             min(times["python"]) * 1e3, None, "ms"))
        for steps in SIZES[quick]:
            path, bare = _receipt(d, steps)
            _wall([*ours_cli, bare], ours_env)
            _wall([*peer_cli, bare], peer_env)
            got: dict[str, list[float]] = {"ours": [], "peer": [], "ours+evidence": []}
            rounds = _LONG_ROUNDS if steps >= _LONG_STEPS else ROUNDS[quick]
            if steps <= _SHORT_STEPS and not quick:
                rounds = _SHORT_ROUNDS
            for _ in range(rounds):
                got["ours"].append(_wall([*ours_cli, bare], ours_env))
                got["peer"].append(_wall([*peer_cli, bare], peer_env))
                got["ours+evidence"].append(_wall([*ours_cli, path], ours_env))
            us = {k: min(v) / steps * 1e6 for k, v in got.items()}
            rows.append(make_row(
                f"aer1-verify FILE, {steps:,} steps, wall time (ours: + chain, ids, close step; peer: "
                f"aer1-verify 0.2.19; round ratios {_ratios(got['ours'], got['peer'])})",
                us["ours"], us["peer"], "µs/step"))
            rows.append(make_row(
                f"the same with its evidence file beside it (ours: + every content hash; peer: no evidence; "
                f"round ratios {_ratios(got['ours+evidence'], got['peer'])})",
                us["ours+evidence"], us["peer"], "µs/step"))
            for p in (path, bare, evidence_path_for(path)):
                os.unlink(p)
    return rows


if __name__ == "__main__":
    from _table import run_standalone

    sys.exit(run_standalone(run, __doc__))
