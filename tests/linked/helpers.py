"""Building linked trees of receipts, and running ``aer1-verify --bundle`` on them."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from aer1 import Collector
from aer1.verifier._cli import main as verify_cli


def child_run(goal: str, steps: int = 2, **options: Any) -> Collector:
    """A finished-looking child run: a few tool calls by one agent (not yet finalized)."""
    c = Collector(goal=goal, **options)
    for i in range(steps):
        c.record("search", {"arguments": {"q": f"{goal} {i}"}, "result": f"found {i}"}, agent="worker",
                 call_id=f"call-{i}")
    return c


def tree(folder: Path, **options: Any) -> tuple[Collector, dict[str, Any], list[str]]:
    """Parent -> (child A -> grandchild, child B), saved as a bundle in ``folder``.

    Returns the parent collector, its receipt and the saved paths (parent first, then
    child A, the grandchild, child B).
    """
    parent = Collector(goal="plan the launch", **options)
    parent.record("task", {"task": "plan the launch"}, agent="user")
    a = child_run("research", **options)
    a.link(child_run("deep research", steps=1, **options), agent="researcher")
    parent.link(a, agent="research-team")
    parent.link(child_run("pricing", steps=3, **options), agent="pricing-team")
    parent.record("message", {"content": "done"}, agent="planner")
    receipt = parent.finalize(final_answer="done")
    return parent, receipt, parent.save_bundle(folder, receipt)


def verify_bundle_cli(*args: str) -> tuple[int, dict[str, Any]]:
    """``aer1-verify --bundle --json ARGS``: (exit code, the JSON document)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = verify_cli(["--bundle", "--json", *args])
    return code, json.loads(out.getvalue())


def verify_bundle_text(*args: str) -> tuple[int, str, str]:
    """``aer1-verify --bundle ARGS`` as text: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = verify_cli(["--bundle", *args])
    return code, out.getvalue(), err.getvalue()


def edit_json(path: str | Path, change: Any) -> None:
    """Load the JSON file, let ``change`` edit the dict in place, write it back."""
    p = Path(path)
    doc = json.loads(p.read_text())
    change(doc)
    p.write_text(json.dumps(doc, indent=2))
