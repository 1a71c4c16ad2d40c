"""Trial: an Agent Framework approval for one tool must not let another tool's call through a policy."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from ..cli_runs import Run

if importlib.util.find_spec("agent_framework_orchestrations") is None:  # the ag2/autogen environments
    pytest.skip("the agent-framework extra is not installed", allow_module_level=True)

from agent_framework import Agent, Message, tool

from aer1 import Collector
from aer1.collectors.agent_framework import AER1AgentFrameworkCollector

from ..collectors.agent_framework.scripted import Call, ScriptedChatClient

PAY_APPROVED = """format = "aer1-policy-v1"
[[rule]]
name = "pay approved"
form = "approved_before"
tool = "pay"
"""


@tool(approval_mode="always_require")
def lookup(account: str) -> str:
    """Read an account (needs a human's approval)."""
    return f"balance of {account}: 10"


@tool
def pay(amount: int) -> str:
    """Move money: this app forgot to gate it, which is what the policy is there to catch."""
    return f"paid {amount}"


def _pay_policy(c: Collector, tmp_path: Path, run_cli: Run) -> tuple[int, str, list[tuple[str, list[int]]]]:
    """Save ``c``'s receipt and verify it under PAY_APPROVED: (exit code, output, policy violations)."""
    path = tmp_path / "receipt.json"
    c.save(path, workflow=c.finalize("done"))
    policy = tmp_path / "p.toml"
    policy.write_text(PAY_APPROVED)
    code, out, _ = run_cli(path, "--policy", policy, "--json")
    return code, out, [(f["rule"], f["seqs"]) for f in json.loads(out)["failures"] if f["check"] == "policy"]


async def _run(tmp_path: Path, script: list[str | Call], approved: bool = True) -> Path:
    collector = AER1AgentFrameworkCollector(goal="pay after a lookup")
    client = ScriptedChatClient(script)
    agent = collector.observe(Agent(client=client, name="teller", tools=[lookup, pay]))
    session = agent.create_session()
    first = await agent.run("check then pay", session=session)
    answer = first.user_input_requests[0].to_function_approval_response(approved)
    await agent.run(Message(role="user", contents=[answer]), session=session)
    path = tmp_path / "receipt.json"
    collector.save(path, workflow=collector.finalize("done"))
    return path


async def test_approval_of_another_function_with_a_reused_call_id_does_not_approve_pay(
        tmp_path: Path, run_cli: Run) -> None:
    # Models that number their calls reuse ids: lookup's approved call id "1" comes back for pay.
    path = await _run(tmp_path, [Call("lookup", {"account": "a"}, "1"), Call("pay", {"amount": 900}, "1"), "done"])
    steps = json.loads(path.read_text())["steps"]
    assert [(s["kind"], s["tool"]) for s in steps if s["kind"] in ("approval", "tool_call")] == [
        ("approval", "approve:lookup"), ("approval", "approve:lookup"), ("tool_call", "lookup"), ("tool_call", "pay")]
    policy = tmp_path / "p.toml"
    policy.write_text(PAY_APPROVED)
    code, out, _ = run_cli(path, "--policy", policy, "--json")
    pay_seq = next(s["seq"] for s in steps if s["tool"] == "pay")
    got = [(f["rule"], f["seqs"]) for f in json.loads(out)["failures"] if f["check"] == "policy"]
    assert (code, got) == (1, [("pay approved", [pay_seq])]), out


async def test_approved_call_of_the_named_function_still_passes(tmp_path: Path, run_cli: Run) -> None:
    path = await _run(tmp_path, [Call("lookup", {"account": "a"}, "1"), "done"])
    policy = tmp_path / "p.toml"
    policy.write_text(PAY_APPROVED.replace('"pay"', '"lookup"'))
    code, out, _ = run_cli(path, "--policy", policy)
    assert code == 0, out


@pytest.mark.parametrize("content", [{"decision": "denied", "approved": True},
                                     {"decision": "approved", "approved": False},
                                     {"decision": "approved", "tool": "pay", "function": "lookup"}])
def test_contradictory_approval_content_approves_nothing(content: dict[str, object], tmp_path: Path,
                                                         run_cli: Run) -> None:
    c = Collector(goal="pay")
    c.record("approval", {"call_id": "c1", **content}, agent="human", kind="approval", call_id="c1")
    c.record("pay", {"arguments": {"amount": 5}, "result": "paid"}, agent="teller", kind="tool_call", call_id="c1")
    code, out, got = _pay_policy(c, tmp_path, run_cli)
    assert (code, got) == (1, [("pay approved", [2])]), out


async def test_call_stopped_by_its_denied_approval_is_the_gate_working_not_a_violation(
        tmp_path: Path, run_cli: Run) -> None:
    path = await _run(tmp_path, [Call("lookup", {"account": "a"}, "1"), "done"], approved=False)
    steps = json.loads(path.read_text())["steps"]
    assert [(s["kind"], s["status"]) for s in steps if s["kind"] in ("approval", "tool_call")] == [
        ("approval", "ok"), ("approval", "ok"), ("tool_call", "cancelled")]
    policy = tmp_path / "p.toml"
    policy.write_text(PAY_APPROVED.replace('"pay"', '"lookup"'))
    code, out, _ = run_cli(path, "--policy", policy)
    assert code == 0, out


def test_cancelled_call_without_a_denied_approval_is_still_a_violation(tmp_path: Path, run_cli: Run) -> None:
    c = Collector(goal="pay")
    c.record("approval", {"tool": "lookup", "decision": "denied"}, agent="human", kind="approval", call_id="c1")
    c.record("pay", {"arguments": {"amount": 5}}, agent="teller", kind="tool_call", status="cancelled", call_id="c1")
    c.record("pay", {"arguments": {"amount": 5}}, agent="teller", kind="tool_call", status="cancelled", call_id="c2")
    code, out, got = _pay_policy(c, tmp_path, run_cli)
    assert (code, got) == (1, [("pay approved", [2]), ("pay approved", [3])]), out
