"""Linking is linear: each link reads only the new child's tree, never the children linked before."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from aer1 import Collector, LinkError, _bundle


def _child(n: int) -> dict[str, Any]:
    c = Collector(goal="child", evidence=False)
    for i in range(n):
        c.record("message", {"i": i}, agent="worker")
    return c.finalize()


def test_each_link_reads_only_the_new_childs_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    real = _bundle._tree_ids

    def counting(receipts: list[Mapping[str, Any]]) -> set[str]:
        read.extend(str(r["workflow_id"]) for r in receipts)
        return real(receipts)

    monkeypatch.setattr(_bundle, "_tree_ids", counting)
    parent = Collector(goal="parent", evidence=False)
    children = [_child(3) for _ in range(6)]
    for child in children:
        parent.link(child, verify=False)
    assert read == [c["workflow_id"] for c in children]  # one read per child: no rescan of earlier ones
    assert parent.linked_tree_ids == {parent.workflow_id, *(c["workflow_id"] for c in children)}


def test_the_kept_tree_still_refuses_a_grandchild_linked_again() -> None:
    grandchild = Collector(goal="grandchild", evidence=False)
    grandchild.record("message", {"x": 1}, agent="w")
    g = grandchild.finalize()
    middle = Collector(goal="middle", evidence=False)
    middle.link(g, verify=False)
    parent = Collector(goal="parent", evidence=False)
    parent.link(middle, verify=False)
    with pytest.raises(LinkError, match="already in this receipt's tree of links"):
        parent.link(g, verify=False)
