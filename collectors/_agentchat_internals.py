"""Every private AutoGen name the AgentChat and autogen-core collectors read or patch.

AgentChat offers no public way to reach a team's group chat manager, an agent's code
executor or a workbench's tools, so the collectors read (and, for hooks, replace) a few
private attributes. They are all entries of :data:`TABLE`, each with the AutoGen class
that defines it and what it is for, and read only through :func:`read` / :func:`write`
with that entry: a name not declared here is a programming error (``KeyError``), and a
declared name missing from an object of its
class is logged once as a warning (the receipt then holds fewer details: a missing
name never breaks a run). ``tests/collectors/agentchat/test_agentchat_internals.py`` checks every
name against real objects of each pinned version, so an upstream rename fails loudly
there instead of silently changing a digest or dropping a selection detail.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ._internals import Private, Table

__all__ = [
    "AGENT_TOOLS",
    "ALLOW_REPEATED_SPEAKER",
    "APPROVAL_FUNC",
    "CANDIDATE_FUNC",
    "CHECKED_VERSIONS",
    "CODE_EXECUTOR",
    "CREATE_ARGS",
    "CURRENT_SPEAKER",
    "HANDOFFS",
    "INIT",
    "INITIALIZED",
    "MANAGER_MODEL_CLIENT",
    "MANAGER_NAME",
    "MANAGER_TOPIC_TYPE",
    "MAX_RETRIES_ON_ERROR",
    "MAX_TOOL_ITERATIONS",
    "MAX_TURNS",
    "MENTIONED_AGENTS",
    "MODEL_CLIENT",
    "MODEL_CLIENT_STREAM",
    "NEXT_SPEAKER_INDEX",
    "PARTICIPANTS",
    "PARTICIPANT_NAMES",
    "PARTICIPANT_TOPICS",
    "PREVIOUS_SPEAKER",
    "PRIVATE_NAMES",
    "RAW_CONFIG",
    "READY",
    "REFLECT_ON_TOOL_USE",
    "RUNTIME",
    "SELECTOR_FUNC",
    "SOURCES",
    "SUPPORTED_LANGUAGES",
    "SYSTEM_MESSAGES",
    "TABLE",
    "TEAM_ID",
    "TERMINATION_CONDITION",
    "TOOL_CALL_SUMMARY_FORMAT",
    "TOOL_OVERRIDES",
    "WORKBENCH",
    "WORKBENCH_TOOLS",
    "declared",
    "read",
    "write",
]  # fmt: skip

log = logging.getLogger("aer1")

#: autogen-agentchat / autogen-core / autogen-ext versions the table below was checked against.
CHECKED_VERSIONS = ("0.7.5",)

# agents: identity (config digest), hooks (code executor, approval function)
_IDENTITY = "identity (config digest): "
_FLAG = _IDENTITY + "a behaviour flag"
WORKBENCH = Private("AssistantAgent", "_workbench", _IDENTITY + "the tools behind its workbenches")
AGENT_TOOLS = Private("AssistantAgent", "_tools", _IDENTITY + "its tool schemas, when no workbench lists them")
SYSTEM_MESSAGES = Private("AssistantAgent", "_system_messages", _IDENTITY + "the system message")
MODEL_CLIENT = Private("AssistantAgent", "_model_client", _IDENTITY + "the model; a reply's provider and model",
                       also=("CodeExecutorAgent", "SocietyOfMindAgent"))
HANDOFFS = Private("AssistantAgent", "_handoffs", _IDENTITY + "handoff schemas; the targets of handoff calls")
REFLECT_ON_TOOL_USE = Private("AssistantAgent", "_reflect_on_tool_use", _FLAG)
MAX_TOOL_ITERATIONS = Private("AssistantAgent", "_max_tool_iterations", _FLAG)
TOOL_CALL_SUMMARY_FORMAT = Private("AssistantAgent", "_tool_call_summary_format", _FLAG)
MODEL_CLIENT_STREAM = Private("AssistantAgent", "_model_client_stream", _FLAG)
CODE_EXECUTOR = Private("CodeExecutorAgent", "_code_executor", "code_execution steps: the executor is hooked")
APPROVAL_FUNC = Private("CodeExecutorAgent", "_approval_func", "approval steps: the approval function is hooked")
SUPPORTED_LANGUAGES = Private("CodeExecutorAgent", "_supported_languages", _FLAG)
SOURCES = Private("CodeExecutorAgent", "_sources", _FLAG)
MAX_RETRIES_ON_ERROR = Private("CodeExecutorAgent", "_max_retries_on_error", _FLAG)
# model clients: the model name (never the configuration: it may hold keys)
CREATE_ARGS = Private("BaseOpenAIChatCompletionClient", "_create_args", _IDENTITY + "the model name")
RAW_CONFIG = Private("BaseOpenAIChatCompletionClient", "_raw_config", _IDENTITY + "the model name")
# workbenches: the tools and overrides behind a static workbench
WORKBENCH_TOOLS = Private("StaticWorkbench", "_tools", "the tools behind a static workbench")
TOOL_OVERRIDES = Private("StaticWorkbench", "_tool_overrides", "the names a static workbench gives its tools")
# teams: reaching the group chat manager
_REACH = "reaching the group chat manager: "
_TEAM_CONFIG = "a team's configuration (config_change steps between runs)"
PARTICIPANTS = Private("BaseGroupChat", "_participants", "a team's wrapped participants and nested teams")
RUNTIME = Private("BaseGroupChat", "_runtime", _REACH + "the team's runtime")
MANAGER_TOPIC_TYPE = Private("BaseGroupChat", "_group_chat_manager_topic_type", _REACH + "its agent type")
TEAM_ID = Private("BaseGroupChat", "_team_id", "the team's actor; " + _REACH + "its key")
INITIALIZED = Private("BaseGroupChat", "_initialized", _REACH + "made yet?")
INIT = Private("BaseGroupChat", "_init", _REACH + "making it")
MAX_TURNS = Private("BaseGroupChat", "_max_turns", _TEAM_CONFIG)
TERMINATION_CONDITION = Private("BaseGroupChat", "_termination_condition", _TEAM_CONFIG)
# managers: who was selected and why
_ANSWER_VALID = "whether the model's answer was valid"
MANAGER_NAME = Private("BaseGroupChatManager", "_name", "the chat messages a manager writes itself")
PARTICIPANT_TOPICS = Private("BaseGroupChatManager", "_participant_name_to_topic_type",
                             "the speaker a request to speak goes to")
NEXT_SPEAKER_INDEX = Private("RoundRobinGroupChatManager", "_next_speaker_index", "a round robin's position")
CURRENT_SPEAKER = Private("SwarmGroupChatManager", "_current_speaker", "a swarm's current speaker")
PREVIOUS_SPEAKER = Private("SelectorGroupChatManager", "_previous_speaker", "a selection's previous speaker")
ALLOW_REPEATED_SPEAKER = Private("SelectorGroupChatManager", "_allow_repeated_speaker", _ANSWER_VALID)
SELECTOR_FUNC = Private("SelectorGroupChatManager", "_selector_func", "a selection made by the selector function")
CANDIDATE_FUNC = Private("SelectorGroupChatManager", "_candidate_func", "the candidates a function allowed")
MENTIONED_AGENTS = Private("SelectorGroupChatManager", "_mentioned_agents", _ANSWER_VALID)
PARTICIPANT_NAMES = Private("SelectorGroupChatManager", "_participant_names", _ANSWER_VALID)
MANAGER_MODEL_CLIENT = Private("SelectorGroupChatManager", "_model_client", "the selector model's replies",
                               also=("MagenticOneOrchestrator",))
READY = Private("GraphFlowManager", "_ready", "a graph's ready speakers")

#: Every private AutoGen name the collectors use (its canary:
#: ``tests/collectors/agentchat/test_agentchat_internals.py``).
TABLE = Table(
    "AgentChat",
    (WORKBENCH, AGENT_TOOLS, SYSTEM_MESSAGES, MODEL_CLIENT, HANDOFFS, REFLECT_ON_TOOL_USE, MAX_TOOL_ITERATIONS,
     TOOL_CALL_SUMMARY_FORMAT, MODEL_CLIENT_STREAM, CODE_EXECUTOR, APPROVAL_FUNC, SUPPORTED_LANGUAGES, SOURCES,
     MAX_RETRIES_ON_ERROR, CREATE_ARGS, RAW_CONFIG, WORKBENCH_TOOLS, TOOL_OVERRIDES, PARTICIPANTS, RUNTIME,
     MANAGER_TOPIC_TYPE, TEAM_ID, INITIALIZED, INIT, MAX_TURNS, TERMINATION_CONDITION, MANAGER_NAME,
     PARTICIPANT_TOPICS, NEXT_SPEAKER_INDEX,
     CURRENT_SPEAKER, PREVIOUS_SPEAKER, ALLOW_REPEATED_SPEAKER, SELECTOR_FUNC, CANDIDATE_FUNC, MENTIONED_AGENTS,
     PARTICIPANT_NAMES, MANAGER_MODEL_CLIENT, READY),
    {dist: CHECKED_VERSIONS for dist in ("autogen-agentchat", "autogen-core", "autogen-ext")},
)  # fmt: skip

#: AutoGen class name -> the private attributes of its instances the collectors use (the table by class).
PRIVATE_NAMES: dict[str, tuple[str, ...]] = {}
# name -> the classes declaring it
_OWNERS: dict[str, frozenset[str]] = {}
for _entry in TABLE.entries:
    for _owner in _entry.owners:
        PRIVATE_NAMES[_owner] = (*PRIVATE_NAMES.get(_owner, ()), _entry.attr)
        _OWNERS[_entry.attr] = _OWNERS.get(_entry.attr, frozenset()) | {_owner}
_MISSING = object()
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def declared(name: str) -> frozenset[str]:
    """The AutoGen classes declaring ``name``; ``KeyError`` if the collectors may not use it."""
    try:
        return _OWNERS[name]
    except KeyError:
        raise KeyError(f"{name!r} is not declared in aer1.collectors._agentchat_internals") from None


def read(obj: Any, name: Private | str, default: Any = None) -> Any:
    """``obj.<name>`` for an entry of the table (or a declared name), else ``default``.

    Missing on an object of a class that declares it: logged once per (class, name).
    """
    attr, owners = (name, declared(name)) if isinstance(name, str) else (name.attr, frozenset(name.owners))
    value = getattr(obj, attr, _MISSING)
    if value is _MISSING:
        _missing(obj, attr, owners)
        return default
    return value


def write(obj: Any, name: Private | str, value: Any) -> None:
    """Set an entry of the table (or a declared name): a hook replacing the agent's own object."""
    if isinstance(name, str):
        declared(name)
        setattr(obj, name, value)
    else:
        name.set(obj, value)


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
