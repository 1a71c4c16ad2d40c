"""Offline stand-ins for the legacy AutoGen tests: a scripted model client and scripted input.

Both plug into AutoGen through its own extension points: the model client through
``register_model_client`` and the human through the default ``IOStream``. Nothing here
reaches a network.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import autogen
from autogen import GroupChat, runtime_logging
from autogen.io import IOStream
from autogen.logger.base_logger import BaseLogger

#: The ``finish`` fixture: finalize, verify everywhere, return (receipt, contents by seq).
Finish = Callable[..., tuple[dict[str, Any], dict[int, Any]]]
#: The ``model_client_cls`` name every scripted config names.
CLIENT_NAME = "ScriptedClient"
#: ``autogen.__version__`` of pyautogen 0.2.x starts with this; ag2 0.14 is "0.14.x".
PYAUTOGEN_02 = autogen.__version__.startswith("0.2.")


def said(text: str, **legacy: Any) -> dict[str, Any]:
    """The ``message`` content (spec/steps.md) of a text message sent as a plain string."""
    content: dict[str, Any] = {"vocabulary": "aer1-steps/1", "content": text, "message_id": None, "role": None,
                               "model": None}
    if legacy:
        content["legacy"] = legacy
    return content


def scripted_llm_config() -> dict[str, Any]:
    """An llm_config naming the scripted client; no cache, so no disk and no network."""
    return {"config_list": [{"model": "scripted", "model_client_cls": CLIENT_NAME}], "cache_seed": None}


def says_terminate(message: dict[str, Any]) -> bool:
    """The ``is_termination_msg`` of these tests: the message says TERMINATE."""
    return "TERMINATE" in (message.get("content") or "")


def tool_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """One OpenAI-style tool call; ``arguments`` given as a dict is JSON-encoded."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


def tool_calls_reply(*calls: dict[str, Any]) -> dict[str, Any]:
    """A model reply asking for ``calls``."""
    return {"content": None, "tool_calls": list(calls)}


def make_client(replies: Sequence[Any]) -> type:
    """A ModelClient class answering ``replies`` in order (the last one repeats).

    Every instance shares the script, so a client re-created by AutoGen (as the
    ``auto`` speaker selection does for each selection) goes on where the last stopped.
    """
    script = list(replies)
    counter = itertools.count()

    class ScriptedClient:
        def __init__(self, config: Any = None, **kwargs: Any) -> None:
            self.config = config

        def create(self, params: dict[str, Any]) -> Any:
            index = next(counter)
            reply = script[min(index, len(script) - 1)]
            message = dict(reply) if isinstance(reply, dict) else {"content": reply}
            message.setdefault("role", "assistant")
            message.setdefault("content", None)
            return SimpleNamespace(
                id=f"scripted-{index}",
                model="scripted",
                choices=[SimpleNamespace(message=message, finish_reason="stop")],
                usage=None,
                cost=0.0,
                message_retrieval_function=None,
            )

        def message_retrieval(self, response: Any) -> list[Any]:
            # As OpenAI's client does: the text, or the whole message when it calls tools.
            return [
                choice.message
                if choice.message.get("tool_calls") or choice.message.get("function_call")
                else choice.message["content"]
                for choice in response.choices
            ]

        def cost(self, response: Any) -> float:
            return 0.0

        @staticmethod
        def get_usage(response: Any) -> dict[str, Any]:
            return {}

    ScriptedClient.__name__ = ScriptedClient.__qualname__ = CLIENT_NAME
    return ScriptedClient


def scripted_agent(name: str, replies: Sequence[Any], **kwargs: Any) -> autogen.ConversableAgent:
    """A ConversableAgent whose model is the scripted client (register tools before use)."""
    agent = autogen.ConversableAgent(name, llm_config=scripted_llm_config(), **kwargs)
    agent.register_model_client(make_client(replies))
    return agent


