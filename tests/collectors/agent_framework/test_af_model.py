"""An agent's reply carries the vocabulary's ``model`` member: provider, models, token usage, finish reason."""

from __future__ import annotations

import json

import pytest
from agent_framework import Agent, tool

from aer1._vocabulary import VOCABULARY
from aer1.collectors.agent_framework import AER1AgentFrameworkCollector

from .conftest import Check
from .scripted import Call, ScriptedChatClient

SECRET = "sk-test-not-a-real-key-af-0123456789"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.mark.parametrize("stream", [False, True])
async def test_a_reply_records_usage_and_the_model(stream: bool, collector: AER1AgentFrameworkCollector,
                                                   check: Check) -> None:
    # Two model calls in one run (a tool call, then the answer): the framework adds their usage up.
    client = ScriptedChatClient([Call("add", {"a": 2, "b": 3}, "c1"), "five"], usage=(11, 4), model="gpt-4o-2024-08-06")
    agent = collector.observe(Agent(client=client, name="adder", tools=[add], default_options={"model": "gpt-4o"}))
    if stream:
        async for _ in agent.run("add 2 and 3", stream=True):
            pass
    else:
        assert (await agent.run("add 2 and 3")).text == "five"
    receipt, contents = check(collector)
    (reply,) = [contents[s["seq"]] for s in receipt["steps"] if s["tool"] == "agent_run"]
    assert reply["vocabulary"] == VOCABULARY and (reply["content"], reply["role"]) == ("five", "assistant")
    model = reply["model"]
    assert model["provider"] == "ScriptedChatClient"  # the client names no provider: its class does
    assert (model["request_model"], model["response_model"]) == ("gpt-4o", "gpt-4o-2024-08-06")
    assert (model["input_tokens"], model["output_tokens"]) == (22, 8)
    assert model["finish_reasons"] == ["stop"]
    assert reply["agent_framework"]["response"]["messages"][-1]["contents"][0]["text"] == "five"


async def test_a_reply_without_usage_says_unknown(collector: AER1AgentFrameworkCollector, check: Check) -> None:
    agent = collector.observe(Agent(client=ScriptedChatClient(["hi"]), name="plain"))
    await agent.run("hello")
    receipt, contents = check(collector)
    (reply,) = [contents[s["seq"]] for s in receipt["steps"] if s["tool"] == "agent_run"]
    assert reply["model"] == {"provider": "ScriptedChatClient", "request_model": None, "response_model": None,
                              "input_tokens": None, "output_tokens": None, "finish_reasons": ["stop"],
                              "latency_ms": None}


async def test_the_model_member_names_no_credential(collector: AER1AgentFrameworkCollector, check: Check) -> None:
    class KeyedClient(ScriptedChatClient):
        """A client holding a key, naming its provider as the framework's service clients do."""

        OTEL_PROVIDER_NAME = "openai"

        def __init__(self) -> None:
            super().__init__(["ok"], usage=(1, 1))
            self.api_key = SECRET

    agent = collector.observe(Agent(client=KeyedClient(), name="keyed"))
    await agent.run("hello")
    receipt, contents = check(collector)
    (reply,) = [contents[s["seq"]] for s in receipt["steps"] if s["tool"] == "agent_run"]
    assert reply["model"]["provider"] == "openai"
    assert SECRET not in json.dumps(receipt) + json.dumps(contents)
