"""Run aer1-autogen 0.1.15's own test suite against ``aer1.collectors``.

The pinned source distribution is downloaded by ``make`` into the peers' folder
(``tests/.peers/sdist``); nothing of it enters the project. Its two test files are
copied to a scratch folder with the import line changed to ours:

* ``test_collector.py`` imports the peer package: ``from aer1_autogen import (`` becomes
  ``from aer1.collectors import (``;
* ``test_verdicts.py`` loads the peer's ``verdicts.py`` from source with faked helpers
  (its loader is its import line): ``_load_verdicts()`` returns ``aer1.collectors``.

Then pytest runs them in a child process (outside this suite's conftest) and the
outcome of every test is read from its JUnit XML.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["PEER_SDIST", "SUITE_FILES", "expected_failures", "prepare_suite", "run_suite"]

ROOT = Path(__file__).resolve().parents[2]
#: The pinned sdist, where ``make`` puts it.
PEER_SDIST = ROOT / "tests" / ".peers" / "sdist" / "aer1_autogen-0.1.15.tar.gz"
_PREFIX = "aer1_autogen-0.1.15/"
#: The peer's test files, and the README its README test reads.
SUITE_FILES = ("tests/test_collector.py", "tests/test_verdicts.py")
_README = "README.md"
#: Longest a file taken from the sdist may be (they are a few KiB).
MAX_MEMBER_BYTES = 1024 * 1024
#: The whole peer suite takes seconds; past this it is hung.
SUITE_TIMEOUT_S = 600

_IMPORT_LINE = "from aer1_autogen import ("
_OUR_IMPORT = "from aer1.collectors import ("
_LOADER = re.compile(r"^def _load_verdicts\(\):\n(?:    .*\n|\n)*?(?=\n\ndef )", re.M)
_OUR_LOADER = "def _load_verdicts():\n    import aer1.collectors\n\n    return aer1.collectors\n"


def _member(archive: tarfile.TarFile, name: str) -> str:
    """One regular file of the sdist, as text (its path fixed, never taken from the archive)."""
    info = archive.getmember(_PREFIX + name)
    if not info.isfile() or info.size > MAX_MEMBER_BYTES:
        raise ValueError(f"{name} in the sdist: want a regular file of at most {MAX_MEMBER_BYTES} bytes")
    handle = archive.extractfile(info)
    assert handle is not None
    return handle.read().decode("utf-8")


def _rewrite(name: str, text: str) -> str:
    """Change the file's import line to ours; fails when the line is not there exactly once."""
    if name.endswith("test_collector.py"):
        count, new = text.count(_IMPORT_LINE), text.replace(_IMPORT_LINE, _OUR_IMPORT)
    else:
        new, count = _LOADER.subn(_OUR_LOADER, text)
    if count != 1:
        raise ValueError(f"{name}: import line found {count} times, want 1 (not the 0.1.15 suite?)")
    return new


def prepare_suite(folder: Path) -> Path:
    """Write the rewritten suite (and the peer's README) into ``folder``; returns its tests folder."""
    with tarfile.open(PEER_SDIST, "r:gz") as archive:
        for name in SUITE_FILES:
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_rewrite(name, _member(archive, name)), encoding="utf-8")
        (folder / _README).write_text(_member(archive, _README), encoding="utf-8")
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return folder / "tests"


def run_suite(folder: Path) -> dict[str, tuple[str, str]]:
    """Run the prepared suite in a child pytest: ``file::test`` -> (passed, failed or skipped; failure text)."""
    junit = folder / "junit.xml"
    env = {**os.environ, "TMPDIR": str(folder)}  # the peer's save test leaves files in the temp folder
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(folder / "pytest.ini"),
         "--rootdir", str(folder), f"--junitxml={junit}", "tests"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=SUITE_TIMEOUT_S, check=False,
    )  # fmt: skip
    if not junit.is_file():
        output = (done.stdout + done.stderr)[-2000:]
        raise RuntimeError(f"the peer suite did not run (exit {done.returncode}): {output}")
    outcomes: dict[str, tuple[str, str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1]
        outcome, text = "passed", ""
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            outcome, text = "failed", f"{problem.get('message', '')}\n{problem.text or ''}"
        elif case.find("skipped") is not None:
            outcome = "skipped"
        outcomes[f"{module}.py::{case.get('name')}"] = (outcome, text)
    return outcomes


_ROW = re.compile(r"^\| `(test_\w+\.py::test_\w+)` \|.*\| `([^`]+)` \|$", re.M)


def expected_failures(spec_text: str) -> dict[str, str]:
    """The peer tests spec/compat.md lists as failing on purpose, each with what its failure says."""
    return dict(_ROW.findall(spec_text))
