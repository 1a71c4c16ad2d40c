"""Strict type check of the installed package layout, run by ``make lint``.

The repository keeps ``collectors/`` and ``verifier/`` at the root, installed as
``aer1.collectors`` and ``aer1.verifier``. A type checker run over the folders as they lie
cannot resolve ``from ..canonical import ...`` inside ``verifier/`` and would silently type
the whole verifier/core boundary as ``Any``. So this script lays out the package as it is
installed (a tree of symlinks under ``build/typecheck``), runs mypy strict on it, and then
asks mypy for the type of every first-party name that ``verifier/`` and ``collectors/``
import at module level: any that comes back as ``Any`` fails the check.

Usage: ``python tests/typecheck.py`` (exit 0 when clean).
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"

#: Package directories as pyproject.toml maps them: installed name -> folder in the repo.
PACKAGE_DIRS = {"aer1": "aer1", "aer1/collectors": "collectors", "aer1/verifier": "verifier"}

#: Folders whose first-party imports are probed: every name they import from the package.
PROBED = {"aer1.verifier": "verifier", "aer1.collectors": "collectors"}


def _top_level_imports(tree: ast.Module) -> list[ast.ImportFrom]:
    """Module-level ``from ... import`` statements, also those inside top-level if/try."""
    found: list[ast.ImportFrom] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.ImportFrom):
            found.append(node)
        elif isinstance(node, (ast.If, ast.Try)):
            todo.extend(node.body)
            todo.extend(node.orelse)
    return found


def probes() -> str:
    """A module revealing the type of each first-party name the probed folders import."""
    lines = ['# mypy: disable-error-code="attr-defined"']
    for package, folder in PROBED.items():
        for path in sorted((ROOT / folder).glob("*.py")):
            module = package if path.stem == "__init__" else f"{package}.{path.stem}"
            for node in _top_level_imports(ast.parse(path.read_text(encoding="utf-8"))):
                first_party = node.level > 0 or (node.module or "").split(".")[0] == "aer1"
                if not first_party:
                    continue
                alias = "m_" + module.replace(".", "_")
                lines.append(f"import {module} as {alias}")
                lines.extend(f"reveal_type({alias}.{n.asname or n.name})" for n in node.names if n.name != "*")
    return "\n".join(lines) + "\n"


def build_tree() -> Path:
    """Recreate ``build/typecheck/aer1`` as symlinks to the repository's folders."""
    shutil.rmtree(TREE, ignore_errors=True)
    for installed, folder in PACKAGE_DIRS.items():
        target = TREE / installed
        target.mkdir(parents=True, exist_ok=True)
        for entry in sorted((ROOT / folder).iterdir()):
            if entry.name == "__pycache__" or (target / entry.name).exists():
                continue
            if entry.is_dir() and f"{installed}/{entry.name}" in PACKAGE_DIRS:
                continue  # laid out by its own entry
            (target / entry.name).symlink_to(os.path.relpath(entry, target))
    (TREE / "first_party_probes.py").write_text(probes(), encoding="utf-8")
    return TREE


def main() -> int:
    tree = build_tree()
    config = str(ROOT / "pyproject.toml")
    os.chdir(tree)
    out, err, status = api.run(["--config-file", config, "-p", "aer1"])
    sys.stdout.write(out)
    sys.stderr.write(err)
    if status != 0:
        return status
    out, err, status = api.run(["--config-file", config, "first_party_probes.py"])
    revealed = [line for line in out.splitlines() if "Revealed type is" in line]
    want = probes().count("reveal_type(")
    if err or len(revealed) != want:
        sys.stdout.write(out)
        sys.stderr.write(err)
        print(f"typecheck: got {len(revealed)} revealed types, want {want}")
        return 1
    anys = [line for line in revealed if '"Any"' in line]
    for line in anys:
        print(f"typecheck: a first-party name resolves to Any: {line}")
    return 1 if anys else 0


if __name__ == "__main__":
    raise SystemExit(main())
