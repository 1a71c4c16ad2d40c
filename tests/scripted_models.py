"""Scripted AutoGen model clients for the AgentChat and autogen-core suites: no network, no key."""

from __future__ import annotations

from collections.abc import Sequence

from autogen_core import FunctionCall
from autogen_core.models import CreateResult, ModelFamily, ModelInfo, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

#: Model info for a scripted client that AssistantAgent lets call tools and hand off.
FUNCTION_CALLING = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=False,
    family=ModelFamily.UNKNOWN,
    structured_output=False,
)
_USAGE = RequestUsage(prompt_tokens=1, completion_tokens=1)


def scripted_client(replies: Sequence[str | CreateResult]) -> ReplayChatCompletionClient:
    """A replay client answering ``replies`` in order, declaring function calling."""
    return ReplayChatCompletionClient(list(replies), model_info=FUNCTION_CALLING)


def function_calls(*calls: FunctionCall) -> CreateResult:
    """A model turn requesting ``calls``."""
    return CreateResult(finish_reason="function_calls", content=list(calls), usage=_USAGE, cached=False)


def openai_streamed_calls(*calls: tuple[str, str], thought: str | None = None) -> CreateResult:
    """What ``OpenAIChatCompletionClient.create_stream`` returns when the server streams calls
    without ids: each ``FunctionCall`` starts as ``id=""`` and no chunk fills it in.
    ``calls`` are (tool name, JSON arguments); text streamed before the calls is the thought."""
    content = [FunctionCall(id="", name=name, arguments=args) for name, args in calls]
    return CreateResult(finish_reason="function_calls", content=content, usage=_USAGE, cached=False, thought=thought)


def ollama_calls(response_number: int, *calls: tuple[str, str], thought: str | None = None) -> CreateResult:
    """What ``OllamaChatCompletionClient`` returns for tool calls: every call of one response
    has the same id, the client's response counter (``str(n)``); its ``tool_calls`` finish
    reason becomes ``function_calls``. ``calls`` are (tool name, JSON arguments)."""
    content = [FunctionCall(id=str(response_number), name=name, arguments=args) for name, args in calls]
    return CreateResult(finish_reason="function_calls", content=content, usage=_USAGE, cached=False, thought=thought)
