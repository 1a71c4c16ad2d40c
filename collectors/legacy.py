"""Recording hooks for the classic AutoGen API (the ``autogen`` module).

Works with pyautogen 0.2.x and with the AG2 classic line (``ag2`` up to 0.14 and the
maintained ``autogen`` 0.14 package), whose ``ConversableAgent``, ``GroupChat`` and
``GroupChatManager`` share one design. Two entry points:

* :func:`attach_legacy_hooks` records what one agent does: the messages it sends, the
  functions and tools it executes, the code it runs and the human input it reads.
* :func:`observe_groupchat` records a group chat: it attaches the hooks above to every
  participant and adds the manager's ``speaker_selection`` and ``termination`` steps. Given
  an AG2 pattern (``AutoPattern``, ``RoundRobinPattern``, ...), it observes the group chat
  the pattern builds for each ``initiate_group_chat`` / ``run_group_chat``.

Every private AutoGen name used here goes through :mod:`._legacy_internals`.

Everything here only observes: wrapped methods keep their signatures, arguments, return
values and exceptions, and every step goes through
``Collector.safe_record``, so a recording failure is logged and counted (the receipt then
says ``incomplete``) but never breaks the chat. The step contents and the way termination
reasons are derived are specified in ``spec/legacy.md``.

Importing this module needs no AutoGen; calling its functions without the classic API
installed raises an :class:`ImportError` naming the extra to install.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import logging
import re
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeVar

from aer1 import _steps_vocab as vocab
from aer1._redact import is_secret_key

from . import _legacy_internals as internals
from ._errors import count_failure, error_info, failure_status, outcome

if TYPE_CHECKING:
    from aer1 import Collector

__all__ = [
    "INSTALL_HINT",
    "LABEL_SEPARATOR",
    "MANAGER_BROADCAST",
    "OPENING_OBSERVED_AT",
    "TERMINATION_REASONS",
    "TWO_AGENT_CHAT",
    "TWO_AGENT_REASONS",
    "attach_legacy_hooks",
    "observe_groupchat",
]

log = logging.getLogger("aer1")
_T = TypeVar("_T")
internals.TABLE.warn_if_unchecked()  # logs once when the installed version is not one the names were checked on

#: How to install the classic AutoGen API this module observes.
INSTALL_HINT = "pip install 'aer1[legacy]'"
#: Why a group chat ended, as the ``reason`` of its ``termination`` step (see spec/legacy.md).
TERMINATION_REASONS = (
    "is_termination_msg",
    "max_round",
    "no_eligible_speaker",
    "empty_reply",
    "human_exit",
    "error",
)
#: Why a two-agent chat (``initiate_chat`` without a GroupChat) ended (see spec/legacy.md).
TWO_AGENT_REASONS = (
    "is_termination_msg",
    "max_turns",
    "max_consecutive_auto_reply",
    "human_exit",
    "empty_reply",
)
#: The ``team.type`` of a two-agent chat's ``task`` step.
TWO_AGENT_CHAT = "two_agent_chat"
#: The ``recipient``-less marker a manager's introduction message carries in its content.
MANAGER_BROADCAST = "all participants"
#: ``observed_at`` of an opening message recorded from the manager's copy (its sender is not hooked).
OPENING_OBSERVED_AT = "manager"
#: The answer with which a human ends a chat in AutoGen's human input modes.
HUMAN_EXIT_ANSWER = "exit"
#: Speaker selection methods AutoGen accepts by name (anything else is a callable).
SELECTION_METHODS = ("auto", "manual", "random", "round_robin")
#: The tool label of a function call whose name is missing or empty.
UNNAMED_FUNCTION = "unnamed_function"
#: Joins an AutoGen name and a number into the receipt name of the n-th distinct agent
#: object with that name in one collector (``chat_manager``, ``chat_manager#2``, ...).
LABEL_SEPARATOR = "#"
#: Most receipt names tried for one AutoGen name before giving up.
_MAX_LABELS = 10_000

# Attributes under which the hooks keep their state on the observed objects.
_AGENT_ATTR = "_aer1_legacy_agent"
_GROUP_ATTR = "_aer1_legacy_group"
_MANAGER_ATTR = "_aer1_legacy_manager"
_EXECUTOR_ATTR = "_aer1_legacy_executor"
_WRAPPED_ATTR = "_aer1_legacy_wrapped"
_PATTERN_ATTR = "_aer1_legacy_pattern"
_ORIGINAL_ATTR = "_aer1_original"

# llm_config keys holding live client objects or transport headers: never in a config digest.
# (Secret-looking keys are recognized by the core's ``aer1._redact.is_secret_key``.)
_LIVE_KEYS = frozenset({"http_client", "default_headers"})
_URL_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)[^/@]*@", re.IGNORECASE)


# --------------------------------------------------------------------------- autogen import

_api: SimpleNamespace | None = None


def _require_autogen() -> SimpleNamespace:
    """The classic AutoGen classes, or an ImportError naming the extra to install."""
    global _api
    if _api is None:
        try:
            from autogen import ConversableAgent, GroupChat, GroupChatManager
        except ImportError as e:
            raise ImportError(
                "aer1.collectors.legacy observes the classic AutoGen API (the `autogen` module of "
                f"pyautogen 0.2.x or ag2 <= 0.14), which is not installed: {INSTALL_HINT}"
            ) from e
        try:  # the pattern API of the AG2 classic line (0.9 and later)
            from autogen.agentchat.group.patterns.pattern import Pattern
        except ImportError:
            Pattern = None
        _api = SimpleNamespace(
            ConversableAgent=ConversableAgent, GroupChat=GroupChat, GroupChatManager=GroupChatManager, Pattern=Pattern
        )
    return _api


# ------------------------------------------------------------------------------ helpers


@contextlib.contextmanager
def _observing(collector: Collector, what: str) -> Iterator[None]:
    """Run observation code; a failure in it is logged and counted, never raised."""
    try:
        yield
    except Exception as e:
        count_failure(collector, f"legacy AutoGen: {what}", e)


def _name(agent: Any) -> str:
    """An agent's name as a non-empty string."""
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else type(agent).__name__


def _type_label(obj: Any) -> str:
    cls = type(obj)
    module = cls.__module__ or ""
    if module.split(".")[0] == "autogen":
        return f"autogen.{cls.__qualname__}"
    return f"{module}.{cls.__qualname__}" if module else cls.__qualname__


def _callable_label(func: Any) -> str:
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or type(func).__name__
    module = getattr(func, "__module__", None)
    return f"{module}.{name}" if module else str(name)


def _public_config(value: Any, depth: int = 0) -> Any:
    """An llm_config as plain data without credentials, clients or other live objects."""
    if depth > 16:
        return None
    if hasattr(value, "model_dump") and not isinstance(value, type):
        try:
            value = value.model_dump()
        except Exception:
            return f"<{type(value).__name__}>"
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            key_text = str(key)
            if key_text in _LIVE_KEYS or is_secret_key(key_text):
                continue
            out[key_text] = _public_config(item, depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_public_config(item, depth + 1) for item in value]
    if isinstance(value, str):
        return _URL_USERINFO.sub(r"\1", value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, type):
        return _callable_label(value)
    return f"<{type(value).__name__}>"


def _code_execution_summary(agent: Any) -> Any:
    config = internals.code_execution_config(agent)
    if config is False or config is None:
        return False
    executor = getattr(agent, "code_executor", None)
    if executor is not None:
        return {"executor": _type_label(executor)}
    if isinstance(config, Mapping):
        return {"legacy": {k: _public_config(v) for k, v in config.items() if k in ("use_docker", "timeout")}}
    return {"legacy": {}}


