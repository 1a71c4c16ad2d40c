"""The content hash is computed at one site, and every producer's receipt_hash is it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from aer1._canonical import exact_bytes
from aer1._content_hash import content_hash, hash_of_canonical

from ..helpers import make_collector

ROOT = Path(__file__).resolve().parents[2]
#: Sites left, each with why (the list only shrinks; the built-in manager's approval digest was the last).
KNOWN_OTHER_SITES: set[str] = set()
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.text(st.characters(exclude_categories=("Cs",))),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@given(_json)
def test_the_two_forms_agree(value: Any) -> None:
    assert content_hash(value) == hash_of_canonical(exact_bytes(value))
    assert len(content_hash(value)) == 64


def test_a_recorded_step_carries_the_content_hash_of_its_content() -> None:
    c = make_collector()
    step = c.record("search", {"query": "q", "n": [1, 2]}, agent="a", kind="tool_call")
    assert step["receipt_hash"] == content_hash({"query": "q", "n": [1, 2]})
    c.finalize("done")


def _callee(f: ast.expr) -> str:
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _hashes_canonical_bytes(node: ast.AST) -> bool:
    """``sha256(exact_bytes(...))`` or ``sha256(canonical_bytes(...))``, however the two are reached."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Call)):
        return False
    return _callee(node.func) == "sha256" and _callee(node.args[0].func) in ("exact_bytes", "canonical_bytes")


def test_the_content_hash_is_written_at_one_site() -> None:
    sites = set()
    for folder in ("aer1", "collectors", "verifier"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if any(_hashes_canonical_bytes(node) for node in ast.walk(tree)):
                sites.add(str(path.relative_to(ROOT)))
    assert sites == {"aer1/_content_hash.py", *KNOWN_OTHER_SITES}, sorted(sites)
