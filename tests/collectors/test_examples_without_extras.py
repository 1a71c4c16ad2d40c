"""An example run without its framework says which extra to install, in one line, with no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: Example, a module its framework brings, the extra that installs it.
CASES = [
    ("legacy_groupchat.py", "autogen", "legacy"),
    ("agentchat_team.py", "autogen_agentchat", "agentchat"),
    ("builtin_groupchat.py", "autogen_core", "agentchat"),
    ("agent_framework_handoff.py", "agent_framework", "agent-framework"),
]

_RUN = (
    "import runpy, sys\n"
    "sys.modules[sys.argv[1]] = None  # as if the framework were not installed\n"
    "sys.path.insert(0, sys.argv[3])\n"
    "sys.argv = [sys.argv[2], sys.argv[4]]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


@pytest.mark.parametrize(("example", "module", "extra"), CASES)
def test_an_example_without_its_framework_names_the_extra(tmp_path: Path, example: str, module: str,
                                                           extra: str) -> None:
    done = subprocess.run([sys.executable, "-c", _RUN, module, str(EXAMPLES / example), str(EXAMPLES),
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        f"this example needs {module}, which is not installed: pip install 'aer1[{extra}]'"
    ), done.stderr
    assert not (tmp_path / "out" / "receipt.json").exists()
