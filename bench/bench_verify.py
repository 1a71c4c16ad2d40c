"""Verify a receipt given as a dict: ours in one and two processes beside the peer, and where the time goes.

* Ours with ``jobs=1`` and ``jobs=2`` and the peer's ``verify_workflow_receipt``, all over
  our receipt of 20,000 and 200,000 steps (200-byte messages), in alternating rounds in
  this process; each number is the best round, each ratio from the same rounds.
* The control row (two copies of a CPU loop in two processes over one copy in one; 1.0
  when two cores are free) says whether two processes could gain at all during the run.
* The per-step profile of our check: the step digests (copy, sorted encoding, SHA-256),
  the Merkle leaves and tree (the peer computes those two as well), the member checks
  (the rest of the quick path) and the report around it, beside the peer's whole check.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from hashlib import sha256
from typing import Any

from _common import message, peer
from _table import make_row
from bench_linked import _control_ratio

from aer1 import Collector
from aer1._chain import step_digests as _digests
from aer1._merkle import root_of_leaves
from aer1.verifier import verify_receipt
from aer1.verifier._parallel import quick_steps

#: Steps of the receipts (full run / quick run) and alternating rounds.
SIZES = {False: (20_000, 200_000), True: (20_000,)}
ROUNDS = {False: 4, True: 2}
_HASH_DIGEST = type(sha256()).digest


def _receipt(steps: int) -> dict[str, Any]:
    c = Collector("bench", session_id="bench")
    content = message(200)
    for _ in range(steps):
        c.record("message", content, agent="alice", kind="message")
    return c.finalize("done")


def _us_per_step(fn: Callable[[], Any], steps: int) -> float:
    gc.collect()
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) / steps * 1e6


def _best(rounds: list[dict[str, float]], key: str) -> float:
    return min(r[key] for r in rounds)


def run(quick: bool) -> list[dict[str, Any]]:
    """Rows: jobs=1 and jobs=2 beside the peer at each size, the control, the profile at 20,000 steps."""
    verify = peer().verify_workflow_receipt
    rows = []
    for size in SIZES[quick]:
        rows.extend(_size_rows(size, quick, verify, profile=size == SIZES[quick][0]))
    rows.append(make_row("control: 2 copies of a CPU loop in 2 processes / one copy in one (1.0 when the cores "
                         "are free)", _control_ratio(2), None, "×"))
    return rows


def _size_rows(size: int, quick: bool, verify: Callable[[Any], Any], *, profile: bool) -> list[dict[str, Any]]:
    receipt = _receipt(size)
    n = len(receipt["steps"])
    assert verify_receipt(receipt, jobs=2).verdict == "VALID"
    rounds = []
    for _ in range(ROUNDS[quick]):
        rounds.append({"j1": _us_per_step(lambda: verify_receipt(receipt, jobs=1), n),
                       "j2": _us_per_step(lambda: verify_receipt(receipt, jobs=2), n),
                       "peer": _us_per_step(lambda: verify(receipt), n)})
    j1, j2, theirs = _best(rounds, "j1"), _best(rounds, "j2"), _best(rounds, "peer")
    lo1, hi1 = min(r["j1"] / r["peer"] for r in rounds), max(r["j1"] / r["peer"] for r in rounds)
    lo2, hi2 = min(r["j2"] / r["peer"] for r in rounds), max(r["j2"] / r["peer"] for r in rounds)
    rows = [make_row(f"verify a {size:,}-step receipt (dict), jobs=1, all our checks (rounds: {lo1:.2f}-{hi1:.2f}×)",
                     j1, theirs, "µs/step"),
            make_row(f"verify a {size:,}-step receipt (dict), jobs=2 (rounds: {lo2:.2f}-{hi2:.2f}×)", j2, theirs,
                     "µs/step"),
            make_row(f"{size:,} steps: jobs=2 / jobs=1", j2 / j1, None, "×")]
    return rows + (_profile(receipt, verify) if profile else [])


def _profile(receipt: dict[str, Any], verify: Callable[[Any], Any]) -> list[dict[str, Any]]:
    """Where a step's time goes, best of 3 each (the parts are timed apart, so they do not add up exactly)."""
    steps = receipt["steps"]
    n = len(steps)
    rids = [s["receipt_id"] for s in steps]
    leaves = list(map(_HASH_DIGEST, map(sha256, map(str.encode, rids))))

    def best(fn: Callable[[], Any]) -> float:
        return min(_us_per_step(fn, n) for _ in range(3))

    whole, quick_path = best(lambda: verify_receipt(receipt)), best(lambda: quick_steps(receipt))
    digests = best(lambda: _digests(steps))
    leaf = best(lambda: list(map(_HASH_DIGEST, map(sha256, map(str.encode, rids)))))
    tree = best(lambda: root_of_leaves(list(leaves)))
    lookups = best(lambda: [s["receipt_id"] for s in steps])
    theirs = best(lambda: verify(receipt))
    return [
        make_row("profile, per step: step digests (copy, sorted encoding, SHA-256; the peer has no chain)", digests,
                 None, "µs/step"),
        make_row("profile, per step: Merkle leaves (one SHA-256 of the id; the peer: the same)", leaf, None,
                 "µs/step"),
        make_row("profile, per step: Merkle tree (one SHA-256 per node; the peer: the same)", tree, None, "µs/step"),
        make_row("profile, per step: member checks, ids, links (quick path minus the three above)",
                 quick_path - digests - leaf - tree, None, "µs/step"),
        make_row("profile, per step: the report around the quick path (workflow members, close step, root)",
                 whole - quick_path, None, "µs/step"),
        make_row("profile, per step: one member read from every step (a list comprehension)", lookups, None,
                 "µs/step"),
        make_row("profile, per step: whole check, ours / peer", whole, theirs, "µs/step"),
    ]


if __name__ == "__main__":
    from _table import run_standalone

    sys.exit(run_standalone(run, __doc__))
