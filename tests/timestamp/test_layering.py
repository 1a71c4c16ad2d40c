"""The verifier checks tokens with the format layer and the token library only, never the producer's TSA client."""

from __future__ import annotations

import ast
from pathlib import Path

import aer1.verifier

#: Producer modules the verifier must not import: the TSA client used at finalize and its command line.
PRODUCER_MODULES = frozenset(("aer1._timestamp", "aer1._lifecycle_cli", "aer1._collector"))


def test_verifier_imports_no_producer_module() -> None:
    folder = Path(aer1.verifier.__file__).parent
    offenders = []
    for source in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 2 and node.module:
                name = "aer1." + node.module.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("aer1."):
                name = ".".join((node.module or "").split(".")[:2])
            else:
                continue
            if name in PRODUCER_MODULES:
                offenders.append(f"{source.name}: {name}")
    assert offenders == [], offenders
    assert len(list(folder.glob("*.py"))) >= 10  # the walk saw the package
