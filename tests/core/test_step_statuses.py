"""The close step binds the steps counted by status (``step_statuses``), and the verifier recounts them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector, verify_receipt
from aer1 import _steps_vocab as vocab
from aer1._vocabulary import status_counts

from ..receipts import Peers, verify_everywhere


def _receipt() -> tuple[Collector, dict[str, Any]]:
    c = Collector(goal="count the statuses")
    c.record("add", vocab.tool_call("groupchat", name="add", call_id="c1", arguments={"a": 1}, result="1"),
             agent="alice", kind="tool_call", call_id="c1")
    c.record("explode", vocab.tool_call("groupchat", name="explode", call_id="c2", arguments={}, result=None,
                                        error=vocab.error_code(vocab.TOOL_ERROR, "boom")),
             agent="alice", kind="tool_call", status="error", call_id="c2")
    return c, c.finalize("done")


def test_finalize_binds_the_counts_and_every_verifier_accepts(tmp_path: Path, peers: Peers | None) -> None:
    c, receipt = _receipt()
    assert receipt["step_statuses"] == {"ok": 1, "error": 1, "cancelled": 0} == status_counts(receipt)
    path = c.save(tmp_path / "receipt.json", workflow=receipt)
    verify_everywhere(path, receipt, peers)  # ours with evidence, and both peers


def test_counts_that_do_not_match_the_steps_fail_the_chain_even_when_rebound(tmp_path: Path) -> None:
    _, receipt = _receipt()
    edited = copy.deepcopy(receipt)
    edited["step_statuses"] = {"ok": 2, "error": 0, "cancelled": 0}
    report = verify_receipt(edited)
    assert not report.valid and report.failures[0].check == "chain"
    assert "close step does not match" in report.failures[0].reason


def test_a_malformed_count_is_a_members_failure() -> None:
    _, receipt = _receipt()
    for bad in ({"ok": -1, "error": 1, "cancelled": 0}, {"ok": 1, "error": 1}, [1, 1, 0], {"ok": True, "error": 1,
                                                                                            "cancelled": 0}):
        edited = json.loads(json.dumps(receipt))
        edited["step_statuses"] = bad
        report = verify_receipt(edited)
        assert not report.valid and report.failures[0].check == "members", bad


@pytest.mark.unverified_receipts  # a broken producer, on purpose
def test_a_producer_that_binds_false_counts_is_caught() -> None:
    c = Collector(goal="lie about the statuses")
    c.record("explode", {"x": 1}, agent="alice", kind="tool_call", status="error")
    c._status_counts["error"] -= 1  # a producer counting wrong: the close step binds its claim
    c._status_counts["ok"] += 1
    receipt = c.finalize("done")
    assert receipt["step_statuses"] == {"ok": 1, "error": 0, "cancelled": 0}
    report = verify_receipt(receipt)
    assert not report.valid and report.failures[0].check == "chain"
    assert "step_statuses does not count" in report.failures[0].reason


def test_a_receipt_without_counts_still_verifies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Receipts from before the member: it is optional, and bound only when present."""
    import aer1._collector as collector_module

    plain = collector_module.close_workflow

    def without_counts(**members: Any) -> dict[str, Any]:
        members.pop("step_statuses")
        return plain(**members)

    monkeypatch.setattr(collector_module, "close_workflow", without_counts)
    _, receipt = _receipt()
    assert "step_statuses" not in receipt
    assert verify_receipt(receipt).valid


def test_the_between_runs_builders_refuse_what_the_vocabulary_does_not_define() -> None:
    with pytest.raises(ValueError, match="operation must be one of reset, load_state, save_state"):
        vocab.lifecycle("agentchat", operation="pause", subject="agent")
    for build in (lambda: vocab.lifecycle("agentchat", operation="reset", subject="runtime"),
                  lambda: vocab.config_change("agentchat", agent="a", subject="runtime", old_digest=None,
                                              new_digest="0" * 64, changed=[]),
                  lambda: vocab.recording_conflict("agentchat", subject="runtime", name="a", other_workflow_ids=[],
                                                   detected="wrap")):
        with pytest.raises(ValueError, match="subject must be one of agent, team"):
            build()
    # The digest is of the canonical bytes: member order does not matter; a state that is no object has none.
    one = vocab.lifecycle("agentchat", operation="save_state", subject="agent", state={"b": 1, "a": [2.5]})
    two = vocab.lifecycle("agentchat", operation="load_state", subject="agent", state={"a": [2.5], "b": 1})
    assert one["state_digest"] == two["state_digest"] == vocab.state_digest({"a": [2.5], "b": 1})
    assert len(one["state_digest"]) == 64 and one["state_members"] == ["a", "b"]
    odd = vocab.lifecycle("agentchat", operation="load_state", subject="team", state=[1, 2])
    assert (odd["state_digest"], odd["state_members"]) == (None, None)
