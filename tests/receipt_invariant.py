"""The standing invariant: every receipt a test makes our code produce verifies.

Each ``Collector.finalize`` during a test is noted (a byte snapshot of the receipt, so a
test that later tampers with the returned dict does not count), and so is each receipt
``aer1 recover`` writes from a journal (its bytes and its evidence, read the moment they
are written). After the test, every noted receipt is saved with its evidence into one
folder and that folder is checked with
the real ``aer1-verify`` command line (its entry point, in process, ``--json``): one call
per test. A receipt that does not verify, or whose evidence does not, fails the test that
produced it. Tests that make broken receipts on purpose opt out with
``@pytest.mark.unverified_receipts``.

Imports only aer1 and orjson: the legacy suite runs it in the ag2 environment too.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from aer1 import _recover as recover
from aer1._collector import Collector
from aer1._receipt import evidence_path_for
from aer1.verifier._cli import main as verify_cli

#: The marker a test uses to opt out of the invariant (it builds broken receipts on purpose).
OPT_OUT_MARKER = "unverified_receipts"
#: The evidence check's name in the verifier's report.
_EVIDENCE_CHECK = "evidence"


#: Writes a noted receipt (and its evidence, if any) to the given path.
Save = Callable[[str], None]


class ReceiptLog:
    """The receipts produced during one test: (receipt bytes, how to save it) in order."""

    def __init__(self) -> None:
        self.finalized: list[tuple[bytes, Save]] = []

    def note(self, collector: Collector, receipt: dict[str, Any]) -> None:
        """A receipt ``collector.finalize`` returned: saved later by the collector (evidence included)."""
        snapshot = orjson.dumps(receipt)
        self.finalized.append((snapshot, lambda path: _ignore(collector.save(path, workflow=orjson.loads(snapshot)))))

    def note_file(self, path: str) -> None:
        """A receipt file just written (by recovery): its bytes and its evidence's, as they are now."""
        with open(path, "rb") as f:
            data = f.read()
        evidence_path = evidence_path_for(path)
        evidence: bytes | None = None
        if os.path.exists(evidence_path):
            with open(evidence_path, "rb") as f:
                evidence = f.read()

        def save(target: str) -> None:
            Path(target).write_bytes(data)
            if evidence is not None:
                Path(evidence_path_for(target)).write_bytes(evidence)

        self.finalized.append((data, save))


def _ignore(_: Any) -> None:
    return None


@contextlib.contextmanager
def noting_receipts() -> Iterator[ReceiptLog]:
    """Note every receipt ``Collector.finalize`` returns and ``recover_journal`` writes while the block runs."""
    log = ReceiptLog()
    original = Collector.finalize

    def finalize(self: Collector, final_answer: Any = None, *, status: str | None = None) -> dict[str, Any]:
        receipt = original(self, final_answer, status=status)
        log.note(self, receipt)
        return receipt

    write_atomic = recover._write_atomic

    def recovered(path: str, data: bytes) -> None:  # the last write of recover_journal: the receipt
        write_atomic(path, data)
        log.note_file(path)

    Collector.finalize = finalize  # type: ignore[method-assign]
    recover._write_atomic = recovered
    try:
        yield log
    finally:
        Collector.finalize = original  # type: ignore[method-assign]
        recover._write_atomic = write_atomic


def unverified(log: ReceiptLog, folder: Path) -> list[str]:
    """Save each noted receipt (evidence beside it) in ``folder``, run ``aer1-verify --json`` on it.

    Returns one "got X, want VALID" line per receipt that does not verify; [] when all do.
    Repeated finalize calls of one collector (equal receipts) are checked once.
    """
    seen: set[bytes] = set()
    saved: dict[str, bool] = {}
    for index, (snapshot, save) in enumerate(log.finalized):
        if snapshot in seen:
            continue
        seen.add(snapshot)
        path = str(folder / f"receipt-{index:04d}.json")
        save(path)
        saved[path] = os.path.exists(evidence_path_for(path))
    if not saved:
        return []
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = verify_cli(["--json", str(folder)])
    doc = orjson.loads(out.getvalue())
    results = doc.get("results", [doc]) if isinstance(doc, dict) else []
    problems: list[str] = []
    for result in results:
        source = str(result.get("source"))
        name = os.path.basename(source)
        if result.get("verdict") != "VALID":
            reasons = [f"{f.get('check')}: {f.get('message')}" for f in result.get("failures", [])][:3]
            problems.append(f"{name}: got {result.get('verdict')} ({'; '.join(reasons)}), want VALID")
            continue
        if saved.get(source):
            evidence = next((c for c in result.get("checks", []) if c.get("name") == _EVIDENCE_CHECK), None)
            if evidence is None or evidence.get("status") != "PASS":
                detail = evidence.get("detail") if evidence else "no evidence check"
                problems.append(f"{name}: evidence got {detail!r}, want PASS")
    if code != 0 and not problems:
        problems.append(f"aer1-verify exited {code} with every receipt valid")
    return problems
