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
