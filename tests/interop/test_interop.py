"""Interop with the real peers from PyPI (aer1-verify 0.2.19, aer1-autogen 0.1.15).

Our receipts must pass both peer verifiers; receipts made by the peer collector must
pass our AER-1 base checks, with an honest report of what did not apply.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aer1.verifier import verify_receipt

from ..helpers import KEYS, make_collector


def test_our_receipts_pass_both_peer_verifiers(tmp_path: Path, peer_verify_cli: Any,
                                               peer_verify_workflow: Any) -> None:
    for i, options in enumerate(({}, {"signing_key": KEYS / "trusted.key"})):
        c = make_collector(**options)
        receipt = c.finalize(final_answer="ok")
        path = c.save(tmp_path / f"r{i}.json", workflow=receipt)
        code, out = peer_verify_cli(path)
        assert code == 0, out
        assert "VERDICT: PASS" in out
        assert peer_verify_workflow(receipt) == []


def test_peer_verifiers_miss_edits_that_ours_catch(tmp_path: Path, peer_verify_cli: Any,
                                                   peer_verify_workflow: Any) -> None:
    """The reason this project exists: an edited agent name passes the peers, not us."""
    c = make_collector()
    receipt = c.finalize(final_answer="ok")
    receipt["steps"][1]["agent"] = "mallory"
    receipt["goal"] = "something else"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(receipt))
    assert peer_verify_workflow(receipt) == []
    assert peer_verify_cli(path)[0] == 0
    report = verify_receipt(path)
    assert not report.valid and report.failures[0].check == "chain"


async def test_peer_collector_receipts_pass_our_base_checks_with_an_honest_report(peer_module: Any) -> None:
    """The peer's documented usage, run for real: its receipt passes the AER-1 base checks."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_ext.models.replay import ReplayChatCompletionClient

    collector = peer_module.AER1AutoGenCollector(goal="peer run")
    client = ReplayChatCompletionClient(["draft: research, build, ship", "review: looks good"])
    alice = peer_module.AER1AgentWrapper(AssistantAgent("alice", model_client=client), collector)
    bob = peer_module.AER1AgentWrapper(AssistantAgent("bob", model_client=client), collector)
    result = await RoundRobinGroupChat([alice, bob], max_turns=2).run(task="Plan the product launch")
    receipt = collector.finalize(final_answer=result.messages[-1].content)
    assert len(receipt["steps"]) == 2
    report = verify_receipt(receipt)
    assert report.valid, [f.reason for f in report.failures]
    assert report.profile is None
    statuses = {c.name: c.status for c in report.checks}
    assert statuses == {"parse": "PASS", "members": "PASS", "sequence": "PASS", "merkle_root": "PASS",
                        "chain": "NOT CHECKED", "signature": "NOT CHECKED", "evidence": "NOT CHECKED",
                        "expected": "NOT CHECKED", "timestamp": "NOT CHECKED", "key": "NOT CHECKED"}
    assert "no chain" in report.check("chain").detail
    assert any("only the AER-1 base checks apply" in n for n in report.notes)
    # and a tampered peer receipt is still caught where the base checks reach
    receipt["merkle_root"] = "0" * 64
    assert verify_receipt(receipt).failures[0].check == "merkle_root"


def test_the_between_runs_kinds_pass_both_peer_verifiers(tmp_path: Path, peer_verify_cli: Any,
                                                         peer_verify_workflow: Any) -> None:
    """``lifecycle``, ``config_change`` and ``recording_conflict``: the peers read no kind, like ``link``/``close``."""
    from aer1 import Collector
    from aer1 import _steps_vocab as vocab

    c = Collector(goal="between runs", signing_key=KEYS / "trusted.key")
    c.record("lifecycle", vocab.lifecycle("agentchat", operation="save_state", subject="agent", state={"a": 1}),
             agent="alice", kind="lifecycle")
    c.record("config_change", vocab.config_change("agentchat", agent="alice", subject="agent", old_digest="0" * 64,
                                                  new_digest="1" * 64, changed=["system_message"]),
             agent="alice", kind="config_change")
    c.record("recording_conflict", vocab.recording_conflict("agentchat", subject="agent", name="alice",
                                                            other_workflow_ids=[c.workflow_id], detected="wrap"),
             agent="alice", kind="recording_conflict")
    receipt = c.finalize(final_answer="ok")
    path = c.save(tmp_path / "between.json", workflow=receipt)
    assert [s["kind"] for s in receipt["steps"]] == ["lifecycle", "config_change", "recording_conflict", "close"]
    report = verify_receipt(path)
    assert report.valid and report.check("evidence").status == "PASS", [f.reason for f in report.failures]
    code, out = peer_verify_cli(path)
    assert code == 0 and "VERDICT: PASS" in out, out
    assert peer_verify_workflow(receipt) == []
