"""An agent driven by any autogen-core ``ChatCompletionClient`` (imported only when used)."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ._context import TurnContext
from ._history import HistoryView
from ._messages import Message, text_of
from ._tools import Tool, ToolExecutor

INSTALL_HINT = "the model adapter needs autogen-core: pip install 'aer1[agentchat]'"
CALL_ID_PREFIX = "call_"
CALL_ID_BYTES = 12
DEFAULT_SYSTEM_MESSAGE = "You are a helpful assistant in a group chat."

ToolSpec = Mapping[str, Any] | Tool | Callable[..., Any]


def load_models() -> Any:
    try:
        import autogen_core.models as models
    except ImportError as e:
        raise ImportError(INSTALL_HINT) from e
    return models


def tool_schemas(tools: Iterable[ToolSpec] | ToolExecutor) -> list[dict[str, Any]]:
    """Tool schemas (name, description, parameters) for a model's ``tools`` list."""
    if isinstance(tools, ToolExecutor):
        return tools.tool_schemas()
    schemas: list[dict[str, Any]] = []
    for item in tools:
        if isinstance(item, Tool):
            schemas.append(item.schema)
        elif isinstance(item, Mapping):
            schemas.append(dict(item))
        elif callable(item):
            schemas.append(Tool.from_function(item).schema)
        else:
            raise TypeError(f"not a tool: {item!r}")
    return schemas


def render_message(message: Mapping[str, Any]) -> str:
    """A one-line text rendering of a message (tool calls and responses included)."""
    parts = [text_of(message)] if text_of(message) else []
    for call in message.get("tool_calls", ()):
        parts.append(f"[tool call {call['id']}: {call['function']['name']}({call['function']['arguments']})]")
    for response in message.get("tool_responses", ()):
        parts.append(f"[tool response {response['tool_call_id']}: {response['content']}]")
    return "\n".join(parts)


def to_llm_messages(history: HistoryView, own_name: str | None, system_message: str | None) -> list[Any]:
    """The history as autogen-core LLM messages, from ``own_name``'s point of view.

    Its own messages become assistant messages (with function calls); responses to its
    own calls become function results; everything else is a user message from its author.
    """
    models = load_models()
    from autogen_core import FunctionCall

    out: list[Any] = [models.SystemMessage(content=system_message)] if system_message else []
    callers: dict[str, tuple[str, str]] = {}
    for message in history:
        name = message["name"]
        for call in message.get("tool_calls", ()):
            callers[call["id"]] = (name, call["function"]["name"])
        responses = message.get("tool_responses", ())
        if message["role"] == "system":
            out.append(models.SystemMessage(content=text_of(message)))
        elif name == own_name and message.get("tool_calls"):
            calls = [
                FunctionCall(id=c["id"], name=c["function"]["name"], arguments=c["function"]["arguments"])
                for c in message["tool_calls"]
            ]
            out.append(models.AssistantMessage(content=calls, source=name))
        elif name == own_name:
            out.append(models.AssistantMessage(content=text_of(message), source=name))
        elif responses and all(callers.get(r["tool_call_id"], ("",))[0] == own_name for r in responses):
            results = [
                models.FunctionExecutionResult(
                    content=r["content"], name=callers[r["tool_call_id"]][1], call_id=r["tool_call_id"]
                )
                for r in responses
            ]
            out.append(models.FunctionExecutionResultMessage(content=results))
        else:
            out.append(models.UserMessage(content=render_message(message), source=name))
    return out


class ModelAgent:
    """An assistant whose replies come from a ``ChatCompletionClient``.

    A text completion becomes an assistant message; function calls become a message
    with ``tool_calls`` (content null) for a tool executor to answer.
    """

    def __init__(
        self,
        name: str,
        model_client: Any,
        *,
        system_message: str | None = DEFAULT_SYSTEM_MESSAGE,
        tools: Iterable[ToolSpec] | ToolExecutor = (),
        description: str = "",
    ) -> None:
        load_models()
        self.name = name
        self.description = description
        self.model_client = model_client
        self.system_message = system_message
        self.tools = tool_schemas(tools)

    def config(self) -> dict[str, Any]:
        """What identifies this agent in a receipt (no credentials)."""
        info = getattr(self.model_client, "model_info", None)
        return {
            "client": type(self.model_client).__name__,
            "model_info": dict(info) if isinstance(info, Mapping) else None,
            "system_message": self.system_message,
            "tools": self.tools,
        }

    async def reply(self, history: HistoryView, context: TurnContext) -> Message:
        """Ask the model for the next message."""
        messages = to_llm_messages(history, self.name, self.system_message)
        result = await self.model_client.create(messages, tools=self.tools)
        content = result.content
        if isinstance(content, str):
            return {"role": "assistant", "content": content, "name": self.name}
        calls = [
            {
                "id": call.id or CALL_ID_PREFIX + secrets.token_hex(CALL_ID_BYTES),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in content
        ]
        return {"role": "assistant", "content": None, "name": self.name, "tool_calls": calls}  # type: ignore[typeddict-item]
