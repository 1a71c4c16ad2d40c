"""The approval gate binds exactly what the tool receives: values with no exact JSON form are
refused before anyone is asked, bad arguments never abort the chat, and no edit by a
reviewer reaches the tool."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aer1._canonical import exact_bytes
from aer1._steps_vocab import SHOWN_CHARS
from aer1.groupchat import (
    ApprovalDecision,
    CallbackApproval,
    ChatResult,
    GroupChat,
    ScriptedAgent,
    ToolApprovalRequest,
    ToolExecutor,
)
from aer1.groupchat._arguments import parse_arguments

from .helpers import step_contents

DONE = "done TERMINATE"


def ends(message: dict[str, Any]) -> bool:
    return "TERMINATE" in (message["content"] or "")


class Ledger:
    """A confirm tool taking any JSON value; it remembers exactly what it was given."""

    def __init__(self) -> None:
        self.received: list[Any] = []

    def pay(self, to: Any, amount: Any = None) -> str:
        """Pay someone."""
        self.received.append(copy.deepcopy({"to": to, "amount": amount}))
        return "paid"


class Reviewer:
    """Remembers each request and answers with ``answer(request)``."""

    def __init__(self, answer: Callable[[ToolApprovalRequest], bool | ApprovalDecision] = lambda r: True) -> None:
        self.answer = answer
        self.asked: list[ToolApprovalRequest] = []

    def __call__(self, request: ToolApprovalRequest) -> bool | ApprovalDecision:
        self.asked.append(request)
        return self.answer(request)


def pay_call(arguments: str, call_id: str = "c1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "pay", "arguments": arguments}}


def run(arguments: str, reviewer: Reviewer, ledger: Ledger) -> ChatResult:
    ask = {"role": "assistant", "content": None, "tool_calls": [pay_call(arguments)]}
    planner = ScriptedAgent("planner", [ask, DONE])
    gate = CallbackApproval(reviewer)
    tools = ToolExecutor("tools", {"pay": ledger.pay}, requires_confirmation=["pay"], approval=gate)
    return GroupChat([planner, tools], is_termination_msg=ends, initiator="user").run("Pay the bill.")


def of_kind(result: ChatResult, folder: Path, kind: str) -> list[dict[str, Any]]:
    contents = step_contents(result, folder)
    return [contents[s["seq"] - 1] for s in result.receipt["steps"] if s["kind"] == kind]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# Argument texts json.loads accepts but that have no exact JSON value: each would let two
# different values share a digest, or abort the chat while being digested.
NOT_EXACT = {
    "lone surrogate": r'{"to": "acct-\udcff-42"}',
    "lone surrogate in a key": r'{"to": "x", "\ud800": 1}',
    "keys alike after repair": r'{"to": "x", "a\udcff": 1, "a\ufffd": 2}',
    "Infinity literal": '{"to": Infinity}',
    "NaN literal": '{"to": NaN}',
    "-Infinity literal": '{"to": "x", "amount": -Infinity}',
    "overflow to infinity": '{"to": "x", "amount": 1e400}',
    "integer beyond 2^53": '{"to": "x", "amount": 9007199254740993}',
    "integer with 5000 digits": '{"to": "x", "amount": ' + "9" * 5000 + "}",
    "duplicate key": '{"to": "alice", "to": "mallory"}',
    "nested 100000 deep": '{"to": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "nested deeper than the canonical limit": '{"to": ' + "[" * 300 + "]" * 300 + "}",
}


@pytest.mark.parametrize("arguments", NOT_EXACT.values(), ids=NOT_EXACT.keys())
def test_arguments_with_no_exact_form_are_refused_before_the_reviewer_and_the_chat_goes_on(
    arguments: str, tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    ledger, reviewer = Ledger(), Reviewer()
    result = run(arguments, reviewer, ledger)
    assert reviewer.asked == [] and ledger.received == []
    assert result.stop_reason == "is_termination_msg", result.stop_reason
    [tool_call] = of_kind(result, tmp_path, "tool_call")
    assert (tool_call["groupchat"]["error_kind"], tool_call.get("arguments_digest")) == ("tool-args-invalid", None)
    assert tool_call["error"]["type"] == "arguments_invalid" and tool_call["arguments_malformed"] is True
    assert of_kind(result, tmp_path, "approval") == []
    assert json.loads(result.messages[2]["content"])["error"]["kind"] == "tool-args-invalid"
    check_receipt(result)


def test_an_error_message_quotes_at_most_a_bounded_piece_of_the_arguments() -> None:
    key = "k" * 100_000
    with pytest.raises(ValueError) as caught:
        parse_arguments(json.dumps({key: 1, "x": 2})[:-1] + f', "{key}": 3}}')
    assert len(str(caught.value)) < SHOWN_CHARS + 100


# Look-alike values the old digest mapped together: each pair must get two digests, and the
# tool must receive exactly the value (and JSON type) the reviewer was shown.
LOOK_ALIKES = [
    ('{"to": "acct-\\ufffd-42"}', "acct-\ufffd-42"),
    ('{"to": "Infinity"}', "Infinity"),
    ('{"to": "9007199254740993"}', "9007199254740993"),
    ('{"to": 9007199254740991}', 9007199254740991),
    ('{"to": "1"}', "1"),
    ('{"to": 1}', 1),
    ('{"to": 1.5}', 1.5),
    ('{"to": true}', True),
    ('{"to": "true"}', "true"),
    ('{"to": null}', None),
    ('{"to": [1, "1"]}', [1, "1"]),
]


def test_look_alike_arguments_get_distinct_digests_and_the_tool_gets_what_was_approved(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    digests = set()
    for text, value in LOOK_ALIKES:
        ledger, reviewer = Ledger(), Reviewer()
        result = run(text, reviewer, ledger)
        [request] = reviewer.asked
        assert request.arguments == {"to": value} and type(request.arguments["to"]) is type(value)
        assert ledger.received == [{"to": value, "amount": None}]
        assert type(ledger.received[0]["to"]) is type(value)
        [approval] = of_kind(result, tmp_path, "approval")
        [tool_call] = of_kind(result, tmp_path, "tool_call")
        assert approval["arguments_digest"] == tool_call["arguments_digest"] == sha256(exact_bytes({"to": value}))
        digests.add(approval["arguments_digest"])
    assert len(digests) == len(LOOK_ALIKES)
    check_receipt(result)


def test_a_number_reaches_the_tool_as_its_canonical_form_reads_back() -> None:
    """JCS writes 2.0 and 2 (and -0.0 and 0) alike, so the tool gets the value those bytes mean."""
    for text, value in [('{"to": 2.0}', 2), ('{"to": -0.0}', 0), ('{"to": 1e21}', 1e21), ('{"to": 1E-7}', 1e-7)]:
        ledger, reviewer = Ledger(), Reviewer()
        run(text, reviewer, ledger)
        assert ledger.received[0]["to"] == value and type(ledger.received[0]["to"]) is type(value), text
        assert reviewer.asked[0].arguments["to"] == value and type(reviewer.asked[0].arguments["to"]) is type(value)


def test_nested_edits_by_the_reviewer_never_reach_the_tool(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    def edit_then_approve(request: ToolApprovalRequest) -> bool:
        request.arguments["to"]["iban"] = "MALLORY"  # type: ignore[index]
        return True

    ledger, reviewer = Ledger(), Reviewer(edit_then_approve)
    result = run('{"to": {"iban": "ALICE"}, "amount": 5}', reviewer, ledger)
    assert ledger.received == []
    [approval] = of_kind(result, tmp_path, "approval")
    assert (approval["decision"], approval["groupchat"]["edited"]) == ("denied", True)
    assert approval["arguments"] == {"to": {"iban": "ALICE"}, "amount": 5}
    assert approval["arguments_digest"] == sha256(b'{"amount":5,"to":{"iban":"ALICE"}}')
    [tool_call] = of_kind(result, tmp_path, "tool_call")
    assert (tool_call["groupchat"]["error_kind"], tool_call["arguments_digest"]) == ("approval-denied",
                                                                                 approval["arguments_digest"])
    check_receipt(result)


def test_an_edit_in_the_decision_that_cannot_be_digested_is_a_recorded_denial(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    for edit in [{"to": {1, 2}}, {"to": "a\udcff"}, {"to": float("nan")}, {"to": 2**60}]:
        ledger = Ledger()
        reviewer = Reviewer(lambda r, e=edit: ApprovalDecision("approved", "ok", e))  # type: ignore[misc]
        result = run('{"to": "alice"}', reviewer, ledger)
        assert ledger.received == [] and result.stop_reason == "is_termination_msg"
        [approval] = of_kind(result, tmp_path, "approval")
        assert (approval["decision"], approval["groupchat"]["edited"], approval["arguments"]) == (
            "denied",
            True,
            {"to": "alice"},
        )
    check_receipt(result)


def test_the_reviewer_and_the_tool_hold_separate_copies(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    """A reviewer keeping its request, and a tool changing its arguments, affect nothing recorded."""
    kept: list[ToolApprovalRequest] = []

    def keep(request: ToolApprovalRequest) -> bool:
        kept.append(request)
        return True

    seen: list[Any] = []

    def pay(to: Any, amount: Any = None) -> str:
        """Pay someone."""
        seen.append(copy.deepcopy(to))
        to["iban"] = "CHANGED BY THE TOOL"
        kept[0].arguments["to"]["iban"] = "CHANGED LATER BY THE REVIEWER"
        return "paid"

    planner = ScriptedAgent(
        "planner", [{"role": "assistant", "content": None, "tool_calls": [pay_call('{"to": {"iban": "ALICE"}}')]}, DONE]
    )
    tools = ToolExecutor("tools", {"pay": pay}, requires_confirmation=["pay"], approval=CallbackApproval(keep))
    result = GroupChat([planner, tools], is_termination_msg=ends, initiator="user").run("Pay.")
    assert seen == [{"iban": "ALICE"}]
    [approval] = of_kind(result, tmp_path, "approval")
    [tool_call] = of_kind(result, tmp_path, "tool_call")
    assert approval["arguments"] == {"to": {"iban": "ALICE"}} and approval["decision"] == "approved"
    assert tool_call["arguments_digest"] == approval["arguments_digest"] == sha256(b'{"to":{"iban":"ALICE"}}')
    check_receipt(result)
