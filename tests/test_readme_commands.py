"""Every command in the README runs as written, and names only options the commands have.

The README's ``sh`` blocks are run line by line, in order, in a temporary folder holding a
link to ``examples/`` (the README says to run them from the checkout's folder), with this
environment's ``aer1``, ``aer1-verify`` and ``python`` first on ``PATH``: each must exit 0,
print no traceback, and print one JSON document when given ``--json``. A line whose
comment starts with ``needs`` is shown and not run: it needs a server that runs until
stopped on a fixed port (``aer1 witness serve``), or what only that server gives (a
cosignature). The witness and the log server are run as real processes by
``tests/witness``. Every ``aer1``/``aer1-verify`` command of the README, in a block or in
the text, names only options its ``--help`` lists.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import inspect
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
#: What a README shell line may run.
COMMANDS = ("aer1 ", "aer1-verify ", "python examples/", "cat ")
#: The frameworks the README's examples use (the main environment has them all).
FRAMEWORKS = ("autogen_agentchat", "autogen", "agent_framework_orchestrations", "ag2", "distributed")
#: Subcommands of ``aer1`` that have their own subcommands.
NESTED = ("key", "log", "witness")


def shell_lines(text: str) -> list[str]:
    """The command lines of the ``sh`` blocks, in order (comment lines left out)."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```sh" if not inside else False
            continue
        if inside and line.strip() and not line.lstrip().startswith("#"):
            lines.append(line.strip())
    return lines


def comment(line: str) -> str:
    """The line's trailing comment, without its ``#``."""
    at = line.find("  #")
    return line[at + 3:].strip() if at >= 0 else ""


def needs_a_server(line: str) -> bool:
    return comment(line).startswith("needs")


def inline_commands(text: str) -> list[str]:
    """The ``aer1``/``aer1-verify`` commands written in the text, outside the blocks."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.findall(r"`(aer1(?:-verify)? [^`]+)`", prose)


def _help(command: list[str]) -> str:
    done = subprocess.run([str(BIN / command[0]), *command[1:], "--help"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, f"{command} --help: {done.stderr}"
    return done.stdout


def options_unknown(line: str, helps: dict[tuple[str, ...], str]) -> list[str]:
    """The options ``line`` gives that its command's ``--help`` does not list."""
    words = shlex.split(line, comments=True)
    words = words[:words.index(">")] if ">" in words else words
    command = ["aer1-verify"] if words[:2] == ["aer1", "verify"] else words[:1]
    if command == ["aer1"]:
        if len(words) < 2 or words[1].isupper():  # `aer1 COMMAND --help`: a placeholder
            return []
        command = words[:3] if words[1] in NESTED and len(words) > 2 and not words[2].startswith("-") else words[:2]
    key = tuple(command)
    if key not in helps:
        helps[key] = _help(command)
    given = [w.split("=")[0] for w in words[len(command):] if re.fullmatch(r"-{1,2}[A-Za-z][\w-]*(=.*)?", w)]
    return [o for o in given if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", helps[key])]


def test_the_readme_is_short_and_its_lines_are_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300, "the README is for users: at most 300 lines (tables go to bench/)"
    lines = shell_lines(text)
    assert len(lines) >= 30, f"got {len(lines)} command lines: the block parser lost them"
    assert [line for line in lines if not line.startswith(COMMANDS)] == []


def test_every_readme_command_names_only_real_options() -> None:
    text = README.read_text(encoding="utf-8")
    commands = [line for line in shell_lines(text) if not line.startswith(("python ", "cat "))]
    commands += inline_commands(text)
    assert len(commands) >= 40, f"got {len(commands)}: the scan lost the README's commands"
    helps: dict[tuple[str, ...], str] = {}
    wrong = {c: u for c in commands if (u := options_unknown(c, helps))}
    assert wrong == {}, "options no command has"
    assert options_unknown("aer1-verify --no-such-option x.json", helps) == ["--no-such-option"]  # not vacuous


def test_every_readme_command_runs_as_written(tmp_path: Path) -> None:
    missing = [m for m in FRAMEWORKS if importlib.util.find_spec(m) is None]
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the README's examples need {missing}, not installed under CI")
        pytest.skip(f"the README's examples need {missing} (make installs every extra)")
    lines = shell_lines(README.read_text(encoding="utf-8"))
    shown = [line for line in lines if needs_a_server(line)]
    assert len(shown) <= 4 and all(re.search(r"serve|://|--min-witnesses", line) for line in shown), shown
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("AER1_SIGNING_KEY", None)
    for line in lines:
        if needs_a_server(line):
            continue
        done = subprocess.run(["bash", "-c", f"set -o pipefail; {line}"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, f"{line}\nexit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stdout + done.stderr, line
        if "--json" in shlex.split(line, comments=True):
            json.loads(done.stdout)


@pytest.mark.parametrize("document", ["README.md", "CONTRIBUTING.md", "bench/README.md"])
def test_every_relative_link_leads_to_a_file(document: str) -> None:
    path = ROOT / document
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8"))
    local = [link for link in links if "://" not in link]
    assert len(local) >= 1, f"got {local}: the link scan is broken"
    assert [link for link in local if not (path.parent / link).exists()] == []


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_every_readme_python_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's Python runs as it stands, given what its text leaves to the reader: a ``client``, ``ops.key``."""
    pytest.importorskip("autogen_agentchat")
    from autogen_ext.models.replay import ReplayChatCompletionClient

    from aer1 import generate_key_pair

    blocks = python_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 3, f"got {len(blocks)} python blocks"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ops.key").write_bytes(generate_key_pair()[0])
    names: dict[str, object] = {"client": ReplayChatCompletionClient([f"turn {i}" for i in range(20)])}
    for block in blocks:  # in order, in one namespace, as a reader reads them
        code = compile(block, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        run = eval(code, names)  # the README's own text, not input: a coroutine when it awaits
        if inspect.iscoroutine(run):
            asyncio.run(run)
    saved = json.loads((tmp_path / "receipt.json").read_text())
    assert saved["steps"][-1]["tool"] == "close" and "signature" in saved
