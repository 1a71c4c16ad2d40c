"""Group chats: each message once, every speaker selection with its method, sync and async."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

import autogen
import pytest

from aer1.collectors import AER1AutoGenCollector, attach_legacy_hooks, observe_groupchat

from .support import CLOSE, Finish, auto_selection, of_kind, rows, scripted_input, scripted_llm_config

SEED = 20240611
MANAGER = "chat_manager"


def _agents() -> list[autogen.ConversableAgent]:
    return [
        autogen.ConversableAgent(name, llm_config=False, human_input_mode="NEVER", default_auto_reply=f"{name} here")
        for name in ("user", "alice", "bob")
    ]


def _callable_selection(agents: list[autogen.ConversableAgent]) -> Any:
    user, alice, _bob = agents

    def select_next(last_speaker: Any, groupchat: Any) -> Any:
        if last_speaker is user:
            return alice
        if last_speaker is alice:
            return "round_robin"  # delegate this turn to a built-in method
        return user

    return select_next


def _run(method: str, chat: str, collector: AER1AutoGenCollector) -> tuple[list[Any], Any]:
    agents = _agents()
    selection: Any = method
    answers: list[str] = []
    setup: Any = contextlib.nullcontext({})
    manager_llm: Any = False
    if method == "callable":
        selection = _callable_selection(agents)
    elif method == "manual":
        answers = ["3", "2", ""]  # bob, alice, then nothing: AutoGen moves on in order
    elif method == "auto":
        setup = auto_selection(["bob", "alice", "user"])
        manager_llm = scripted_llm_config()
    elif method == "random":
        random.seed(SEED)
    with setup as extra, scripted_input(answers):
        groupchat = autogen.GroupChat(agents, messages=[], max_round=4, speaker_selection_method=selection, **extra)
        manager = autogen.GroupChatManager(groupchat, llm_config=manager_llm)
        observe_groupchat(manager, collector)
        if chat == "sync":
            agents[0].initiate_chat(manager, message="Kick-off")
        else:
            asyncio.run(agents[0].a_initiate_chat(manager, message="Kick-off"))
    return agents, groupchat


def _expected_speakers(method: str) -> list[str]:
    if method == "random":
        rng = random.Random(SEED)
        return [rng.choice(["user", "alice", "bob"]) for _ in range(3)]
    return {
        "round_robin": ["alice", "bob", "user"],
        "auto": ["bob", "alice", "user"],
        "manual": ["bob", "alice", "bob"],
        "callable": ["alice", "bob", "user"],
    }[method]


@pytest.mark.parametrize("chat", ["sync", "async"])
@pytest.mark.parametrize("method", ["round_robin", "auto", "manual", "random", "callable"])
def test_selection_methods(method: str, chat: str, collector: AER1AutoGenCollector, finish: Finish) -> None:
    _, groupchat = _run(method, chat, collector)
    receipt, contents = finish(collector)
    speakers = _expected_speakers(method)

    expected: list[Any] = [("message", "user", MANAGER)]
    for speaker in speakers:
        expected += [("speaker_selection", MANAGER, None), ("message", speaker, MANAGER)]
    assert rows(receipt) == [*expected, ("termination", MANAGER, None), CLOSE]
    assert [m["name"] for m in groupchat.messages] == ["user", *speakers]

    selections = [s for s in receipt["steps"] if s["kind"] == "speaker_selection"]
    assert [s["target"] for s in selections] == speakers
    chosen = of_kind(receipt, contents, "speaker_selection")
    assert [c["selected"] for c in chosen] == [[s] for s in speakers]
    assert [c["legacy"]["method"] for c in chosen] == [method] * 3
    assert [c["legacy"]["last_speaker"] for c in chosen] == ["user", *speakers[:-1]]
    assert [c["legacy"]["round"] for c in chosen] == [1, 2, 3]
    mechanism = {"auto": "model", "callable": "function"}.get(method, method)
    assert [c["mechanism"] for c in chosen] == [mechanism] * 3
    # auto selection keeps the selector model's answer (spec/steps.md, speaker_selection)
    assert [c["model_replies"] for c in chosen] == ([[s] for s in speakers] if method == "auto" else [None] * 3)
    if method == "manual":
        assert [c["legacy"]["manual_choice"] for c in chosen] == ["bob", "alice", None]
    if method == "callable":
        assert [c["legacy"]["callable_returned"] for c in chosen] == ["agent", "round_robin", "agent"]
        assert chosen[1]["legacy"]["delegated_to"] == "round_robin"
        assert chosen[0]["legacy"]["callable"].endswith("select_next")

    message_steps = [s for s in receipt["steps"] if s["kind"] == "message"]
    assert [s.get("reply_to") for s in message_steps] == [None, "user", *speakers[:-1]]
    (termination,) = of_kind(receipt, contents, "termination")
    assert termination["reason"] == "max_round"
    assert termination["legacy"]["rounds"] == 4 and termination["legacy"]["max_round"] == 4


def test_four_messages_four_steps_however_attached(collector: AER1AutoGenCollector, finish: Finish) -> None:
    """The manager re-sends each message to every other agent; still one step per message."""
    agents = _agents()
    groupchat = autogen.GroupChat(agents, messages=[], max_round=4, speaker_selection_method="round_robin")
    manager = autogen.GroupChatManager(groupchat, llm_config=False)
    for agent in [*agents, manager]:
        attach_legacy_hooks(agent, collector)
    observe_groupchat(groupchat, collector)
    observe_groupchat(manager, collector)
    agents[0].initiate_chat(manager, message="Kick-off")
    receipt, _ = finish(collector)

    assert len(groupchat.messages) == 4
    assert sum(1 for s in receipt["steps"] if s["kind"] == "message") == 4
    assert [a["name"] for a in receipt["agents"]] == ["user", "alice", "bob", MANAGER]
    assert receipt["agents"][-1]["type"] == "autogen.GroupChatManager"


@pytest.mark.parametrize("chat", ["sync", "async"])
@pytest.mark.parametrize("manager_first", [True, False], ids=["manager_first", "observed_first"])
def test_observing_the_groupchat_alone(
    chat: str, manager_first: bool, collector: AER1AutoGenCollector, finish: Finish
) -> None:
    """Given only the GroupChat, the manager is found on the first send to it.

    A manager runs its chat on a shallow copy of the GroupChat it was given, made when the
    manager is built, so both orders (manager built before or after observing) are covered.
    """
    agents = _agents()
    groupchat = autogen.GroupChat(agents, messages=[], max_round=3, speaker_selection_method="round_robin")
    if manager_first:
        manager = autogen.GroupChatManager(groupchat, llm_config=False)
    assert observe_groupchat(groupchat, collector) is groupchat
    if not manager_first:
        manager = autogen.GroupChatManager(groupchat, llm_config=False)
    if chat == "sync":
        agents[0].initiate_chat(manager, message="Kick-off")
    else:
        asyncio.run(agents[0].a_initiate_chat(manager, message="Kick-off"))
    receipt, contents = finish(collector)

    assert rows(receipt) == [
        ("message", "user", MANAGER),
        ("speaker_selection", MANAGER, None),
        ("message", "alice", MANAGER),
        ("speaker_selection", MANAGER, None),
        ("message", "bob", MANAGER),
        ("termination", MANAGER, None),
        CLOSE,
    ]
    assert of_kind(receipt, contents, "termination")[0]["reason"] == "max_round"


def test_introductions_are_one_message(collector: AER1AutoGenCollector, finish: Finish) -> None:
    agents = _agents()
    groupchat = autogen.GroupChat(
        agents, messages=[], max_round=2, speaker_selection_method="round_robin", send_introductions=True
    )
    manager = autogen.GroupChatManager(groupchat, llm_config=False)
    observe_groupchat(manager, collector)
    agents[0].initiate_chat(manager, message="Kick-off")
    receipt, contents = finish(collector)

    assert rows(receipt) == [
        ("message", "user", MANAGER),
        ("message", MANAGER, None),
        ("speaker_selection", MANAGER, None),
        ("message", "alice", MANAGER),
        ("termination", MANAGER, None),
        CLOSE,
    ]
    intro = contents[2]
    assert intro["legacy"]["recipients"] == ["user", "alice", "bob"]
    assert intro["content"] == groupchat.introductions_msg()


def test_two_runs_two_terminations(collector: AER1AutoGenCollector, finish: Finish) -> None:
    agents = _agents()
    groupchat = autogen.GroupChat(agents, messages=[], max_round=2, speaker_selection_method="round_robin")
    manager = autogen.GroupChatManager(groupchat, llm_config=False)
    observe_groupchat(manager, collector)
    agents[0].initiate_chat(manager, message="first")
    agents[0].initiate_chat(manager, message="second")
    receipt, contents = finish(collector)

    run = [
        ("message", "user", MANAGER),
        ("speaker_selection", MANAGER, None),
        ("message", "alice", MANAGER),
        ("termination", MANAGER, None),
    ]
    assert rows(receipt) == [*run, *run, CLOSE]
    assert [m["content"] for m in of_kind(receipt, contents, "message")][::2] == ["first", "second"]


@pytest.mark.parametrize("chat", ["sync", "async"])
def test_auto_selection_that_names_no_agent_falls_back_and_keeps_the_answers(
    chat: str, collector: AER1AutoGenCollector, finish: Finish
) -> None:
    """Every answer of the selector names no agent: AutoGen retries, then takes the next in order."""
    agents = _agents()
    with auto_selection(["nobody in particular"]) as extra:
        groupchat = autogen.GroupChat(agents, messages=[], max_round=2, speaker_selection_method="auto", **extra)
        manager = autogen.GroupChatManager(groupchat, llm_config=scripted_llm_config())
        observe_groupchat(manager, collector)
        if chat == "sync":
            agents[0].initiate_chat(manager, message="Kick-off")
        else:
            asyncio.run(agents[0].a_initiate_chat(manager, message="Kick-off"))
    receipt, contents = finish(collector)
    (chosen,) = of_kind(receipt, contents, "speaker_selection")
    assert chosen["mechanism"] == "model_fallback" and chosen["selected"] == ["alice"]
    tries = 1 + groupchat.max_retries_for_selecting_speaker
    assert chosen["model_replies"] == ["nobody in particular"] * tries
