"""Canary: every private name of Agent Framework that the collector reads still means what it did."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from agent_framework import Agent, FunctionInvocationContext, FunctionMiddleware, Message
from agent_framework.orchestrations import GroupChatBuilder, GroupChatState, SequentialBuilder

from aer1.collectors import _af_internals
from aer1.collectors._af_internals import (
    CALL_ID_METADATA_KEY,
    PROVIDER_ATTRIBUTE,
    active_run,
    function_call_id,
    max_rounds,
    model_facts,
    response_model,
    stream_error,
)

from .scripted import Call, ScriptedChatClient
from .workflows import add


class Spy(FunctionMiddleware):
    def __init__(self) -> None:
        self.seen: list[str | None] = []

    async def process(self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]) -> None:
        self.seen.append(function_call_id(context))
        await call_next()


async def test_function_context_metadata_carries_the_call_id() -> None:
    spy = Spy()
    agent = Agent(client=ScriptedChatClient([Call("add", {"a": 1, "b": 1}, "canary-1"), "two"]), name="a",
                  tools=[add], middleware=[spy])
    await agent.run("add")
    assert spy.seen == ["canary-1"], f"got {spy.seen} under metadata[{CALL_ID_METADATA_KEY!r}], want ['canary-1']"


def test_group_chat_orchestrator_keeps_its_round_limit() -> None:
    def first(state: GroupChatState) -> str:
        return "a"

    workflow = GroupChatBuilder(participants=[Agent(client=ScriptedChatClient([]), name="a")], selection_func=first,
                                max_rounds=4).build()
    assert max_rounds(workflow) == 4, f"got {max_rounds(workflow)}, want 4 ({_af_internals.MAX_ROUNDS_ATTRIBUTE})"


async def test_workflow_keeps_the_stream_of_a_run_not_streamed() -> None:
    workflow = SequentialBuilder(participants=[Agent(client=ScriptedChatClient(["hi"]), name="a")]).build()
    pending = workflow.run("go")
    stream = active_run(workflow)
    assert stream is not None, f"got no stream under {_af_internals.ACTIVE_RUN_ATTRIBUTE!r}, want the run's"
    seen: list[str] = []
    stream.with_update_transform(lambda event: seen.append(event.type))
    result = await pending
    assert "output" in seen and len(seen) >= len(list(result)), f"got {seen}, want every event of the run"


async def test_a_failed_stream_shows_its_error_to_cleanup_hooks() -> None:
    stream = ScriptedChatClient([]).get_response([Message(role="user", contents=["hi"])], stream=True)
    seen: list[BaseException | None] = []
    stream.with_cleanup_hook(lambda: seen.append(stream_error(stream)))
    with pytest.raises(AssertionError, match="script exhausted") as raised:
        async for _ in stream:
            pass
    assert seen == [raised.value], f"got {seen} under {_af_internals.STREAM_ERROR_ATTRIBUTE!r}, want the error"


@pytest.mark.parametrize("stream", [False, True])
async def test_an_agent_response_keeps_the_model_it_was_built_from(stream: bool) -> None:
    agent = Agent(client=ScriptedChatClient(["hi"], model="canary-model-2"), name="a",
                  default_options={"model": "canary-model"})
    if stream:
        response = await agent.run("go", stream=True).get_final_response()
    else:
        response = await agent.run("go")
    assert response_model(response) == "canary-model-2", "the chat response's model is no longer reachable from " \
        f"the agent's response (raw_representation): got {response_model(response)!r}"
    assert model_facts(agent) == ("ScriptedChatClient", "canary-model"), \
        f"got {model_facts(agent)}, want the client's class ({PROVIDER_ATTRIBUTE} unknown) and the default model"
