"""The built-in manager's boundary: loaded only on demand, using a small part of the core,
and naming nothing the way AutoGen names something else."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import aer1.groupchat
import aer1.groupchat._code
import aer1.groupchat._sandbox

PACKAGE = Path(aer1.groupchat.__file__).parent
# What the manager may use of the receipt core: the collector, canonical JSON and its content hash,
# the error kinds and the step vocabulary (spec/steps.md) its steps are written in.
CORE_USED = {"aer1": {"Collector", "CollectorClosedError", "_steps_vocab"},
             "aer1._canonical": {"normalize", "restore"},
             "aer1._content_hash": {"content_hash"},
             "aer1.errors": {"Aer1Error", "MalformedInputError", "UsageError", "VerificationError"},
             "aer1._steps_vocab": {"UnfitArguments", "exact_json"}}
# Names shared with AutoGen for the same kind of thing, kept on purpose: the chat, its
# result, the agent protocol and a tool description (see spec/groupchat.md).
SHARED_ON_PURPOSE = {"Agent", "ChatResult", "GroupChat", "Tool"}
AUTOGEN_MODULES = [
    "autogen_core",
    "autogen_core.code_executor",
    "autogen_core.tools",
    "autogen_core.models",
    "autogen_agentchat.agents",
    "autogen_agentchat.base",
    "autogen_agentchat.messages",
    "autogen_agentchat.teams",
    "autogen_ext.code_executors.local",
    "autogen",
    "autogen.coding",
]


def loaded_after(statement: str) -> list[str]:
    """The modules a fresh interpreter has loaded after ``statement``."""
    code = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    loaded: list[str] = json.loads(done.stdout)
    return loaded


def test_importing_aer1_does_not_load_the_manager() -> None:
    loaded = loaded_after("import aer1, aer1._collector, aer1.verifier")
    assert [m for m in loaded if m.startswith("aer1.groupchat")] == []


def test_the_manager_loads_no_agent_framework() -> None:
    loaded = loaded_after("import aer1.groupchat")
    assert "aer1.groupchat._sandbox" in loaded
    frameworks = {"autogen", "autogen_core", "autogen_agentchat", "autogen_ext"}
    assert [m for m in loaded if m.split(".")[0] in frameworks] == []


def test_the_manager_uses_only_the_collector_and_canonical_json_of_the_core() -> None:
    used: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.startswith("aer1"):
                if not node.module.startswith("aer1.groupchat"):
                    used.setdefault(node.module, set()).update(alias.name for alias in node.names)
            elif isinstance(node, ast.Import):
                assert not any(alias.name.startswith("aer1") for alias in node.names), path
    assert used == CORE_USED


def public_names() -> set[str]:
    modules = [aer1.groupchat, aer1.groupchat._code, aer1.groupchat._sandbox]
    return {name for module in modules for name in getattr(module, "__all__", dir(module)) if name[:1].isupper()}


@pytest.mark.parametrize("module", AUTOGEN_MODULES)
def test_no_public_name_means_something_else_in_autogen(module: str) -> None:
    try:
        theirs = importlib.import_module(module)
    except ImportError:
        pytest.skip(f"{module} is not installed here")
    names = set(getattr(theirs, "__all__", None) or dir(theirs))
    assert public_names() & names <= SHARED_ON_PURPOSE
    assert {"CodeExecutor", "CodeBlock", "CodeResult", "ApprovalRequest"}.isdisjoint(public_names())


def test_every_subpackage_of_the_manager_is_packaged() -> None:
    tomllib = pytest.importorskip("tomllib")
    pyproject = tomllib.loads((PACKAGE.parents[1] / "pyproject.toml").read_text())
    packaged = set(pyproject["tool"]["setuptools"]["packages"])
    found = {
        ".".join(("aer1", *init.parent.relative_to(PACKAGE.parent).parts)) for init in PACKAGE.rglob("__init__.py")
    }
    assert found - packaged == set()
