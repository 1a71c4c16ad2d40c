"""Two-agent chats (``initiate_chat`` without a GroupChat): a ``task`` step, and a ``termination``
step saying why the chat ended; nested chats carry ``nested_in``; a chat cut short is recorded."""

from __future__ import annotations

import asyncio
from typing import Any

import autogen
import pytest

from aer1 import verify_receipt
from aer1.collectors import AER1AutoGenCollector, attach_legacy_hooks

from .support import Finish, ended, of_kind, says_terminate, scripted_agent, tool_call, tool_calls_reply


def _plain(name: str, reply: Any = "ok", **kwargs: Any) -> autogen.ConversableAgent:
    kwargs.setdefault("human_input_mode", "NEVER")
    return autogen.ConversableAgent(name, llm_config=False, default_auto_reply=reply, **kwargs)


def _no_reply(recipient: Any, messages: Any, sender: Any, config: Any) -> tuple[bool, Any]:
    return True, None


def _shape(case: str) -> tuple[autogen.ConversableAgent, autogen.ConversableAgent, dict[str, Any]]:
    """(initiator, recipient, initiate_chat keyword arguments) of a chat that ends by ``case``."""
    if case == "is_termination_msg":
        return (_plain("alice", is_termination_msg=says_terminate), _plain("bob", "done TERMINATE"), {})
    if case == "max_turns":
        return _plain("alice"), _plain("bob"), {"max_turns": 2}
    if case == "max_consecutive_auto_reply":
        return _plain("alice", max_consecutive_auto_reply=5), _plain("bob", max_consecutive_auto_reply=1), {}
    bob = _plain("bob")
    bob.register_reply([autogen.Agent, None], _no_reply)
    return _plain("alice"), bob, {}


#: case -> the agent that generated no reply. (How many messages differs: pyautogen 0.2 runs
#: both termination checks in an async chat, so bob's one auto reply is used up at once.)
EXPECTED = {
    "is_termination_msg": "alice",
    "max_turns": "alice",
    "max_consecutive_auto_reply": "bob",
    "empty_reply": "bob",
}


@pytest.mark.parametrize("chat", ["sync", "async"])
@pytest.mark.parametrize("case", list(EXPECTED))
def test_each_reason_a_chat_ends(case: str, chat: str, collector: AER1AutoGenCollector, finish: Finish) -> None:
    alice, bob = _shape(case)[:2]
    options = _shape(case)[2]
    for agent in (alice, bob):
        attach_legacy_hooks(agent, collector)
    if chat == "sync":
        result = alice.initiate_chat(bob, message="start", **options)
    else:
        result = asyncio.run(alice.a_initiate_chat(bob, message="start", **options))
    receipt, contents = finish(collector)

    assert ended(receipt, contents) == ("ok", "finished", case)
    stopper, messages = EXPECTED[case], len(result.chat_history)
    (end,) = of_kind(receipt, contents, "termination")
    assert end["messages"] == messages >= 1
    assert end["observed"] is True and "error" not in end
    assert end["legacy"]["stopped_by"] == stopper and end["legacy"]["initiator"] == "alice"
    assert end["step_statuses"] == {"ok": messages + 1, "error": 0, "cancelled": 0}
    (task,) = of_kind(receipt, contents, "task")
    assert (task["task"], task["message_ids"], task["team"]) == ("start", [], {"name": None, "id": None,
                                                                               "type": "two_agent_chat"})
    assert task["legacy"] == {"initiator": "alice", "recipient": "bob", "max_turns": options.get("max_turns")}
    assert receipt["steps"][0]["kind"] == "task" and receipt["steps"][-2]["kind"] == "termination"
    assert receipt["status"] == "ok"


def test_a_chat_that_raises_ends_in_error(collector: AER1AutoGenCollector, finish: Finish) -> None:
    def explode(recipient: Any, messages: Any, sender: Any, config: Any) -> tuple[bool, Any]:
        raise RuntimeError("the reply broke")

    alice, bob = _plain("alice"), _plain("bob")
    bob.register_reply([autogen.Agent, None], explode)
    for agent in (alice, bob):
        attach_legacy_hooks(agent, collector)
    with pytest.raises(RuntimeError):
        alice.initiate_chat(bob, message="start")
    receipt, contents = finish(collector)
    assert ended(receipt, contents) == ("error", "error", "error")
    (end,) = of_kind(receipt, contents, "termination")
    assert end["error"]["type"] == "RuntimeError" and end["error"]["message"] == "the reply broke"
    assert receipt["status"] == "error"


