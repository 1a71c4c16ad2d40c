"""Trial: ``approved_before`` let a call through on an approval that did not approve it.

Two variants the argument binding missed: an ``approved`` member of JSON ``1`` (Python's
``1 == True``) counted as an approval, and an approval naming its arguments only by
``arguments_digest`` bound nothing when the call that ran named them only by value.
An honest built-in gate run (with a secret argument redacted on both sides) still passes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector
from aer1._canonical import exact_bytes
from aer1.groupchat import CallbackApproval, GroupChat, ScriptedAgent, ToolExecutor

from ..cli_runs import Run
from .conftest import policy_failures, write_policy

APPROVED_BEFORE = '[[rule]]\nname = "pay approved"\nform = "approved_before"\ntool = "pay"\n'


def _paid(folder: Path, approval: dict[str, Any], call: dict[str, Any]) -> Path:
    """An approval for call c1, then the pay call c1 with ``call`` as content."""
    c = Collector(goal="pay the invoice")
    c.record("task", {"task": "pay invoice 7"}, agent="user")
    c.record("approval", {"call_id": "c1", "tool": "pay", **approval}, agent="gate", call_id="c1")
    c.record("pay", {"call_id": "c1", "name": "pay", **call}, agent="payments", call_id="c1", kind="tool_call")
    path = folder / "receipt.json"
    c.save(path, workflow=c.finalize("paid"))
    return path


@pytest.mark.parametrize("value", [1, 1.0, "true", "approved"])
def test_approved_member_not_true_is_no_approval(tmp_path: Path, run_cli: Run, value: Any) -> None:
    path = _paid(tmp_path, {"approved": value}, {"arguments": {"amount": 5}})
    code, out, _ = run_cli(path, "--policy", write_policy(tmp_path, APPROVED_BEFORE), "--json")
    assert code == 1, f"got exit {code} for approved={value!r}, want 1 (only true approves)"
    [(rule, message)] = policy_failures(out)
    assert rule == "pay approved" and "was not approved" in message, message


def test_approved_true_still_approves(tmp_path: Path, run_cli: Run) -> None:
    path = _paid(tmp_path, {"approved": True}, {"arguments": {"amount": 5}})
    code, out, _ = run_cli(path, "--policy", write_policy(tmp_path, APPROVED_BEFORE))
    assert code == 0, out


def _digest(arguments: Any) -> str:
    return hashlib.sha256(exact_bytes(arguments)).hexdigest()


@pytest.mark.parametrize(("approval", "call"), [
    ({"arguments_digest": _digest({"amount": 5})}, {"arguments": {"amount": 5000}}),
    ({"arguments_digest": _digest({"amount": 5})}, {"arguments": '{"amount": 5000}'}),
    ({"arguments": {"amount": 5}}, {"arguments_digest": _digest({"amount": 5000})}),
    ({"arguments_digest": "not a digest"}, {"arguments": {"amount": 5}}),
    ({"arguments_digest": _digest({"amount": 5}).upper()}, {"arguments": {"amount": 5}}),
])  # fmt: skip
def test_digest_and_value_forms_bind_each_other(tmp_path: Path, run_cli: Run, approval: dict[str, Any],
                                                call: dict[str, Any]) -> None:
    path = _paid(tmp_path, {"decision": "approved", **approval}, call)
    code, out, _ = run_cli(path, "--policy", write_policy(tmp_path, APPROVED_BEFORE), "--json")
    assert code == 1, f"got exit {code}, want 1: the approval was for other arguments"
    [(_, message)] = policy_failures(out)
    assert "approved other arguments" in message, message


@pytest.mark.parametrize("ran", [{"amount": 5}, '{ "amount" : 5 }'])
def test_digest_approves_the_same_arguments_by_value(tmp_path: Path, run_cli: Run, ran: Any) -> None:
    path = _paid(tmp_path, {"decision": "approved", "arguments_digest": _digest({"amount": 5})}, {"arguments": ran})
    code, out, _ = run_cli(path, "--policy", write_policy(tmp_path, APPROVED_BEFORE))
    assert code == 0, out


def test_honest_gate_run_with_a_redacted_argument_passes(tmp_path: Path, run_cli: Run) -> None:
    paid: list[tuple[int, str]] = []

    def pay(amount: int, api_key: str) -> str:
        """Pay an amount.

        Args:
            amount: How much.
            api_key: The payment provider's key.
        """
        paid.append((amount, api_key))
        return "paid"

    arguments = json.dumps({"amount": 5, "api_key": "sk-live-0123456789abcdefghijklmnop"})
    call = {"id": "c1", "type": "function", "function": {"name": "pay", "arguments": arguments}}
    planner = ScriptedAgent("planner", [{"role": "assistant", "content": None, "tool_calls": [call]},
                                        "done TERMINATE"])
    tools = ToolExecutor("tools", {"pay": pay}, requires_confirmation=["pay"],
                         approval=CallbackApproval(lambda request: True))
    result = GroupChat([planner, tools], is_termination_msg=lambda m: "TERMINATE" in (m["content"] or ""),
                       initiator="user").run("Pay.")
    assert paid == [(5, "sk-live-0123456789abcdefghijklmnop")]
    path = tmp_path / "receipt.json"
    result.save(str(path))
    code, out, _ = run_cli(path, "--policy", write_policy(tmp_path, APPROVED_BEFORE), "--json")
    assert code == 0, out