class ScriptedIO:
    """An IOStream whose ``input`` answers from a script and records the prompts."""

    def __init__(self, answers: Sequence[str]) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def print(self, *objects: Any, sep: str = " ", end: str = "\n", flush: bool = False) -> None:
        pass

    def send(self, message: Any) -> None:
        pass

    def input(self, prompt: str = "", *, password: bool = False) -> str:
        self.prompts.append(prompt)
        if not self.answers:
            raise EOFError(f"no scripted answer left for {prompt!r}")
        return self.answers.pop(0)


@contextlib.contextmanager
def scripted_input(answers: Sequence[str]) -> Iterator[ScriptedIO]:
    """Make ``answers`` what every input prompt reads (threads included), then restore."""
    stream = ScriptedIO(answers)
    previous = IOStream._global_default
    IOStream.set_global_default(stream)
    try:
        with IOStream.set_default(stream):
            yield stream
    finally:
        IOStream._global_default = previous


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence AutoGen's console output during a chat."""
    with scripted_input([]):
        yield


class _SelectorRegistrar(BaseLogger):  # type: ignore[misc]
    """Runtime logger that gives AutoGen's own speaker-selection agent the scripted client.

    pyautogen 0.2 builds that agent inside ``GroupChat`` from the manager's llm_config and
    has no parameter for a custom client; ``log_new_agent`` runs once the new agent's
    client exists, so ``register_model_client`` can be called there, as a user would.
    """

    def __init__(self, client: type) -> None:
        self.client = client

    def start(self) -> str:
        return "scripted-selection"

    def log_chat_completion(self, *args: Any, **kwargs: Any) -> None:
        pass

    def log_new_agent(self, agent: Any, init_args: Any = None) -> None:
        wrapper = getattr(agent, "client", None)
        if wrapper is None:
            return
        with contextlib.suppress(ValueError):  # no placeholder for the scripted client
            agent.register_model_client(self.client)

    def log_event(self, *args: Any, **kwargs: Any) -> None:
        pass

    def log_new_wrapper(self, *args: Any, **kwargs: Any) -> None:
        pass

    def log_new_client(self, *args: Any, **kwargs: Any) -> None:
        pass

    def log_function_use(self, *args: Any, **kwargs: Any) -> None:
        pass

    def stop(self) -> None:
        pass

    def get_connection(self) -> None:
        return None


@contextlib.contextmanager
def auto_selection(replies: Sequence[Any]) -> Iterator[dict[str, Any]]:
    """GroupChat keyword arguments making ``auto`` selection answer ``replies`` in order.

    ag2 takes the selector's client as GroupChat arguments; pyautogen 0.2 gets it
    registered on its selection agent as that agent is created (see _SelectorRegistrar).
    """
    client = make_client(replies)
    if "select_speaker_auto_model_client_cls" in GroupChat.__dataclass_fields__:
        yield {"select_speaker_auto_llm_config": scripted_llm_config(), "select_speaker_auto_model_client_cls": client}
        return
    runtime_logging.start(logger=_SelectorRegistrar(client))
    try:
        yield {}
    finally:
        runtime_logging.stop()


def rows(receipt: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """(kind, agent, recipient) of every step, close step included."""
    return [(s["kind"], s["agent"], s.get("recipient")) for s in receipt["steps"]]


def of_kind(receipt: dict[str, Any], contents: dict[int, Any], kind: str) -> list[Any]:
    """The contents of the steps of one kind, in order."""
    return [contents[s["seq"]] for s in receipt["steps"] if s["kind"] == kind]


CLOSE = ("close", "aer1", None)


def two_agent(initiator: str, recipient: str, *inner: tuple[str, str, str | None]) -> list[tuple[str, str, str | None]]:
    """The rows of a two-agent chat ``initiator`` started: its ``task``, ``inner``, its ``termination``."""
    return [("task", initiator, recipient), *inner, ("termination", initiator, None)]


def ended(receipt: dict[str, Any], contents: dict[int, Any]) -> tuple[str, str, Any]:
    """(status, outcome, reason) of the receipt's last ``termination`` step."""
    step = [s for s in receipt["steps"] if s["kind"] == "termination"][-1]
    content = contents[step["seq"]]
    return step["status"], content["outcome"], content["reason"]
