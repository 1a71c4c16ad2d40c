"""Every name of the classic AutoGen API that the legacy hooks read or patch, in one place.

The hooks must never break a chat, so at run time a missing name degrades to "not
observed" instead of raising. A rename upstream would then silently change what a
receipt says; :data:`NAMES` lists every name the hooks depend on, and :func:`missing`
reports the ones the installed package lacks (the canary test asserts it is empty for
each pinned package version).

Importing this module imports no AutoGen.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ._internals import Private, Table, resolve_owner

__all__ = [
    "APPEND_OAI_MESSAGE",
    "AUTO_REPLY_COUNTER",
    "AUTO_REPLY_LIMITS",
    "A_CHECK_TERMINATION",
    "CHECK_TERMINATION",
    "CODE_EXECUTION_CONFIG",
    "CONFIG_LIST",
    "DISPLAY_NAME",
    "EXECUTOR_REPLY",
    "IS_TERMINATION_MSG",
    "NAMES",
    "PINNED",
    "SELECTION_RESULT",
    "TABLE",
    "TERMINATION_EVENT",
    "Name",
    "append_oai_message_attr",
    "auto_replies",
    "code_execution_config",
    "config_list",
    "executor_reply_function",
    "installed",
    "is_no_eligible",
    "is_termination",
    "manager_is_termination",
    "missing",
    "selection_result_attr",
    "selector_answers",
    "termination_checks",
    "termination_of",
    "tool_result",
    "watch_iostream",
]

#: The classic AutoGen distributions and the version of each that the tests pin.
PINNED = {"pyautogen": "0.2.35", "ag2": "0.14.0", "autogen": "0.14.1"}
#: Distributions whose ``autogen`` module is the AG2 classic line (0.14 series).
_AG2_LINE = frozenset({"ag2", "autogen"})

#: Exception class names AutoGen raises when no speaker can be selected (0.2.x; AG2).
_NO_ELIGIBLE_NAMES = frozenset({"NoEligibleSpeaker", "NoEligibleSpeakerError"})
#: The prefix the selector chat's checking agent gives an answer that named one agent.
_AGENT_SELECTED = "[AGENT SELECTED]"
#: The members of the event AG2 0.14 sends through the IOStream when a chat ends.
_TERMINATION_REASON = "termination_reason"
_EVENT_CONTENT = "content"


@dataclass(frozen=True)
class Name(Private):
    """One dependency: ``attr`` of ``owner`` (``module:Qualified.Path``), and in which line."""

    ag2_only: bool = False


_AGENT = "autogen:ConversableAgent"
#: The method every send calls, right after the send hooks, to store the outgoing message.
APPEND_OAI_MESSAGE = Name(_AGENT, "_append_oai_message", "the message as sent, and whether it was")
#: The reply function that runs a ``code_executor`` (replaced to name the acting agent).
EXECUTOR_REPLY = Name(_AGENT, "_generate_code_execution_reply_using_executor",
                      "naming the agent using a shared executor")
#: Where an agent keeps its ``code_execution_config`` (False when code execution is off).
CODE_EXECUTION_CONFIG = Name(_AGENT, "_code_execution_config", "config digest: code execution mode", instance=True)
#: An agent's (or a manager's) own termination predicate (re-evaluated to derive a termination reason).
IS_TERMINATION_MSG = Name(_AGENT, "_is_termination_msg", "termination reason", instance=True)
#: How many auto replies in a row an agent has given each sender, and its limit per sender.
AUTO_REPLY_COUNTER = Name(_AGENT, "_consecutive_auto_reply_counter", "a two-agent chat's termination reason",
                          instance=True)
AUTO_REPLY_LIMITS = Name(_AGENT, "_max_consecutive_auto_reply_dict", "a two-agent chat's termination reason",
                         instance=True)
#: The reply functions that end a chat (they answer ``(True, None)``): termination and human reply.
CHECK_TERMINATION = Name(_AGENT, "check_termination_and_human_reply", "a two-agent chat's termination reason")
A_CHECK_TERMINATION = Name(_AGENT, "a_check_termination_and_human_reply",
                           "a two-agent chat's termination reason (async)")
#: Where an ``OpenAIWrapper`` keeps its config entries (model, api_type, model_client_cls, ...).
CONFIG_LIST = Name("autogen:OpenAIWrapper", "_config_list", "model facts of a reply: its config entry",
                   instance=True)
#: Where ``auto`` selection reads its selector chat's result (the model's answers), both lines.
SELECTION_RESULT = Name("autogen:GroupChat", "_process_speaker_selection_result",
                        "the selector model's answers (auto selection)")
#: The event AG2 0.14 sends through the IOStream when a chat ends.
TERMINATION_EVENT = Name("autogen.events.agent_events", "TerminationEvent", "AG2's own termination reason",
                         ag2_only=True)
#: How AG2 names a transition target (``AgentTarget``, ``TerminateTarget``, ...).
DISPLAY_NAME = Name("autogen.agentchat.group.targets.transition_target:TransitionTarget", "display_name",
                    "handoff targets of tool results", ag2_only=True)

NAMES: tuple[Name, ...] = (
    APPEND_OAI_MESSAGE,
    Name(_AGENT, "send", "knowing which append is a send"),
    Name(_AGENT, "a_send", "knowing which append is a send (async)"),
    Name(_AGENT, "replace_reply_func", "wrapping reply functions in place"),
    Name(_AGENT, "execute_function", "tool calls (sync)"),
    Name(_AGENT, "a_execute_function", "tool calls (async)"),
    Name(_AGENT, "get_human_input", "human input (sync)"),
    Name(_AGENT, "a_get_human_input", "human input (async)"),
    Name(_AGENT, "execute_code_blocks", "code_execution_config path"),
    EXECUTOR_REPLY,
    CODE_EXECUTION_CONFIG,
    IS_TERMINATION_MSG,
    AUTO_REPLY_COUNTER,
    AUTO_REPLY_LIMITS,
    CHECK_TERMINATION,
    A_CHECK_TERMINATION,
    Name(_AGENT, "initiate_chat", "a two-agent chat's task and termination"),
    Name(_AGENT, "a_initiate_chat", "a two-agent chat's task and termination (async)"),
    Name(_AGENT, "max_consecutive_auto_reply", "a two-agent chat's termination reason"),
    Name(_AGENT, "chat_messages", "call ids (pyautogen 0.2), reply linkage"),
    Name("autogen:OpenAIWrapper", "create", "model facts of a reply (timed)"),
    CONFIG_LIST,
    Name("autogen:GroupChatManager", "run_chat", "start and end of a group chat run"),
    Name("autogen:GroupChatManager", "a_run_chat", "start and end of a group chat run (async)"),
    Name("autogen:GroupChat", "append", "rounds and the opening message"),
    Name("autogen:GroupChat", "select_speaker", "speaker selection"),
    Name("autogen:GroupChat", "a_select_speaker", "speaker selection (async)"),
    Name("autogen:GroupChat", "manual_select_speaker", "manual selection choice"),
    SELECTION_RESULT,
    Name("autogen.code_utils", "infer_lang", "language of a legacy code block"),
    Name("autogen.io", "IOStream", "AG2's termination events"),
    Name("autogen.exception_utils", "NoEligibleSpeaker", "no-eligible-speaker termination"),
    Name("autogen.exception_utils", "NoEligibleSpeakerError", "no-eligible-speaker termination", ag2_only=True),
    TERMINATION_EVENT,
    Name("autogen.agentchat.group.patterns.pattern:Pattern", "prepare_group_chat", "pattern API", ag2_only=True),
    DISPLAY_NAME,
)


def _autogen_providers() -> set[str]:
    """The distributions (names lowercased) that install the ``autogen`` module."""
    try:
        found = importlib.metadata.packages_distributions().get("autogen") or []
    except Exception:  # unreadable metadata: no distribution is known to provide it
        return set()
    return {str(name).lower() for name in found}


def installed() -> tuple[str, str] | None:
    """(distribution, version) of the installed classic AutoGen package, or None.

    Only a distribution that provides the ``autogen`` module counts: ``ag2`` 1.x, which
    ships only the ``ag2`` package, can sit beside the classic ``autogen`` 0.14 and is
    not it.
    """
    providers = _autogen_providers()
    for dist in PINNED:
        if dist not in providers:
            continue
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return dist, importlib.metadata.version(dist)
    return None


def _installed_map() -> dict[str, str]:
    found = installed()
    return dict([found]) if found is not None else {}


#: The table of the classic line (its canary: ``tests/collectors/legacy/test_legacy_internals.py``).
TABLE = Table("legacy", NAMES, {dist: (version,) for dist, version in PINNED.items()}, installed=_installed_map)


def missing() -> list[str]:
    """``owner.attr`` of every name the installed package lacks (empty when all are there)."""
    found = installed()
    ag2_line = found is not None and found[0] in _AG2_LINE

    def applies(name: Private) -> bool:
        if isinstance(name, Name) and name.ag2_only and not ag2_line:
            return False
        if name is CONFIG_LIST and importlib.util.find_spec("openai") is None:
            return False  # no OpenAI client library: no OpenAIWrapper can be made, nor read
        return not (name.attr == "NoEligibleSpeaker" and ag2_line)  # renamed NoEligibleSpeakerError there

    def resolve(name: Private, owner: str) -> Any:
        obj = resolve_owner(owner)
        if name is CONFIG_LIST:
            return obj(config_list=[{"model": "aer1-canary", "api_key": "sk-aer1-canary-not-a-key"}])
        return obj("aer1_canary", llm_config=False) if name.instance else obj

    return TABLE.missing(resolve, applies)


# ------------------------------------------------------------------------ accessors


def code_execution_config(agent: Any) -> Any:
    """An agent's ``code_execution_config`` (False when off)."""
    return CODE_EXECUTION_CONFIG.get(agent, False)


