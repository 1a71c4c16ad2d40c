"""``--junit FILE``: one JUnit XML test case per receipt, for CI systems that read JUnit.

Test cases are spooled to a temporary file as results arrive (memory stays bounded), then
written after the ``<testsuite>`` element, whose counts are known only at the end.
"""

from __future__ import annotations

import re
import tempfile
from typing import IO, Any
from xml.sax.saxutils import escape, quoteattr

from .._outfile import replace_file
from ._report import Report

__all__ = ["JUnitWriter"]

#: Characters XML 1.0 cannot hold (controls, lone surrogates, U+FFFE/U+FFFF): written as escapes.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_SUITE = "aer1-verify"
#: Characters copied from the spool at a time.
_COPY_CHARS = 1 << 16


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: repr(m.group())[1:-1], text)


class JUnitWriter:
    """Writes ``path``: a ``<testsuite>`` with a ``<testcase>`` per receipt."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._cases = tempfile.TemporaryFile("w+", encoding="utf-8")
        self.tests = self.failures = self.errors = self.skipped = 0

    def add(self, outcome: Any) -> None:
        """Add one file's outcome: INVALID is a failure, MALFORMED an error, a skipped file (not a receipt) skipped."""
        r: Report = outcome.report
        self.tests += 1
        name = quoteattr(_xml_text(r.source or "(receipt)"))
        head = f'  <testcase classname="{_SUITE}" name={name}'
        if outcome.skipped is not None:  # one of aer1's own files, not a receipt
            self.skipped += 1
            why = quoteattr(_xml_text(f"not a receipt, skipped: {outcome.skipped}"))
            self._cases.write(f"{head}>\n    <skipped message={why}/>\n  </testcase>\n")
        elif r.malformed:
            self.errors += 1
            body = _xml_text(r.checks[0].detail)
            self._cases.write(f"{head}>\n    <error message={quoteattr(body)} type=\"MALFORMED\"/>\n  </testcase>\n")
        elif not r.valid:
            self.failures += 1
            first = r.failures[0]
            text = escape(_xml_text(r.to_text(every=True)))
            self._cases.write(f"{head}>\n    <failure message={quoteattr(_xml_text(first.reason))} "
                              f"type={quoteattr(first.check)}>{text}</failure>\n  </testcase>\n")
        else:
            self._cases.write(f"{head}>\n    <system-out>{escape(_xml_text(r.basis_text()))}</system-out>\n"
                              "  </testcase>\n")

    def close(self) -> None:
        """Write the file (whole: a temporary beside it, then renamed) and drop the spool."""

        def write(f: IO[bytes]) -> None:
            f.write(b'<?xml version="1.0" encoding="UTF-8"?>\n')
            f.write(f'<testsuite name="{_SUITE}" tests="{self.tests}" failures="{self.failures}" '
                    f'errors="{self.errors}" skipped="{self.skipped}">\n'.encode())
            self._cases.seek(0)
            while chunk := self._cases.read(_COPY_CHARS):
                f.write(chunk.encode("utf-8"))
            f.write(b"</testsuite>\n")

        try:
            replace_file(self.path, write)
        finally:
            self._cases.close()
