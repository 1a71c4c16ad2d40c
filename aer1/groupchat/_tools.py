"""Function tools and the tool executor agent.

The executor answers the tool calls of the latest message with one tool-role message
holding one response per call id, in call order. A call to an unknown tool, or with
arguments that are not a JSON object matching the tool's schema, gets an error
response and runs nothing (see :mod:`.arguments` for what "exact" arguments are). Tools
marked as needing confirmation pass the approval gate first (see :mod:`.approval`): the
reviewer, the schema check and the tool each get their own copy of the same exact values.
"""

from __future__ import annotations

import enum
import inspect
import json
import time
import typing
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from aer1 import _steps_vocab as vocab
from aer1._canonical import normalize, restore

from ._approval import (
    APPROVED,
    DENIED,
    PENDING,
    PENDING_PREFIX,
    ApprovalDecision,
    ApprovalPort,
    ApprovalToken,
    TokenRefused,
    ToolApprovalRequest,
    arguments_digest,
)
from ._arguments import ArgumentsError, ExactArguments, parse_arguments
from ._context import TurnContext
from ._history import HistoryView
from ._messages import Message, ToolCall, ToolResponse
from ._schema import function_schema, validate

UNKNOWN_TOOL = "unknown-tool"
ARGS_INVALID = "tool-args-invalid"
TOOL_FAILED = "tool-failed"
APPROVAL_DENIED = "approval-denied"
APPROVAL_PENDING = "approval-pending"
NO_CALLS_REPLY = "No tool calls to execute."
#: The built-in ``error_kind`` of a failed call under the vocabulary's ``error.type`` (spec/steps.md).
_ERROR_TYPES = {UNKNOWN_TOOL: "unknown_tool", ARGS_INVALID: "arguments_invalid", TOOL_FAILED: "tool_error",
                APPROVAL_DENIED: "approval_denied", APPROVAL_PENDING: "approval_pending"}
RESPONSE_SEPARATOR = "\n\n"
GATE = "gate"
EXECUTOR = "executor"


@dataclass(frozen=True)
class Tool:
    """A function exposed to models, with its JSON schema."""

    name: str
    function: Callable[..., Any]
    description: str
    parameters: Mapping[str, Any]
    requires_confirmation: bool = False
    enums: Mapping[str, type[enum.Enum]] = field(default_factory=dict)

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        requires_confirmation: bool = False,
    ) -> Tool:
        """Build a tool; the schema comes from type hints and the docstring."""
        schema = function_schema(function, name=name, description=description)
        hints = typing.get_type_hints(function)
        enums = {p: t for p, t in hints.items() if isinstance(t, type) and issubclass(t, enum.Enum)}
        return cls(
            schema["name"],
            function,
            schema["description"],
            schema["parameters"],
            requires_confirmation,
            enums,
        )

    @property
    def schema(self) -> dict[str, Any]:
        """The tool schema as models take it: name, description, parameters."""
        return {"name": self.name, "description": self.description, "parameters": dict(self.parameters)}


@dataclass(frozen=True)
class ToolOutcome:
    """The answer to one tool call, as sent to the model and recorded."""

    call_id: str
    name: str
    arguments: str
    content: str
    is_error: bool
    error_kind: str | None = None
    status: str = "ok"
    approval_id: str | None = None
    arguments_digest: str | None = None

    @property
    def response(self) -> ToolResponse:
        """The ``tool_responses`` entry for this outcome."""
        return {"tool_call_id": self.call_id, "role": "tool", "content": self.content}


@dataclass(frozen=True)
class _Prepared:
    tool: Tool
    arguments: ExactArguments


def error_content(kind: str, message: str) -> str:
    """The model-visible JSON of a failed call: ``{"error": {"kind", "message"}}``."""
    return json.dumps({"error": {"kind": kind, "message": message}}, ensure_ascii=False)


def result_content(value: Any) -> str:
    """A tool's return value as response content: strings as they are, else JSON.

    This is text for the model, not hashed bytes: values JSON cannot hold are shown as
    Python's JSON writer shows them (a big integer by its digits, ``NaN``), never in the
    receipt's tagged form, and a lone surrogate becomes ``?``.
    """
    if isinstance(value, str):
        return value
    text = json.dumps(restore(normalize(value)), ensure_ascii=False)
    return text.encode("utf-8", "replace").decode("utf-8")


