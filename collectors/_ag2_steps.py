"""The content of every step the AG2 1.x collector records, built in this one module.

The hooks (``collectors/ag2.py``) decide *when* a step happens; these functions decide
*what it says*. Keeping every shape here means the step vocabulary can change in one
place. The shapes follow the AgentChat collector's (``spec/agentchat.md``): a tool call
names its ``name``, ``call_id``, ``arguments``, ``result`` and ``is_error``; an approval
names what the built-in group chat's gate names (``spec/groupchat.md``), so policies
(``approved_before``) read both alike. ``spec/ag2.md`` lists every member.

Everything taken from a run (messages, arguments, results, error messages) is untrusted
and unbounded: :func:`plain` turns it into JSON-ready data cut to named limits.

Imports no agent framework: values are read by their members.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._bounded import MAX_DEPTH, MAX_ITEMS, MAX_TEXT_CHARS, NOT_SPECIAL, OMITTED_KEY, bounded, bounded_text
from ._errors import error_info

__all__ = [
    "MAX_DEPTH",
    "MAX_ITEMS",
    "MAX_TEXT_CHARS",
    "OMITTED_KEY",
    "approval_content",
    "arguments_of",
    "channel_content",
    "human_approval_content",
    "human_input_content",
    "model_failure_content",
    "plain",
    "rejected_content",
    "reply_content",
    "routing_content",
    "speaker_content",
    "task_content",
    "text",
    "tool_call_content",
    "turn_end_content",
    "turn_failed_content",
]

text = bounded_text


def _ag2_types(value: Any, depth: int) -> Any:
    """AG2 inputs by their members, exceptions by :func:`~._errors.error_info`, dataclasses by their fields."""
    if isinstance(value, BaseException):
        return error_info(value)
    kind = type(value).__name__
    if kind == "TextInput" and isinstance(getattr(value, "content", None), str):
        return {"type": "text", "text": text(value.content)}
    if kind == "DataInput" and hasattr(value, "data"):
        return {"type": "data", "data": plain(value.data, depth + 1)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
        return {"type": kind, **plain(fields, depth + 1)}
    return NOT_SPECIAL


def plain(value: Any, depth: int = 0) -> Any:
    """JSON-ready ``value``, bounded (:func:`~._bounded.bounded`); AG2 inputs (``TextInput`` by its text,
    ``DataInput`` by its data), dataclasses (``Handoff``, ``Finish``, usage) by their fields, an
    exception by its type, module and message."""
    return bounded(value, depth, _ag2_types)


def arguments_of(raw: Any) -> tuple[Any, bool]:
    """A tool call's arguments: the JSON object the model sent, or the raw text when it is not one."""
    if not isinstance(raw, str):
        return plain(raw), isinstance(raw, Mapping)
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return text(raw), False
    return plain(value), isinstance(value, dict)


def _parts(request: Any) -> Any:
    parts = getattr(request, "parts", None)
    return plain(list(parts)) if isinstance(parts, Sequence) else plain(request)


