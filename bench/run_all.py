"""Run every benchmark and print one markdown table, ours beside the aer1-autogen collector.

Usage: ``python bench/run_all.py [--quick] [--no-million] [--json FILE]``

A full run takes about two minutes, the 10^6-step scaling rows about half of it (and
about 3 GB of memory for the peer's receipt at its peak).

* ``--quick``: fewer steps and repetitions, no 10^5 or 10^6 rows (a smoke run; noisier);
* ``--no-million``: leave out the 10^6-step scaling rows;
* ``--json FILE``: also write the rows as JSON.

Each module in :data:`MODULES` exposes ``run(quick: bool) -> list[dict]`` with rows in
the format of ``_table.make_row``; a module that is not there yet is skipped (and said so).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _table import ROW_KEYS, format_table, machine

#: Benchmark modules, in table order.
MODULES = ("bench_record", "bench_verify", "bench_cli", "bench_agentchat_wrapper", "bench_agent_framework", "bench_ag2",
           "bench_journal", "bench_scaling", "bench_linked", "bench_log_serve", "bench_otel")


def collect(quick: bool, million: bool) -> tuple[list[dict[str, Any]], list[str]]:
    """All rows, and notes on what was skipped."""
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for name in MODULES:
        if not (Path(__file__).resolve().parent / f"{name}.py").exists():
            notes.append(f"{name}: not present, skipped")
            continue
        module = importlib.import_module(name)
        kwargs: dict[str, Any] = {"quick": quick}
        if "million" in inspect.signature(module.run).parameters:
            kwargs["million"] = million
        t0 = time.perf_counter()
        got = module.run(**kwargs)
        for row in got:
            if set(row) != set(ROW_KEYS):
                raise ValueError(f"{name}: row {row.get('name')!r} has keys {sorted(row)}, want {list(ROW_KEYS)}")
        rows.extend(got)
        print(f"{name}: {len(got)} rows in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return rows, notes


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks; print the machine line and the table."""
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--quick", action="store_true", help="fewer steps and repetitions")
    p.add_argument("--no-million", action="store_true", help="leave out the 10^6-step scaling rows")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = p.parse_args(argv)
    rows, notes = collect(args.quick, million=not (args.quick or args.no_million))
    print(f"Machine: {machine()}" + (" (quick run)" if args.quick else ""))
    print()
    print(format_table(rows))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "quick": args.quick, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