class ToolExecutor:
    """An agent that runs the tool calls of the latest message.

    ``approval`` is the gate's port, asked once for each call of a tool that needs
    confirmation; its approval becomes a one-use token the call consumes.
    ``executor_approval`` is the executor's own port, asked only when a call reaches
    it without a valid token (no port there: denied).
    """

    def __init__(
        self,
        name: str,
        function_map: Mapping[str, Callable[..., Any] | Tool] | None = None,
        *,
        requires_confirmation: Collection[str] = (),
        approval: ApprovalPort | None = None,
        executor_approval: ApprovalPort | None = None,
        description: str = "Runs the tool calls of the latest message.",
    ) -> None:
        self.name = name
        self.description = description
        self.approval = approval
        self.executor_approval = executor_approval
        self._tools: dict[str, Tool] = {}
        if function_map:
            self.register_function(function_map, requires_confirmation=requires_confirmation)

    def register_function(
        self,
        function_map: Mapping[str, Callable[..., Any] | Tool],
        *,
        requires_confirmation: Collection[str] = (),
    ) -> None:
        """Register tools by name; names in ``requires_confirmation`` need approval."""
        unknown = set(requires_confirmation) - set(function_map) - set(self._tools)
        if unknown:
            raise ValueError(f"requires_confirmation names unregistered tools: {', '.join(sorted(unknown))}")
        for tname, item in function_map.items():
            confirm = tname in requires_confirmation
            if isinstance(item, Tool):
                tool = Tool(
                    tname,
                    item.function,
                    item.description,
                    item.parameters,
                    item.requires_confirmation or confirm,
                    item.enums,
                )
            elif callable(item):
                tool = Tool.from_function(item, name=tname, requires_confirmation=confirm)
            else:
                raise TypeError(f"tool {tname!r} is neither a callable nor a Tool")
            self._tools[tname] = tool
        for tname in requires_confirmation:
            current = self._tools[tname]
            if not current.requires_confirmation:
                self._tools[tname] = Tool(
                    current.name,
                    current.function,
                    current.description,
                    current.parameters,
                    True,
                    current.enums,
                )

    @property
    def tools(self) -> Mapping[str, Tool]:
        """The registered tools by name."""
        return dict(self._tools)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The schemas of every registered tool, for a model's ``tools`` list."""
        return [t.schema for t in self._tools.values()]

    def config(self) -> dict[str, Any]:
        """What identifies this agent in a receipt."""
        return {
            "tools": self.tool_schemas(),
            "requires_confirmation": sorted(t.name for t in self._tools.values() if t.requires_confirmation),
            "approval_port": self.approval.name if self.approval else None,
            "executor_approval_port": self.executor_approval.name if self.executor_approval else None,
        }

    # ------------------------------------------------------------------ turn

    async def reply(self, history: HistoryView, context: TurnContext) -> Message:
        """Answer every tool call of the latest message in one tool-role message."""
        last = history.last()
        calls: list[ToolCall] = [typing.cast(ToolCall, c) for c in (last or {}).get("tool_calls", ())]
        if not calls:
            return {"role": "user", "content": NO_CALLS_REPLY, "name": self.name}
        outcomes = [await self.handle_call(context, call) for call in calls]
        return {
            "role": "tool",
            "content": RESPONSE_SEPARATOR.join(o.content for o in outcomes),
            "name": self.name,
            "tool_responses": [o.response for o in outcomes],
        }

    def _prepare(self, call: ToolCall) -> _Prepared | tuple[str, str]:
        name = call["function"]["name"]
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return UNKNOWN_TOOL, f"unknown tool {name!r} (known: {known})"
        try:
            arguments = parse_arguments(call["function"]["arguments"])
        except ArgumentsError as e:
            return ARGS_INVALID, str(e)
        problems = validate(tool.parameters, arguments.values())
        if problems:
            return ARGS_INVALID, "; ".join(problems)
        return _Prepared(tool, arguments)

    def _finish(self, context: TurnContext, call: ToolCall, started: float, outcome: ToolOutcome) -> ToolOutcome:
        error = None
        if outcome.error_kind is not None:
            error = vocab.error_code(_ERROR_TYPES.get(outcome.error_kind, outcome.error_kind), outcome.content)
        context.record(
            "tool_call",
            vocab.tool_call(
                "groupchat", name=outcome.name, call_id=outcome.call_id, arguments=outcome.arguments,
                result=None if outcome.is_error else outcome.content, error=error,
                arguments_digest=outcome.arguments_digest,
                extras={"approval_id": outcome.approval_id, "error_kind": outcome.error_kind,
                        "model_result": outcome.content if outcome.is_error else None},
            ),
            tool=outcome.name,
            status=outcome.status,
            started_at=started,
            call_id=outcome.call_id,
        )
        return outcome

    def _refusal(
        self,
        call: ToolCall,
        kind: str,
        message: str,
        *,
        status: str = "error",
        approval_id: str | None = None,
        digest: str | None = None,
    ) -> ToolOutcome:
        content = f"{PENDING_PREFIX}{approval_id}" if kind == APPROVAL_PENDING else error_content(kind, message)
        return ToolOutcome(
            call["id"],
            call["function"]["name"],
            call["function"]["arguments"],
            content,
            True,
            kind,
            status,
            approval_id,
            digest,
        )

    def _cancelled(self, call: ToolCall, prepared: _Prepared, kind: str, message: str, approval_id: str) -> ToolOutcome:
        """A call not run because of an approval decision (denied or pending)."""
        return self._refusal(
            call, kind, message, status="cancelled", approval_id=approval_id, digest=prepared.arguments.digest
        )

    async def handle_call(self, context: TurnContext, call: ToolCall) -> ToolOutcome:
        """Gate (for confirm tools) and execute one call; records its steps."""
        started = time.time()
        prepared = self._prepare(call)
        if isinstance(prepared, tuple):
            return self._finish(context, call, started, self._refusal(call, *prepared))
        token: ApprovalToken | None = None
        why_no_token: str | None = None
        gate_approval_id: str | None = None
        if prepared.tool.requires_confirmation and self.approval is not None:
            if not context.approvals.first_gate(call["id"]):
                why_no_token = "call id was already gated in this run (replayed call)"
            else:
                gated = await self._ask(context, call, prepared, self.approval, GATE, None)
                if isinstance(gated, ToolOutcome):
                    return self._finish(context, call, started, gated)
                token = context.approvals.issue(call["id"], prepared.tool.name, prepared.arguments.values())
                gate_approval_id = gated
        try:
            return await self._execute(context, call, prepared, time.time(), token, why_no_token, gate_approval_id)
        finally:
            context.approvals.discard(token)

    async def execute(self, context: TurnContext, call: ToolCall, *, token: ApprovalToken | None = None) -> ToolOutcome:
        """Run one call as the executor: a confirm tool needs a valid token or its own approval."""
        started = time.time()
        prepared = self._prepare(call)
        if isinstance(prepared, tuple):
            return self._finish(context, call, started, self._refusal(call, *prepared))
        return await self._execute(context, call, prepared, started, token, None, None)

    async def _execute(
        self,
        context: TurnContext,
        call: ToolCall,
        prepared: _Prepared,
        started: float,
        token: ApprovalToken | None,
        why_no_token: str | None,
        gate_approval_id: str | None,
    ) -> ToolOutcome:
        approval_id: str | None = None
        if prepared.tool.requires_confirmation:
            try:
                context.approvals.redeem(
                    token, call_id=call["id"], tool=prepared.tool.name, arguments=prepared.arguments.values()
                )
                approval_id = gate_approval_id
            except TokenRefused as e:
                refusal = why_no_token or str(e)
                decided = await self._executor_decides(context, call, prepared, refusal)
                if isinstance(decided, ToolOutcome):
                    return self._finish(context, call, started, decided)
                approval_id = decided
                started = time.time()  # the call runs from here: its approval was decided before it
        def cut(error: dict[str, Any]) -> ToolOutcome:
            return self._finish(context, call, started, self._cut(call, prepared, approval_id, error))

        def unfinished() -> None:
            cut(vocab.error_code(vocab.CANCELLED, vocab.UNFINISHED_MESSAGE))

        ended = context.under_way(unfinished)
        try:
            outcome = await self._run(call, prepared, approval_id)
        except vocab.CANCELLATIONS as e:  # cut off while it ran: recorded as such, then passed on
            if ended():
                cut(vocab.error_info(e))
            raise
        return self._finish(context, call, started, outcome) if ended() else outcome

    def _cut(self, call: ToolCall, prepared: _Prepared, approval_id: str | None,
             error: dict[str, Any]) -> ToolOutcome:
        """A call cut off while it ran (a cancellation, or finalize() first): status ``cancelled``."""
        return ToolOutcome(call["id"], prepared.tool.name, call["function"]["arguments"],
                           error_content(vocab.CANCELLED, error["message"]), True, vocab.CANCELLED, "cancelled",
                           approval_id, prepared.arguments.digest)

    async def _executor_decides(
        self, context: TurnContext, call: ToolCall, prepared: _Prepared, refusal: str
    ) -> ToolOutcome | str:
        if self.executor_approval is not None:
            return await self._ask(context, call, prepared, self.executor_approval, EXECUTOR, refusal)
        request = ToolApprovalRequest(context.run_id, call["id"], prepared.tool.name, prepared.arguments.values())
        reason = f"no valid approval ({refusal}) and no executor approval port"
        self._record_decision(
            context, request, prepared.arguments, time.time(), None, EXECUTOR, DENIED, reason, refusal=refusal
        )
        return self._cancelled(call, prepared, APPROVAL_DENIED, reason, request.approval_id)

    async def _ask(
        self,
        context: TurnContext,
        call: ToolCall,
        prepared: _Prepared,
        port: ApprovalPort,
        by: str,
        refusal: str | None,
    ) -> ToolOutcome | str:
        """Ask ``port``; return the approval id when approved, else the refusal outcome."""
        request = ToolApprovalRequest(context.run_id, call["id"], prepared.tool.name, prepared.arguments.values())
        started = time.time()
        try:
            decision = await port.request(request)
            if not isinstance(decision, ApprovalDecision):
                raise TypeError(f"returned {decision!r}, not an ApprovalDecision")
        except Exception as e:  # a failing port denies (fail closed)
            decision = ApprovalDecision.deny(f"approval port {port.name!r} failed: {type(e).__name__}: {e}")
        outcome: str = decision.outcome
        reason = decision.reason
        edited = arguments_edited(request, decision, prepared.arguments.digest)
        if edited and outcome == APPROVED:
            outcome, reason = DENIED, "the approval edited the arguments; edits are not applied"
        self._record_decision(
            context, request, prepared.arguments, started, port.name, by, outcome, reason,
            refusal=refusal, edited=edited,
        )  # fmt: skip
        if outcome == APPROVED:
            return request.approval_id
        if outcome == PENDING:
            return self._cancelled(call, prepared, APPROVAL_PENDING, reason or "", request.approval_id)
        message = f"approval denied: {reason}" if reason else "approval denied"
        return self._cancelled(call, prepared, APPROVAL_DENIED, message, request.approval_id)

    def _record_decision(
        self,
        context: TurnContext,
        request: ToolApprovalRequest,
        asked: ExactArguments,
        started: float,
        port: str | None,
        by: str,
        outcome: str,
        reason: str | None,
        *,
        refusal: str | None = None,
        edited: bool = False,
    ) -> None:
        context.record(
            "approval",
            vocab.approval(
                "groupchat", decision=outcome, name=request.tool, call_id=request.call_id, arguments=asked.values(),
                responder=by, arguments_digest=asked.digest,
                extras={"approval_id": request.approval_id, "port": port, "reason": reason, "edited": edited,
                        "refused_grant": refusal},
            ),
            started_at=started,
            call_id=request.call_id,
        )

    async def _run(self, call: ToolCall, prepared: _Prepared, approval_id: str | None) -> ToolOutcome:
        kwargs = prepared.arguments.values()
        try:
            for pname, enum_type in prepared.tool.enums.items():
                if pname in kwargs:
                    kwargs[pname] = enum_type(kwargs[pname])
            value = prepared.tool.function(**kwargs)
            if inspect.isawaitable(value):
                value = await value
            content = result_content(value)
        except Exception as e:  # any tool failure becomes an error result
            return ToolOutcome(
                call["id"],
                prepared.tool.name,
                call["function"]["arguments"],
                error_content(TOOL_FAILED, f"{type(e).__name__}: {e}"),
                True,
                TOOL_FAILED,
                "error",
                approval_id,
                prepared.arguments.digest,
            )
        return ToolOutcome(
            call["id"],
            prepared.tool.name,
            call["function"]["arguments"],
            content,
            False,
            None,
            "ok",
            approval_id,
            prepared.arguments.digest,
        )


def arguments_edited(request: ToolApprovalRequest, decision: ApprovalDecision, digest: str) -> bool:
    """Whether the port changed the arguments: in its answer, or in its copy of the request.

    Arguments that cannot even be digested count as changed.
    """
    for arguments in (decision.arguments, request.arguments):
        if arguments is None:
            continue
        try:
            if arguments_digest(arguments) != digest:
                return True
        except (ValueError, TypeError):
            return True
    return False