def executor_reply_function(conversable_agent_cls: Any) -> Any:
    """The reply function running an agent's ``code_executor``, or None."""
    return EXECUTOR_REPLY.get(conversable_agent_cls)


def selection_result_attr() -> str:
    """The GroupChat method ``auto`` selection hands its selector chat's ``ChatResult`` to."""
    return SELECTION_RESULT.attr


def selector_answers(result: Any) -> tuple[list[str], bool]:
    """(the selector model's answers, whether one was accepted) from an auto selection's ``ChatResult``.

    The selector chat alternates: the checking agent's message (the prompt, then its
    verdict on each answer), the model's answer. Its last message starts with
    ``[AGENT SELECTED]`` when an answer named exactly one agent.
    """
    history = list(getattr(result, "chat_history", None) or [])
    texts = [m.get("content") if isinstance(m, dict) else m for m in history]
    answers = [str(t) for t in texts[1::2] if t is not None]
    accepted = bool(texts) and isinstance(texts[-1], str) and texts[-1].startswith(_AGENT_SELECTED)
    return answers, accepted


def config_list(client: Any) -> Any:
    """The config entries of an ``OpenAIWrapper`` (a response's ``config_id`` indexes them), or None."""
    return CONFIG_LIST.get(client)


def termination_checks(conversable_agent_cls: Any) -> tuple[Any, Any]:
    """(sync, async) reply functions that end a chat by answering ``(True, None)``; None where absent."""
    return CHECK_TERMINATION.get(conversable_agent_cls), A_CHECK_TERMINATION.get(conversable_agent_cls)


