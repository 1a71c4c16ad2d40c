"""Strict type check of the installed package layout, run by ``make lint``.

The repository keeps ``collectors/`` and ``verifier/`` at the root, installed as
``aer1.collectors`` and ``aer1.verifier``. A type checker run over the folders as they lie
cannot resolve ``from ..canonical import ...`` inside ``verifier/`` and would silently type
the whole verifier/core boundary as ``Any``. So this script lays out the package as it is
installed (a tree of symlinks under ``build/typecheck``), runs mypy strict on it, and then
asks mypy for the types of first-party names the verifier and the collectors import: any
that comes back as ``Any`` fails the check.

Usage: ``python tests/typecheck.py`` (exit 0 when clean).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"

#: Package directories as pyproject.toml maps them: installed name -> folder in the repo.
PACKAGE_DIRS = {"aer1": "aer1", "aer1/collectors": "collectors", "aer1/verifier": "verifier"}

#: First-party names that cross the verifier/collector boundary; none may be ``Any``.
PROBES = """\
# mypy: disable-error-code="attr-defined"
from aer1.verifier import _checks, _evidence, proof as vproof
from aer1.collectors import _collector
reveal_type(_checks.canonical_bytes)
reveal_type(_checks.step_digest_hex)
reveal_type(_checks.merkle_root)
reveal_type(_checks.verify_signature)
reveal_type(_checks.close_content)
reveal_type(_evidence.canonical_bytes)
reveal_type(vproof.canonical_bytes)
reveal_type(_collector.Collector)
"""


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
    (TREE / "first_party_probes.py").write_text(PROBES, encoding="utf-8")
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
    if err or len(revealed) != PROBES.count("reveal_type("):
        sys.stdout.write(out)
        sys.stderr.write(err)
        print(f"typecheck: got {len(revealed)} revealed types, want {PROBES.count('reveal_type(')}")
        return 1
    anys = [line for line in revealed if '"Any"' in line]
    for line in anys:
        print(f"typecheck: a first-party name resolves to Any: {line}")
    return 1 if anys else 0


if __name__ == "__main__":
    raise SystemExit(main())
