"""Canary for AutoGen's private names: every one the collectors use exists on real objects.

The collectors read or patch a few private AutoGen attributes, all declared in
``aer1.collectors._agentchat_internals``. This test builds a real object of every
declaring class with the installed (pinned) AutoGen and fails, naming the class and the
attribute, when one is missing: an upstream rename is caught here rather than silently
changing a config digest or dropping a selection detail.
"""

from __future__ import annotations

import logging
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent, CodeExecutorAgent, SocietyOfMindAgent
from autogen_agentchat.teams import (
    DiGraphBuilder,
    GraphFlow,
    MagenticOneGroupChat,
    RoundRobinGroupChat,
    SelectorGroupChat,
    Swarm,
)
from autogen_core.tools import FunctionTool, StaticWorkbench
from autogen_ext.code_executors.local import LocalCommandLineCodeExecutor
from autogen_ext.models.openai import OpenAIChatCompletionClient

from aer1.collectors import _agentchat_internals as internals
from aer1.collectors.agentchat import _find_manager

from ...scripted_models import scripted_client

pytestmark = pytest.mark.filterwarnings("ignore:No approval function set:UserWarning")

PACKAGES = ("autogen-agentchat", "autogen-core", "autogen-ext")


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def _assistant(name: str, **kwargs: Any) -> AssistantAgent:
    return AssistantAgent(name, model_client=scripted_client(["x"]), **kwargs)


async def _real_objects(tmp_path: Path) -> dict[str, Any]:
    """One real instance of every class that declares private names, by class name."""
    objects: dict[str, Any] = {
        "AssistantAgent": _assistant("alice", tools=[add], handoffs=["bob"]),
        "CodeExecutorAgent": CodeExecutorAgent(
            "runner", code_executor=LocalCommandLineCodeExecutor(work_dir=tmp_path), model_client=scripted_client([])
        ),
        "BaseOpenAIChatCompletionClient": OpenAIChatCompletionClient(model="gpt-4o-mini", api_key="not-a-key"),
        "StaticWorkbench": StaticWorkbench([FunctionTool(add, description="add")]),
    }
    round_robin = RoundRobinGroupChat([_assistant("alice"), _assistant("bob")])
    objects["BaseGroupChat"] = round_robin
    objects["SocietyOfMindAgent"] = SocietyOfMindAgent("society", team=round_robin, model_client=scripted_client([]))
    a, b = _assistant("a"), _assistant("b")
    builder = DiGraphBuilder()
    builder.add_node(a).add_node(b).add_edge(a, b)
    teams = {
        "RoundRobinGroupChatManager": RoundRobinGroupChat([_assistant("alice"), _assistant("bob")]),
        "SwarmGroupChatManager": Swarm([_assistant("alice", handoffs=["bob"]), _assistant("bob")]),
        "SelectorGroupChatManager": SelectorGroupChat(
            [_assistant("alice"), _assistant("bob")], model_client=scripted_client([])
        ),
        "GraphFlowManager": GraphFlow(participants=builder.get_participants(), graph=builder.build()),
        "MagenticOneOrchestrator": MagenticOneGroupChat([_assistant("alice")], model_client=scripted_client([])),
    }
    for name, team in teams.items():
        manager = await _find_manager(team)
        assert type(manager).__name__ == name, f"got manager {type(manager).__name__}, want {name}"
        objects[name] = manager
    objects["BaseGroupChatManager"] = objects["RoundRobinGroupChatManager"]
    return objects


@pytest.mark.parametrize("package", PACKAGES)
def test_installed_autogen_is_a_checked_version(package: str) -> None:
    # A new pin must be checked (this canary passing on it) and added to CHECKED_VERSIONS.
    assert version(package) in internals.CHECKED_VERSIONS, (
        f"got {package} {version(package)}, want one of {internals.CHECKED_VERSIONS}: rerun this canary and "
        "update aer1.collectors._agentchat_internals"
    )


async def test_every_private_name_exists_on_real_objects(tmp_path: Path) -> None:
    objects = await _real_objects(tmp_path)
    assert set(objects) == set(internals.PRIVATE_NAMES), "every declaring class needs a real object here"
    missing = [
        f"{cls}.{name}" for cls, names in internals.PRIVATE_NAMES.items() for name in names
        if not hasattr(objects[cls], name)
    ]  # fmt: skip
    assert missing == [], f"got private names missing in AutoGen {version('autogen-agentchat')}: {missing}"
    # The class names are AutoGen's own (each object really is of, or derives from, that class).
    for cls, obj in objects.items():
        assert cls in {c.__name__ for c in type(obj).__mro__}, f"got {type(obj).__name__}, want a {cls}"


def test_undeclared_names_are_refused_and_missing_ones_warned_once(caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(KeyError, match="not declared"):
        internals.read(object(), "_not_declared_anywhere")

    class GraphFlowManager:  # stands for a future AutoGen whose manager lost ``_ready``
        pass

    with caplog.at_level(logging.WARNING, logger="aer1"):
        assert internals.read(GraphFlowManager(), "_ready", ()) == ()
        assert internals.read(GraphFlowManager(), "_ready") is None
        assert internals.read(object(), "_ready") is None  # not a manager: nothing to say
    warnings = [r.getMessage() for r in caplog.records if "_ready" in r.getMessage()]
    assert len(warnings) == 1 and "GraphFlowManager has no attribute _ready" in warnings[0], warnings
