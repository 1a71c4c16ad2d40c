"""The cross-collector run shapes on AG2 1.x: the same members and statuses as every other collector.

``tests/collectors/test_scenarios.py`` fixes what AgentChat, the autogen-core hooks and the
built-in manager record of three tool calls (one succeeds, one raises, one has malformed
arguments); the AG2 run here must record the same, and one policy over the four receipts
must give the same answers. A cancellation mid-tool and a timeout
record the unfinished call and the turn as cut off and the receipt as incomplete. Actions
still under way at ``finalize()`` (a tool, a question to a human, an approval being
decided, a handoff not yet posted, an open channel) are recorded cancelled, never dropped.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")

from ag2 import Agent, tool
from ag2.annotations import Context
from ag2.middleware import BaseMiddleware
from ag2.middleware.builtin.tools.approval import approval_required
from ag2.testing import TestConfig

from aer1._vocabulary import VOCABULARY, status_counts
from aer1.collectors.ag2 import AER1AG2Collector
from aer1.groupchat import CallbackApproval, ToolApprovalRequest
from aer1.verifier._cli import main as verify_main

from ...receipts import Peers, verify_everywhere
from ..test_scenarios import RUNNERS, WANT, Ctx, Done, tool_shape
from .conftest import Check
from .scenarios import SHAPE, cancelled_mid_tool_run, timeout_run, tool_calls_run
from .support import call, of_kind
from .test_ag2_network import _desk_to_triage, _workflow

#: One policy whose rules read tool names, arguments, approvals and step order.
POLICY = """format = "aer1-policy-v1"
[allow]
tools = ["add"]

[[rule]]
name = "small additions"
form = "argument"
tool = "add"
argument = "a"
max = 1

[[rule]]
name = "explosions approved"
form = "approved_before"
tool = "explode"

[[rule]]
name = "reasons are words"
form = "argument"
tool = "explode"
argument = "reason"
pattern = "[a-z]+"

[[rule]]
name = "two calls at most"
form = "at_most"
kind = "tool_call"
count = 2

