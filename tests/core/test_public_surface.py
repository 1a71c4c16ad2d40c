"""The public surface of ``aer1``: which modules are public, and that everything else is marked internal.

A module is internal when a component of its dotted name starts with an underscore. The
public ones are listed below on purpose: a new module must either join the list (and be
documented) or take a leading underscore.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The public modules. Console scripts may point at internal ones.
PUBLIC = frozenset({
    "aer1",
    "aer1.errors",
    "aer1.collectors",
    "aer1.collectors.agentchat",
    "aer1.collectors.autogen_core",
    "aer1.collectors.legacy",
    "aer1.collectors.agent_framework",
    "aer1.collectors.ag2",
    "aer1.verifier.dask",
    "aer1.collectors.otel",
    "aer1.collectors.grpc_runtime",
    "aer1.verifier",
    "aer1.groupchat",
})
#: Packages installed from their own folders (pyproject.toml's package-dir): walked each.
ROOTS = ("aer1", "aer1.collectors", "aer1.verifier")

#: Internal modules the documents name on purpose: where a layout, a limit or a canary is
#: explained, not an API. Anything else they name must be public.
DOCUMENTED_INTERNALS = frozenset({
    ("CONTRIBUTING.md", "aer1/_report/"),
    ("CONTRIBUTING.md", "aer1/_receipt.py"),
    ("CONTRIBUTING.md", "aer1/_limits.py"),
    ("bench/README.md", "aer1/_limits.py"),
    ("bench/README.md", "aer1/_layout.py"),
    ("bench/README.md", "collectors/_batched.py"),
    ("bench/README.md", "verifier/_fast.py"),
    ("bench/README.md", "verifier/_split.py"),
    ("bench/README.md", "verifier/_tsa_verify.py"),
    ("spec/agentchat.md", "collectors/_batched.py"),
    ("spec/receipt.md", "aer1._layout.receipt_json"),
    ("spec/evidence.md", "aer1/_limits.py"),
    ("spec/verifier.md", "aer1/_limits.py"),
    ("spec/groupchat.md", "aer1._canonical"),
    ("spec/groupchat.md", "aer1/groupchat/_code.py"),
    ("spec/sandbox.md", "aer1/groupchat/_sandbox/"),
    ("spec/agent-framework.md", "collectors/_af_internals.py"),
    ("spec/agentchat.md", "aer1.collectors._agentchat_internals"),
    ("spec/autogen-core.md", "aer1.collectors._agentchat_internals"),
    ("spec/autogen-core.md", "aer1.collectors._errors"),
    ("spec/legacy.md", "aer1.collectors._legacy_internals.NAMES"),
    ("spec/ag2.md", "collectors/_ag2_internals.py"),
    ("spec/ag2.md", "collectors/_bounded.py"),
    ("spec/otel.md", "collectors/_otel_internals.py"),
    ("bench/README.md", "collectors/_otel_internals.py"),
    ("spec/report.md", "aer1/_report/_content.py"),
    ("spec/report.md", "aer1/_vocabulary.py"),
})

_DOTTED = re.compile(r"(?<![\w.\-/$])aer1(?:\.[A-Za-z_]\w*)+(?!\.?[\w\-+])")
_PATH = re.compile(r"(?<![\w.\-/$])(?:aer1|collectors|verifier)(?:/[A-Za-z_]\w*(?:\.\w+)*)+/?")
_LOGGER = re.compile(r"logger\s+`$")


def is_internal(name: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in re.split(r"[./]", name))


def all_modules() -> set[str]:
    """Every module and package installed under ``aer1``."""
    found = set(ROOTS)
    for root in ROOTS:
        package = importlib.import_module(root)
        found.update(m.name for m in pkgutil.walk_packages(package.__path__, root + ".", onerror=lambda _: None))
    return found


def test_every_module_is_public_or_underscored() -> None:
    modules = all_modules()
    assert {"aer1.errors", "aer1.verifier", "aer1.collectors.agentchat"} <= modules  # the walk saw the tree
    undecided = sorted(m for m in modules if m not in PUBLIC and not is_internal(m))
    assert undecided == [], f"got {undecided} neither public nor underscored, want each on PUBLIC or renamed _name"


def test_every_public_module_exists() -> None:
    assert sorted(PUBLIC - all_modules()) == []


def _documented_assignments(path: Path) -> set[str]:
    """Top-level names ``path`` assigns with a ``#:`` comment right above or a string right below."""
    lines = path.read_text(encoding="utf-8").splitlines()
    body = ast.parse("\n".join(lines)).body
    found = set()
    for node, after in zip(body, [*body[1:], None], strict=True):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        above = node.lineno - 2
        while above >= 0 and lines[above].startswith("#") and not lines[above].startswith("#:"):
            above -= 1
        commented = above >= 0 and lines[above].startswith("#:")
        stringed = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and isinstance(
            after.value.value, str)
        if commented or stringed:
            found.update(t.id for t in targets if isinstance(t, ast.Name))
    return found


