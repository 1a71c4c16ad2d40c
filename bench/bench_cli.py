"""Verify a receipt file from the command line: wall time per step, ours beside the peer's CLI.

One 20,000-step receipt of 200-byte messages (ours, the peer's verifier reads it too), each
CLI run in a fresh process as a user runs it (start-up and imports included), in
alternating rounds, the best run of each kept. Ours runs twice: without the evidence file
(what the peer checks: members, ids, the root, plus our chain and close step) and with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import PEER_DIR, message, peer
from _table import make_row

from aer1 import Collector
from aer1.receipt import evidence_path_for

STEPS = {False: 20_000, True: 4_000}
REPEAT = {False: 5, True: 2}
_TIMEOUT_S = 600


def _wall(argv: list[str]) -> float:
    """Seconds one CLI run takes; it must exit 0 (the receipt verifies)."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=_TIMEOUT_S)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:2]} exited {done.returncode}, want 0: {done.stderr.decode()[-500:]}")
    return elapsed


def run(quick: bool) -> list[dict[str, Any]]:
    """Rows: CLI wall time per step, ours without and with evidence, beside the peer."""
    steps, repeat = STEPS[quick], REPEAT[quick]
    peer()  # installs the peer beside the tests when it is not there yet
    content = message(200)
    with tempfile.TemporaryDirectory(prefix="aer1-cli-bench-") as d:
        c = Collector("bench", session_id="bench")
        for _ in range(steps - 1):
            c.record("message", content, agent="alice", kind="message")
        path = c.save(os.path.join(d, "run.json"))
        bare = os.path.join(d, "bare.json")  # the same receipt with no evidence beside it
        Path(bare).write_bytes(Path(path).read_bytes())
        assert os.path.exists(evidence_path_for(path))
        ours_cli = str(Path(sys.executable).with_name("aer1-verify"))
        peer_cli = [sys.executable, str(PEER_DIR / "aer1_verify.py")]
        best = {"ours": float("inf"), "ours+evidence": float("inf"), "peer": float("inf")}
        for _ in range(repeat):  # alternating, so a busy moment hits each side alike
            best["ours"] = min(best["ours"], _wall([ours_cli, bare]))
            best["peer"] = min(best["peer"], _wall([*peer_cli, bare]))
            best["ours+evidence"] = min(best["ours+evidence"], _wall([ours_cli, path]))
    us = {k: v / steps * 1e6 for k, v in best.items()}
    return [
        make_row(f"verify a {steps:,}-step receipt file from the CLI, wall time (ours: + chain, ids, close step)",
                 us["ours"], us["peer"], "µs/step"),
        make_row("the same with its evidence file beside it (ours: + every content hash; peer: no evidence)",
                 us["ours+evidence"], us["peer"], "µs/step"),
    ]


if __name__ == "__main__":
    from _table import run_standalone

    sys.exit(run_standalone(run, __doc__))
