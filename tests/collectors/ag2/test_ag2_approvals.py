"""Approvals: the collector's gate (callback and deferred ports), and AG2's own ``approval_required``."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from ag2 import Agent, tool
from ag2.exceptions import HumanInputNotProvidedError, HumanInputTimeoutError
from ag2.middleware.builtin.tools.approval import approval_required
from ag2.testing import TestConfig

from aer1.collectors.ag2 import NOT_INNERMOST, AER1AG2Collector, current_approval
from aer1.groupchat import ApprovalDecision, CallbackApproval, DeferredApproval, ToolApprovalRequest
from aer1.groupchat._approval import arguments_digest
from aer1.verifier._cli import main as verify_main

from .conftest import Check
from .support import call, of_kind

APPROVED_BEFORE = """format = "aer1-policy-v1"
[[rule]]
name = "transfers approved"
form = "approved_before"
tool = "transfer"
"""


class Bank:
    """A tool with a side effect: what ran, with what arguments, holding which token."""

    def __init__(self) -> None:
        self.ran: list[dict[str, Any]] = []
        self.tokens: list[Any] = []

    def __deepcopy__(self, memo: dict[int, Any]) -> Bank:
        return self  # AG2 deep-copies a registered tool, and with it this bound method's object

    async def transfer(self, amount: int, to: str) -> str:
        """Move money."""
        self.ran.append({"amount": amount, "to": to})
        self.tokens.append(current_approval())
        return f"sent {amount} to {to}"


def _agent(collector: AER1AG2Collector, bank: Bank, gate: Any, *turns: Any) -> Agent:
    gated = tool(bank.transfer, name="transfer", middleware=[gate])
    return collector.observe(Agent("teller", config=TestConfig(*turns, raise_tool_errors=False), tools=[gated]))


def _policy(collector: AER1AG2Collector, receipt: dict[str, Any], tmp_path: Path,
            capsys: pytest.CaptureFixture[str]) -> tuple[int, list[Any]]:
    path = tmp_path / "policy-receipt.json"
    collector.save(path, workflow=receipt)
    policy = tmp_path / "policy.toml"
    policy.write_text(APPROVED_BEFORE)
    capsys.readouterr()
    code = verify_main([str(path), "--policy", str(policy), "--json"])
    out = json.loads(capsys.readouterr().out)
    return code, [f for f in out["failures"] if f["check"] == "policy"]


async def test_an_approved_call_runs_with_a_one_use_token_bound_to_it(
    collector: AER1AG2Collector, check: Check, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asked: list[ToolApprovalRequest] = []
    gate = collector.approval_gate(CallbackApproval(lambda r: asked.append(r) is None))
    bank = Bank()
    agent = _agent(collector, bank, gate, call("transfer", "t1", amount=5, to="bob"), "done")
    reply = await agent.ask("pay bob")
    assert reply.body == "done" and bank.ran == [{"amount": 5, "to": "bob"}]
    [request] = asked
    assert request.run_id == str(reply.context.stream.id) and request.call_id == "t1" and request.tool == "transfer"
    [token] = bank.tokens
    assert token is not None and token.call_id == "t1" and token.tool == "transfer"
    assert token.run_id == request.run_id and token.arguments_digest == arguments_digest({"amount": 5, "to": "bob"})
    assert current_approval() is None  # the token does not outlive its call
    authority = gate.authority(request.run_id)
    with pytest.raises(Exception, match="already used"):  # one use: spent on the call that ran
        authority.redeem(token, call_id="t1", tool="transfer", arguments={"amount": 5, "to": "bob"})
    receipt, contents = check(collector)
    [(approval_step, approval)] = of_kind(receipt, contents, "approval")
    [(call_step, ran)] = of_kind(receipt, contents, "tool_call")
    assert approval["decision"] == "approved" and approval["approved"] is True and approval["name"] == "transfer"
    assert approval["responder"] == "callback" and approval["ag2"]["edited"] is False
    assert approval["arguments"] == ran["arguments"] == {"amount": 5, "to": "bob"}
    assert approval["arguments_digest"] == token.arguments_digest == ran["arguments_digest"]
    assert ran["ag2"]["approval_id"] == approval["ag2"]["approval_id"] == request.approval_id
    assert ran["ag2"]["grant_id"] == token.grant_id
    assert approval_step["call_id"] == call_step["call_id"] == "t1" and approval_step["seq"] < call_step["seq"]
    assert approval_step["ended_at"] <= call_step["started_at"]
    code, violations = _policy(collector, receipt, tmp_path, capsys)
    assert (code, violations) == (0, [])


async def test_a_denied_call_does_not_run_and_the_model_sees_an_error(
    collector: AER1AG2Collector, check: Check, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gate = collector.approval_gate(CallbackApproval(lambda r: False))
    bank = Bank()
    agent = _agent(collector, bank, gate, call("transfer", "t1", amount=5, to="bob"), "could not")
    reply = await agent.ask("pay bob")
    assert reply.body == "could not" and bank.ran == []
    [refused] = [e for e in await reply.history.get_events() if type(e).__name__ == "ToolErrorEvent"]
    assert json.loads(refused.result.parts[0].content) == {
        "error": {"kind": "approval-denied", "message": "approval denied: denied by reviewer"}}
    receipt, contents = check(collector)
    [(_, approval)] = of_kind(receipt, contents, "approval")
    [(call_step, stopped)] = of_kind(receipt, contents, "tool_call")
    assert approval["decision"] == "denied" and approval["approved"] is False
    assert call_step["status"] == "cancelled" and stopped["ag2"]["executed"] is False and stopped["result"] is None
    assert stopped["error"] == {"type": "approval_denied", "module": None, "message": refused.result.parts[0].content}
    code, violations = _policy(collector, receipt, tmp_path, capsys)
    assert (code, violations) == (0, [])  # a denied call that did not run is the gate working


async def test_a_deferred_approval_is_pending_then_decided(collector: AER1AG2Collector, check: Check) -> None:
    port = DeferredApproval()
    gate = collector.approval_gate(port)
    bank = Bank()
    agent = _agent(collector, bank, gate, call("transfer", "t1", amount=5, to="bob"), "waiting",
                   call("transfer", "t2", amount=5, to="bob"), "sent")
    first = await agent.ask("pay bob")
    [(approval_id, _)] = port.pending.items()
    pending = [e for e in await first.history.get_events() if type(e).__name__ == "ToolResultEvent"]
    assert pending[0].result.parts[0].content == f"approval required: {approval_id}" and bank.ran == []
    port.resolve(approval_id, True)
    second = await first.ask("try again")
    assert second.body == "sent" and bank.ran == [{"amount": 5, "to": "bob"}]
    receipt, contents = check(collector)
    decisions = [(s["call_id"], c["decision"]) for s, c in of_kind(receipt, contents, "approval")]
    assert decisions == [("t1", "pending"), ("t2", "approved")]
    statuses = [(s["call_id"], s["status"]) for s, _ in of_kind(receipt, contents, "tool_call")]
    assert statuses == [("t1", "cancelled"), ("t2", "ok")]


async def test_an_approval_that_edits_the_arguments_is_denied(collector: AER1AG2Collector, check: Check) -> None:
    def edit(request: ToolApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision("approved", "ok, but less", arguments={**request.arguments, "amount": 1})

    gate = collector.approval_gate(CallbackApproval(edit))
    bank = Bank()
    agent = _agent(collector, bank, gate, call("transfer", "t1", amount=500, to="bob"), "no")
    await agent.ask("pay bob")
    assert bank.ran == []
    receipt, contents = check(collector)
    [(_, approval)] = of_kind(receipt, contents, "approval")
    assert approval["decision"] == "denied" and approval["ag2"]["edited"] is True
    assert approval["ag2"]["reason"] == "the approval edited the arguments; edits are not applied"


async def test_a_failing_port_denies(collector: AER1AG2Collector, check: Check) -> None:
    def broken(request: ToolApprovalRequest) -> bool:
        raise OSError("reviewer offline")

    bank = Bank()
    agent = _agent(collector, bank, collector.approval_gate(CallbackApproval(broken)),
                   call("transfer", "t1", amount=5, to="bob"), "no")
    await agent.ask("pay bob")
    assert bank.ran == []
    receipt, contents = check(collector)
    [(step, approval)] = of_kind(receipt, contents, "approval")
    assert approval["decision"] == "denied" and "reviewer offline" in approval["ag2"]["reason"]
    assert step["status"] == "error" and approval["error"]["type"] == "OSError"  # the approval function raised


async def test_arguments_that_are_not_an_object_are_refused(collector: AER1AG2Collector, check: Check) -> None:
    bank = Bank()
    agent = _agent(collector, bank, collector.approval_gate(CallbackApproval(lambda r: True)),
                   call("transfer", "t1", amount=float("nan"), to="bob"), "no")
    await agent.ask("pay bob")
    assert bank.ran == []
    receipt, contents = check(collector)
    assert of_kind(receipt, contents, "approval") == []
    [(_, refused)] = of_kind(receipt, contents, "tool_call")
    assert refused["error"]["type"] == "arguments_invalid" and "exact JSON" in refused["error"]["message"]
    assert refused["ag2"]["exception"] == "ToolCallRefused"  # the gate's refusal, kept beside the common code


def test_the_gate_survives_the_deep_copy_of_tools(collector: AER1AG2Collector) -> None:
    gate = collector.approval_gate(CallbackApproval(lambda r: True))
    bank = Bank()
    agent = Agent("teller", config=TestConfig("x"), tools=[tool(bank.transfer, name="transfer", middleware=[gate])])
    [registered] = agent.tools
    assert registered.middleware[0].middleware is gate
    assert copy.deepcopy(gate) is gate and copy.copy(gate) is gate
    collector.finalize()


async def test_a_replayed_call_id_gets_no_token(collector: AER1AG2Collector, check: Check) -> None:
    gate = collector.approval_gate(CallbackApproval(lambda r: True))
    bank = Bank()
    agent = _agent(collector, bank, gate, call("transfer", "t1", amount=5, to="bob"), "once",
                   call("transfer", "t1", amount=5, to="bob"), "twice")
    first = await agent.ask("pay bob")
    await first.ask("again, same call id")
    assert bank.ran == [{"amount": 5, "to": "bob"}]
    receipt, contents = check(collector)
    decisions = [(c["decision"], c["ag2"]["reason"]) for _, c in of_kind(receipt, contents, "approval")]
    assert decisions == [("approved", None), ("denied", "call id was already gated in this run (replayed call)")]


# --------------------------------------------------------------- AG2's own approval_required


def _asking(collector: AER1AG2Collector, bank: Bank, hook: Any, *turns: Any, timeout: float | None = None) -> Agent:
    gated = tool(bank.transfer, name="transfer", middleware=[approval_required(timeout=timeout)])
    return collector.observe(Agent("teller", config=TestConfig(*turns, raise_tool_errors=False), tools=[gated],
                                   hitl_hook=hook))


@pytest.mark.parametrize(("answer", "decision", "ran"), [("y", "approved", 1), ("no", "denied", 0)])
async def test_ag2_approval_answered(collector: AER1AG2Collector, check: Check, answer: str, decision: str,
                                     ran: int) -> None:
    bank = Bank()
    agent = _asking(collector, bank, lambda event: answer, call("transfer", "t1", amount=5, to="bob"), "ok")
    await agent.ask("pay bob")
    assert len(bank.ran) == ran
    receipt, contents = check(collector)
    [(approval_step, approval)] = of_kind(receipt, contents, "approval")
    [(call_step, _)] = of_kind(receipt, contents, "tool_call")
    assert approval["decision"] == decision and approval["ag2"]["answer"] == answer and approval["ag2"]["grant"] is None
    assert approval["name"] == "transfer" and approval["arguments"] == {"amount": 5, "to": "bob"}
    assert approval["ag2"]["via"] == "ag2.approval_required" and "transfer" in approval["ag2"]["question"]
    assert approval["responder"] == "human"
    assert approval_step["call_id"] == "t1" == call_step["call_id"] and approval_step["seq"] < call_step["seq"]
    if ran:
        assert approval_step["ended_at"] <= call_step["started_at"]


async def test_ag2_approval_always_grants_later_calls(collector: AER1AG2Collector, check: Check) -> None:
    bank = Bank()
    answers: list[str] = []

    def hook(event: Any) -> str:
        answers.append(event.content)
        return "always"

    agent = _asking(collector, bank, hook, call("transfer", "t1", amount=5, to="bob"), "one",
                    call("transfer", "t2", amount=6, to="bob"), "two")
    first = await agent.ask("pay bob")
    await first.ask("pay bob again")
    assert len(bank.ran) == 2 and len(answers) == 1  # the second call was not asked about
    receipt, contents = check(collector)
    [(_, approval)] = of_kind(receipt, contents, "approval")
    assert approval["decision"] == "approved" and approval["ag2"]["grant"] == "always"
    assert approval["ag2"]["grant_scope"].startswith("function:")


async def test_ag2_approval_timeout(collector: AER1AG2Collector, check: Check) -> None:
    async def slow(event: Any) -> str:
        await asyncio.sleep(5)
        return "y"

    bank = Bank()
    agent = _asking(collector, bank, slow, call("transfer", "t1", amount=5, to="bob"), "ok", timeout=0.05)
    with pytest.raises(HumanInputTimeoutError):
        await agent.ask("pay bob")
    assert bank.ran == []
    receipt, contents = check(collector)
    [(approval_step, approval)] = of_kind(receipt, contents, "approval")
    assert approval["decision"] == "pending" and approval["approved"] is None and approval_step["status"] == "cancelled"
    [(call_step, failed)] = of_kind(receipt, contents, "tool_call")
    assert call_step["status"] == "error" and failed["error"]["type"] == "HumanInputTimeoutError"
    [(end_step, _)] = of_kind(receipt, contents, "termination")
    assert end_step["status"] == "error"


async def test_ag2_approval_without_any_hook(collector: AER1AG2Collector, check: Check) -> None:
    bank = Bank()
    agent = _asking(collector, bank, None, call("transfer", "t1", amount=5, to="bob"), "ok")
    with pytest.raises(HumanInputNotProvidedError):
        await agent.ask("pay bob")
    assert bank.ran == []
    receipt, contents = check(collector)
    assert of_kind(receipt, contents, "approval") == []  # nobody was asked: AG2 has no one to ask
    [(call_step, failed)] = of_kind(receipt, contents, "tool_call")
    assert call_step["status"] == "error" and failed["error"]["type"] == "HumanInputNotProvidedError"


async def test_a_gate_that_is_not_innermost_denies_without_asking(collector: AER1AG2Collector, check: Check) -> None:
    """A tool middleware listed after the gate could change the arguments after approval: the gate fails closed."""
    asked: list[Any] = []

    async def double(call_next: Any, event: Any, context: Any) -> Any:
        event.serialized_arguments = {**event.serialized_arguments, "amount": event.serialized_arguments["amount"] * 2}
        return await call_next(event, context)

    bank = Bank()
    gate = collector.approval_gate(CallbackApproval(lambda r: asked.append(r) is None))
    gated = tool(bank.transfer, name="transfer", middleware=[gate, double])
    agent = collector.observe(Agent("teller", config=TestConfig(call("transfer", "t1", amount=5, to="bob"), "no",
                                                                raise_tool_errors=False), tools=[gated]))
    await agent.ask("pay bob")
    assert bank.ran == [] and asked == []
    receipt, contents = check(collector)
    [(_, approval)] = of_kind(receipt, contents, "approval")
    assert approval["decision"] == "denied" and approval["ag2"]["reason"] == NOT_INNERMOST
    [(call_step, stopped)] = of_kind(receipt, contents, "tool_call")
    assert call_step["status"] == "cancelled" and stopped["error"]["type"] == "approval_denied"