@functools.cache
def documented_constants() -> frozenset[str]:
    """Every name assigned with its own documentation anywhere in the installed package."""
    folders = {Path(importlib.import_module(root).__file__ or "").parent for root in ROOTS}
    return frozenset(name for folder in folders for path in folder.rglob("*.py")
                     for name in _documented_assignments(path))


def _own_docstring(obj: object) -> str | None:
    if inspect.isclass(obj):
        doc = vars(obj).get("__doc__")
        # a dataclass with no docstring gets its signature as __doc__
        return None if not isinstance(doc, str) or doc.startswith(obj.__name__ + "(") else doc
    return inspect.getdoc(obj)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_exported_name_resolves_and_is_documented(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__doc__, f"{name} has no docstring"
    exported = getattr(module, "__all__", None)
    assert exported, f"{name} has no __all__"
    undocumented = []
    for export in exported:
        value = getattr(module, export)  # raises if it does not resolve
        callable_ = inspect.isclass(value) or inspect.isroutine(value) or inspect.ismodule(value)
        if not (_own_docstring(value) if callable_ else export in documented_constants()):
            undocumented.append(export)
    assert undocumented == [], f"got {undocumented} with no docstring (or #: comment), want each documented"


def _imports_from_aer1(tree: ast.AST) -> list[tuple[str, str | None]]:
    """(module, name) for each import of aer1 in ``tree``; name None for ``import aer1.x``."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "aer1":
            found.extend((node.module or "", alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, None) for alias in node.names if alias.name.split(".")[0] == "aer1")
    return found


@pytest.mark.parametrize("example", sorted(p.name for p in (ROOT / "examples").glob("*.py")))
def test_examples_import_only_public_names(example: str) -> None:
    imports = _imports_from_aer1(ast.parse((ROOT / "examples" / example).read_text(encoding="utf-8")))
    wrong = []
    for module, name in imports:
        if module not in PUBLIC:
            wrong.append(module)
        elif name is not None and name not in importlib.import_module(module).__all__ \
                and f"{module}.{name}" not in PUBLIC:
            wrong.append(f"{module}.{name}")
    assert wrong == [], f"{example}: got {wrong}, want only names in a public module's __all__"


def private_references(text: str) -> set[str]:
    """Every internal module path or dotted name ``text`` mentions (a logger's name is not a module)."""
    found = {m.group(0) for m in _DOTTED.finditer(text) if not _LOGGER.search(text[max(0, m.start() - 10):m.start()])}
    found |= {m.group(0) for m in _PATH.finditer(text)}
    return {ref for ref in found if is_internal(ref)}


def test_documents_name_internal_modules_only_where_they_explain_internals() -> None:
    documents = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "bench" / "README.md",
                 *sorted((ROOT / "spec").glob("*.md"))]
    assert len(documents) > 10  # the glob saw the spec
    found = {(doc.relative_to(ROOT).as_posix(), ref) for doc in documents
             for ref in private_references(doc.read_text(encoding="utf-8"))}
    assert sorted(found - DOCUMENTED_INTERNALS) == [], "want public names (aer1.restore, not a module's)"
    assert sorted(DOCUMENTED_INTERNALS - found) == [], "an allowed mention is gone: drop it from the list"


def test_the_document_scan_sees_internal_names() -> None:
    """The scanner is not vacuous: it finds internal paths and names, and leaves public ones and loggers alone."""
    text = "see `aer1._canonical.restore()`, `aer1/_limits.py`, `aer1.restore()`, logger `aer1._x`, vnd.aer1._y"
    assert private_references(text) == {"aer1._canonical.restore", "aer1/_limits.py"}
