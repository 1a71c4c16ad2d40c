"""aer1-autogen 0.1.15's own test suite, run against aer1.collectors with only the import line changed."""

from __future__ import annotations

import ast
import tarfile
from pathlib import Path

import pytest

from .peer_suite import _LOADER, ROOT, SUITE_FILES, expected_failures, prepare_suite, run_suite

SPEC = ROOT / "spec" / "compat.md"


def _test_names(sdist: Path) -> set[str]:
    """Every test function the peer's suite defines, as ``file::test``."""
    names = set()
    with tarfile.open(sdist, "r:gz") as archive:
        for name in SUITE_FILES:
            handle = archive.extractfile(f"aer1_autogen-0.1.15/{name}")
            assert handle is not None
            tree = ast.parse(handle.read())
            short = name.rsplit("/", 1)[-1]
            names |= {f"{short}::{f.name}" for f in tree.body
                      if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")}  # fmt: skip
    return names


def test_exactly_the_listed_peer_tests_fail(peer_sdist: Path, tmp_path: Path) -> None:
    """Every peer test passes except those spec/compat.md lists, and every listed one fails."""
    prepare_suite(tmp_path)
    outcomes = run_suite(tmp_path)
    want_failing = expected_failures(SPEC.read_text(encoding="utf-8"))
    assert want_failing, "spec/compat.md lists no failing peer test: its table is gone or its format changed"
    assert set(outcomes) == _test_names(peer_sdist), f"got tests {sorted(outcomes)}, want every test of the suite"
    failing = {name for name, (outcome, _) in outcomes.items() if outcome != "passed"}
    assert failing == set(want_failing), (
        f"got failing {sorted(failing)}, want exactly spec/compat.md's {sorted(want_failing)}"
    )
    for name, says in want_failing.items():
        assert says in outcomes[name][1], f"{name} failed, but not with {says!r}: {outcomes[name][1][:2000]}"


def test_the_import_line_is_the_only_change(peer_sdist: Path, tmp_path: Path) -> None:
    """The rewritten files equal the peer's once the import line (in test_verdicts.py: the loader) is cut out."""
    tests = prepare_suite(tmp_path)
    with tarfile.open(peer_sdist, "r:gz") as archive:
        for name in SUITE_FILES:
            handle = archive.extractfile(f"aer1_autogen-0.1.15/{name}")
            assert handle is not None
            theirs = handle.read().decode("utf-8")
            ours = (tests.parent / name).read_text(encoding="utf-8")
            if name.endswith("test_collector.py"):
                theirs, ours = theirs.split("from aer1_autogen import ("), ours.split("from aer1.collectors import (")
            else:
                theirs, ours = _LOADER.split(theirs), _LOADER.split(ours)
            assert len(ours) == 2, f"{name}: our import line found {len(ours) - 1} times, want 1"
            assert ours == theirs, f"{name}: the rewritten file differs beyond its import line"


def test_a_changed_suite_is_refused(peer_sdist: Path, tmp_path: Path) -> None:
    """A test file without the expected import line is refused, not run half-rewritten."""
    from . import peer_suite

    with pytest.raises(ValueError, match="import line found 0 times, want 1"):
        peer_suite._rewrite("tests/test_collector.py", "import aer1_autogen\n")
    with pytest.raises(ValueError, match="import line found 0 times, want 1"):
        peer_suite._rewrite("tests/test_verdicts.py", "def load():\n    pass\n")
