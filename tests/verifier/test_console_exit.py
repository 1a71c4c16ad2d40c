"""The console scripts end without the interpreter's teardown: the same output and exit code as ``main``.

``aer1-verify`` and ``aer1`` call ``exit_now`` after ``main``: output flushed, then
``os._exit``. Whatever a run prints (a long folder listing, JSON, an error on standard
error) must arrive whole, with the exit code ``main`` returned, exactly as from the
ordinary exit (``python -m``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aer1 import Collector


def _receipt(folder: Path) -> Path:
    c = Collector("console exit")
    for i in range(20):
        c.record("message", {"content": f"turn {i}"}, agent="alice", kind="message")
    path = folder / "run.json"
    c.save(str(path), workflow=c.finalize("done"))
    return path


def _both(module: str, *argv: str) -> tuple[subprocess.CompletedProcess[bytes], ...]:
    """(the console script's run, the ordinary exit's run) of the same command."""
    fast = subprocess.run([sys.executable, "-c", f"from {module} import console; console()", *argv],
                          capture_output=True, timeout=120)
    slow = subprocess.run([sys.executable, "-m", module, *argv], capture_output=True, timeout=120)
    return fast, slow


@pytest.mark.parametrize("case", ["valid", "invalid", "malformed", "folder", "json-folder", "usage", "aer1-show",
                                  "aer1-usage"])
def test_console_scripts_print_and_exit_as_main(tmp_path: Path, case: str) -> None:
    path = _receipt(tmp_path)
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(40):
        shutil.copy(path, folder / f"r{i:02d}.json")
    bad = tmp_path / "bad.json"
    bad.write_text(path.read_text().replace('"status": "ok"', '"status": "error"', 1))
    argv = {
        "valid": ["aer1.verifier._cli", str(path)],
        "invalid": ["aer1.verifier._cli", str(bad)],
        "malformed": ["aer1.verifier._cli", str(tmp_path / "missing.json")],
        "folder": ["aer1.verifier._cli", "--verbose", "--jobs", "1", str(folder)],
        "json-folder": ["aer1.verifier._cli", "--json", "--jobs", "2", str(folder)],
        "usage": ["aer1.verifier._cli", "--no-such-option"],
        "aer1-show": ["aer1._cli", "show", str(path)],
        "aer1-usage": ["aer1._cli", "prove"],
    }[case]
    fast, slow = _both(argv[0], *argv[1:])
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr), (
        f"got exit {fast.returncode} and {len(fast.stdout)} bytes out, want exit {slow.returncode} and "
        f"{len(slow.stdout)} bytes (stderr {fast.stderr[-300:]!r} / {slow.stderr[-300:]!r})")
    if case == "folder":
        assert fast.stdout.endswith(b"40 valid, 0 invalid, 0 unreadable (of 40)\n")
