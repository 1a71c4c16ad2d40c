"""``--junit FILE``: one JUnit XML test case per receipt, for CI systems that read JUnit.

Test cases are spooled to a temporary file as results arrive (memory stays bounded), then
written after the ``<testsuite>`` element, whose counts are known only at the end.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from ._report import Report

__all__ = ["JUnitWriter"]

#: Characters XML 1.0 cannot hold (controls, lone surrogates, U+FFFE/U+FFFF): written as escapes.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_SUITE = "aer1-verify"


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: repr(m.group())[1:-1], text)


class JUnitWriter:
    """Writes ``path``: a ``<testsuite>`` with a ``<testcase>`` per receipt."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._cases = tempfile.TemporaryFile("w+", encoding="utf-8")
        self.tests = self.failures = self.errors = 0

    def add(self, outcome: Any) -> None:
        """Add one receipt's outcome: INVALID is a failure, MALFORMED an error."""
        r: Report = outcome.report
        self.tests += 1
        name = quoteattr(_xml_text(r.source or "(receipt)"))
        head = f'  <testcase classname="{_SUITE}" name={name}'
        if r.malformed:
            self.errors += 1
            body = _xml_text(r.checks[0].detail)
            self._cases.write(f"{head}>\n    <error message={quoteattr(body)} type=\"MALFORMED\"/>\n  </testcase>\n")
        elif not r.valid:
            self.failures += 1
            first = r.failures[0]
            text = escape(_xml_text(r.to_text()))
            self._cases.write(f"{head}>\n    <failure message={quoteattr(_xml_text(first.reason))} "
                              f"type={quoteattr(first.check)}>{text}</failure>\n  </testcase>\n")
        else:
            self._cases.write(f"{head}>\n    <system-out>{escape(_xml_text(r.basis_text()))}</system-out>\n"
                              "  </testcase>\n")

    def close(self) -> None:
        """Write the file (atomically: a temporary beside it, then renamed) and drop the spool."""
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".junit-", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write('<?xml version="1.0" encoding="UTF-8"?>\n')
                f.write(f'<testsuite name="{_SUITE}" tests="{self.tests}" failures="{self.failures}" '
                        f'errors="{self.errors}" skipped="0">\n')
                self._cases.seek(0)
                shutil.copyfileobj(self._cases, f)
                f.write("</testsuite>\n")
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise
        finally:
            self._cases.close()
