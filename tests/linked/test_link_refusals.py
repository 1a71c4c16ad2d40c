"""Trial: the collector refuses a link that would put one receipt twice into a bundle (which then fails)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aer1 import Collector
from aer1._link import LinkError
from aer1.verifier import verify_bundle

from ..cli_runs import Run


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


def test_policy_pass_on_a_parent_says_its_linked_children_were_not_evaluated(
        tmp_path: Path, run_cli: Run) -> None:
    child, parent = _run("child"), _run("parent")
    child.record("pay", {"arguments": {"amount": 10**6}, "result": "paid"}, agent="worker", kind="tool_call",
                 call_id="c1")
    parent.link(child)
    path = tmp_path / "receipt.json"
    parent.save(path, workflow=parent.finalize("done"))
    policy = tmp_path / "p.toml"
    policy.write_text('format = "aer1-policy-v1"\n[allow]\ntools = ["lookup"]\n')
    code, out, _ = run_cli(path, "--policy", policy, "--json")
    detail = next(c["detail"] for c in json.loads(out)["checks"] if c["name"] == "policy")
    assert code == 0 and "the steps of its 1 linked child receipt(s) were not evaluated" in detail, out
    code, out, _ = run_cli(path, "--require", "chain")
    assert code == 0 and "linked child" not in out, out  # shorthands read no steps: nothing to qualify