def _agent_config(agent: Any) -> dict[str, Any]:
    """What an agent's ``config_digest`` binds: no API key ever enters it."""
    config: dict[str, Any] = {
        "system_message": getattr(agent, "system_message", None),
        "llm_config": _public_config(getattr(agent, "llm_config", None)),
        "function_map": sorted(str(k) for k in (getattr(agent, "function_map", None) or {})),
        "human_input_mode": getattr(agent, "human_input_mode", None),
        "code_execution": _code_execution_summary(agent),
    }
    groupchat = getattr(agent, "groupchat", None)
    if groupchat is not None and hasattr(groupchat, "agents"):
        method = getattr(groupchat, "speaker_selection_method", None)
        config["groupchat"] = {
            "agents": [_name(a) for a in groupchat.agents],
            "max_round": getattr(groupchat, "max_round", None),
            "speaker_selection_method": method if isinstance(method, str) else _callable_label(method),
            "allow_repeat_speaker": _public_config(
                [_name(a) for a in groupchat.allow_repeat_speaker]
                if isinstance(getattr(groupchat, "allow_repeat_speaker", None), list)
                else getattr(groupchat, "allow_repeat_speaker", None)
            ),
            "func_call_filter": getattr(groupchat, "func_call_filter", None),
            "send_introductions": getattr(groupchat, "send_introductions", None),
        }
    return config


def _register(collector: Collector, agent: Any) -> str:
    """List ``agent`` in the receipt's ``agents`` under its receipt name; returns that name.

    The name is the agent's label in this collector (see :func:`_label`). Should another
    collector user have registered that label already, the agent gets the next one.
    """
    description = getattr(agent, "description", None)
    config = _agent_config(agent)
    for _ in range(_MAX_LABELS):
        label = _label(collector, agent)
        try:
            collector.register_agent(
                label,
                type=_type_label(agent),
                description=None if description is None else str(description),
                config=config,
            )
        except ValueError:
            _relabel(collector, agent)
            continue
        return label
    raise ValueError(f"no free receipt name for agent {_name(agent)!r}")


# ---------------------------------------------------------------------------- sessions


@dataclass
class _Session:
    """Per-collector memory shared by all hooked agents: labels, who spoke last in each pair."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    last_sender: dict[frozenset[int], str] = field(default_factory=dict)
    # id(agent) -> (weak reference to it, its receipt name); every receipt name ever given.
    labels: dict[int, tuple[Any, str]] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)


_sessions: weakref.WeakKeyDictionary[Any, _Session] = weakref.WeakKeyDictionary()
_sessions_lock = threading.Lock()


def _session(collector: Collector) -> _Session:
    with _sessions_lock:
        session = _sessions.get(collector)
        if session is None:
            session = _sessions[collector] = _Session()
        return session


def _label(collector: Collector, agent: Any) -> str:
    """The receipt name of ``agent`` in ``collector``: agents are told apart by identity.

    The first agent object with a given AutoGen name keeps it; each other distinct object
    with that name gets ``<name>#2``, ``<name>#3``, ... (skipping names already given), so
    two managers both called ``chat_manager`` stay two actors. A name, once given, is never
    given to another object, even after the first one is gone.
    """
    session = _session(collector)
    with session.lock:
        known = session.labels.get(id(agent))
        if known is not None and known[0]() is agent:
            return known[1]
        name = _name(agent)
        label = name
        for number in itertools.count(2):
            if label not in session.taken:
                break
            label = f"{name}{LABEL_SEPARATOR}{number}"
        session.taken.add(label)
        session.labels[id(agent)] = (weakref.ref(agent), label)
        return label


def _relabel(collector: Collector, agent: Any) -> None:
    """Forget ``agent``'s receipt name (it stays taken): the next :func:`_label` gives a new one."""
    session = _session(collector)
    with session.lock:
        session.labels.pop(id(agent), None)


# ------------------------------------------------------------------------- agent hooks


class _AgentHooks:
    """The hooks' state on one agent; ``collector`` can be switched by re-attaching."""

    def __init__(self, agent: Any, collector: Collector, name: str) -> None:
        self.collector = collector
        self.name = name  # the receipt name in ``collector`` (see _label)
        self.agent_ref = weakref.ref(agent)
        self.lock = threading.Lock()
        self.human_inputs = 0
        self.last_answer: Any = None
        self.stopped: tuple[str, str] | None = None  # why this agent last ended a chat (see _wrap_checks)
        self.model: dict[str, Any] | None = None  # the model reply its next send carries (see _wrap_client)

    # -- recording ---------------------------------------------------------------

    def record_human(self, prompt: Any, answer: Any, started: float, *, error: BaseException | None = None) -> None:
        with self.lock:
            self.human_inputs += 1
            self.last_answer = answer
        content = vocab.human_input("legacy", prompt=prompt, input=answer,
                                    error=error_info(error) if error is not None else None)
        self.collector.safe_record(
            "human_input",
            content,
            agent=self.name,
            kind="human_input",
            status="ok" if error is None else failure_status(error),
            started_at=started,
            ended_at=time.time(),
        )

    def tool_started(self, func_call: Any, call_id: Any, started: float, path: str) -> object:
        """Note a function call under way: finalize() before it ends records it ``cancelled``."""
        key = object()
        collector = self.collector

        def unfinished() -> None:
            self.record_tool(func_call, call_id, None, started, path, unfinished=True)

        collector.open_action(key, unfinished)
        return (collector, key)

    def tool_ended(self, key: Any, func_call: Any, call_id: Any, outcome: Any, started: float, path: str, *,
                   error: BaseException | None = None) -> None:
        """Record a function call that ended, unless finalize() recorded it unfinished already."""
        collector, token = key
        if collector.close_action(token):
            self.record_tool(func_call, call_id, outcome, started, path, error=error)

    def record_tool(
        self,
        func_call: Any,
        call_id: Any,
        outcome: Any,
        started: float,
        path: str,
        *,
        error: BaseException | None = None,
        unfinished: bool = False,
    ) -> None:
        with _observing(self.collector, "a function call"):
            call = func_call if isinstance(func_call, Mapping) else {}
            name = call.get("name")
            if call_id is None:
                call_id = self._find_call_id(func_call)
            success = False
            result: Any = None
            if error is None and isinstance(outcome, tuple) and len(outcome) == 2:
                success = bool(outcome[0])
                returned = outcome[1]
                result = internals.tool_result(returned.get("content") if isinstance(returned, Mapping) else returned)
            failure: dict[str, Any] | None = None
            if unfinished:
                failure = vocab.error_code(vocab.CANCELLED, vocab.UNFINISHED_MESSAGE)
            elif error is not None:
                failure = error_info(error)
            elif not success:  # AutoGen refuses text that is not JSON before calling the function
                failure = vocab.tool_failure(call.get("arguments"), result)
            content = vocab.tool_call(
                "legacy", name=name if isinstance(name, str) and name else UNNAMED_FUNCTION,
                call_id=None if call_id is None else str(call_id), arguments=call.get("arguments"),
                result=result if failure is None else None,
                error=failure, extras={"path": path})
            self.collector.safe_record(
                name if isinstance(name, str) and name else UNNAMED_FUNCTION,
                content,
                agent=self.name,
                kind="tool_call",
                status="cancelled" if unfinished else "ok" if success else
                "error" if error is None else failure_status(error),
                started_at=started,
                ended_at=time.time(),
                call_id=None if call_id is None else (str(call_id) or None),
            )

    def _find_call_id(self, func_call: Any) -> str | None:
        """The id of the tool call ``func_call`` belongs to (pyautogen 0.2 does not pass it)."""
        agent = self.agent_ref()
        if agent is None or not isinstance(func_call, Mapping):
            return None
        conversations = getattr(agent, "chat_messages", None) or {}
        equal: list[str] = []
        for messages in list(conversations.values()):
            if not messages:
                continue
            last = messages[-1]
            for tool_call in (last.get("tool_calls") or []) if isinstance(last, Mapping) else []:
                if not isinstance(tool_call, Mapping) or tool_call.get("id") is None:
                    continue
                function = tool_call.get("function")
                if function is func_call:
                    return str(tool_call["id"])
                if (
                    isinstance(function, Mapping)
                    and function.get("name") == func_call.get("name")
                    and (function.get("arguments") == func_call.get("arguments"))
                ):
                    equal.append(str(tool_call["id"]))
        return equal[0] if len(set(equal)) == 1 else None

    def record_code(
        self,
        executor: str,
        blocks: list[dict[str, Any]],
        exit_code: Any,
        output: Any,
        started: float,
        *,
        code_file: Any = None,
        error: BaseException | None = None,
    ) -> None:
        extras: dict[str, Any] = {"executor": executor}
        if code_file is not None:
            extras["code_file"] = str(code_file)
        content = vocab.code_execution("legacy", blocks=blocks, exit_code=exit_code, output=output,
                                       error=error_info(error) if error is not None else None, extras=extras)
        failed = error is not None or exit_code != 0
        self.collector.safe_record(
            "code_execution",
            content,
            agent=self.name,
            kind="code_execution",
            status="ok" if not failed else "error" if error is None else failure_status(error),
            started_at=started,
            ended_at=time.time(),
        )