def auto_replies(agent: Any, sender: Any) -> tuple[Any, Any]:
    """(auto replies given in a row to ``sender``, the agent's limit for it); None where unknown."""
    counts, limits = AUTO_REPLY_COUNTER.get(agent), AUTO_REPLY_LIMITS.get(agent)
    count = counts.get(sender, 0) if isinstance(counts, dict) else None
    limit = limits[sender] if isinstance(limits, dict) else None  # a defaultdict: the agent's default
    return count, limit


def is_termination(agent: Any, message: Any) -> bool:
    """An agent's (or a manager's) own ``is_termination_msg`` applied to ``message`` (raises when absent)."""
    return bool(getattr(agent, IS_TERMINATION_MSG.attr)(message))


manager_is_termination = is_termination


def append_oai_message_attr() -> str:
    """The name of the method a send stores its (processed) outgoing message with."""
    return APPEND_OAI_MESSAGE.attr


def is_no_eligible(exc: BaseException) -> bool:
    """True for AutoGen's no-eligible-speaker exception (either name)."""
    return any(cls.__name__ in _NO_ELIGIBLE_NAMES for cls in type(exc).__mro__)


def tool_result(value: Any) -> Any:
    """A tool's return value as data: an AG2 ``ReplyResult`` (or a transition target) with
    its target named (``display_name()``), since its plain dump leaves the target empty."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    display = DISPLAY_NAME.get(value)
    if callable(display):
        return {"target": str(display())}
    dump = getattr(value, "model_dump", None)
    if not callable(dump):
        return value
    try:
        data = dump(mode="json")
    except Exception:
        return value
    target = getattr(value, "target", None)
    if isinstance(data, dict) and target is not None and callable(DISPLAY_NAME.get(target)):
        data["target"] = str(DISPLAY_NAME.get(target)())
    return data


def termination_of(event: Any) -> tuple[str, Any] | None:
    """(termination_reason, sender name) of an AG2 ``TerminationEvent``, else None.

    AG2 wraps each event: its members are on the wrapper's ``content``.
    """
    if type(event).__name__ != TERMINATION_EVENT.attr:
        return None
    body = getattr(event, _EVENT_CONTENT, event)
    reason = getattr(body, _TERMINATION_REASON, None)
    return (reason, getattr(body, "sender", None)) if isinstance(reason, str) else None


class _Tap:
    """An IOStream that forwards everything to ``inner`` and shows each sent event to ``seen``."""

    def __init__(self, inner: Any, seen: Any) -> None:
        self._inner = inner
        self._seen = seen

    def send(self, message: Any) -> Any:
        with contextlib.suppress(Exception):
            self._seen(message)
        return self._inner.send(message)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@contextlib.contextmanager
def watch_iostream(seen: Any) -> Iterator[None]:
    """While the block runs, show ``seen`` each event AutoGen sends to the default IOStream.

    Everything is forwarded unchanged to the stream that was the default. Without an
    IOStream (or without a default one), nothing is watched.
    """
    try:
        from autogen.io import IOStream

        inner = IOStream.get_default()
    except Exception:
        yield
        return
    with IOStream.set_default(_Tap(inner, seen)):
        yield
