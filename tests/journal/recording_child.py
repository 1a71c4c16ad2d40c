"""A real recording process for the crash test: records steps until it is killed.

Usage: ``python recording_child.py JOURNAL FSYNC [KEY]``. After each ``record()``
returns it prints ``ack <seq> <receipt_id>`` and flushes stdout, so the parent knows
exactly which steps were acknowledged before it sent SIGKILL.
"""

from __future__ import annotations

import sys

from aer1 import Collector

#: More steps than the parent ever waits for: the child is always mid-run when killed.
MAX_STEPS = 1_000_000


def main(argv: list[str]) -> int:
    """Record steps forever (well, MAX_STEPS), acknowledging each on stdout."""
    journal, fsync = argv[0], argv[1]
    key = argv[2] if len(argv) > 2 else None
    c = Collector("crash test", session_id="crash-session", signing_key=key, journal=journal, fsync=fsync)
    c.register_agent("worker", type="ScriptedAgent", description="records until killed")
    print("ready", c.workflow_id, flush=True)
    for i in range(1, MAX_STEPS + 1):
        step = c.record("message", {"content": f"message {i}", "payload": "x" * 150}, agent="worker",
                        kind="message")
        print("ack", step["seq"], step["receipt_id"], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
