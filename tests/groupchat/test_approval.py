"""The approval gate: granted, denied, deferred, forged, replayed, edited, other call, other run."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aer1.groupchat import (
    ApprovalDecision,
    ApprovalToken,
    CallbackApproval,
    ChatResult,
    DeferredApproval,
    FunctionAgent,
    GroupChat,
    RunState,
    ScriptedAgent,
    ToolApprovalRequest,
    ToolExecutor,
    TurnContext,
)
from aer1.groupchat._approval import TokenAuthority, TokenRefused

from .helpers import step_contents, step_pairs

M = "manager"
DONE = "done TERMINATE"


def ends(message: dict[str, Any]) -> bool:
    return "TERMINATE" in (message["content"] or "")


class Files:
    """A tool with a visible side effect."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete(self, path: str) -> str:
        """Delete a file.

        Args:
            path: The file to delete.
        """
        self.deleted.append(path)
        return f"deleted {path}"


class Reviewer:
    """A scripted reviewer that remembers what it was asked."""

    def __init__(self, *answers: bool | ApprovalDecision) -> None:
        self.answers = list(answers)
        self.asked: list[ToolApprovalRequest] = []

    def __call__(self, request: ToolApprovalRequest) -> bool | ApprovalDecision:
        self.asked.append(request)
        return self.answers.pop(0)


def delete_call(call_id: str, path: str = "/srv/old.csv") -> dict[str, Any]:
    arguments = json.dumps({"path": path})
    return {"id": call_id, "type": "function", "function": {"name": "delete", "arguments": arguments}}


