"""Evidence: each step's canonical content, streamed to a file as it is recorded.

The evidence file is JSON lines. Line 1 is a header
``{"type":"aer1-evidence","version":"1","workflow_id":...}``; every further line is
``{"seq":N,"receipt_hash":H,"content":C}`` where C is the exact canonical bytes that
were hashed, so an auditor recomputes every ``receipt_hash`` from the file alone.
Content is never kept in memory: the sink writes it to a temporary file that
``save()`` copies beside the receipt.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import IO, Any

import orjson

from ._commit import disclosure_line, disclosures_header, disclosures_path_for
from ._outfile import replace_file
from ._receipt import EVIDENCE_TYPE, EVIDENCE_VERSION

__all__ = ["EVIDENCE_TYPE", "EVIDENCE_VERSION", "EvidenceSink", "evidence_header", "evidence_line"]

#: Evidence lines held in memory before they are written to the temporary file.
BATCH_LINES = 64


def evidence_header(workflow_id: str) -> bytes:
    """The first line of an evidence file."""
    return orjson.dumps({"type": EVIDENCE_TYPE, "version": EVIDENCE_VERSION, "workflow_id": workflow_id}) + b"\n"


def evidence_line(seq: int, receipt_hash: str, content: bytes) -> bytes:
    """One step's evidence line, embedding the canonical content bytes verbatim."""
    return b'{"seq":%d,"receipt_hash":"%s","content":%s}\n' % (seq, receipt_hash.encode("ascii"), content)


class EvidenceSink:
    """Appends evidence lines to an anonymous temporary file until they are saved."""

    def __init__(self, workflow_id: str, disclosures: bool = False) -> None:
        self._file: IO[bytes] = tempfile.TemporaryFile(prefix="aer1-evidence-")
        self._file.write(evidence_header(workflow_id))
        # Disclosures of committed fields (spec/erasure.md): only for a collector that marks fields.
        self._disclosures: IO[bytes] | None = None
        if disclosures:
            self._disclosures = tempfile.TemporaryFile(prefix="aer1-disclosures-")
            self._disclosures.write(disclosures_header(workflow_id))
        # Lines wait here and go to the file in batches: one write call per step costs more
        # than the line itself. At most BATCH_LINES lines are ever held.
        self._pending: list[bytes] = []

    def write(self, seq: int, receipt_hash: str, content: bytes) -> None:
        """Append one step's evidence."""
        pending = self._pending
        pending.append(b'{"seq":%d,"receipt_hash":"%s","content":%s}\n' % (seq, receipt_hash.encode(), content))
        if len(pending) >= BATCH_LINES:
            self._drain()

    def disclose(self, seq: int, disclosures: list[list[Any]]) -> None:
        """Keep step ``seq``'s disclosures (salt, path, value) for the disclosures file, never the evidence."""
        if self._disclosures is None:
            raise ValueError("this evidence sink keeps no disclosures")
        self._disclosures.writelines(disclosure_line(seq, d) for d in disclosures)

    def _drain(self) -> None:
        self._file.writelines(self._pending)
        self._pending.clear()

    def save_to(self, path: str | os.PathLike[str]) -> None:
        """Copy everything written so far to ``path`` (atomically replaced), and the disclosures beside it."""
        self._drain()
        copy_file(self._file, path)
        if self._disclosures is not None:
            copy_file(self._disclosures, disclosures_path_for(path))

    def close(self) -> None:
        """Discard the temporary files."""
        self._file.close()
        if self._disclosures is not None:
            self._disclosures.close()


def copy_file(source: IO[bytes], path: str | os.PathLike[str]) -> None:
    """Copy everything written to ``source`` so far to ``path`` (atomically replaced); ``source`` keeps its place."""
    source.flush()
    end = source.tell()
    try:
        source.seek(0)
        replace_file(path, lambda out: shutil.copyfileobj(source, out))
    finally:
        source.seek(end)
