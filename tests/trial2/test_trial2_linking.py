"""Trial: the collector refuses a link that would put one receipt twice into a bundle (which then fails)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aer1 import Collector
from aer1.link import LinkError
from aer1.verifier._bundle import verify_bundle


def _run(goal: str) -> Collector:
    c = Collector(goal=goal)
    c.record("work", {"goal": goal}, agent="worker", kind="message")
    return c


def test_grandchild_linked_again_directly_is_refused(tmp_path: Path) -> None:
    grandchild, child, parent = _run("grandchild"), _run("child"), _run("parent")
    child.link(grandchild)
    parent.link(child)
    with pytest.raises(LinkError, match=f"{grandchild.workflow_id} is already in this receipt's tree"):
        parent.link(grandchild)
    parent.save_bundle(tmp_path / "bundle", workflow=parent.finalize("done"))
    bundle = verify_bundle(tmp_path / "bundle")
    assert (bundle.verdict, bundle.count("followed")) == ("VALID", 2), bundle.to_text()


def test_child_whose_own_links_reach_a_receipt_already_linked_is_refused(tmp_path: Path) -> None:
    shared, worker, parent = _run("shared"), _run("worker"), _run("parent")
    parent.link(shared)
    worker.link(shared.finalize())  # the worker's receipt arrives as bytes: its children are only named
    worker_receipt = worker.finalize("done")
    with pytest.raises(LinkError, match=f"{shared.workflow_id} is already in this receipt's tree"):
        parent.link(worker_receipt)


def test_parent_linked_into_its_own_tree_is_refused() -> None:
    parent, child = _run("parent"), _run("child")
    child.record("note", {"parent": parent.workflow_id}, agent="worker", kind="message")
    receipt = child.finalize("done")
    receipt_ids = dict(receipt)
    receipt_ids["steps"] = [*receipt["steps"][:-1], {**receipt["steps"][0], "kind": "link",
                                                       "target": parent.workflow_id}, receipt["steps"][-1]]
    with pytest.raises(LinkError, match=f"{parent.workflow_id} is already in"):
        parent.link(receipt_ids, verify=False)
