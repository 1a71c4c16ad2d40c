"""One measurement in a fresh process, so that peak memory (ru_maxrss) belongs to it alone.

``python _child.py record ours|peer STEPS SIZE OUTDIR``: records STEPS steps with
SIZE-byte messages, finalizes and saves the receipt (ours with its evidence, moved
aside to OUTDIR/NAME.evidence.jsonl.kept so file verification can be run with or
without it). ``python _child.py verify ours|peer RECEIPT [EVIDENCE]``: verifies the
receipt file. Both print one JSON object: times in seconds, memory in KiB (peak resident set size).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from typing import Any

from _common import message, peer

_KIB = 1024 if sys.platform == "darwin" else 1  # ru_maxrss: bytes on macOS, KiB on Linux
_STATUS = "/proc/self/status"


def _rss_kib() -> int:
    """Peak resident set size of this process so far, KiB.

    Linux: VmHWM, the high-water mark of this process's own memory. (ru_maxrss would
    also do, but it carries over the peak of the forked parent across exec, which hides
    the child's own peak when the parent is a big benchmark process.)
    """
    try:
        with open(_STATUS, encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // _KIB


def record(who: str, steps: int, size: int, outdir: str) -> dict[str, Any]:
    """Record, finalize, save; time and peak memory of each phase."""
    content = message(size)
    path = os.path.join(outdir, f"{who}-{steps}.json")
    if who == "ours":
        from aer1 import Collector

        c = Collector("scaling", session_id="scaling")
        rec: Any = c.record
        kwargs: dict[str, Any] = {"agent": "alice", "kind": "message"}
    else:
        p = peer().AER1AutoGenCollector(goal="scaling")
        rec = p._add_step
        kwargs = {"agent": "alice"}
    base = _rss_kib()
    t0 = time.perf_counter()
    for _ in range(steps):
        rec("message", content, **kwargs)
    record_s = time.perf_counter() - t0
    after_record = _rss_kib()
    t0 = time.perf_counter()
    receipt = c.finalize("done") if who == "ours" else p.finalize("done")
    finalize_s = time.perf_counter() - t0
    after_finalize = _rss_kib()
    t0 = time.perf_counter()
    if who == "ours":
        c.save(path, receipt)
        os.replace(path[:-5] + ".evidence.jsonl", path[:-5] + ".evidence.jsonl.kept")
    else:
        p.save(path, receipt)
    save_s = time.perf_counter() - t0
    rss_end = _rss_kib()
    return {
        "steps": steps, "record_s": record_s, "finalize_s": finalize_s, "save_s": save_s,
        "rss_base_kib": base, "rss_record_kib": after_record, "rss_finalize_kib": after_finalize,
        "rss_end_kib": rss_end, "file_bytes": os.path.getsize(path), "path": path,
        # the same receipt in either layout, measured after everything else (it imports aer1)
        **_sizes_by_layout(receipt),
    }


def _sizes_by_layout(receipt: dict[str, Any]) -> dict[str, int]:
    """Bytes of ``receipt`` laid out as ours (a step per line) and as the peer's (indented throughout)."""
    from aer1._layout import receipt_json

    return {"bytes_step_lines": len(receipt_json(receipt)),
            "bytes_indented": len(json.dumps(receipt, indent=2, ensure_ascii=False).encode())}


def verify(who: str, path: str, evidence: str | None, jobs: int = 1) -> dict[str, Any]:
    """Verify a receipt file; time and peak memory (above the imports). ``jobs``: ours, processes to use."""
    if who == "ours":
        # what verify_receipt loads on its first call (the CLI loads it at start-up): loaded
        # here, outside the timed part, as the peer's whole verifier is by its import
        import aer1.verifier._assemble
        import aer1.verifier._checks
        import aer1.verifier._evidence
        import aer1.verifier._steps
        import aer1.verifier._stream  # noqa: F401
        from aer1.verifier import verify_receipt
    else:
        check = peer().verify_workflow_receipt
    base = _rss_kib()
    t0 = time.perf_counter()
    if who == "ours":
        report = verify_receipt(path, evidence=evidence, jobs=jobs)
        failures = [f.reason for f in report.failures]
        steps = report.steps
    else:
        with open(path, encoding="utf-8") as f:
            receipt = json.load(f)
        failures = check(receipt)
        steps = len(receipt["steps"])
    elapsed = time.perf_counter() - t0
    return {"steps": steps, "verify_s": elapsed, "failures": failures[:3], "rss_base_kib": base,
            "rss_peak_kib": _rss_kib(), "file_bytes": os.path.getsize(path)}


def main(argv: list[str]) -> int:
    """Dispatch one measurement; print its JSON."""
    if argv[0] == "record":
        out = record(argv[1], int(argv[2]), int(argv[3]), argv[4])
    elif argv[0] == "verify-cores":  # ours, in as many processes as there are cores (the CLI's default)
        out = verify("ours", argv[1], None, os.cpu_count() or 1)
    else:
        out = verify(argv[1], argv[2], argv[3] if len(argv) > 3 else None)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
