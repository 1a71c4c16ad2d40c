"""Every private AutoGen name the AgentChat and autogen-core collectors read or patch.

AgentChat offers no public way to reach a team's group chat manager, an agent's code
executor or a workbench's tools, so the collectors read (and, for hooks, replace) a few
private attributes. They are all declared here, by the AutoGen class that defines them,
and read only through :func:`read` / :func:`write`: a name not declared here is a
programming error (``KeyError``), and a declared name missing from an object of its
class is logged once as a warning (the receipt then holds fewer details: a missing
name never breaks a run). ``tests/collectors/agentchat/test_agentchat_internals.py`` checks every
name against real objects of each pinned version, so an upstream rename fails loudly
there instead of silently changing a digest or dropping a selection detail.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

__all__ = ["CHECKED_VERSIONS", "PRIVATE_NAMES", "declared", "read", "write"]

log = logging.getLogger("aer1")

#: autogen-agentchat / autogen-core / autogen-ext versions the table below was checked against.
CHECKED_VERSIONS = ("0.7.5",)

#: AutoGen class name -> the private attributes of its instances the collectors use.
PRIVATE_NAMES: dict[str, tuple[str, ...]] = {
    # agents: identity (config digest), hooks (code executor, approval function)
    "AssistantAgent": (
        "_workbench", "_tools", "_system_messages", "_model_client", "_handoffs", "_reflect_on_tool_use",
        "_max_tool_iterations", "_tool_call_summary_format", "_model_client_stream",
    ),
    "CodeExecutorAgent": (
        "_code_executor", "_approval_func", "_model_client", "_supported_languages", "_sources",
        "_max_retries_on_error",
    ),
    "SocietyOfMindAgent": ("_model_client",),
    # model clients: the model name (never the configuration: it may hold keys)
    "BaseOpenAIChatCompletionClient": ("_create_args", "_raw_config"),
    # workbenches: the tools and overrides behind a static workbench
    "StaticWorkbench": ("_tools", "_tool_overrides"),
    # teams: reaching the group chat manager
    "BaseGroupChat": ("_participants", "_runtime", "_group_chat_manager_topic_type", "_team_id", "_initialized",
                      "_init", "_max_turns", "_termination_condition"),
    # managers: who was selected and why
    "BaseGroupChatManager": ("_name", "_participant_name_to_topic_type"),
    "RoundRobinGroupChatManager": ("_next_speaker_index",),
    "SwarmGroupChatManager": ("_current_speaker",),
    "SelectorGroupChatManager": (
        "_previous_speaker", "_allow_repeated_speaker", "_selector_func", "_candidate_func", "_model_client",
        "_mentioned_agents", "_participant_names",
    ),
    "GraphFlowManager": ("_ready",),
    "MagenticOneOrchestrator": ("_model_client",),
}  # fmt: skip

# name -> the classes declaring it
_OWNERS: dict[str, frozenset[str]] = {}
for _owner, _names in PRIVATE_NAMES.items():
    for _name in _names:
        _OWNERS[_name] = _OWNERS.get(_name, frozenset()) | {_owner}
_MISSING = object()
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def declared(name: str) -> frozenset[str]:
    """The AutoGen classes declaring ``name``; ``KeyError`` if the collectors may not use it."""
    try:
        return _OWNERS[name]
    except KeyError:
        raise KeyError(f"{name!r} is not declared in aer1.collectors._agentchat_internals") from None


def read(obj: Any, name: str, default: Any = None) -> Any:
    """``obj.<name>`` for a declared private name, else ``default``.

    Missing on an object of a class that declares it: logged once per (class, name).
    """
    owners = declared(name)
    value = getattr(obj, name, _MISSING)
    if value is _MISSING:
        _missing(obj, name, owners)
        return default
    return value


def write(obj: Any, name: str, value: Any) -> None:
    """Set a declared private name (a hook replacing the agent's own object)."""
    declared(name)
    setattr(obj, name, value)


def _missing(obj: Any, name: str, owners: frozenset[str]) -> None:
    cls = type(obj)
    if not owners.intersection(c.__name__ for c in cls.__mro__):
        return  # another kind of object: the name was never expected on it
    key = (cls.__qualname__, name)
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    log.warning(
        "aer1: %s has no attribute %s (checked with AutoGen %s): the receipt records less about it",
        cls.__qualname__, name, ", ".join(CHECKED_VERSIONS),
    )  # fmt: skip