[[rule]]
name = "nothing after the end"
form = "none_after"
kind = "tool_call"
after = "termination"
"""


def test_the_scenario_shape_is_the_one_every_collector_runs() -> None:
    from ..test_scenarios import SHAPE as SHARED

    assert SHAPE == SHARED


async def test_the_same_tool_calls_read_as_in_every_collector(tmp_path: Path, peers: Peers | None) -> None:
    receipt, contents = await tool_calls_run(tmp_path)
    verify_everywhere(tmp_path / "receipt.json", receipt, peers)
    assert tool_shape((receipt, contents)) == WANT
    assert receipt["status"] == "ok"  # handled tool errors are their steps' errors; the run ended by itself
    assert status_counts(receipt)["error"] == 2
    assert all(c["vocabulary"] == VOCABULARY for s, c in contents.items() if receipt["steps"][s - 1]["kind"] != "close")
    calls = {s["call_id"]: contents[s["seq"]] for s in receipt["steps"] if s["kind"] == "tool_call"}
    assert calls["c1"]["result"] == 5 and calls["c2"]["error"]["type"] == "ValueError"
    assert calls["c3"]["error"]["type"] == "arguments_invalid"  # refused before the tool ran, as everywhere
    assert calls["c3"]["ag2"]["exception"] == "JSONDecodeError"  # AG2 parses the arguments, and raises


def _tools_run(collector: str) -> Any:
    """The shared ``tools`` shape on one of the other collectors, saved in ``folder``."""

    async def run(folder: Path) -> Done:
        return await RUNNERS[collector]("tools", Ctx(folder, None))

    return run


agentchat_run, core_run, builtin_run = _tools_run("agentchat"), _tools_run("autogen_core"), _tools_run("groupchat")


#: Rules whose answer names steps by their place in the chain: the calls of one model reply
#: run concurrently in AG2, so which call is the third to settle varies; the count does not.
BY_POSITION = ("two calls at most",)


def _policy_failures(path: Path, policy: Path, capsys: pytest.CaptureFixture[str],
                     receipt: dict[str, Any]) -> list[tuple[str, str, list[tuple[str, str | None]]]]:
    """(rule, message, the (tool, call id) of each step named) of every policy violation."""
    capsys.readouterr()
    code = verify_main([str(path), "--policy", str(policy), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1, out
    by_seq = {s["seq"]: (s["tool"], s.get("call_id")) for s in receipt["steps"]}
    found = []
    for failure in out["failures"]:
        assert failure["check"] == "policy", failure
        named = [] if failure["rule"] in BY_POSITION else sorted(by_seq[n] for n in failure["seqs"])
        found.append((failure["rule"], failure["message"], named))
    return sorted(found)


async def test_one_policy_gives_the_same_answers_on_ag2_and_the_other_collectors_receipts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    answers = {}
    for name, run in (("agentchat", agentchat_run), ("autogen_core", core_run), ("groupchat", builtin_run),
                      ("ag2", tool_calls_run)):
        folder = tmp_path / name
        folder.mkdir()
        receipt, _ = await run(folder)
        answers[name] = _policy_failures(folder / "receipt.json", policy, capsys, receipt)
    ag2 = answers.pop("ag2")
    assert answers == dict.fromkeys(answers, ag2)
    assert {rule for rule, *_ in ag2} == {"allow.tools", "small additions", "explosions approved",
                                          "two calls at most"}
    small = [(steps, message) for rule, message, steps in ag2 if rule == "small additions"]
    assert [(steps, "too large" in m, "malformed" in m) for steps, m in small] == [
        ([("add", "c1")], True, False), ([("add", "c3")], False, True)]


async def test_cancelled_mid_tool_and_finalized_at_once_is_recorded_not_ok(tmp_path: Path,
                                                                          peers: Peers | None) -> None:
    collector, receipt, contents = await cancelled_mid_tool_run(tmp_path)
    verify_everywhere(tmp_path / "receipt.json", receipt, peers)
    kinds = [(s["kind"], s["tool"], s["status"]) for s in receipt["steps"]]
    assert ("tool_call", "wait_forever", "cancelled") in kinds and ("error", "turn_error", "cancelled") in kinds
    assert ("termination", "turn_end", "cancelled") in kinds
    assert receipt["status"] == "incomplete"
    [call_step] = [s for s in receipt["steps"] if s["kind"] == "tool_call"]
    content = contents[call_step["seq"]]
    assert (content["call_id"], content["result"], content["error"]["type"]) == ("w1", None, "cancelled")
    assert content["arguments"] == {"seconds": 5}
    [end] = [contents[s["seq"]] for s in receipt["steps"] if s["kind"] == "termination"]
    assert (end["outcome"], end["observed"]) == ("unfinished", False)
    assert collector.late_records == 0  # the turn unwound after finalize: nothing of it arrived late
    again = collector.finalize()  # finalize() again: the same receipt, no second cut
    assert again["receipt_id"] == receipt["receipt_id"] and again["status"] == "incomplete"


async def test_a_timeout_records_the_call_and_the_turn_cancelled(tmp_path: Path, peers: Peers | None) -> None:
    collector, receipt, contents = await timeout_run(tmp_path)
    verify_everywhere(tmp_path / "receipt.json", receipt, peers)
    by_kind = {s["kind"]: (s, contents[s["seq"]]) for s in receipt["steps"]}
    call_step, call_content = by_kind["tool_call"]
    assert call_step["status"] == "cancelled" and call_content["error"]["type"] == "CancelledError"
    assert call_content["result"] is None
    error_step, _ = by_kind["error"]
    end_step, end = by_kind["termination"]
    assert error_step["status"] == end_step["status"] == "cancelled" and end["outcome"] == "cancelled"
    assert receipt["status"] == "incomplete" and collector.late_records == 0


async def test_a_question_to_a_human_open_at_finalize_is_cut_off(collector: AER1AG2Collector, check: Check) -> None:
    asked = asyncio.Event()

    async def human(event: Any) -> str:
        asked.set()
        await asyncio.Event().wait()
        return "never"

    async def ask_human(question: str, ctx: Context) -> str:
        """Ask the human."""
        return str(await ctx.input(question))

    agent = collector.observe(Agent("alice", config=TestConfig(call("ask_human", "h1", question="ok?"), "done"),
                                    tools=[ask_human], hitl_hook=human))
    turn = asyncio.ensure_future(agent.ask("ask"))
    await asyncio.wait_for(asked.wait(), timeout=30)
    receipt, contents = check(collector)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    [(step, question)] = of_kind(receipt, contents, "human_input")
    assert step["status"] == "cancelled" and question["input"] is None and question["prompt"] == "ok?"
    assert question["error"]["type"] == "cancelled" and question["ag2"]["in_call"] == "h1"
    [(call_step, _)] = of_kind(receipt, contents, "tool_call")
    assert call_step["status"] == "cancelled" and receipt["status"] == "incomplete"
    assert step["seq"] < call_step["seq"]  # the question was asked inside the call


async def test_an_ag2_approval_unanswered_at_finalize_is_cut_off(collector: AER1AG2Collector, check: Check) -> None:
    asked = asyncio.Event()

    async def human(event: Any) -> str:
        asked.set()
        await asyncio.Event().wait()
        return "y"

    async def transfer(amount: int) -> str:
        """Move money."""
        return "sent"

    gated = tool(transfer, middleware=[approval_required()])
    agent = collector.observe(Agent("teller", config=TestConfig(call("transfer", "t1", amount=5), "done"),
                                    tools=[gated], hitl_hook=human))
    turn = asyncio.ensure_future(agent.ask("pay"))
    await asyncio.wait_for(asked.wait(), timeout=30)
    receipt, contents = check(collector)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    [(step, approval)] = of_kind(receipt, contents, "approval")
    assert step["status"] == "cancelled" and approval["decision"] == "pending" and step["call_id"] == "t1"
    assert approval["name"] == "transfer" and approval["arguments"] == {"amount": 5}
    assert approval["error"]["type"] == "cancelled" and approval["ag2"]["via"] == "ag2.approval_required"
    [(call_step, _)] = of_kind(receipt, contents, "tool_call")
    assert call_step["status"] == "cancelled" and receipt["status"] == "incomplete"
    assert collector.late_records == 0


async def test_an_approval_being_decided_at_finalize_is_cut_off(collector: AER1AG2Collector, check: Check) -> None:
    deciding = asyncio.Event()
    ran: list[int] = []

    async def reviewer(request: ToolApprovalRequest) -> bool:
        deciding.set()
        await asyncio.Event().wait()
        return True

    async def transfer(amount: int) -> str:
        """Move money."""
        ran.append(amount)
        return "sent"

    gate = collector.approval_gate(CallbackApproval(reviewer))
    agent = collector.observe(Agent("teller", config=TestConfig(call("transfer", "t1", amount=5), "done"),
                                    tools=[tool(transfer, middleware=[gate])]))
    turn = asyncio.ensure_future(agent.ask("pay"))
    await asyncio.wait_for(deciding.wait(), timeout=30)
    receipt, contents = check(collector)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    assert ran == []
    [(step, approval)] = of_kind(receipt, contents, "approval")
    assert step["status"] == "cancelled" and approval["decision"] == "pending" and approval["approved"] is None
    assert approval["error"]["type"] == "cancelled" and approval["arguments"] == {"amount": 5}
    assert approval["arguments_digest"] is not None and step["call_id"] == "t1"
    [(call_step, _)] = of_kind(receipt, contents, "tool_call")
    assert call_step["status"] == "cancelled" and receipt["status"] == "incomplete"
    assert collector.late_records == 0


async def test_a_handoff_not_yet_posted_at_finalize_is_cut_off(collector: AER1AG2Collector, check: Check) -> None:
    """triage's tool returns a Handoff; before its turn ends (and the hub posts it), the receipt is finalized."""
    second_call = asyncio.Event()
    receipts: list[Any] = []

    class FinalizeOnSecondModelCall(BaseMiddleware):
        calls = 0

        async def on_llm_call(self, call_next: Any, events: Any, context: Any) -> Any:
            type(self).calls += 1
            if type(self).calls == 2:  # the Handoff came back; the turn goes on
                receipts.append(check(collector))
                second_call.set()
            return await call_next(events, context)

    triage = TestConfig(call("route", "r1", reason="a billing question"), "handing over")
    billing = TestConfig(call("resolve", "f1", summary="refunded"), "refunded")
    await _workflow(collector, triage, billing, _desk_to_triage, middleware={"triage": [FinalizeOnSecondModelCall]})
    assert second_call.is_set()
    [(receipt, contents)] = receipts
    [(step, handoff)] = of_kind(receipt, contents, "handoff")
    assert step["status"] == "cancelled" and step["target"] == "billing" and step["call_id"] == "r1"
    assert handoff["error"]["type"] == "cancelled" and handoff["call_id"] == "r1"
    [(end_step, end)] = of_kind(receipt, contents, "termination")
    assert end_step["tool"] == "channel_unfinished" and end["outcome"] == "unfinished"
    errors = [(s["agent"], s["status"]) for s, _ in of_kind(receipt, contents, "error")]
    assert ("triage", "cancelled") in errors  # its turn was cut off
    assert receipt["status"] == "incomplete"
    assert collector.late_records > 0  # what the network did after finalize() is not in the receipt, and is said
