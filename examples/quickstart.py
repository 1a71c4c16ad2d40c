"""Quickstart: record a small scripted multi-agent workflow, save, verify, print the verdict.

    python examples/quickstart.py [OUT_DIR]

Writes OUT_DIR/receipt.json and OUT_DIR/receipt.evidence.jsonl (default OUT_DIR:
out/quickstart), signed with a fresh key whose public half is OUT_DIR/signing.pub.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from _outdir import parse_out_dir

from aer1 import Collector, format_timeline, generate_key_pair, key_id, load_public_key, verify_receipt


def lookup_dates(month: str) -> list[str]:
    """A stand-in tool: the launch dates free in a month."""
    return [f"{month} 4", f"{month} 18"]


def main(out_dir: Path) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    private_pem, public_pem = generate_key_pair()
    (out_dir / "signing.pub").write_bytes(public_pem)

    collector = Collector(goal="Plan the product launch", signing_key=private_pem.decode())
    collector.register_agent("planner", type="ScriptedAgent", description="drafts the plan")
    collector.register_agent("reviewer", type="ScriptedAgent", description="reviews the plan")

    collector.record("task", {"task": "Plan the product launch"}, agent="user")
    collector.record("speaker_selection", {"selected": "planner", "method": "round_robin"}, agent="manager")
    t0 = time.time()
    dates = lookup_dates("May")
    collector.record("lookup_dates", {"arguments": {"month": "May"}, "result": dates, "is_error": False},
                     agent="planner", call_id="call_1", started_at=t0)
    collector.record("message", {"content": f"Plan: research, build, ship on {dates[0]}"}, agent="planner",
                     reply_to="user")
    collector.record("handoff", {"target": "reviewer", "context": "please review"}, agent="planner",
                     target="reviewer")
    answer = "Approved: ship on May 4. TERMINATE"
    collector.record("message", {"content": answer}, agent="reviewer", reply_to="planner")
    collector.record("termination", {"reason": "text mention TERMINATE"}, agent="manager")

    receipt = collector.finalize(final_answer=answer)
    path = collector.save(out_dir / "receipt.json", workflow=receipt)
    trusted = key_id(load_public_key(public_pem))
    report = verify_receipt(path, trusted_key_ids=[trusted])

    print(format_timeline(receipt))
    print(f"receipt:  {path}")
    print(f"evidence: {out_dir / 'receipt.evidence.jsonl'}")
    print(report.to_text())
    return int(report.exit_code)



if __name__ == "__main__":
    sys.exit(main(parse_out_dir((__doc__ or "").splitlines()[0], Path("out/quickstart"))))
