"""Importing aer1 and the other collectors never needs Agent Framework."""

from __future__ import annotations

import subprocess
import sys

BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("agent_framework", "agent_framework_orchestrations"):
            raise ImportError(f"blocked {name}")
        return None
sys.meta_path.insert(0, Block())
import aer1, aer1.collectors, aer1.verifier
from aer1.collectors import AER1AutoGenCollector
import aer1.collectors.autogen_core, aer1.collectors.agentchat
print("ok")
"""


def test_aer1_imports_without_agent_framework() -> None:
    done = subprocess.run([sys.executable, "-c", BLOCK], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr[-2000:]


def test_collector_without_the_extra_says_how_to_install_it() -> None:
    code = BLOCK.replace('print("ok")', """
try:
    import aer1.collectors.agent_framework
except ImportError as e:
    print(e)
""")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pip install 'aer1[agent-framework]'" in done.stdout, done.stdout