# The agent whose reply is being generated, for code executors shared by several agents.
_CURRENT_AGENT: contextvars.ContextVar[_AgentHooks | None] = contextvars.ContextVar(
    "aer1_legacy_current_agent", default=None
)


def _hooks_of(agent: Any) -> _AgentHooks | None:
    hooks = getattr(agent, "__dict__", {}).get(_AGENT_ATTR)
    return hooks if isinstance(hooks, _AgentHooks) else None


def _record_sent(hooks: _AgentHooks, sender: Any, message: Any, recipient: Any) -> None:
    """One ``message`` step for a message ``sender`` has just sent to ``recipient``."""
    collector = hooks.collector
    group: _GroupHooks | None = None
    with _observing(collector, "a group chat manager"):
        api = _require_autogen()
        if isinstance(recipient, api.GroupChatManager):
            group = _group_of(getattr(recipient, "groupchat", None))
            if group is not None:
                # Observed through its GroupChat only: bind the manager before it runs.
                _observe_manager(recipient, group.collector, api)
    with _observing(collector, "a sent message"):
        to = _label(collector, recipient)
        reply_to: str | None = None
        if group is not None:
            run = group.run
            reply_to = run.last_speaker if run is not None else None
        else:
            session = _session(collector)
            pair = frozenset((id(sender), id(recipient)))
            history = getattr(sender, "chat_messages", None)
            # the message just sent is stored already: a reply needs an earlier one in this chat
            # (a new chat with clear_history starts afresh, though the pair spoke before)
            ongoing = len(history.get(recipient) or ()) > 1 if isinstance(history, Mapping) else False
            with session.lock:
                previous = session.last_sender.get(pair)
                session.last_sender[pair] = hooks.name
            if ongoing and previous == to:
                reply_to = previous
        chat = _ACTIVE_CHAT.get()
        nested_in = chat.nested_in if chat is not None and chat.between(sender, recipient) else None
        model, hooks.model = hooks.model, None
        collector.safe_record(
            "message",
            message_content(message, nested_in=nested_in, model=model),
            agent=hooks.name,
            kind="message",
            recipient=to,
            reply_to=reply_to,
        )


def message_content(message: Any, *, nested_in: str | None = None, model: Mapping[str, Any] | None = None,
                    **extras: Any) -> dict[str, Any]:
    """A sent message in the vocabulary: its text and role, the whole message (as sent) under ``legacy``."""
    text: Any = message
    role: Any = None
    if isinstance(message, Mapping):  # the whole message, as sent, under legacy
        text, role = message.get("content"), message.get("role")
        extras = {"message": message, **extras}
    return vocab.message("legacy", content=text, role=role if isinstance(role, str) else None, model=model,
                         nested_in=nested_in, extras=extras)


def _usage(response: Any, name: str) -> Any:
    usage = getattr(response, "usage", None)
    return usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)


def _model_reply(client: Any, response: Any, latency_ms: float) -> dict[str, Any]:
    """The ``model`` member of a reply from what the client's config entry and the response say (no credential)."""
    configs = internals.config_list(client)
    index = getattr(response, "config_id", None)
    if not isinstance(index, int) and isinstance(configs, list) and len(configs) == 1:
        index = 0  # AG2 sets config_id only on responses that declare it: with one entry, it is that one
    config = configs[index] if isinstance(configs, list) and isinstance(index, int) and 0 <= index < len(configs) \
        else {}
    config = config if isinstance(config, Mapping) else {}
    # a custom client class names the provider; AG2 fills api_type with "openai" in every entry
    provider = config.get("model_client_cls") or config.get("api_type") or "openai"
    reasons = [str(getattr(c, "finish_reason", None)) for c in getattr(response, "choices", None) or []
               if getattr(c, "finish_reason", None) is not None]
    return vocab.model_reply(provider=str(provider), request_model=config.get("model"),
                             response_model=getattr(response, "model", None),
                             input_tokens=_usage(response, "prompt_tokens"),
                             output_tokens=_usage(response, "completion_tokens"),
                             finish_reasons=reasons or None, latency_ms=latency_ms)


