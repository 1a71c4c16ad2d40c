"""Committed personal fields: what marking costs at record and verify time, and what erasing costs.

In this table the second column is not the aer1-autogen collector: it is ours doing the same
work without marking (the ratio is the cost of the feature), or for the scan row the whole
verification the scan is part of.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from functools import partial
from typing import Any

from _common import alternating, timed
from _table import make_row

from aer1 import Collector
from aer1._erase import erase_receipt, holds_value
from aer1._signing import generate_key_pair, load_private_key
from aer1.verifier import verify_receipt
from aer1.verifier._disclosures import _may_commit

STEPS = {False: 20_000, True: 4_000}
ROUNDS = {False: 7, True: 3}
EMAIL = "alice@example.com"


def _content(i: int) -> dict[str, Any]:
    return {"arguments": {"email": EMAIL, "account": f"DE{i:020d}", "amount": i % 500},
            "result": {"status": "ok", "note": "x" * 120}}


def _record(steps: int, personal: list[str] | None) -> float:
    c = Collector("bench", session_id="bench", personal=personal)
    record = c.record
    contents = [_content(i) for i in range(steps)]
    t0 = time.perf_counter()
    for content in contents:
        record("refund", content, agent="alice")
    return time.perf_counter() - t0


def _saved(folder: str, name: str, steps: int, personal: list[str] | None) -> str:
    c = Collector("bench", session_id="bench", personal=personal)
    for i in range(steps):
        c.record("refund", _content(i), agent="alice")
    return c.save(os.path.join(folder, f"{name}.json"))


def run(quick: bool) -> list[dict[str, Any]]:
    """Rows: record, verify, the scan every verification with evidence now makes, erase."""
    n, rounds = STEPS[quick], ROUNDS[quick]
    personal = ["arguments.email", "arguments.account"]
    marked, plain = alternating(partial(_record, n, personal), partial(_record, n, None), rounds)
    rows = [make_row("record a step, 2 of its fields committed (second column: none marked)", marked / n * 1e6,
                     plain / n * 1e6, "µs/step")]
    with tempfile.TemporaryDirectory(prefix="aer1-bench-erasure-") as d:
        committed, unmarked = _saved(d, "committed", n, personal), _saved(d, "plain", n, None)
        ours, base = alternating(lambda: timed(partial(verify_receipt, committed))[0],
                                 lambda: timed(partial(verify_receipt, unmarked))[0], rounds)
        rows.append(make_row(f"verify a {n:,}-step receipt file + evidence, 2 fields a step committed and "
                             "disclosed (second column: none)", ours / n * 1e6, base / n * 1e6, "µs/step"))
        evidence = unmarked.replace(".json", ".evidence.jsonl")
        scan = min(timed(partial(_may_commit, evidence))[0] for _ in range(rounds))
        rows.append(make_row(f"look for commitments in the evidence of {n:,} unmarked steps (second column: the "
                             "whole verification)", scan * 1e3, base * 1e3, "ms"))
        key = load_private_key(generate_key_pair()[0])
        from aer1._cli_input import read_receipt as _read_receipt

        receipt = _read_receipt(committed)
        t0 = time.perf_counter()
        records = erase_receipt(receipt, committed, lambda seq, path, value: holds_value(value, EMAIL), "bench", key)
        erase_s = time.perf_counter() - t0
        rows.append(make_row(f"erase one value from a {n:,}-step receipt ({len(records):,} fields, records signed, "
                             "two files replaced durably)", erase_s * 1e3, None, "ms"))
    return rows


if __name__ == "__main__":
    from _table import run_standalone

    sys.exit(run_standalone(run, __doc__))
