"""The auditor's views on a large receipt: ``aer1 report``, ``aer1 show --csv`` / ``--jsonl`` and ``aer1 diff``.

Usage: ``python bench/bench_views.py [--steps 20000]``

Makes two signed receipts of ``--steps`` steps with their evidence (a real ``Collector``
run of tool calls and messages in the step vocabulary; the second differs from the first by
one tool argument), then runs each command in a fresh process, output to /dev/null, and
prints its wall time and peak RSS beside ``aer1-verify`` of the same receipt (every check,
evidence included), which each view runs first: the ratio is what the view adds to
verifying. Numbers, not assertions: nothing here fails on time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import MEASURE_CHILD

DEFAULT_STEPS = 20_000
_TIMEOUT_S = 3600


def generate(path: Path, steps: int, changed_at: int | None, private: bytes) -> None:
    """A receipt of ``steps`` steps (close included); ``changed_at``: that tool call's argument differs."""
    from aer1 import Collector
    from aer1 import _steps_vocab as vocab

    c = Collector(goal="a long audited run", signing_key=private)
    for s in range(steps - 1):
        agent = "alice" if s % 2 else "bob"
        if s % 3 == 0:
            x = s + 1 if s == changed_at else s
            c.record("lookup", vocab.tool_call("agentchat", name="lookup", call_id=f"call_{s}",
                                               arguments={"id": x, "query": f"record {x}"},
                                               result=f"record {x}: " + "y" * 80),
                     agent=agent, kind="tool_call", call_id=f"call_{s}")
        else:
            c.record("message", vocab.message("agentchat", content=f"turn {s}: " + "x" * 120, role="assistant"),
                     agent=agent, kind="message")
    c.save(path)


def _measure(argv: list[str], codes: tuple[int, ...]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", MEASURE_CHILD, *argv], capture_output=True, text=True,
                          timeout=_TIMEOUT_S, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    if result["code"] not in codes:
        raise RuntimeError(f"{argv[:4]}... exited {result['code']}, want one of {codes}")
    return result


def run(steps: int = DEFAULT_STEPS) -> list[tuple[str, dict[str, Any]]]:
    """(command, measurement) rows; the first is ``aer1-verify``."""
    from aer1._signing import generate_key_pair

    work = Path(tempfile.mkdtemp(prefix="aer1-bench-views-"))
    try:
        private, public = generate_key_pair()
        key = work / "k.pub"
        key.write_bytes(public)
        a, b = work / "a.json", work / "b.json"
        generate(a, steps, None, private)
        generate(b, steps, steps // 2 - (steps // 2) % 3, private)
        aer1 = [sys.executable, "-c", "import sys; from aer1._cli import console; sys.exit(console())"]
        verify = [sys.executable, "-c", "import sys; from aer1.verifier._cli import console; sys.exit(console())"]
        commands: list[tuple[str, list[str], tuple[int, ...]]] = [
            ("aer1-verify A (every check, evidence)", [*verify, str(a), "--key", str(key)], (0,)),
            ("aer1 report A -o page.html", [*aer1, "report", str(a), "-o", str(work / "page.html"), "--key",
                                            str(key)], (0,)),
            ("aer1 show A --csv", [*aer1, "show", str(a), "--csv", "--key", str(key)], (0,)),
            ("aer1 show A --jsonl", [*aer1, "show", str(a), "--jsonl", "--key", str(key)], (0,)),
            ("aer1 diff A B (one argument differs)", [*aer1, "diff", str(a), str(b), "--key", str(key)], (1,)),
            ("aer1 diff A B --json", [*aer1, "diff", str(a), str(b), "--json", "--key", str(key)], (1,)),
            ("aer1 diff A A --html diff.html", [*aer1, "diff", str(a), str(a), "--html", str(work / "d.html"),
                                                "--key", str(key)], (0,)),
        ]
        return [(name, _measure(argv, codes)) for name, argv, codes in commands]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    args = parser.parse_args(argv)
    if args.steps < 2:
        parser.error("--steps must be at least 2")
    rows = run(args.steps)
    base = rows[0][1]
    print(f"one receipt of {args.steps} steps (and its evidence), each command in a fresh process\n")
    print("| command | wall (s) | × aer1-verify | peak RSS (MiB) | × aer1-verify |")
    print("|---|---:|---:|---:|---:|")
    for name, m in rows:
        print(f"| {name} | {m['wall_s']:.2f} | {m['wall_s'] / base['wall_s']:.2f} | {m['rss_kib'] / 1024:.0f} | "
              f"{m['rss_kib'] / base['rss_kib']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