def _wrap_client(agent: Any, hooks: _AgentHooks) -> None:
    """Time each model request of the agent's client; its next send carries the reply's ``model`` facts.

    Only the client the agent has when hooked is observed (``register_function`` and
    ``register_model_client`` afterwards build a new one).
    """
    client = getattr(agent, "client", None)
    create = getattr(client, "create", None)
    if client is None or not callable(create) or getattr(create, _ORIGINAL_ATTR, None) is not None:
        return

    @functools.wraps(create)
    def observed_create(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        response = create(*args, **kwargs)
        with _observing(hooks.collector, "a model reply"):
            hooks.model = _model_reply(client, response, (time.perf_counter() - started) * 1000)
        return response

    _install(client, "create", observed_create, create)


@dataclass
class _PendingSend:
    """A send in progress: the next append of the sending agent stores its outgoing message."""

    hooks: _AgentHooks
    recipient: Any
    done: bool = False


# The innermost send in progress in this thread or task.
_PENDING_SEND: contextvars.ContextVar[_PendingSend | None] = contextvars.ContextVar(
    "aer1_legacy_pending_send", default=None
)


def _recipient_arg(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    """The ``recipient`` of a ``send(message, recipient, ...)`` call."""
    return args[1] if len(args) > 1 else kwargs.get("recipient")


def _wrap_sends(agent: Any, hooks: _AgentHooks, on_sent: Any) -> None:
    """Call ``on_sent(hooks, agent, message, recipient)`` for each message the agent really sends.

    AutoGen's ``send`` runs the ``process_message_before_send`` hooks (including those
    registered after ours), stores the result with ``_append_oai_message`` and, only if it
    was valid, delivers it. The message is recorded there: after every hook, only when sent,
    and before the recipient reacts to it.
    """
    attr = internals.append_oai_message_attr()
    append = getattr(agent, attr, None)
    if append is None:  # renamed upstream (the canary test says so): sends are not observed
        hooks.collector.count_recording_failure(
            f"the messages of {hooks.name}", AttributeError(f"{type(agent).__name__} has no {attr}")
        )
        return
    send, a_send = agent.send, agent.a_send

    def unseen(pending: _PendingSend) -> None:
        # A send that returned without storing its message (a subclass's own send): never silent.
        if not pending.done:
            hooks.collector.count_recording_failure(
                f"a message sent by {hooks.name}", RuntimeError("the send did not store its message")
            )

    @functools.wraps(send)
    def observed_send(*args: Any, **kwargs: Any) -> Any:
        pending = _PendingSend(hooks, _recipient_arg(args, kwargs))
        token = _PENDING_SEND.set(pending)
        try:
            result = send(*args, **kwargs)
        finally:
            _PENDING_SEND.reset(token)
        unseen(pending)
        return result

    @functools.wraps(a_send)
    async def observed_a_send(*args: Any, **kwargs: Any) -> Any:
        pending = _PendingSend(hooks, _recipient_arg(args, kwargs))
        token = _PENDING_SEND.set(pending)
        try:
            result = await a_send(*args, **kwargs)
        finally:
            _PENDING_SEND.reset(token)
        unseen(pending)
        return result

    @functools.wraps(append)
    def append_oai_message(message: Any, *args: Any, **kwargs: Any) -> Any:
        pending = _PENDING_SEND.get()
        valid = append(message, *args, **kwargs)
        if pending is not None and pending.hooks is hooks and not pending.done:
            pending.done = True
            if valid:
                with _observing(hooks.collector, "a sent message"):
                    on_sent(hooks, agent, message, pending.recipient)
        return valid

    agent.send, agent.a_send = observed_send, observed_a_send
    setattr(agent, attr, append_oai_message)


def _tool_recorder(
    hooks: _AgentHooks, func_call: Any, call_id: Any, path: str
) -> Callable[[Any, BaseException | None], None]:
    """One ``execute_function`` call (``path``: sync or async) noted as started now: how it records its end."""
    started = time.time()
    key = hooks.tool_started(func_call, call_id, started, path)

    def ended(returned: Any, error: BaseException | None) -> None:
        hooks.tool_ended(key, func_call, call_id, returned, started, path, error=error)

    return ended


def _wrap_execute_function(agent: Any, hooks: _AgentHooks) -> None:
    original = agent.execute_function

    @functools.wraps(original)
    def execute_function(func_call: Any, *args: Any, **kwargs: Any) -> Any:
        with outcome(_tool_recorder(hooks, func_call, kwargs.get("call_id"), "sync")) as returned:
            returned.append(original(func_call, *args, **kwargs))
        return returned[0]

    agent.execute_function = execute_function


def _wrap_a_execute_function(agent: Any, hooks: _AgentHooks) -> None:
    original = agent.a_execute_function

    @functools.wraps(original)
    async def a_execute_function(func_call: Any, *args: Any, **kwargs: Any) -> Any:
        with outcome(_tool_recorder(hooks, func_call, kwargs.get("call_id"), "async")) as returned:
            returned.append(await original(func_call, *args, **kwargs))
        return returned[0]

    agent.a_execute_function = a_execute_function


def _prompt_of(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    return args[0] if args else kwargs.get("prompt")


def _wrap_human_input(agent: Any, hooks: _AgentHooks) -> None:
    original = agent.get_human_input

    @functools.wraps(original)
    def get_human_input(*args: Any, **kwargs: Any) -> Any:
        started = time.time()
        try:
            answer = original(*args, **kwargs)
        except BaseException as e:
            hooks.record_human(_prompt_of(args, kwargs), None, started, error=e)
            raise
        hooks.record_human(_prompt_of(args, kwargs), answer, started)
        return answer

    agent.get_human_input = get_human_input

    a_original = agent.a_get_human_input

    @functools.wraps(a_original)
    async def a_get_human_input(*args: Any, **kwargs: Any) -> Any:
        # pyautogen 0.2 reads async input through get_human_input (recorded there);
        # ag2 reads it directly. Record here only what the sync hook did not see.
        started = time.time()
        with hooks.lock:
            before = hooks.human_inputs
        try:
            answer = await a_original(*args, **kwargs)
        except BaseException as e:
            with hooks.lock:
                seen = hooks.human_inputs != before
            if not seen:
                hooks.record_human(_prompt_of(args, kwargs), None, started, error=e)
            raise
        with hooks.lock:
            seen = hooks.human_inputs != before
        if not seen:
            hooks.record_human(_prompt_of(args, kwargs), answer, started)
        return answer

    agent.a_get_human_input = a_get_human_input


def _infer_language(code: str) -> str:
    try:
        from autogen.code_utils import infer_lang

        return str(infer_lang(code))
    except Exception:
        return ""


def _wrap_legacy_code(agent: Any, hooks: _AgentHooks) -> None:
    """Record the ``code_execution_config`` path (``execute_code_blocks`` of the agent)."""
    original = agent.execute_code_blocks

    @functools.wraps(original)
    def execute_code_blocks(code_blocks: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.time()
        blocks: list[dict[str, Any]] = []
        with _observing(hooks.collector, "code blocks"):
            for block in code_blocks:
                language, code = block[0], block[1]
                blocks.append({"language": language or _infer_language(code), "code": code})
        try:
            result = original(code_blocks, *args, **kwargs)
        except BaseException as e:
            with _observing(hooks.collector, "a code execution"):
                hooks.record_code("legacy", blocks, None, None, started, error=e)
            raise
        with _observing(hooks.collector, "a code execution"):
            exit_code, output = (result[0], result[1]) if isinstance(result, tuple) else (None, result)
            hooks.record_code("legacy", blocks, exit_code, output, started)
        return result

    agent.execute_code_blocks = execute_code_blocks


@dataclass
class _ExecutorHooks:
    """State on a ``CodeExecutor``: the hooked agents that use it, first one first."""

    owners: list[_AgentHooks] = field(default_factory=list)


def _wrap_executor(agent: Any, hooks: _AgentHooks, api: SimpleNamespace) -> None:
    """Record the executor path (``CodeExecutor.execute_code_blocks`` returning a CodeResult)."""
    executor = getattr(agent, "code_executor", None)
    if executor is None:
        return
    state = getattr(executor, "__dict__", {}).get(_EXECUTOR_ATTR)
    if not isinstance(state, _ExecutorHooks):
        state = _ExecutorHooks()
        original = executor.execute_code_blocks
        label = _type_label(executor)

        @functools.wraps(original)
        def execute_code_blocks(code_blocks: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.time()
            owner = _CURRENT_AGENT.get()
            if owner is None or owner not in state.owners:
                owner = state.owners[0] if state.owners else None
            try:
                result = original(code_blocks, *args, **kwargs)
            except BaseException as e:
                if owner is not None:
                    with _observing(owner.collector, "a code execution"):
                        owner.record_code(label, _executor_blocks(code_blocks), None, None, started, error=e)
                raise
            if owner is not None:
                with _observing(owner.collector, "a code execution"):
                    owner.record_code(
                        label,
                        _executor_blocks(code_blocks),
                        getattr(result, "exit_code", None),
                        getattr(result, "output", None),
                        started,
                        code_file=getattr(result, "code_file", None),
                    )
            return result

        executor.execute_code_blocks = execute_code_blocks
        setattr(executor, _EXECUTOR_ATTR, state)
    if hooks not in state.owners:
        state.owners.append(hooks)
    # Name the acting agent while its executor reply runs (an executor may be shared).
    reply = internals.executor_reply_function(api.ConversableAgent)
    if reply is None:  # renamed upstream: a shared executor's runs go to its first agent
        hooks.collector.count_recording_failure(
            f"the code executor reply of {hooks.name}", AttributeError("no executor reply function")
        )
        return

    @functools.wraps(reply)
    def code_reply(recipient: Any, *args: Any, **kwargs: Any) -> Any:
        token = _CURRENT_AGENT.set(hooks)
        try:
            return reply(recipient, *args, **kwargs)
        finally:
            _CURRENT_AGENT.reset(token)

    agent.replace_reply_func(reply, code_reply)


def _executor_blocks(code_blocks: Any) -> list[dict[str, Any]]:
    return [{"language": getattr(b, "language", None), "code": getattr(b, "code", None)} for b in code_blocks]


# --------------------------------------------------------------------------- two-agent chats


@dataclass
class _Chat:
    """One ``initiate_chat`` between two agents, as its initiator's hooks follow it."""

    hooks: _AgentHooks
    initiator: Any
    recipient: Any
    max_turns: Any
    start: int  # messages in the initiator's history with the recipient before the chat
    nested_in: str | None = None
    autogen_reason: str | None = None  # AG2's TerminationEvent reason, when it sent one
    key: object = field(default_factory=object)

    def max_turns_reached(self, sent: int, last_by_initiator: bool) -> bool:
        """True when the chat ran all its ``max_turns`` (the recipient answered the last one)."""
        return isinstance(self.max_turns, int) and not last_by_initiator and sent >= self.max_turns

    def between(self, sender: Any, recipient: Any) -> bool:
        """True when ``sender`` -> ``recipient`` is a message of this chat."""
        pair = (self.initiator, self.recipient)
        return (sender, recipient) in (pair, pair[::-1])


# The innermost two-agent chat in progress in this thread or task.
_ACTIVE_CHAT: contextvars.ContextVar[_Chat | None] = contextvars.ContextVar("aer1_legacy_active_chat", default=None)


def _task_of(message: Any) -> Any:
    """The ``task`` of a chat: its opening message as given (a callable by its label)."""
    if message is None or isinstance(message, (str, Mapping)):
        return message
    return {"callable": _callable_label(message)} if callable(message) else str(message)


def _begin_chat(hooks: _AgentHooks, initiator: Any, recipient: Any, kwargs: Mapping[str, Any]) -> _Chat:
    """Record a two-agent chat's ``task`` and note it under way (finalize() closes it unfinished)."""
    collector = hooks.collector
    history = getattr(initiator, "chat_messages", None)
    clear = kwargs.get("clear_history", True)
    start = 0 if clear or not isinstance(history, Mapping) else len(history.get(recipient) or ())
    for agent in (initiator, recipient):
        if (agent_hooks := _hooks_of(agent)) is not None:
            agent_hooks.stopped = None
    outer = _ACTIVE_CHAT.get()
    chat = _Chat(hooks, initiator, recipient, kwargs.get("max_turns"), start)
    if outer is not None:  # a nested chat (register_nested_chats), run inside the outer one's turn
        chat.nested_in = hooks.name if initiator in (outer.initiator, outer.recipient) else outer.hooks.name
    to = _label(collector, recipient)
    extras = {"initiator": hooks.name, "recipient": to, "max_turns": _public_config(chat.max_turns)}
    content = vocab.task("legacy", task=_task_of(kwargs.get("message")),
                         team={"name": None, "id": None, "type": TWO_AGENT_CHAT}, nested_in=chat.nested_in,
                         extras=extras)
    collector.safe_record("task", content, agent=hooks.name, kind="task", recipient=to)
    collector.open_action(chat.key, lambda: _record_chat_end(chat, "unfinished", None, {}))
    return chat


def _chat_messages(chat: _Chat) -> list[Any]:
    history = getattr(chat.initiator, "chat_messages", None)
    messages = history.get(chat.recipient) if isinstance(history, Mapping) else None
    return list(messages or ())[chat.start:]


def _chat_reason(chat: _Chat) -> tuple[str, dict[str, Any]]:
    """Why a two-agent chat that returned ended (spec/legacy.md, *Two-agent chats*): (reason, extras).

    The initiator's history holds the chat, its own messages with role ``assistant``. The
    agent that received the last message (the *stopper*) generated no reply: unless the chat
    ran its ``max_turns``, the reason is the one its termination check noted
    (:func:`_wrap_checks`); a stopper without hooks is asked its ``is_termination_msg``.
    """
    messages = _chat_messages(chat)
    sent = sum(1 for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant")
    extras: dict[str, Any] = {"turns": sent}
    if not messages:
        return "empty_reply", {**extras, "detail": "the opening message was empty"}
    last = messages[-1]
    last_by_initiator = isinstance(last, Mapping) and last.get("role") == "assistant"
    stopper = chat.recipient if last_by_initiator else chat.initiator
    name = extras["stopped_by"] = _label(chat.hooks.collector, stopper)
    if chat.max_turns_reached(sent, last_by_initiator):
        return "max_turns", {**extras, "detail": f"{sent} of {chat.max_turns} turns"}
    hooks = _hooks_of(stopper)
    if hooks is not None and hooks.stopped is not None:
        return hooks.stopped[0], {**extras, "detail": hooks.stopped[1]}
    try:
        if internals.is_termination(stopper, last):
            return "is_termination_msg", {**extras, "detail": f"the is_termination_msg of {name} matched"}
    except Exception as e:
        extras["predicate_error"] = error_info(e)
    return "empty_reply", {**extras, "detail": f"{name} generated no reply"}


def _record_chat_end(chat: _Chat, outcome: str, reason: str | None, extras: dict[str, Any],
                     error: BaseException | None = None) -> None:
    collector = chat.hooks.collector
    content = vocab.termination(
        "legacy", outcome=outcome, reason=reason, messages=len(_chat_messages(chat)),
        step_statuses=collector.status_counts(), error=error_info(error) if error is not None else None,
        nested_in=chat.nested_in,
        extras={"initiator": chat.hooks.name, "recipient": _label(collector, chat.recipient), **extras})
    collector.safe_record("termination", content, agent=chat.hooks.name, kind="termination",
                          status=vocab.outcome_status(outcome))


def _end_chat(chat: _Chat, error: BaseException | None) -> None:
    """Record how a two-agent chat ended, unless finalize() already recorded it unfinished."""
    if not chat.hooks.collector.close_action(chat.key):
        return
    with _observing(chat.hooks.collector, "a two-agent chat's end"):
        if error is not None:
            outcome = "cancelled" if failure_status(error) == "cancelled" else "error"
            _record_chat_end(chat, outcome, "error" if outcome == "error" else outcome, {}, error)
            return
        reason, extras = _chat_reason(chat)
        if chat.autogen_reason is not None:
            extras["autogen_reason"] = chat.autogen_reason
        _record_chat_end(chat, "finished", reason, extras)


def _stop_reason(hooks: _AgentHooks, before: tuple[Any, Any, Any, int]) -> tuple[str, str]:
    """Why a termination check that answered ``(True, None)`` ended the chat, in AutoGen's order."""
    count, limit, terminating, asked = before
    answer = hooks.last_answer
    if hooks.human_inputs > asked and isinstance(answer, str) and answer.strip() == HUMAN_EXIT_ANSWER:
        return "human_exit", f"a human answered {HUMAN_EXIT_ANSWER!r} for {hooks.name}"
    if isinstance(count, int) and isinstance(limit, int) and count >= limit:
        return "max_consecutive_auto_reply", f"{count} of {limit} auto replies"
    if terminating:
        return "is_termination_msg", f"the is_termination_msg of {hooks.name} matched"
    return "empty_reply", f"{hooks.name} generated no reply"


def _wrap_checks(agent: Any, hooks: _AgentHooks, api: SimpleNamespace) -> None:
    """Note why this agent ends a chat, as its termination-and-human-reply function decides it.

    That function resets the reply counter when it ends a chat; the counter, the limit and
    the agent's ``is_termination_msg`` are read just before it runs.
    """
    sync, a_sync = internals.termination_checks(api.ConversableAgent)

    def before(messages: Any, sender: Any) -> tuple[Any, Any, Any, int]:
        count, limit = internals.auto_replies(agent, sender)
        terminating: Any = None
        with contextlib.suppress(Exception):
            last = messages[-1] if messages else (agent.chat_messages.get(sender) or [None])[-1]
            terminating = internals.is_termination(agent, last)
        return count, limit, terminating, hooks.human_inputs

    def after(result: Any, seen: tuple[Any, Any, Any, int]) -> Any:
        if isinstance(result, tuple) and result == (True, None):
            with _observing(hooks.collector, "a chat's termination check"):
                hooks.stopped = _stop_reason(hooks, seen)
        return result

    if sync is not None:
        @functools.wraps(sync)
        def check(recipient: Any, messages: Any = None, sender: Any = None, config: Any = None) -> Any:
            seen = before(messages, sender)
            return after(sync(recipient, messages=messages, sender=sender, config=config), seen)

        agent.replace_reply_func(sync, check)
    if a_sync is not None:
        @functools.wraps(a_sync)
        async def a_check(recipient: Any, messages: Any = None, sender: Any = None, config: Any = None) -> Any:
            seen = before(messages, sender)
            return after(await a_sync(recipient, messages=messages, sender=sender, config=config), seen)

        agent.replace_reply_func(a_sync, a_check)


def _chat_watcher(chat: _Chat) -> Any:
    """Note AG2's own termination reason for ``chat`` (a TerminationEvent of one of its agents)."""
    names = {_name(chat.initiator), _name(chat.recipient)}

    def seen(event: Any) -> None:
        found = internals.termination_of(event)
        if found is not None and found[1] in names and _ACTIVE_CHAT.get() is chat:
            chat.autogen_reason = found[0]

    return seen


def _chat_call(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(recipient, the other arguments by name) of an ``initiate_chat(recipient, ...)`` call."""
    names = ("recipient", "clear_history", "silent", "cache", "max_turns", "summary_method", "summary_args", "message")
    named = dict(kwargs)
    named.update(zip(names, args, strict=False))
    return named.get("recipient"), named


@contextlib.contextmanager
def _running(
    active: contextvars.ContextVar[_T], value: _T, watcher: Callable[[Any], None],
    end: Callable[[BaseException | None], None],
) -> Iterator[None]:
    """The block runs a chat or group chat run, sync or async: ``active`` is ``value``, AutoGen's
    events go to ``watcher``, and ``end`` records how it ended (after ``active`` is reset, when it
    returned)."""
    token = active.set(value)
    try:
        with internals.watch_iostream(watcher):
            yield
    except BaseException as e:
        end(e)
        raise
    finally:
        active.reset(token)
    end(None)


def _wrap_initiate_chat(agent: Any, hooks: _AgentHooks, api: SimpleNamespace) -> None:
    """A chat this agent starts with one other agent gets a ``task`` and a ``termination`` step.

    A chat with a ``GroupChatManager`` is a group chat run: its manager records those.
    """
    sync, a_sync = agent.initiate_chat, agent.a_initiate_chat

    def begin(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> _Chat | None:
        recipient, named = _chat_call(args, kwargs)
        if recipient is None or isinstance(recipient, api.GroupChatManager):
            return None
        with _observing(hooks.collector, "a two-agent chat"):
            return _begin_chat(hooks, agent, recipient, named)
        return None

    @functools.wraps(sync)
    def initiate_chat(*args: Any, **kwargs: Any) -> Any:
        chat = begin(args, kwargs)
        if chat is None:
            return sync(*args, **kwargs)
        with _running(_ACTIVE_CHAT, chat, _chat_watcher(chat), functools.partial(_end_chat, chat)):
            return sync(*args, **kwargs)

    @functools.wraps(a_sync)
    async def a_initiate_chat(*args: Any, **kwargs: Any) -> Any:
        chat = begin(args, kwargs)
        if chat is None:
            return await a_sync(*args, **kwargs)
        with _running(_ACTIVE_CHAT, chat, _chat_watcher(chat), functools.partial(_end_chat, chat)):
            return await a_sync(*args, **kwargs)

    agent.initiate_chat, agent.a_initiate_chat = initiate_chat, a_initiate_chat


def _hook_agent(agent: Any, collector: Collector, api: SimpleNamespace) -> _AgentHooks:
    """Attach the hooks to one agent (once); re-attaching switches the collector."""
    hooks = _hooks_of(agent)
    if hooks is not None:
        if hooks.collector is not collector:
            hooks.name = _register(collector, agent)
            hooks.collector = collector
        return hooks
    hooks = _AgentHooks(agent, collector, _register(collector, agent))
    setattr(agent, _AGENT_ATTR, hooks)
    _wrap_sends(agent, hooks, _record_sent)
    _wrap_execute_function(agent, hooks)
    _wrap_a_execute_function(agent, hooks)
    _wrap_human_input(agent, hooks)
    _wrap_legacy_code(agent, hooks)
    _wrap_executor(agent, hooks, api)
    _wrap_initiate_chat(agent, hooks, api)
    _wrap_checks(agent, hooks, api)
    _wrap_client(agent, hooks)
    return hooks


def attach_legacy_hooks(agent: Any, collector: Collector) -> Any:
    """Record what a classic AutoGen agent does into ``collector``; returns the agent.

    Records every message the agent sends (sender, recipient, reply linkage), every
    function and tool call it executes (sync and async paths, with the call id where the
    framework has one), every code execution (``code_execution_config`` and executor
    paths) and every human input it reads. The agent is listed once in the receipt's
    ``agents``. A ``GroupChatManager`` is observed as by :func:`observe_groupchat`.
    Attaching again is harmless; attaching to another collector moves the recording there.
    """
    api = _require_autogen()
    if isinstance(agent, api.GroupChatManager):
        observe_groupchat(agent, collector)
        return agent
    if not isinstance(agent, api.ConversableAgent):
        raise TypeError(f"attach_legacy_hooks needs an autogen ConversableAgent, got {type(agent).__name__}")
    _hook_agent(agent, collector, api)
    return agent


# --------------------------------------------------------------------------- group chats


@dataclass
class _Run:
    """What one ``run_chat`` of a manager has done so far (the basis of its termination)."""

    manager: str
    groupchat: Any = None
    appended: int = 0
    last_speaker: str | None = None
    last_message: Any = None
    phase: str = "start"  # start | appended | selected | no_eligible
    selected: _AgentHooks | None = None
    selected_name: str | None = None
    human_mark: int = 0
    no_eligible: str | None = None
    intro_recorded: bool = False
    autogen_reason: str | None = None  # AG2's TerminationEvent reason, when it sent one


class _GroupHooks:
    """The hooks' state on one GroupChat."""

    def __init__(self, groupchat: Any, collector: Collector) -> None:
        self.collector = collector
        self.groupchat_ref = weakref.ref(groupchat)
        self.run: _Run | None = None
        self.selection: dict[str, Any] | None = None


def _group_of(groupchat: Any) -> _GroupHooks | None:
    if groupchat is None:
        return None
    group = getattr(groupchat, "__dict__", {}).get(_GROUP_ATTR)
    return group if isinstance(group, _GroupHooks) else None


def _method_name(method: Any) -> str:
    if isinstance(method, str):
        return method.lower()
    return "callable"


@contextlib.contextmanager
def _probe_callable(groupchat: Any, info: dict[str, Any]) -> Iterator[None]:
    """While a selection runs, note what a callable speaker_selection_method returned."""
    method = groupchat.speaker_selection_method
    if isinstance(method, str) or not callable(method):
        yield
        return

    @functools.wraps(method)
    def probe(*args: Any, **kwargs: Any) -> Any:
        groupchat.speaker_selection_method = method
        returned = method(*args, **kwargs)
        if returned is None:
            info["callable_returned"] = None
        elif isinstance(returned, str):
            info["callable_returned"] = returned
            info["delegated_to"] = returned.lower()
        else:
            info["callable_returned"] = "agent"
        return returned

    groupchat.speaker_selection_method = probe
    try:
        yield
    finally:
        if groupchat.speaker_selection_method is probe:
            groupchat.speaker_selection_method = method


@contextlib.contextmanager
def _selecting(group: _GroupHooks, groupchat: Any, last_speaker: Any, selector: Any) -> Iterator[list[Any]]:
    """One ``select_speaker`` call (sync or async) recorded: the block appends the speaker chosen.

    The selection step is recorded when the block ends, with the error when it raised.
    """
    started = time.time()
    info = _begin_selection(group, groupchat, last_speaker)
    chosen: list[Any] = []
    try:
        with _probe_callable(groupchat, info):
            yield chosen
    except Exception as e:
        _end_selection(group, selector, info, started, error=e)
        raise
    _end_selection(group, selector, info, started, chosen=chosen[0])


def _begin_selection(group: _GroupHooks, groupchat: Any, last_speaker: Any) -> dict[str, Any]:
    method = groupchat.speaker_selection_method
    info: dict[str, Any] = {
        "method": _method_name(method),
        "last_speaker": None if last_speaker is None else _label(group.collector, last_speaker),
        "round": group.run.appended if group.run is not None else None,
    }
    if not isinstance(method, str):
        info["callable"] = _callable_label(method)
    group.selection = info
    return info


#: GroupChat's ``speaker_selection_method`` names under the vocabulary's (spec/steps.md); a callable is ``function``.
_MECHANISMS = {
    "auto": "model",
    "model_fallback": "model_fallback",
    "callable": "function",
    "round_robin": "round_robin",
    "random": "random",
    "manual": "manual",
}


def _end_selection(
    group: _GroupHooks,
    selector: Any,
    info: dict[str, Any],
    started: float,
    chosen: Any = None,
    error: BaseException | None = None,
) -> None:
    group.selection = None
    run = group.run
    collector = group.collector
    with _observing(collector, "a speaker selection"):
        if error is not None and internals.is_no_eligible(error):
            # Not a failed step: the chat ends here; the termination step says why.
            if run is not None:
                run.phase = "no_eligible"
                run.no_eligible = str(error)
            return
        extras = dict(info)
        method = extras.get("method")
        replies = extras.pop("model_replies", None)
        if method == "auto" and replies is not None and not extras.pop("model_accepted", True):
            method = "model_fallback"  # no answer named one agent: AutoGen took the next in order
        selected = None if error is not None else _label(collector, chosen)
        if selected is not None and run is not None:
            run.phase = "selected"
            run.selected_name = selected
            run.selected = _hooks_of(chosen)
            run.human_mark = run.selected.human_inputs if run.selected is not None else 0
        content = vocab.speaker_selection(
            "legacy", selected=[] if selected is None else [selected],
            mechanism=_MECHANISMS.get(method, method) if isinstance(method, str) else None,
            candidates=extras.pop("candidates", None), model_replies=replies,
            error=error_info(error) if error is not None else None, extras=extras)
        collector.safe_record(
            "speaker_selection",
            content,
            agent=run.manager if run is not None else _label(collector, selector),
            kind="speaker_selection",
            status="ok" if error is None else failure_status(error),
            started_at=started,
            ended_at=time.time(),
            target=selected,
        )


def _original(target: Any, attr: str) -> Any:
    """``target.attr`` as AutoGen would call it, seen through any wrapper of ours.

    A manager runs its chat on a shallow copy of the GroupChat, which carries the
    original's instance attributes: a wrapper of ours found there was made for another
    object, so its original method is rebound to ``target``.
    """
    current = getattr(target, "__dict__", {}).get(attr)
    if current is None:
        return getattr(target, attr)
    under = getattr(current, _ORIGINAL_ATTR, None)
    if under is None:
        return current
    func, owner = getattr(under, "__func__", None), getattr(under, "__self__", None)
    if func is not None and owner is not None and owner is not target:
        return types.MethodType(func, target)
    return under


def _install(target: Any, attr: str, wrapper: Any, original: Any) -> None:
    setattr(wrapper, _ORIGINAL_ATTR, original)
    setattr(target, attr, wrapper)


def _wrap_groupchat(groupchat: Any, group: _GroupHooks) -> None:
    """Wrap append and the speaker selection of the GroupChat object a run uses (once)."""
    marker = getattr(groupchat, "__dict__", {}).get(_WRAPPED_ATTR)
    if marker is not None and marker() is groupchat:
        return
    append = _original(groupchat, "append")

    @functools.wraps(append)
    def append_message(message: Any, speaker: Any, *args: Any, **kwargs: Any) -> Any:
        result = append(message, speaker, *args, **kwargs)
        run = group.run
        if run is not None:
            run.appended += 1
            run.last_speaker = _label(group.collector, speaker)
            run.last_message = message
            run.phase = "appended"
        return result

    _install(groupchat, "append", append_message, append)

    select = _original(groupchat, "select_speaker")

    @functools.wraps(select)
    def select_speaker(last_speaker: Any, selector: Any, *args: Any, **kwargs: Any) -> Any:
        with _selecting(group, groupchat, last_speaker, selector) as chosen:
            chosen.append(select(last_speaker, selector, *args, **kwargs))
        return chosen[0]

    _install(groupchat, "select_speaker", select_speaker, select)

    a_select = _original(groupchat, "a_select_speaker")

    @functools.wraps(a_select)
    async def a_select_speaker(last_speaker: Any, selector: Any, *args: Any, **kwargs: Any) -> Any:
        with _selecting(group, groupchat, last_speaker, selector) as chosen:
            chosen.append(await a_select(last_speaker, selector, *args, **kwargs))
        return chosen[0]

    _install(groupchat, "a_select_speaker", a_select_speaker, a_select)

    manual = _original(groupchat, "manual_select_speaker")

    @functools.wraps(manual)
    def manual_select_speaker(*args: Any, **kwargs: Any) -> Any:
        chosen = manual(*args, **kwargs)
        info = group.selection
        if info is not None:
            info["manual_choice"] = None if chosen is None else _label(group.collector, chosen)
        return chosen

    _install(groupchat, "manual_select_speaker", manual_select_speaker, manual)

    result_attr = internals.selection_result_attr()
    process = _original(groupchat, result_attr) if hasattr(groupchat, result_attr) else None
    if process is not None:
        @functools.wraps(process)
        def process_selection_result(result: Any, *args: Any, **kwargs: Any) -> Any:
            info = group.selection
            if info is not None:
                with _observing(group.collector, "the selector model's answers"):
                    answers, accepted = internals.selector_answers(result)
                    info["model_replies"] = [*info.get("model_replies", []), *answers]
                    info["model_accepted"] = accepted
            return process(result, *args, **kwargs)

        _install(groupchat, result_attr, process_selection_result, process)
    setattr(groupchat, _WRAPPED_ATTR, weakref.ref(groupchat))


def _termination(group: _GroupHooks, run: _Run, manager: Any, error: BaseException | None) -> dict[str, Any]:
    """Derive why a group chat ended from what its run did (spec/legacy.md, Termination)."""
    groupchat = run.groupchat if run.groupchat is not None else group.groupchat_ref()
    max_round = getattr(groupchat, "max_round", None)
    content: dict[str, Any] = {
        "reason": "error",
        "detail": "",
        "rounds": run.appended,
        "max_round": max_round,
        "last_speaker": run.last_speaker,
    }
    if error is not None and not internals.is_no_eligible(error):
        content["detail"] = "the group chat raised an exception"
        content["error"] = error_info(error)
        return content
    if error is not None or run.phase == "no_eligible":
        content["reason"] = "no_eligible_speaker"
        content["detail"] = run.no_eligible if run.no_eligible is not None else str(error)
        if error is not None:
            content["raised"] = True
        return content
    if run.phase == "selected":
        speaker = run.selected
        content["speaker"] = run.selected_name
        answered = speaker is not None and speaker.human_inputs > run.human_mark
        answer = speaker.last_answer if speaker is not None else None
        if answered and isinstance(answer, str) and answer.strip() == HUMAN_EXIT_ANSWER:
            content["reason"] = "human_exit"
            content["detail"] = f"a human answered {HUMAN_EXIT_ANSWER!r} for {run.selected_name}"
        else:
            content["reason"] = "empty_reply"
            content["detail"] = f"{run.selected_name} generated no reply"
        return content
    if run.phase == "start":
        content["reason"] = "max_round"
        content["detail"] = "the chat ran no round"
        return content
    # The run ended right after appending a message: the manager's termination check, or
    # the last round. Ask the manager's own predicate (AutoGen checks it first).
    terminating = False
    try:
        terminating = internals.manager_is_termination(manager, run.last_message)
    except Exception as e:
        content["predicate_error"] = error_info(e)
    if terminating:
        content["reason"] = "is_termination_msg"
        content["detail"] = f"the manager's is_termination_msg matched the message of {run.last_speaker}"
    elif isinstance(max_round, int) and run.appended >= max_round:
        content["reason"] = "max_round"
        content["detail"] = f"{run.appended} of {max_round} rounds"
    else:
        content["reason"] = "error"
        content["detail"] = "the chat ended after a message for no reason AutoGen reports"
    return content


def _end_run(group: _GroupHooks, run: _Run, manager: Any, error: BaseException | None) -> None:
    if group.run is run:
        group.run = None
    with _observing(group.collector, "a group chat termination"):
        extras = _termination(group, run, manager, error)
        if run.autogen_reason is not None and error is None:
            extras["autogen_reason"] = run.autogen_reason
        status = failure_status(error) if error is not None else "ok"
        if extras["reason"] == "error" and status == "ok":
            status = "error"
        outcome = "finished" if status == "ok" else "error" if status == "error" else "cancelled"
        reason, failure = extras.pop("reason"), extras.pop("error", None)
        content = vocab.termination("legacy", outcome=outcome, reason=reason, messages=None,
                                    step_statuses=group.collector.status_counts(), error=failure, extras=extras)
        group.collector.safe_record(
            "termination",
            content,
            agent=run.manager,
            kind="termination",
            status=status,
        )


def _run_call(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """(messages, sender, config) of a ``run_chat(self, messages, sender, config)`` call."""
    values = []
    for index, key in enumerate(("messages", "sender", "config"), start=1):
        values.append(kwargs[key] if key in kwargs else args[index] if len(args) > index else None)
    return values[0], values[1], values[2]


def _records_sends(agent: Any, collector: Collector) -> bool:
    """True when ``agent``'s own sends are recorded into ``collector`` (hooked there)."""
    for attr in (_AGENT_ATTR, _MANAGER_ATTR):
        hooks = getattr(agent, "__dict__", {}).get(attr)
        if isinstance(hooks, _AgentHooks) and hooks.collector is collector:
            return True
    return False


def _record_opening(group: _GroupHooks, run: _Run, manager: Any, messages: Any, sender: Any) -> None:
    """The opening message of a run whose sender is not hooked (an agent outside the group).

    Its send was not observed, so it is recorded as the manager stored it, when the run
    starts: the first selection's ``last_speaker`` then names an agent that did speak.
    """
    collector = group.collector
    if sender is None or _records_sends(sender, collector):
        return
    with _observing(collector, "a group chat's opening message"):
        if messages is None:
            messages = manager.chat_messages.get(sender)
        if not messages:
            return
        if isinstance(sender, _require_autogen().ConversableAgent):
            _register(collector, sender)
        collector.safe_record(
            "message",
            message_content(messages[-1], observed_at=OPENING_OBSERVED_AT),
            agent=_label(collector, sender),
            kind="message",
            recipient=run.manager,
        )


def _manager_sent(hooks: _AgentHooks, manager: Any, message: Any, recipient: Any) -> None:
    """A manager's sends to its own participants are re-broadcasts (recorded: its introduction).

    A send to anyone else (the manager speaking in another chat) is a message of its own.
    """
    groupchat = getattr(manager, "groupchat", None)
    if not any(agent is recipient for agent in getattr(groupchat, "agents", None) or []):
        _record_sent(hooks, manager, message, recipient)
        return
    group = _group_of(groupchat)
    run = group.run if group is not None else None
    if group is None or run is None or run.appended != 0 or run.intro_recorded:
        return
    run.intro_recorded = True
    group.collector.safe_record(
        "message",
        message_content(message, broadcast_to=MANAGER_BROADCAST,
                        recipients=[_label(group.collector, a) for a in getattr(groupchat, "agents", [])]),
        agent=hooks.name,
        kind="message",
    )


# The innermost group chat run in progress in this thread or task.
_ACTIVE_RUN: contextvars.ContextVar[_Run | None] = contextvars.ContextVar("aer1_legacy_active_run", default=None)


def _termination_watcher(run: _Run, manager: Any) -> Any:
    """Note AG2's own termination reason for ``run`` (its manager's TerminationEvent)."""
    manager_name = _name(manager)

    def seen(event: Any) -> None:
        found = internals.termination_of(event)
        if found is not None and found[1] == manager_name and _ACTIVE_RUN.get() is run:
            run.autogen_reason = found[0]

    return seen


def _observe_manager(manager: Any, collector: Collector, api: SimpleNamespace) -> None:
    """Wrap a manager's run_chat reply functions (once) so each run ends with a termination."""
    hooks = getattr(manager, "__dict__", {}).get(_MANAGER_ATTR)
    if isinstance(hooks, _AgentHooks):
        if hooks.collector is not collector:
            hooks.name = _register(collector, manager)
            hooks.collector = collector
        return
    hooks = _AgentHooks(manager, collector, _register(collector, manager))
    setattr(manager, _MANAGER_ATTR, hooks)
    _wrap_sends(manager, hooks, _manager_sent)

    run_chat = api.GroupChatManager.run_chat
    a_run_chat = api.GroupChatManager.a_run_chat

    def begin(
        recipient: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> tuple[_GroupHooks | None, _Run | None]:
        messages, sender, config = _run_call((recipient, *args), kwargs)
        group = _group_of(config) or _group_of(getattr(recipient, "groupchat", None))
        if group is None or config is None:
            return None, None
        run = _Run(manager=_label(group.collector, recipient), groupchat=config)
        with _observing(group.collector, "a group chat run"):
            _wrap_groupchat(config, group)
        group.run = run
        _record_opening(group, run, recipient, messages, sender)
        return group, run

    @functools.wraps(run_chat)
    def observed_run_chat(recipient: Any, *args: Any, **kwargs: Any) -> Any:
        group, run = begin(recipient, args, kwargs)
        if group is None or run is None:
            return run_chat(recipient, *args, **kwargs)
        with _running(_ACTIVE_RUN, run, _termination_watcher(run, recipient),
                      functools.partial(_end_run, group, run, recipient)):
            return run_chat(recipient, *args, **kwargs)

    @functools.wraps(a_run_chat)
    async def observed_a_run_chat(recipient: Any, *args: Any, **kwargs: Any) -> Any:
        group, run = begin(recipient, args, kwargs)
        if group is None or run is None:
            return await a_run_chat(recipient, *args, **kwargs)
        with _running(_ACTIVE_RUN, run, _termination_watcher(run, recipient),
                      functools.partial(_end_run, group, run, recipient)):
            return await a_run_chat(recipient, *args, **kwargs)

    manager.replace_reply_func(run_chat, observed_run_chat)
    manager.replace_reply_func(a_run_chat, observed_a_run_chat)


@dataclass
class _PatternHooks:
    """State on an AG2 pattern: the collector its group chats are recorded into."""

    collector: Collector


def _observe_pattern(pattern: Any, collector: Collector, api: SimpleNamespace) -> None:
    """Observe the group chat ``pattern.prepare_group_chat`` builds, each time it builds one."""
    state = getattr(pattern, "__dict__", {}).get(_PATTERN_ATTR)
    if isinstance(state, _PatternHooks):
        state.collector = collector
        return
    hooks = _PatternHooks(collector)
    prepare = pattern.prepare_group_chat

    @functools.wraps(prepare)
    def prepare_group_chat(*args: Any, **kwargs: Any) -> Any:
        prepared = prepare(*args, **kwargs)
        with _observing(hooks.collector, "the group chat of a pattern"):
            manager = next(item for item in prepared if isinstance(item, api.GroupChatManager))
            observe_groupchat(manager, hooks.collector)
        return prepared

    pattern.prepare_group_chat = prepare_group_chat
    setattr(pattern, _PATTERN_ATTR, hooks)


def observe_groupchat(manager_or_groupchat: Any, collector: Collector) -> Any:
    """Record a classic AutoGen group chat into ``collector``; returns its argument.

    Attaches :func:`attach_legacy_hooks` to every participant and records, per round,
    the manager's ``speaker_selection`` (method and selected speaker) and, when a run
    ends, one ``termination`` step with the derived reason. Pass the
    ``GroupChatManager`` when you have it; given only the ``GroupChat``, the manager is
    found when a participant first sends to it. Given an AG2 ``Pattern`` (AutoPattern,
    RoundRobinPattern, ...), every group chat the pattern prepares for
    ``initiate_group_chat`` / ``run_group_chat`` (and their async twins) is observed.
    """
    api = _require_autogen()
    if api.Pattern is not None and isinstance(manager_or_groupchat, api.Pattern):
        _observe_pattern(manager_or_groupchat, collector, api)
        return manager_or_groupchat
    if isinstance(manager_or_groupchat, api.GroupChatManager):
        manager: Any = manager_or_groupchat
        groupchat = manager.groupchat
    elif isinstance(manager_or_groupchat, api.GroupChat):
        manager, groupchat = None, manager_or_groupchat
    else:
        raise TypeError(
            "observe_groupchat needs an autogen GroupChatManager, GroupChat or Pattern, "
            f"got {type(manager_or_groupchat).__name__}"
        )
    for agent in groupchat.agents:
        if isinstance(agent, api.GroupChatManager):
            _observe_manager(agent, collector, api)
        elif isinstance(agent, api.ConversableAgent):
            _hook_agent(agent, collector, api)
    group = _group_of(groupchat)
    if group is None:
        group = _GroupHooks(groupchat, collector)
        _wrap_groupchat(groupchat, group)
        setattr(groupchat, _GROUP_ATTR, group)
    else:
        group.collector = collector
    if manager is not None:
        _observe_manager(manager, collector, api)
    return manager_or_groupchat
