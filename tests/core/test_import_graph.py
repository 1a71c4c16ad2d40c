"""No import circles among the product's modules, and no underscore name imported from another module.

Every import counts: at the top, inside a function, under ``TYPE_CHECKING``. A circle makes
the order of loading decide what works; an underscore name imported elsewhere is an
internal that another module relies on without saying so. Importing from an underscore
*module* is fine: that is how the packages keep their internals.

The lists below hold what is left, each with why; the test fails when one grows and when
an entry is gone (so the list only shrinks).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The installed packages and the folders they come from (pyproject.toml's package-dir).
FOLDERS = {"aer1": "aer1", "aer1.collectors": "collectors", "aer1.verifier": "verifier"}

#: Circles still there (none: the AgentChat team runner and wrappers call back the
#: collector's base in ``_team_steps``, not the collector whose run methods start them).
KNOWN_CIRCLES: set[frozenset[str]] = set()

#: Underscore names still imported across modules (none: a name another module needs is public).
KNOWN_UNDERSCORE_IMPORTS: set[tuple[str, str, str]] = set()


def modules(root: Path, folders: dict[str, str]) -> dict[str, Path]:
    """Every module's dotted name and file, for the packages installed from ``folders`` under ``root``."""
    found: dict[str, Path] = {}
    for package, folder in folders.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found.setdefault(".".join([package, *parts]), path)
    return found


def _target(name: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = name.split(".")
    if path.name != "__init__.py":
        base.pop()
    base = base[:len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports(known: dict[str, Path]) -> Iterator[tuple[str, str, str | None]]:
    """(importer, module imported, name taken from it or None) for every import between ``known`` modules."""
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                target = _target(name, path, node)
                for alias in node.names:
                    if f"{target}.{alias.name}" in known:
                        yield name, f"{target}.{alias.name}", None  # a module taken from its package
                    elif target in known:
                        yield name, target, alias.name
            elif isinstance(node, ast.Import):
                yield from ((name, a.name, None) for a in node.names if a.name in known)


def circles(edges: Iterable[tuple[str, str]]) -> set[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, without recursion)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        if a != b:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: set[frozenset[str]] = set()
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    group = set()
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        group.add(x)
                        if x == v:
                            break
                    if len(group) > 1:
                        out.add(frozenset(group))
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(graph[w]))))
            elif w in on:
                low[v] = min(low[v], index[w])
    return out


def underscore_imports(found: Iterable[tuple[str, str, str | None]]) -> set[tuple[str, str, str]]:
    return {(a, b, n) for a, b, n in found if n is not None and n.startswith("_") and not n.startswith("__")}


def test_no_import_circle() -> None:
    known = modules(ROOT, FOLDERS)
    assert {"aer1.verifier._cli", "aer1.collectors.agentchat", "aer1._collector"} <= set(known)  # the walk saw them
    got = circles((a, b) for a, b, _ in imports(known))
    assert got - KNOWN_CIRCLES == set(), f"got new import circles {sorted(map(sorted, got - KNOWN_CIRCLES))}"
    assert KNOWN_CIRCLES - got == set(), "a known circle is gone: drop it from KNOWN_CIRCLES"


def test_no_underscore_name_imported_across_modules() -> None:
    got = underscore_imports(imports(modules(ROOT, FOLDERS)))
    assert sorted(got - KNOWN_UNDERSCORE_IMPORTS) == [], "give the name no underscore, or keep it in its module"
    assert sorted(KNOWN_UNDERSCORE_IMPORTS - got) == [], "a listed import is gone: drop it from the list"


def test_the_walk_finds_a_planted_circle_and_underscore_import(tmp_path: Path) -> None:
    """The checks are not vacuous: lazy and TYPE_CHECKING imports count, underscore modules do not."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "_a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._b import B\n")
    (pkg / "_b.py").write_text("def f():\n    from ._a import _secret\n\nB = 1\n")
    (pkg / "c.py").write_text("from . import _a\nfrom pkg._b import B\n")
    known = modules(tmp_path, {"pkg": "pkg"})
    found = list(imports(known))
    assert circles((a, b) for a, b, _ in found) == {frozenset({"pkg._a", "pkg._b"})}
    assert underscore_imports(found) == {("pkg._b", "pkg._a", "_secret")}
    assert ("pkg.c", "pkg._a", None) in found and ("pkg.c", "pkg._b", "B") in found
