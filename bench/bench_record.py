"""Record, finalize, sign and verify: ours against the aer1-autogen collector, in one process."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from functools import partial
from typing import Any

from _common import alternating, message, peer, timed
from _table import make_row

from aer1 import Collector
from aer1._signing import load_private_key, sign_receipt, verify_signature
from aer1.verifier import verify_receipt

SMALL, LARGE = 200, 20 * 1024
#: Steps per timed run (full / quick) and runs per measurement (the best is kept).
STEPS = {False: 20_000, True: 4_000}
LARGE_STEPS = {False: 4_000, True: 1_000}
REPEAT = {False: 5, True: 3}
#: Alternating rounds (ours, then the peer's) of each record measurement; the best of each side is kept.
ROUNDS = {False: 9, True: 3}
FINALIZE_STEPS = 10_000


def _ours_record(steps: int, content: dict[str, Any]) -> float:
    c = Collector("bench", session_id="bench")
    record = c.record
    t0 = time.perf_counter()
    for _ in range(steps):
        record("message", content, agent="alice", kind="message")
    return time.perf_counter() - t0


def _peer_record(steps: int, content: dict[str, Any]) -> float:
    p = peer().AER1AutoGenCollector(goal="bench")
    add = p._add_step
    t0 = time.perf_counter()
    for _ in range(steps):
        add("message", content, agent="alice")
    return time.perf_counter() - t0


def _filled(steps: int, signing_key: Any = None) -> tuple[Collector, Any]:
    content = message(SMALL)
    c = Collector("bench", session_id="bench", signing_key=signing_key)
    p = peer().AER1AutoGenCollector(goal="bench")
    for _ in range(steps):
        c.record("message", content, agent="alice", kind="message")
        p._add_step("message", content, agent="alice")
    return c, p


def run(quick: bool) -> list[dict[str, Any]]:
    """Rows: record (200 B, 20 KB), finalize, signing, verify per step."""
    n, repeat = STEPS[quick], REPEAT[quick]
    rows = []
    for size, steps in ((SMALL, n), (LARGE, LARGE_STEPS[quick])):
        content = message(size)
        ours, theirs = alternating(partial(_ours_record, steps, content), partial(_peer_record, steps, content),
                                   ROUNDS[quick])
        ours, theirs = ours / steps * 1e6, theirs / steps * 1e6
        label = "200-byte" if size == SMALL else "20 KB"
        rows.append(make_row(f"record a step, {label} message (evidence on, default redaction)", ours, theirs,
                             "µs/step"))

    fin_ours: list[float] = []
    fin_peer: list[float] = []
    for _ in range(repeat):
        c, p = _filled(FINALIZE_STEPS)
        fin_ours.append(timed(partial(c.finalize, "done"))[0])
        fin_peer.append(timed(partial(p.finalize, "done"))[0])
    rows.append(make_row(f"finalize, {FINALIZE_STEPS:,} steps (ours: close step, Merkle root, chain head)",
                         min(fin_ours) * 1e3, min(fin_peer) * 1e3, "ms"))
    rows.append(_save_row(repeat))

    key = load_private_key(_fresh_key())
    c, p = _filled(FINALIZE_STEPS)
    receipt = c.finalize("done")
    peer_receipt = p.finalize("done")
    sign_s = min(timed(lambda: sign_receipt(receipt, key))[0] for _ in range(repeat))
    rows.append(make_row(f"sign a {FINALIZE_STEPS:,}-step receipt (Ed25519 over JCS)", sign_s * 1e3, None, "ms"))
    signed = {**receipt, "signature": sign_receipt(receipt, key)}
    check_s = min(timed(lambda: verify_signature(signed))[0] for _ in range(repeat))
    rows.append(make_row(f"check that signature ({FINALIZE_STEPS:,} steps)", check_s * 1e3, None, "ms"))

    verify = peer().verify_workflow_receipt
    steps = len(receipt["steps"])
    ours_v = min(timed(lambda: verify_receipt(receipt))[0] for _ in range(repeat)) / steps * 1e6
    peer_v = min(timed(lambda: verify(receipt))[0] for _ in range(repeat)) / steps * 1e6
    rows.append(make_row("verify per step, our receipt as a dict (ours: + chain, ids, close step)", ours_v, peer_v,
                         "µs/step"))
    own = min(timed(lambda: verify(peer_receipt))[0] for _ in range(repeat)) / steps * 1e6
    rows.append(make_row("verify per step, each its own receipt as a dict", ours_v, own, "µs/step"))
    return rows


def _save_row(repeat: int) -> dict[str, Any]:
    """Writing a finalized receipt to a file, alternated: ours (a step per line, + the evidence file) and the peer's."""
    c, p = _filled(FINALIZE_STEPS)
    receipt, peer_receipt = c.finalize("done"), p.finalize("done")
    with tempfile.TemporaryDirectory(prefix="aer1-bench-save-") as d:
        ours_path, peer_path = os.path.join(d, "ours.json"), os.path.join(d, "peer.json")
        ours, theirs = alternating(lambda: timed(partial(c.save, ours_path, receipt))[0],
                                   lambda: timed(partial(p.save, peer_path, peer_receipt))[0], repeat)
    return make_row(f"save a {FINALIZE_STEPS:,}-step receipt (ours: + its evidence file)", ours * 1e3,
                    theirs * 1e3, "ms")


def _fresh_key() -> bytes:
    from aer1._signing import generate_key_pair

    return generate_key_pair()[0]


if __name__ == "__main__":
    from _table import run_standalone

    sys.exit(run_standalone(run, __doc__))
