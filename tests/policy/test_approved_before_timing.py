"""Trial: ``approved_before`` judged "before" by seq alone.

Steps are recorded when they end, so a call that started first and an approval given while
it ran (recorded before the call ended) read as "approved before". The approval must have
been decided (its ``ended_at``) no later than the step started. Honest gate runs, granted
and denied, keep passing.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from aer1 import Collector
from aer1.groupchat import ApprovalDecision, CallbackApproval, GroupChat, ScriptedAgent, ToolExecutor

from ..cli_runs import Run
from .conftest import policy_failures, write_policy

APPROVED_BEFORE = '[[rule]]\nname = "pay approved"\nform = "approved_before"\ntool = "pay"\n'


def _timed(folder: Path, approval_at: tuple[float, float], call_at: tuple[float, float]) -> Path:
    """An approval of call c1 recorded before the pay call c1, each with the given (start, end)."""
    c = Collector(goal="pay the invoice")
    c.record("task", {"task": "pay invoice 7"}, agent="user")
    c.record("approval", {"call_id": "c1", "tool": "pay", "decision": "approved", "arguments": {"amount": 5}},
             agent="gate", call_id="c1", started_at=approval_at[0], ended_at=approval_at[1])
    c.record("pay", {"arguments": {"amount": 5}, "result": "paid"}, agent="payments", call_id="c1",
             kind="tool_call", started_at=call_at[0], ended_at=call_at[1])
    path = folder / "receipt.json"
    c.save(path, workflow=c.finalize("paid"))
    return path


def test_approval_given_while_the_call_ran_does_not_gate_it(tmp_path: Path, run_cli: Run) -> None:
    t0 = time.time()
    path = _timed(tmp_path, approval_at=(t0 + 0.5, t0 + 1.0), call_at=(t0, t0 + 2.0))
    code, out, _ = run_cli(path, "--policy", write_policy(tmp_path, APPROVED_BEFORE), "--json")
    assert code == 1, f"got exit {code}, want 1: the call started before it was approved"
    [(_, message)] = policy_failures(out)
    assert "was decided after the step started" in message, message


@pytest.mark.parametrize("gap", [0.0, 0.25], ids=["same-microsecond", "later"])
def test_approval_decided_before_the_call_started_gates_it(tmp_path: Path, run_cli: Run, gap: float) -> None:
    t0 = time.time()
    path = _timed(tmp_path, approval_at=(t0, t0 + 0.5), call_at=(t0 + 0.5 + gap, t0 + 1.0 + gap))
    code, out, _ = run_cli(path, "--policy", write_policy(tmp_path, APPROVED_BEFORE))
    assert code == 0, out


def _pay(amount: int) -> str:
    """Pay an amount.

    Args:
        amount: How much.
    """
    return "paid"


def _slow(answer: bool | ApprovalDecision) -> CallbackApproval:
    """A reviewer that takes a moment, so a step timed from before the approval shows it."""

    def decide(request: object) -> bool | ApprovalDecision:
        time.sleep(0.002)
        return answer

    return CallbackApproval(decide)


@pytest.mark.parametrize("port", ["gate", "executor"])
@pytest.mark.parametrize("answer", [True, ApprovalDecision.deny("not today")], ids=["granted", "denied"])
def test_honest_gate_runs_pass(tmp_path: Path, run_cli: Run, answer: bool | ApprovalDecision, port: str) -> None:
    """Granted or denied, by the manager's gate or by the executor's own approval (whose
    granted call was timed from before the approval: fixed in ``groupchat/tools.py``)."""
    call = {"id": "c1", "type": "function", "function": {"name": "pay", "arguments": json.dumps({"amount": 5})}}
    planner = ScriptedAgent("planner", [{"role": "assistant", "content": None, "tool_calls": [call]},
                                        "done TERMINATE"])
    ports = {"approval": _slow(answer)} if port == "gate" else {"executor_approval": _slow(answer)}
    tools = ToolExecutor("tools", {"pay": _pay}, requires_confirmation=["pay"], **ports)  # type: ignore[arg-type]
    result = GroupChat([planner, tools], is_termination_msg=lambda m: "TERMINATE" in (m["content"] or ""),
                       initiator="user").run("Pay.")
    path = tmp_path / "receipt.json"
    result.save(str(path))
    code, out, _ = run_cli(path, "--policy", write_policy(tmp_path, APPROVED_BEFORE))
    assert code == 0, out
