"""New user: ``aer1.collectors`` with only some frameworks installed.

In a virtualenv made with ``pip install 'aer1[agentchat]'`` (the README's first extra),
``help(aer1.collectors)`` and ``from aer1.collectors import *`` raised ImportError (the
Agent Framework collector was listed and loaded), and ``import aer1.collectors.grpc_runtime``
or, with no extra at all, ``from aer1.collectors import AER1AgentWrapper`` said only
``No module named ...``. Each framework module now names what is missing and the extra
to install, and dir/help/``import *`` list the names whose framework is installed.

A framework is made missing the way Python documents: its name set to None in
``sys.modules`` (an import of it then fails), in a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import aer1.collectors

BLOCK = "import sys\nfor name in {blocked!r}:\n    sys.modules[name] = None\n"


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(("statement", "blocked", "missing", "extra"), [
    ("import aer1.collectors.agentchat", ["autogen_agentchat"], "autogen_agentchat", "agentchat"),
    ("from aer1.collectors import AER1AgentWrapper", ["autogen_agentchat"], "autogen_agentchat", "agentchat"),
    ("import aer1.collectors.autogen_core", ["autogen_core"], "autogen_core", "agentchat"),
    ("from aer1.collectors import observe_tools", ["autogen_core"], "autogen_core", "agentchat"),
    ("import aer1.collectors.grpc_runtime", ["grpc"], "grpc", "grpc"),
    ("import aer1.collectors.grpc_runtime", ["autogen_core"], "autogen_core", "grpc"),
])
def test_framework_module_says_which_extra(statement: str, blocked: list[str], missing: str, extra: str) -> None:
    done = _python(BLOCK.format(blocked=blocked) + statement)
    assert done.returncode != 0, f"got {statement} imported with {blocked} missing, want ImportError"
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: aer1.collectors."), f"got {last}, want the collector module named"
    assert f"needs {missing}, which is not installed: pip install 'aer1[{extra}]'" in last, f"got {last}"


@pytest.mark.parametrize(("blocked", "absent"), [
    (["agent_framework"], {"AER1AgentFrameworkCollector"}),
    (["autogen_agentchat", "autogen_core", "autogen_ext", "agent_framework"],
     {"AER1AgentWrapper", "AER1AgentFrameworkCollector", "AER1InterventionHandler", "observe_tools",
      "observe_code_executor", "observe_approval", "was_call_recorded"}),
])
def test_help_dir_and_star_import_with_some_extras(blocked: list[str], absent: set[str]) -> None:
    code = BLOCK.format(blocked=blocked) + (
        "import json, pydoc\nimport aer1.collectors as c\n"
        "text = pydoc.render_doc(c, renderer=pydoc.plaintext)\n"
        "exec('from aer1.collectors import *', {})\n"
        "print(json.dumps([c.__all__, [n for n in dir(c) if not n.startswith('_')], 'AER1AutoGenCollector' in text]))\n"
    )
    done = _python(code)
    assert done.returncode == 0, f"got {done.stderr.strip().splitlines()[-1:]}, want help and import * to work"
    exported, listed, documented = json.loads(done.stdout)
    full = set(aer1.collectors.__all__)
    assert set(exported) == full - absent, f"got {sorted(full - set(exported))} left out, want {sorted(absent)}"
    assert set(listed) & full == full - absent, f"got dir() {listed}"
    assert documented, "got help() without the collector, want it documented"


def test_every_name_exported_with_every_framework_installed() -> None:
    assert {"AER1AgentWrapper", "AER1AgentFrameworkCollector", "observe_tools", "attach_legacy_hooks"} \
        <= set(aer1.collectors.__all__), f"got {aer1.collectors.__all__}"


def test_checking_extras_imports_no_framework() -> None:
    done = _python("import sys, aer1.collectors\n"
                   "print([m for m in sys.modules if m.split('.')[0] in "
                   "('autogen_agentchat', 'autogen_core', 'autogen_ext', 'agent_framework', 'grpc', 'autogen')])")
    assert done.returncode == 0 and done.stdout.strip() == "[]", f"got {done.stdout.strip()} {done.stderr[-300:]}"
