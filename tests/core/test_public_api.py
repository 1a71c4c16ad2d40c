"""The public ``aer1`` surface: what the examples need, and the calls aer1-autogen code relies on."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import aer1
from aer1 import Collector, Report, generate_key_pair, key_id, load_private_key, load_public_key, verify_receipt

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: Where an example may import aer1 from: the package and its documented subpackages.
PUBLIC_MODULES = {"aer1", "aer1.collectors", "aer1.groupchat"}


def test_every_public_name_resolves() -> None:
    missing = [name for name in aer1.__all__ if getattr(aer1, name, None) is None]
    assert missing == [], f"got {missing} unresolved, want every name in aer1.__all__"
    assert set(aer1.__all__) <= set(dir(aer1))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        _ = aer1.not_a_name  # type: ignore[attr-defined]


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_")))
def test_examples_import_only_the_public_surface(example: str) -> None:
    tree = ast.parse((EXAMPLES / example).read_text())
    used = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
            and node.module.split(".")[0] == "aer1"}
    used |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
             if alias.name.split(".")[0] == "aer1"}
    assert used, f"{example} imports nothing from aer1"
    assert used <= PUBLIC_MODULES, f"got {sorted(used - PUBLIC_MODULES)}, want only {sorted(PUBLIC_MODULES)}"


def test_the_calls_aer1_autogen_code_relies_on(tmp_path: Path) -> None:
    private_pem, public_pem = generate_key_pair()
    c = Collector(goal="g", signing_key=load_private_key(private_pem))
    c.record("message", {"content": "hi"}, agent="alice")
    receipt = c.finalize(final_answer="done")
    assert c.verify(receipt) == []
    path = c.save(tmp_path / "r.json", workflow=receipt)
    report = verify_receipt(path, trusted_key_ids=[key_id(load_public_key(public_pem))])
    assert isinstance(report, Report)
    assert report.valid, [f.reason for f in report.failures]