def ask(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def executor(files: Files, gate: Any = None, own: Any = None) -> ToolExecutor:
    return ToolExecutor(
        "tools", {"delete": files.delete}, requires_confirmation=["delete"], approval=gate, executor_approval=own
    )


def chat(turns: list[Any], tools: ToolExecutor) -> ChatResult:
    planner = ScriptedAgent("planner", turns)
    return GroupChat([planner, tools], is_termination_msg=ends, initiator="user").run("Clean up.")


def pairs(*tool_turns: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The step sequence of planner/tools rounds, each tools turn with the given inner steps."""
    out = [("task", "user")]
    for inner in tool_turns:
        out += [
            ("speaker_selection", M),
            ("message", "planner"),
            ("speaker_selection", M),
            *inner,
            ("message", "tools"),
        ]
    return [*out, ("speaker_selection", M), ("message", "planner"), ("termination", M), ("close", "aer1")]


GATED = [("approval", "tools"), ("tool_call", "tools")]


def contents_of(result: ChatResult, folder: Path, kind: str) -> list[dict[str, Any]]:
    contents = step_contents(result, folder)
    return [contents[s["seq"] - 1] for s in result.receipt["steps"] if s["kind"] == kind]


def test_granted_runs_once_and_the_executor_does_not_ask_again(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    files, gate, own = Files(), Reviewer(True), Reviewer()
    result = chat([ask(delete_call("c1")), DONE], executor(files, CallbackApproval(gate), CallbackApproval(own)))
    assert step_pairs(result) == pairs(GATED)
    assert files.deleted == ["/srv/old.csv"]
    assert len(gate.asked) == 1 and own.asked == []
    request = gate.asked[0]
    assert (request.run_id, request.call_id, request.tool, dict(request.arguments)) == (
        result.run_id,
        "c1",
        "delete",
        {"path": "/srv/old.csv"},
    )
    [approval] = contents_of(result, tmp_path, "approval")
    assert approval == {
        "vocabulary": "aer1-steps/1",
        "decision": "approved",
        "approved": True,
        "name": "delete",
        "call_id": "c1",
        "arguments": {"path": "/srv/old.csv"},
        "arguments_digest": request.digest,
        "responder": "gate",
        "groupchat": {"approval_id": request.approval_id, "port": "callback", "reason": None, "edited": False,
                      "refused_grant": None},
    }
    [tool_call] = contents_of(result, tmp_path, "tool_call")
    assert tool_call["groupchat"]["approval_id"] == request.approval_id
    assert tool_call["arguments_digest"] == approval["arguments_digest"]
    assert tool_call["result"] == "deleted /srv/old.csv" and "error" not in tool_call
    check_receipt(result)


def test_denied_reaches_the_model_as_an_error_and_the_tool_does_not_run(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    files = Files()
    gate = Reviewer(ApprovalDecision.deny("not on a Friday"))
    result = chat([ask(delete_call("c1")), DONE], executor(files, CallbackApproval(gate)))
    assert step_pairs(result) == pairs(GATED)
    assert files.deleted == []
    response = result.messages[2]["tool_responses"][0]
    assert json.loads(response["content"]) == {
        "error": {"kind": "approval-denied", "message": "approval denied: not on a Friday"}
    }
    [approval] = contents_of(result, tmp_path, "approval")
    assert (approval["decision"], approval["groupchat"]["reason"]) == ("denied", "not on a Friday")
    [header] = [s for s in result.receipt["steps"] if s["kind"] == "tool_call"]
    assert header["status"] == "cancelled"
    check_receipt(result)


def test_deferred_answers_approval_required_then_a_resolved_retry_runs(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    files, port = Files(), DeferredApproval()
    tools = executor(files, port)
    turn = iter(range(3))

    def planner(history: Any) -> Any:
        step = next(turn)
        if step == 0:
            return ask(delete_call("c1"))
        if step == 1:
            # someone approves out of band; the model retries the same call under a new id
            [approval_id] = list(port.pending)
            port.resolve(approval_id, approved=True, reason="ticket 7")
            return ask(delete_call("c2"))
        return DONE

    chat = GroupChat([FunctionAgent("planner", planner), tools], is_termination_msg=ends, initiator="user")
    result = chat.run("Clean up.")
    assert step_pairs(result) == pairs(GATED, GATED)
    first = result.messages[2]["tool_responses"][0]["content"]
    assert first.startswith("approval required: apr_")
    assert files.deleted == ["/srv/old.csv"]
    assert port.pending == {}
    approvals = contents_of(result, tmp_path, "approval")
    assert [(a["groupchat"]["port"], a["decision"], a["call_id"]) for a in approvals] == [
        ("deferred", "pending", "c1"),
        ("deferred", "approved", "c2"),
    ]
    assert first == "approval required: " + approvals[0]["groupchat"]["approval_id"]
    headers = [s for s in result.receipt["steps"] if s["kind"] == "tool_call"]
    assert [h["status"] for h in headers] == ["cancelled", "ok"]
    check_receipt(result)


def test_a_full_deferred_port_denies_new_requests_and_records_the_denial(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    files, port = Files(), DeferredApproval(limit=1)
    turns = [ask(delete_call("c1", "/srv/a.csv")), ask(delete_call("c2", "/srv/b.csv")), DONE]
    result = chat(turns, executor(files, port))
    assert files.deleted == []
    assert len(port.pending) == 1
    approvals = contents_of(result, tmp_path, "approval")
    assert [(a["decision"], a["call_id"]) for a in approvals] == [("pending", "c1"), ("denied", "c2")]
    assert approvals[1]["groupchat"]["reason"] == "too many approvals waiting: 1, limit 1; resolve some first"
    # a finished run's requests can be dropped; the port then takes requests again
    [request] = port.pending.values()
    assert port.forget_run(request.run_id) == 1
    assert port.pending == {}
    check_receipt(result)


def test_a_deferred_port_keeps_a_bounded_number_of_decisions_and_drops_the_oldest() -> None:
    port = DeferredApproval(limit=2)

    def request(n: int) -> ToolApprovalRequest:
        return ToolApprovalRequest(run_id="r", call_id=f"c{n}", tool="delete", arguments={"path": f"/srv/{n}"})

    for n in range(3):
        first = request(n)
        assert asyncio.run(port.request(first)).outcome == "pending"
        port.resolve(first.approval_id, approved=True)
    # the decision for call 0 was dropped: its retry is asked again (fail closed)
    assert asyncio.run(port.request(request(0))).outcome == "pending"
    assert asyncio.run(port.request(request(2))).outcome == "approved"
    assert port.forget_run("r") == 2  # the waiting retry of call 0 and the kept decision for call 1
    assert asyncio.run(port.request(request(1))).outcome == "pending"
    with pytest.raises(ValueError, match="positive int"):
        DeferredApproval(limit=0)


def test_an_approval_that_edits_the_arguments_is_refused(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    files = Files()
    edit = ApprovalDecision("approved", "only the copy", {"path": "/srv/old.csv.copy"})
    same = ApprovalDecision("approved", "fine as is", {"path": "/srv/new.csv"})
    gate = Reviewer(edit, same)
    turns = [ask(delete_call("c1"), delete_call("c2", "/srv/new.csv")), DONE]
    result = chat(turns, executor(files, CallbackApproval(gate)))
    assert step_pairs(result) == pairs(GATED + GATED)
    assert files.deleted == ["/srv/new.csv"]
    approvals = contents_of(result, tmp_path, "approval")
    assert [(a["decision"], a["groupchat"]["edited"]) for a in approvals] == [("denied", True), ("approved", False)]
    assert approvals[0]["groupchat"]["reason"] == "the approval edited the arguments; edits are not applied"
    assert approvals[0]["arguments"] == {"path": "/srv/old.csv"}
    error = json.loads(result.messages[2]["tool_responses"][0]["content"])["error"]
    assert error["kind"] == "approval-denied"
    check_receipt(result)


def test_a_replayed_call_gets_no_token_and_is_denied_without_an_executor_port(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    files, gate = Files(), Reviewer(True)
    result = chat([ask(delete_call("c1")), ask(delete_call("c1")), DONE], executor(files, CallbackApproval(gate)))
    assert step_pairs(result) == pairs(GATED, GATED)
    assert files.deleted == ["/srv/old.csv"]
    assert len(gate.asked) == 1
    approvals = contents_of(result, tmp_path, "approval")
    assert [(a["responder"], a["groupchat"]["port"], a["decision"]) for a in approvals] == [
        ("gate", "callback", "approved"),
        ("executor", None, "denied"),
    ]
    assert approvals[1]["groupchat"]["refused_grant"] == "call id was already gated in this run (replayed call)"
    check_receipt(result)


def test_a_replayed_call_goes_to_the_executor_port_when_there_is_one(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    files, gate, own = Files(), Reviewer(True), Reviewer(False)
    tools = executor(files, CallbackApproval(gate), CallbackApproval(own))
    result = chat([ask(delete_call("c1")), ask(delete_call("c1")), DONE], tools)
    assert step_pairs(result) == pairs(GATED, GATED)
    assert files.deleted == ["/srv/old.csv"]
    assert [r.call_id for r in own.asked] == ["c1"]
    approvals = contents_of(result, tmp_path, "approval")
    assert [(a["responder"], a["decision"]) for a in approvals] == [("gate", "approved"), ("executor", "denied")]
    check_receipt(result)


def test_without_a_gate_the_executor_port_decides() -> None:
    files, own = Files(), Reviewer(True)
    result = chat([ask(delete_call("c1")), DONE], executor(files, None, CallbackApproval(own)))
    assert step_pairs(result) == pairs(GATED)
    assert files.deleted == ["/srv/old.csv"]
    assert len(own.asked) == 1


def test_a_failing_port_denies() -> None:
    files = Files()

    def broken(request: ToolApprovalRequest) -> bool:
        raise ConnectionError("review service down")

    result = chat([ask(delete_call("c1")), DONE], executor(files, CallbackApproval(broken)))
    assert step_pairs(result) == pairs(GATED)
    assert files.deleted == []
    error = json.loads(result.messages[2]["tool_responses"][0]["content"])["error"]
    assert error == {
        "kind": "approval-denied",
        "message": "approval denied: approval port 'callback' failed: ConnectionError: review service down",
    }


# ------------------------------------------------------------ tokens at the executor


@pytest.fixture
def setup() -> tuple[Files, ToolExecutor, TurnContext]:
    files = Files()
    return files, executor(files), TurnContext.standalone("tools")


async def test_a_valid_token_runs_without_asking(setup: tuple[Files, ToolExecutor, TurnContext]) -> None:
    _files, tools, context = setup
    token = context.approvals.issue("c1", "delete", {"path": "/srv/old.csv"})
    outcome = await tools.execute(context, delete_call("c1"), token=token)  # type: ignore[arg-type]
    assert (outcome.is_error, outcome.content) == (False, "deleted /srv/old.csv")
    assert [e.kind for e in context.events] == ["tool_call"]


def refused(context: TurnContext) -> str:
    assert [(e.kind, e.agent) for e in context.events][-2:] == [("approval", "tools"), ("tool_call", "tools")]
    [approval] = [e for e in context.events if e.kind == "approval"]
    assert approval.content["responder"] == "executor" and approval.content["decision"] == "denied"
    return str(approval.content["groupchat"]["refused_grant"])


async def test_a_forged_token_is_refused(setup: tuple[Files, ToolExecutor, TurnContext]) -> None:
    files, tools, context = setup
    genuine = context.approvals.issue("c9", "delete", {"path": "/srv/old.csv"})
    forged = ApprovalToken("grt_" + "0" * 32, context.run_id, "c1", "delete", genuine.arguments_digest, genuine.mac)
    outcome = await tools.execute(context, delete_call("c1"), token=forged)  # type: ignore[arg-type]
    assert outcome.error_kind == "approval-denied" and files.deleted == []
    assert refused(context) == "token is forged or belongs to another run"


async def test_a_token_is_good_for_one_call_only(setup: tuple[Files, ToolExecutor, TurnContext]) -> None:
    files, tools, context = setup
    token = context.approvals.issue("c1", "delete", {"path": "/srv/old.csv"})
    await tools.execute(context, delete_call("c1"), token=token)  # type: ignore[arg-type]
    again = await tools.execute(context, delete_call("c1"), token=token)  # type: ignore[arg-type]
    assert again.error_kind == "approval-denied"
    assert files.deleted == ["/srv/old.csv"]
    assert refused(context) == "token was already used"


async def test_a_token_for_another_call_is_refused(setup: tuple[Files, ToolExecutor, TurnContext]) -> None:
    files, tools, context = setup
    token = context.approvals.issue("c1", "delete", {"path": "/srv/old.csv"})
    outcome = await tools.execute(context, delete_call("c2"), token=token)  # type: ignore[arg-type]
    assert outcome.error_kind == "approval-denied" and files.deleted == []
    assert refused(context) == "token is for call 'c1', not 'c2'"


async def test_a_token_from_another_run_is_refused(setup: tuple[Files, ToolExecutor, TurnContext]) -> None:
    files, tools, context = setup
    other = RunState()
    token = other.approvals.issue("c1", "delete", {"path": "/srv/old.csv"})
    outcome = await tools.execute(context, delete_call("c1"), token=token)  # type: ignore[arg-type]
    assert outcome.error_kind == "approval-denied" and files.deleted == []
    assert refused(context) == "token is forged or belongs to another run"
    relabelled = dataclasses.replace(token, run_id=context.run_id)
    await tools.execute(context, delete_call("c1"), token=relabelled)  # type: ignore[arg-type]
    assert files.deleted == []


async def test_a_token_for_other_arguments_is_refused(setup: tuple[Files, ToolExecutor, TurnContext]) -> None:
    files, tools, context = setup
    token = context.approvals.issue("c1", "delete", {"path": "/srv/old.csv"})
    outcome = await tools.execute(context, delete_call("c1", "/etc/passwd"), token=token)  # type: ignore[arg-type]
    assert outcome.error_kind == "approval-denied" and files.deleted == []
    assert refused(context) == "arguments differ from the approved ones"


def test_authority_checks_every_binding() -> None:
    authority = TokenAuthority("run_a")
    token = authority.issue("c1", "delete", {"path": "/x"})
    for change, words in (
        ({"tool": "drop"}, "forged"),
        ({"call_id": "c2"}, "forged"),
        ({"arguments_digest": "0" * 64}, "forged"),
        ({"mac": "0" * 64}, "forged"),
    ):
        with pytest.raises(TokenRefused, match=words):
            authority.redeem(
                dataclasses.replace(token, **change), call_id="c1", tool="delete", arguments={"path": "/x"}
            )
    with pytest.raises(TokenRefused, match="no approval token"):
        authority.redeem(None, call_id="c1", tool="delete", arguments={"path": "/x"})
    assert authority.redeem(token, call_id="c1", tool="delete", arguments={"path": "/x"}) is token
    discarded = authority.issue("c3", "delete", {"path": "/x"})
    authority.discard(discarded)
    with pytest.raises(TokenRefused, match="already used"):
        authority.redeem(discarded, call_id="c3", tool="delete", arguments={"path": "/x"})
    assert "mac" not in repr(token)
