"""Mark, record, verify, erase by path and by value, verify again, on real collector runs.

The AgentChat run is a real AssistantAgent with a real tool on AutoGen's
ReplayChatCompletionClient; the manager run is the built-in group chat with a real tool
executor. Erasure must leave the receipt and evidence bytes, root, chain and signature as
they were.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from autogen_agentchat.agents import AssistantAgent

from aer1 import Collector
from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector
from aer1.groupchat import GroupChat, ScriptedAgent, ToolExecutor

from ..collectors.agentchat.conftest import calls
from ..scripted_models import scripted_client
from .conftest import Key, erase, fields, run_aer1, snapshot, verify

EMAIL = "alice@example.com"


def lookup(email: str) -> str:
    """Find a customer by e-mail."""
    return f"customer Alice Smith <{email}>"


async def _agentchat_receipt(folder: Path, key: Key, name: str = "run") -> Path:
    collector = AER1AutoGenCollector(goal="find a customer", signing_key=str(key.private),
                                     personal=["arguments.email", "result", "content"])
    client = scripted_client([calls(("c1", "lookup", json.dumps({"email": EMAIL}))), "done"])
    agent = AER1AgentWrapper(AssistantAgent("alice", model_client=client, tools=[lookup]), collector)
    result = await agent.run(task="find the customer")
    receipt = collector.finalize(result)
    assert collector.verify(receipt) == []
    return Path(collector.save(str(folder / f"{name}.json"), workflow=receipt))


async def _manager_receipt(folder: Path, key: Key) -> Path:
    call = {"id": "t1", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"email": EMAIL})}}
    planner = ScriptedAgent("planner", [{"role": "assistant", "content": None, "tool_calls": [call]}, "done TERMINATE"])
    chat = GroupChat([planner, ToolExecutor("tools", {"lookup": lookup})],
                     is_termination_msg=lambda m: "TERMINATE" in (m["content"] or ""), initiator="user",
                     collector_options={"signing_key": str(key.private), "personal": ["**.email", "result"]})
    result = await chat.arun("Look up the customer.")
    path = folder / "manager.json"
    result.save(str(path))
    return path


def _signed_members(receipt: Path) -> dict[str, Any]:
    doc = json.loads(receipt.read_bytes())
    return {k: doc[k] for k in ("merkle_root", "chain_head", "signature")}


async def test_agentchat_round_trip(tmp_path: Path, key: Key) -> None:
    path = await _agentchat_receipt(tmp_path, key)
    before, members = snapshot(path), _signed_members(path)
    evidence = path.with_name("run.evidence.jsonl").read_text()
    assert EMAIL not in evidence, "a marked value reached the hashed evidence"
    assert EMAIL not in path.read_text()
    report = verify(path, key)
    assert report.verdict == "VALID" and report.basis()["evidence"] == "checked"
    assert fields(report) == {"committed": 4, "disclosed": 4, "erased": [], "withheld": []}

    out = erase(path, key, "--step", "2", "--path", "arguments.email")
    assert [(e["seq"], e["path"]) for e in out["erased"]] == [(2, "/arguments/email")]
    report = verify(path, key)
    assert report.verdict == "VALID", report.to_text()
    got = fields(report)
    assert got["disclosed"] == 3 and got["withheld"] == []
    assert [(e["seq"], e["path"], e["key_id"], e["reason"]) for e in got["erased"]] == [
        (2, "/arguments/email", key.key_id, "GDPR Art. 17 request 42")]
    assert "1 erased (1 by key " + key.key_id[:16] in report.to_text()
    assert snapshot(path) == before and _signed_members(path) == members


async def test_erase_by_value_across_an_archive(tmp_path: Path, key: Key) -> None:
    archive = tmp_path / "archive"
    archive.mkdir()
    paths = [await _agentchat_receipt(archive, key, f"run{i}") for i in range(2)]
    paths.append(await _manager_receipt(archive, key))
    before = {p: snapshot(p) for p in paths}
    for p in paths:
        assert EMAIL in p.with_name(p.stem + ".disclosures.jsonl").read_text()
    out = erase(archive, key, "--value", EMAIL, "--contains")
    assert {e["receipt"] for e in out["erased"]} == {str(p) for p in paths}
    for p in paths:
        assert EMAIL not in p.with_name(p.stem + ".disclosures.jsonl").read_text()
        report = verify(p, key)
        assert report.verdict == "VALID", report.to_text()
        got = fields(report)
        assert got["withheld"] == [] and got["erased"], got
        assert snapshot(p) == before[p]
    code, text, _ = run_aer1("verify", str(archive), "--key", str(key.public), "--require", "evidence")
    assert code == 0, text
    code, _, _ = run_aer1("erase", archive, "--value", EMAIL, "--reason", "again", "--key", key.private)
    assert code == 0  # nothing left to erase is not an error


async def test_manager_round_trip_and_withheld(tmp_path: Path, key: Key) -> None:
    path = await _manager_receipt(tmp_path, key)
    report = verify(path, key)
    assert report.verdict == "VALID" and fields(report)["committed"] >= 1
    # A disclosures file deleted without any erasure record: every committed field is withheld.
    saved = tmp_path / "kept.jsonl"
    disclosures = path.with_name("manager.disclosures.jsonl")
    shutil.copy(disclosures, saved)
    disclosures.unlink()
    report = verify(path, key)
    assert report.verdict == "VALID" and report.basis()["evidence"] == "partly checked"
    assert len(fields(report)["withheld"]) == fields(report)["committed"]
    code, text, _ = run_aer1("verify", str(path), "--key", str(key.public), "--require", "evidence")
    assert code == 1 and "withheld" in text, text
    shutil.copy(saved, disclosures)
    assert verify(path, key).basis()["evidence"] == "checked"


def test_unmarked_collector_writes_todays_bytes(tmp_path: Path) -> None:
    """No marking: no disclosures file, and the same content bytes as a collector without the option."""
    ids = ("11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222")
    out = []
    for personal in (None, ["nothing.matches"]):
        c = Collector("g", _ids=ids, personal=personal)
        c.record("lookup", {"arguments": {"email": EMAIL}}, started_at=1.0, ended_at=2.0)
        receipt = c.finalize()
        out.append([s["receipt_hash"] for s in receipt["steps"][:-1]])
    assert out[0] == out[1]
    plain = Collector("g")
    plain.record("lookup", {"arguments": {"email": EMAIL}})
    plain.save(str(tmp_path / "plain.json"))
    assert not (tmp_path / "plain.disclosures.jsonl").exists()
    assert "fields" not in verify(tmp_path / "plain.json").to_dict()
