"""Speaker selection through the manager: round robin, random, manual, auto, a plain callable."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from autogen_ext.models.replay import ReplayChatCompletionClient

from aer1.groupchat import (
    AutoSelector,
    ChatResult,
    GroupChat,
    GroupChatError,
    ManualSelector,
    RandomSelector,
    ScriptedAgent,
    SelectionContext,
    SelectionError,
)

from .helpers import step_contents, step_pairs

M = "manager"
NAMES = ("alice", "bob", "carol")


def agents(lines: int = 6) -> list[ScriptedAgent]:
    return [ScriptedAgent(n, [f"{n} says {i}" for i in range(lines)], description=f"{n} helps") for n in NAMES]


def speakers(result: ChatResult) -> list[str]:
    return [m["name"] for m in result.messages[1:]]


def rounds_pairs(who: list[str], task_sender: str = "alice") -> list[tuple[str, str]]:
    out = [("task", task_sender)]
    for name in who:
        out += [("speaker_selection", M), ("message", name)]
    return [*out, ("termination", M), ("close", "aer1")]


def selections(result: ChatResult, folder: Path) -> list[dict[str, Any]]:
    contents = step_contents(result, folder)
    return [contents[s["seq"] - 1] for s in result.receipt["steps"] if s["kind"] == "speaker_selection"]


def test_round_robin(tmp_path: Path, check_receipt: Callable[[ChatResult], Path]) -> None:
    result = GroupChat(agents(), max_round=4).run("Take turns.")
    assert speakers(result) == ["bob", "carol", "alice", "bob"]
    assert step_pairs(result) == rounds_pairs(["bob", "carol", "alice", "bob"])
    chosen = selections(result, tmp_path)
    assert chosen[0] == {
        "vocabulary": "aer1-steps/1",
        "selected": ["bob"],
        "mechanism": "round_robin",
        "candidates": list(NAMES),
        "model_replies": None,
        "groupchat": {"method": "round_robin", "previous": "alice", "round": 1, "detail": {"index": 1}},
    }
    assert [(c["groupchat"]["previous"], c["selected"][0], c["groupchat"]["detail"]["index"])
            for c in chosen[1:]] == [
        ("bob", "carol", 2),
        ("carol", "alice", 0),
        ("alice", "bob", 1),
    ]
    headers = [s for s in result.receipt["steps"] if s["kind"] == "speaker_selection"]
    assert [h["target"] for h in headers] == ["bob", "carol", "alice", "bob"]
    check_receipt(result)


def test_round_robin_from_an_outside_sender_starts_at_the_first_agent() -> None:
    result = GroupChat(agents(), max_round=2, initiator="user").run("Go.")
    assert speakers(result) == ["alice", "bob"]


def test_random_is_seeded_and_stateless(tmp_path: Path, check_receipt: Callable[[ChatResult], Path]) -> None:
    seed, rounds = 11, 6
    rng = random.Random(seed)
    expected = [NAMES[rng.randrange(3)] for _ in range(rounds)]
    result = GroupChat(agents(), speaker_selection=RandomSelector(seed), max_round=rounds).run("Random.")
    assert speakers(result) == expected
    assert any(a == b for a, b in itertools.pairwise(expected))  # repeats allowed: no memory
    again = GroupChat(agents(), speaker_selection=RandomSelector(seed), max_round=rounds).run("Random.")
    assert speakers(again) == expected
    assert step_pairs(result) == rounds_pairs(expected)
    assert {(c["mechanism"], c["groupchat"]["method"]) for c in selections(result, tmp_path)} == {("random", "random")}
    check_receipt(result)


def test_manual_asks_the_callback_and_retries_bad_answers(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    answers = iter(["3", "nobody", "bob", " alice "])
    prompts: list[tuple[str, tuple[str, ...]]] = []

    def ask(prompt: str, candidates: tuple[str, ...]) -> str:
        prompts.append((prompt, candidates))
        return next(answers)

    result = GroupChat(agents(), speaker_selection=ManualSelector(ask), max_round=3).run("Manual.")
    assert speakers(result) == ["carol", "bob", "alice"]
    assert prompts[0] == ("Select the next speaker:\n1: alice\n2: bob\n3: carol\nName or number: ", NAMES)
    details = [c["groupchat"]["detail"] for c in selections(result, tmp_path)]
    assert details == [{"answers": ["3"]}, {"answers": ["nobody", "bob"]}, {"answers": ["alice"]}]
    assert step_pairs(result) == rounds_pairs(["carol", "bob", "alice"])
    check_receipt(result)


def test_manual_without_a_callback_refuses_when_not_interactive(check_receipt: Callable[[ChatResult], Path]) -> None:
    chat = GroupChat(agents(), speaker_selection="manual")
    with pytest.raises(GroupChatError) as info:
        chat.run("Manual, but nobody is there.")
    assert isinstance(info.value.__cause__, SelectionError)
    assert "needs an ask callback: standard input is not interactive" in str(info.value)
    result = info.value.result
    assert step_pairs(result) == [("task", "alice"), ("error", M), ("termination", M), ("close", "aer1")]
    assert (result.stop_reason, result.receipt["status"]) == ("error", "error")
    check_receipt(result)


def test_manual_gives_up_after_max_attempts() -> None:
    chat = GroupChat(agents(), speaker_selection=ManualSelector(lambda p, c: "?", max_attempts=2))
    with pytest.raises(GroupChatError, match=r"no valid answer in 2 tries: \['\?', '\?'\]"):
        chat.run("Manual.")


def test_auto_with_a_callable_and_the_initiator_fallback(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    picks = iter(["carol", None, "zed", "bob"])

    def pick(context: SelectionContext) -> str | None:
        assert context.agents == NAMES and context.initiator == "alice"
        assert context.descriptions["bob"] == "bob helps"
        return next(picks)

    result = GroupChat(agents(), speaker_selection=AutoSelector(pick), max_round=4).run("Auto.")
    assert speakers(result) == ["carol", "alice", "alice", "bob"]
    details = [c["groupchat"]["detail"] for c in selections(result, tmp_path)]
    assert [(d["answer"], d["fallback"]) for d in details] == [
        ("carol", False),
        (None, True),
        ("zed", True),
        ("bob", False),
    ]
    assert details[0]["selector"].endswith("pick")
    check_receipt(result)


def test_auto_with_a_model_client(tmp_path: Path, check_receipt: Callable[[ChatResult], Path]) -> None:
    client = ReplayChatCompletionClient(["carol", "I think bob should answer.", "alice or bob", "Carol."])
    result = GroupChat(agents(), speaker_selection=AutoSelector(client), max_round=4).run("Auto by model.")
    assert speakers(result) == ["carol", "bob", "alice", "carol"]
    details = [c["groupchat"]["detail"] for c in selections(result, tmp_path)]
    assert [(d["selector"], d["answer"], d["fallback"]) for d in details] == [
        ("model", "carol", False),
        ("model", "I think bob should answer.", False),
        ("model", "alice or bob", True),
        ("model", "Carol.", False),
    ]
    # the selector model's answers, as the vocabulary keeps them
    assert [(c["mechanism"], c["model_replies"]) for c in selections(result, tmp_path)] == [
        ("model", ["carol"]), ("model", ["I think bob should answer."]), ("model_fallback", ["alice or bob"]),
        ("model", ["Carol."])]
    first = client.create_calls[0]["messages"]
    assert "alice: alice helps" in first[0].content
    assert "alice: Auto by model." in first[1].content
    check_receipt(result)


def test_a_plain_callable(tmp_path: Path, check_receipt: Callable[[ChatResult], Path]) -> None:
    def every_other(context: SelectionContext) -> Any:
        return "carol" if context.round % 2 else next(a for a in chat.agents if a.name == "alice")

    chat = GroupChat(agents(), speaker_selection=every_other, max_round=3)
    result = chat.run("Callable.")
    assert speakers(result) == ["carol", "alice", "carol"]
    chosen = selections(result, tmp_path)
    assert {(c["mechanism"], c["groupchat"]["method"]) for c in chosen} == {("function", "callable")}
    assert chosen[0]["groupchat"]["detail"]["function"].endswith("every_other")
    check_receipt(result)


def test_a_callable_naming_nobody_is_an_error() -> None:
    chat = GroupChat(agents(), speaker_selection=lambda context: "zed")
    with pytest.raises(GroupChatError, match="returned 'zed', not one of"):
        chat.run("Callable.")


def test_method_names() -> None:
    with pytest.raises(ValueError, match="'auto' needs something to ask"):
        GroupChat(agents(), speaker_selection="auto")
    with pytest.raises(ValueError, match="unknown speaker selection method 'vote'"):
        GroupChat(agents(), speaker_selection="vote")
    with pytest.raises(TypeError, match="AutoSelector needs"):
        AutoSelector(42)
