"""``aer1 diff A.json B.json [--json] [--html FILE]``: the command around :mod:`aer1._diff`.

Exit codes are ``diff``'s: 0 when the receipts match step for step and their verdicts agree,
1 when they differ, 2 when an input cannot be read (one line, or one JSON object with
``--json``; never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._diff import Diff, Op, diff_receipts
from ._report._model import clip, verdict_line
from ._report._verify import add_verify_options, verify_for_view, view_options
from ._timeline import evidence_contents
from .verifier._evidence import evidence_for
from .verifier._output import CliError, dump_json, one_line
from .verifier._report import Report

__all__ = ["add_diff_arguments", "diff_cli"]

#: Characters of a field's value on a text line (``--json`` and ``--html`` carry up to VALUE_CHARS).
_TEXT_VALUE = 160
#: Steps' contents read from each evidence file.
_MAX_CONTENTS = 100_000
_MARK = {"same": "=", "changed": "~", "removed": "-", "added": "+", "moved": ">"}


def add_diff_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", metavar="A.json")
    p.add_argument("b", metavar="B.json")
    p.add_argument("--json", action="store_true", help="one JSON object: both verdicts and every aligned step")
    p.add_argument("--html", metavar="FILE", help="also write the comparison as a self-contained HTML page")
    p.add_argument("--all", action="store_true", help="list the steps that are the same too (text output)")
    add_verify_options(p)


def _load(path: str, args: argparse.Namespace, read: Any) -> tuple[dict[str, Any], dict[int, Any], Report, str | None]:
    receipt = read(path)
    report = verify_for_view((path, False, None), view_options(args)).report
    contents, unread = evidence_contents(evidence_for(path, None), _MAX_CONTENTS)
    return receipt, contents, report, unread


def _side_doc(path: str, receipt: dict[str, Any], report: Report, unread: str | None) -> dict[str, Any]:
    return {"source": path, "verdict": report.verdict, "reason": verdict_line(report), "goal": receipt.get("goal"),
            "steps": len(receipt["steps"]), "evidence": unread or "read"}


def _line(o: Op) -> list[str]:
    seqs = f"{'' if o.a is None else o.a:>5} {'' if o.b is None else o.b:>5}"
    label = "" if o.tool == o.kind else f" [{o.tool}]"
    head = f"{_MARK[o.op]} {seqs}  {o.kind:<17} {o.agent}{label}"
    if o.op in ("removed", "added") and o.preview:
        head += f"  {o.preview}"
    if o.op == "moved":
        head += f"  (moved: step {o.a} of A is step {o.b} of B)"
    lines = [head]
    for c in o.changes:
        lines.append(f"        {c.name}: {clip(c.a if c.a is not None else '(none)', _TEXT_VALUE)}")
        lines.append(f"        {' ' * len(c.name)}  -> {clip(c.b if c.b is not None else '(none)', _TEXT_VALUE)}")
    return lines


def diff_cli(args: argparse.Namespace, read: Any) -> int:
    """Run ``aer1 diff``; ``read`` reads a receipt whose members are well-formed (else CliError)."""
    if args.evidence:
        raise CliError("--evidence does not go with diff: each receipt's evidence is read from beside it")
    if args.html:
        from ._outfile import check_output

        check_output(args.html)
    ra, ca, rep_a, unread_a = _load(args.a, args, read)
    rb, cb, rep_b, unread_b = _load(args.b, args, read)
    d: Diff = diff_receipts(ra, ca, rb, cb)
    verdicts_agree = rep_a.verdict == rep_b.verdict
    code = 0 if d.same and verdicts_agree else 1
    sides = [_side_doc(args.a, ra, rep_a, unread_a), _side_doc(args.b, rb, rep_b, unread_b)]
    if args.html:
        from ._report import write_diff_page

        write_diff_page(args.html, sides, d, code)
    if args.json:
        sys.stdout.write(dump_json({"a": sides[0], "b": sides[1], "same": code == 0, "exit_code": code,
                                    "counts": d.counts(), "notes": d.notes, "steps": [o.to_dict() for o in d.ops]}))
        return code
    lines = [f"{name}: {s['source']}: {s['verdict']} ({s['reason']}), {s['steps']} steps"
             + ("" if s["evidence"] == "read" else f"; evidence: {s['evidence']}")
             for name, s in zip(("A", "B"), sides, strict=True)]
    lines += d.notes
    for o in d.ops:
        if o.op != "same" or args.all:
            lines += _line(o)
    counts = d.counts()
    lines.append(", ".join(f"{n} {k}" for k, n in counts.items())
                 + ("" if verdicts_agree else f"; verdicts differ ({rep_a.verdict} and {rep_b.verdict})"))
    print("\n".join(one_line(line) for line in lines))
    return code