def task_content(request: Any, *, run_id: str, turn: int, parent: Mapping[str, Any] | None,
                 channel: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``task`` step of a turn: its input, the run it is on, its number on that run."""
    content: dict[str, Any] = {"input": _parts(request), "run_id": run_id, "turn": turn,
                               "request_type": type(request).__name__}
    if parent is not None:
        content["parent"] = dict(parent)
    if channel is not None:
        content["channel"] = dict(channel)
    return content


def _usage(usage: Any) -> dict[str, Any] | None:
    if usage is None or not dataclasses.is_dataclass(usage) or isinstance(usage, type):
        return None
    return {f.name: getattr(usage, f.name, None) for f in dataclasses.fields(usage)
            if isinstance(getattr(usage, f.name, None), (int, float))}


def _calls(response: Any) -> list[dict[str, Any]]:
    batch = getattr(response, "tool_calls", None)
    calls = getattr(batch, "calls", None) or []
    out = []
    for call in calls[:MAX_ITEMS]:
        arguments, valid = arguments_of(getattr(call, "arguments", None))
        entry = {"call_id": getattr(call, "id", None), "name": plain(getattr(call, "name", None)),
                 "arguments": arguments}
        if not valid:
            entry["arguments_malformed"] = True
        out.append(entry)
    return out


def reply_content(response: Any, *, latency_ms: float) -> dict[str, Any]:
    """A model reply: text, tool calls, model, provider, usage, finish reason, latency."""
    return {
        "message_type": type(response).__name__,
        "content": plain(getattr(response, "content", None)),
        "tool_calls": _calls(response),
        "model": plain(getattr(response, "model", None)),
        "provider": plain(getattr(response, "provider", None)),
        "usage": _usage(getattr(response, "usage", None)),
        "finish_reason": plain(getattr(response, "finish_reason", None)),
        "response_id": plain(getattr(response, "response_id", None)),
        "latency_ms": round(latency_ms, 3),
    }


def model_failure_content(exc: BaseException, *, latency_ms: float) -> dict[str, Any]:
    """A model call that raised (AG2 leaves no event for it): the exception, and how long it took."""
    return {"error": error_info(exc), "during": "model_call", "latency_ms": round(latency_ms, 3)}


def _result(result: Any) -> Any:
    """A ``ToolResult`` by its parts (a single part by itself), else the value as data."""
    parts = getattr(result, "parts", None)
    if isinstance(parts, list):
        values = [plain(p) for p in parts[:MAX_ITEMS]]
        return values[0] if len(values) == 1 else values
    return plain(result)


def tool_call_content(call: Any, outcome: Any, *, error: BaseException | None,
                      ran: Mapping[str, Any] | None) -> dict[str, Any]:
    """One tool call: what was asked (call id, name, arguments, source) and what came back.

    ``outcome`` is the event the call settled as (a result, an error, a not-found, a client
    call), or None when it raised ``error``. ``ran`` is what an approval gate saw run.
    """
    arguments, valid = arguments_of(getattr(call, "arguments", None))
    content: dict[str, Any] = {"name": plain(getattr(call, "name", None)), "call_id": getattr(call, "id", None),
                               "arguments": arguments, "source": plain(getattr(call, "source", None))}
    if not valid:
        content["arguments_malformed"] = True
    kind = type(outcome).__name__ if outcome is not None else None
    content["outcome"] = kind
    if error is not None:
        content.update(result=None, is_error=True, error=error_info(error))
    else:
        result = getattr(outcome, "result", None)
        content["result"] = _result(result)
        failure = getattr(outcome, "error", None)
        content["is_error"] = isinstance(failure, BaseException)
        if isinstance(failure, BaseException):
            content["error"] = error_info(failure)
        if getattr(result, "final", False) is True:
            content["final"] = True
        if kind == "ClientToolCallEvent":
            content["client_call"] = True  # the tool runs on the client: no result here
    if ran is not None:
        content.update(ran)
    return content


def human_input_content(request: Any, answer: Any, error: BaseException | None) -> dict[str, Any]:
    """A question put to a human (``ctx.input()``) and its answer."""
    content: dict[str, Any] = {"prompt": plain(getattr(request, "content", None)),
                               "request_id": getattr(request, "id", None),
                               "timeout": getattr(request, "timeout", None),
                               "input": plain(getattr(answer, "content", None)) if answer is not None else None}
    if error is not None:
        content["error"] = error_info(error)
    return content


def human_approval_content(request: Any, call: Any, answer: Any, error: BaseException | None,
                           always: bool) -> dict[str, Any]:
    """AG2's own ``approval_required`` question, answered by a human (or not).

    ``decision`` reads the answer as AG2 does: ``y``/``yes``/``1`` or ``always`` approve
    (``always`` also grants every later call of the same tool on that context).
    """
    reply = getattr(answer, "content", None) if answer is not None else None
    word = reply.lower() if isinstance(reply, str) else None
    granted_always = always and word == "always"
    if error is not None or word is None:
        decision = "unanswered"
    elif granted_always or word in ("y", "yes", "1"):
        decision = "approved"
    else:
        decision = "denied"
    arguments, _ = arguments_of(getattr(call, "arguments", None)) if call is not None else (None, True)
    content: dict[str, Any] = {
        "call_id": getattr(request, "tool_call_id", None),
        "tool": plain(getattr(call, "name", None)) if call is not None else None,
        "arguments": arguments,
        "question": plain(getattr(request, "content", None)),
        "request_id": getattr(request, "id", None),
        "timeout": getattr(request, "timeout", None),
        "answer": plain(reply),
        "decision": decision,
        "grant": "always" if granted_always else None,
        "grant_scope": plain(getattr(call, "source", None) or getattr(call, "name", None))
        if granted_always and call is not None else None,
        "decided_by": "human",
        "via": "ag2.approval_required",
    }
    if error is not None:
        content["error"] = error_info(error)
    return content


def approval_content(*, approval_id: str, call_id: str, tool: str, arguments: Any, digest: str | None,
                     port: str, decision: str, reason: str | None, edited: bool, run_id: str) -> dict[str, Any]:
    """A decision of the collector's approval gate, as the built-in group chat's gate records one."""
    return {"approval_id": approval_id, "call_id": call_id, "tool": tool, "arguments": arguments,
            "arguments_digest": digest, "decided_by": "gate", "port": port, "decision": decision,
            "reason": plain(reason), "edited": edited, "run_id": run_id}


def turn_end_content(*, run_id: str, turn: int, response: Any, error: BaseException | None,
                     replies: int, tool_calls: int) -> dict[str, Any]:
    """The end of a turn: how it ended, its final text, what it did."""
    content: dict[str, Any] = {"run_id": run_id, "turn": turn, "model_replies": replies, "tool_calls": tool_calls}
    if error is not None:
        content.update(ended="error", error=error_info(error), final=None)
    else:
        content.update(ended="reply", final=plain(getattr(response, "content", None)),
                       forced=bool(getattr(response, "response_force", False)))
    return content


# ------------------------------------------------------------------------------ networks


def channel_content(channel_id: str, kind: str, payload: Any, name: Callable[[Any], str | None]) -> dict[str, Any]:
    """A channel lifecycle event the hub reported: created (type, creator, participants, graph), opened,
    closed or expired (with the close reason)."""
    content: dict[str, Any] = {"channel_id": channel_id, "event": kind}
    body = payload if isinstance(payload, Mapping) else {}
    metadata = body.get("metadata")
    if metadata is not None:
        manifest = getattr(metadata, "manifest", None)
        content["type"] = plain(getattr(manifest, "type", None))
        content["creator"] = name(getattr(metadata, "creator_id", None))
        content["participants"] = [name(getattr(p, "agent_id", None)) for p in
                                   list(getattr(metadata, "participants", None) or [])[:MAX_ITEMS]]
        content["state"] = plain(getattr(getattr(metadata, "state", None), "value", None))
        content["close_reason"] = plain(getattr(metadata, "close_reason", None)) or None
        knobs = getattr(metadata, "knobs", None)
        if isinstance(knobs, Mapping) and "graph" in knobs:
            content["graph"] = plain(knobs["graph"])
    if "reason" in body:
        content["reason"] = plain(body["reason"])
    return content


def routing_content(channel_id: str, envelope: Any, routing: Mapping[str, Any], sender: str | None,
                    target: str | None) -> dict[str, Any]:
    """A routing decision a tool returned (``Handoff`` or ``Finish``), as the hub posted it."""
    return {"channel_id": channel_id, "envelope_id": plain(getattr(envelope, "envelope_id", None)),
            "from": sender, "kind": plain(routing.get("kind")), "tool": plain(routing.get("tool")),
            "target": target, "reason": plain(routing.get("reason")), "summary": plain(routing.get("summary")),
            "body": plain((getattr(envelope, "event_data", None) or {}).get("body"))}


def speaker_content(channel_id: str, next_speaker: str | None, turn: int, after: Any,
                    close_reason: Any) -> dict[str, Any]:
    """The speaker the channel's adapter (its transition graph) expects after a turn; None: it ends."""
    return {"channel_id": channel_id, "next_speaker": next_speaker, "after_turn": turn,
            "after_envelope": plain(after), "ends": next_speaker is None,
            "close_reason": plain(close_reason) or None}


def turn_failed_content(channel_id: str, agent: str | None, envelope_id: Any, exc: Any) -> dict[str, Any]:
    """A network turn that failed (the hub's report)."""
    error = error_info(exc) if isinstance(exc, BaseException) else {"message": text(exc)}
    return {"channel_id": channel_id, "agent": agent, "envelope_id": plain(envelope_id), "error": error}


def rejected_content(envelope: Any, reason: Any, sender: str | None) -> dict[str, Any]:
    """An envelope the hub refused, and why."""
    return {"channel_id": plain(getattr(envelope, "channel_id", None)),
            "envelope_id": plain(getattr(envelope, "envelope_id", None)) or None, "sender": sender,
            "event_type": plain(getattr(envelope, "event_type", None)), "reason": plain(reason)}
