"""A scripted Agent Framework chat client: the framework's base client with its function-invocation
and chat-middleware layers, answering from a fixed script instead of a model (offline)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any

from agent_framework import (
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
    UsageDetails,
)


class Call:
    """A scripted model turn that proposes one function call."""

    def __init__(self, name: str, arguments: Mapping[str, Any], call_id: str) -> None:
        self.name, self.arguments, self.call_id = name, dict(arguments), call_id


Turn = str | Call | list[Call]


class ScriptedChatClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """Answers each model call with the next scripted turn (text or function calls)."""

    def __init__(self, script: Sequence[Turn], *, usage: tuple[int, int] | None = None, model: str | None = None,
                 **kwargs: Any) -> None:
        """``usage`` (input, output tokens) and ``model``: what each scripted response reports, as a service's does."""
        super().__init__(**kwargs)
        self.script = list(script)
        self.calls = 0
        self.usage, self.model = usage, model

    def _usage(self) -> UsageDetails | None:
        if self.usage is None:
            return None
        return UsageDetails(input_token_count=self.usage[0], output_token_count=self.usage[1])

    def _next(self) -> ChatResponse[Any]:
        if not self.script:
            raise AssertionError(f"script exhausted after {self.calls} model calls, want more turns")
        self.calls += 1
        turn = self.script.pop(0)
        if isinstance(turn, str):
            contents = [Content.from_text(turn)]
            finish = "stop"
        else:
            calls = turn if isinstance(turn, list) else [turn]
            contents = [Content.from_function_call(call_id=c.call_id, name=c.name, arguments=c.arguments)
                        for c in calls]
            finish = "tool_calls"
        return ChatResponse(messages=[Message(role="assistant", contents=contents)], finish_reason=finish,
                            usage_details=self._usage(), model=self.model)

    async def _respond(self) -> ChatResponse[Any]:
        return self._next()

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> Awaitable[ChatResponse[Any]] | ResponseStream[ChatResponseUpdate, ChatResponse[Any]]:
        if not stream:
            return self._respond()

        async def updates() -> AsyncIterator[ChatResponseUpdate]:
            response = self._next()
            usage = response.usage_details
            for message in response.messages:
                extra = [Content.from_usage(usage)] if usage is not None else []
                yield ChatResponseUpdate(role="assistant", contents=[*message.contents, *extra],
                                         finish_reason=response.finish_reason, model=response.model)

        return self._build_response_stream(updates())
