"""A worker process that records a run with ``Collector(log=URL)`` and saves its receipt.

Usage: ``python collector_child.py LOG_URL OUT.json``. Prints the log errors (none: an
empty line) so the parent sees a failure to log, which never breaks the run.
"""

from __future__ import annotations

import sys

from aer1 import Collector


def main(url: str, out: str) -> None:
    c = Collector(goal="Plan the launch", log=url)
    c.register_agent("alice", type="AssistantAgent", description="planner")
    c.record("task", {"task": "Plan the launch"}, agent="user")
    c.record("message", {"type": "TextMessage", "content": "done TERMINATE"}, agent="alice", reply_to="user")
    receipt = c.finalize(final_answer="done")
    c.save(out, receipt)
    assert c.log is not None
    print("; ".join(c.log.errors))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
