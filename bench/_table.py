"""The benchmark row format and the one markdown table ``run_all.py`` prints.

Every benchmark module exposes ``run(quick: bool) -> list[dict]``; each dict is a row
made by :func:`make_row`, with exactly the keys of :data:`ROW_KEYS`:

* ``name``: what was measured (say the size: "record a step, 200-byte message");
* ``ours``: our number (float);
* ``peer``: the aer1-autogen collector's number measured the same way in the same run,
  or None where it has no counterpart;
* ``unit``: the unit of both numbers ("µs/step", "ms", "KiB/1k steps", ...);
* ``ratio``: ``ours / peer`` (None without a peer). For costs, below 1 means ours is
  cheaper; the table prints it as ``0.31×``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import inspect
import os
import platform
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = ["ROW_KEYS", "format_table", "machine", "make_row", "run_standalone"]

ROW_KEYS = ("name", "ours", "peer", "unit", "ratio")
_CPUINFO = "/proc/cpuinfo"


def make_row(name: str, ours: float, peer: float | None, unit: str) -> dict[str, Any]:
    """One table row; ``ratio`` is ours / peer (None without a peer)."""
    ratio = None if peer is None or peer == 0 else ours / peer
    return {"name": name, "ours": float(ours), "peer": None if peer is None else float(peer), "unit": unit,
            "ratio": ratio}


def _number(v: float | None) -> str:
    if v is None:
        return "—"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def format_table(rows: Iterable[Mapping[str, Any]]) -> str:
    """The markdown table: benchmark | ours | aer1-autogen | unit | ours/peer."""
    out = ["| benchmark | aer1 (ours) | aer1-autogen 0.1.15 | unit | ours / peer |",
           "|---|---:|---:|---|---:|"]
    for r in rows:
        missing = set(ROW_KEYS) - set(r)
        if missing:
            raise ValueError(f"row {r.get('name')!r} lacks {sorted(missing)}")
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.2f}×"
        out.append(f"| {r['name']} | {_number(r['ours'])} | {_number(r['peer'])} | {r['unit']} | {ratio} |")
    return "\n".join(out)


def _cpu() -> str:
    try:
        with open(_CPUINFO, encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    """One line naming the machine and interpreter the table was measured on."""
    return (f"{_cpu()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
            f"Python {sys.version.split()[0]}, {_dt.date.today().isoformat()}")


def run_standalone(run: Callable[..., list[dict[str, Any]]], doc: str | None, argv: Sequence[str] | None = None) -> int:
    """Command line of one benchmark module: ``[--quick]`` (and ``[--no-million]`` where ``run``
    takes ``million``); prints its table. A bad command line exits with code 2."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and repetitions")
    takes_million = "million" in inspect.signature(run).parameters
    if takes_million:
        parser.add_argument("--no-million", action="store_true", help="leave out the 10^6-step rows")
    args = parser.parse_args(argv)
    kwargs: dict[str, Any] = {"quick": args.quick}
    if takes_million:
        kwargs["million"] = not (args.quick or args.no_million)
    print(format_table(run(**kwargs)))
    return 0