def test_nested_chats_carry_the_agent_they_ran_inside(collector: AER1AutoGenCollector, finish: Finish) -> None:
    """bob answers alice by running a nested chat with carol (register_nested_chats)."""
    alice = _plain("alice", is_termination_msg=lambda m: True)
    bob, carol = _plain("bob"), _plain("carol", "carol's answer")
    bob.register_nested_chats([{"recipient": carol, "message": "what do you say?", "max_turns": 1,
                                "summary_method": "last_msg"}], trigger=alice)
    for agent in (alice, bob, carol):
        attach_legacy_hooks(agent, collector)
    alice.initiate_chat(bob, message="ask carol")
    receipt, contents = finish(collector)

    steps = [(s["kind"], s["agent"], s.get("recipient"), contents[s["seq"]].get("nested_in"))
             for s in receipt["steps"][:-1]]
    assert steps == [
        ("task", "alice", "bob", None),
        ("message", "alice", "bob", None),
        ("task", "bob", "carol", "bob"),
        ("message", "bob", "carol", "bob"),
        ("message", "carol", "bob", "bob"),
        ("termination", "bob", None, "bob"),
        ("message", "bob", "alice", None),
        ("termination", "alice", None, None),
    ]
    inner_end = contents[receipt["steps"][5]["seq"]]
    assert (inner_end["reason"], inner_end["legacy"]["stopped_by"]) == ("max_turns", "bob")
    assert [c["content"] for c in of_kind(receipt, contents, "message")][-1] == "carol's answer"


async def test_a_chat_cancelled_mid_tool_and_finalized_at_once(collector: AER1AutoGenCollector) -> None:
    """Finalized while a tool awaits: the call and the chat are recorded cut off, the receipt incomplete."""
    started = asyncio.Event()

    async def wait_forever(seconds: int) -> str:
        """Never returns."""
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    assistant = scripted_agent("assistant", [tool_calls_reply(tool_call("w1", "wait_forever", {"seconds": 5}))],
                               human_input_mode="NEVER")
    executor = _plain("executor")
    autogen.register_function(wait_forever, caller=assistant, executor=executor, name="wait_forever",
                              description="Never returns.")
    from .support import make_client

    assistant.register_model_client(make_client([tool_calls_reply(tool_call("w1", "wait_forever", {"seconds": 5}))]))
    for agent in (assistant, executor):
        attach_legacy_hooks(agent, collector)
    run = asyncio.ensure_future(executor.a_initiate_chat(assistant, message="wait"))
    await started.wait()
    receipt = collector.finalize()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run

    kinds = [(s["kind"], s["status"]) for s in receipt["steps"]]
    assert ("tool_call", "cancelled") in kinds and ("termination", "cancelled") in kinds
    assert receipt["status"] == "incomplete"
    assert verify_receipt(receipt).valid
    assert collector.late_records == 0


def test_a_model_reply_carries_its_model_facts(collector: AER1AutoGenCollector, finish: Finish) -> None:
    """Which model produced each reply (from the client's config entry and the response), timed; no credential."""
    planner = scripted_agent("planner", ["draft TERMINATE"], human_input_mode="NEVER")
    user = _plain("user", is_termination_msg=says_terminate)
    for agent in (planner, user):
        attach_legacy_hooks(agent, collector)
    user.initiate_chat(planner, message="plan")
    receipt, contents = finish(collector)
    opening, reply = of_kind(receipt, contents, "message")
    assert opening["model"] is None  # the user's message is no model's reply
    model = reply["model"]
    latency = model.pop("latency_ms")
    assert isinstance(latency, float) and latency >= 0
    assert model == {"provider": "ScriptedClient", "request_model": "scripted", "response_model": "scripted",
                     "input_tokens": None, "output_tokens": None, "finish_reasons": ["stop"]}
