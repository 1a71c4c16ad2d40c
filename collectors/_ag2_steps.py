"""The content of every step the AG2 1.x collector records, in the step vocabulary (``spec/steps.md``).

The hooks (``collectors/ag2.py``) decide *when* a step happens; these functions decide
*what it says*, each through the one builder of its kind in :mod:`aer1._steps_vocab`, so
an AG2 receipt has the members an AgentChat or Agent Framework receipt has for the same
run shape (and policies read them alike). What only AG2 has (a tool's source, the event a
call settled as, the turn's number on its stream, channel ids, routing reasons) goes
under the framework member ``ag2``. ``spec/ag2.md`` lists every member.

Everything taken from a run (messages, arguments, results, error messages) is untrusted
and unbounded: :func:`plain` turns it into JSON-ready data cut to named limits.

Imports no agent framework: values are read by their members.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aer1 import _steps_vocab as vocab

from ._bounded import MAX_DEPTH, MAX_ITEMS, MAX_TEXT_CHARS, NOT_SPECIAL, OMITTED_KEY, bounded, bounded_text
from ._errors import error_info, failure_status

__all__ = [
    "FRAMEWORK",
    "MAX_DEPTH",
    "MAX_ITEMS",
    "MAX_TEXT_CHARS",
    "OMITTED_KEY",
    "UNFINISHED",
    "ModelFacts",
    "approval_content",
    "channel_content",
    "channel_end_content",
    "channel_task_content",
    "cut_off_error",
    "handoff_content",
    "handoff_cut_off_content",
    "human_approval_content",
    "human_input_content",
    "model_failure_content",
    "plain",
    "rejected_content",
    "reply_content",
    "result_value",
    "routing_message_content",
    "speaker_content",
    "task_content",
    "text",
    "tool_call_content",
    "turn_end_content",
    "turn_error_content",
    "turn_failed_content",
    "turn_reply_content",
]

#: The framework member of every content this collector writes (spec/steps.md, *Framework members*).
FRAMEWORK = "ag2"
#: ``termination.reason`` of a run still running at ``finalize()``.
UNFINISHED = vocab.UNFINISHED_MESSAGE

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


def _nest(content: dict[str, Any], nested_in: str | None) -> dict[str, Any]:
    if nested_in is not None:
        content["nested_in"] = nested_in
    return content


def _bounded_arguments(content: dict[str, Any]) -> dict[str, Any]:
    """The parsed arguments of a content, bounded like every value taken from the run."""
    if content.get("arguments") is not None:
        content["arguments"] = plain(content["arguments"])
    return content


def cut_off_error() -> dict[str, Any]:
    """The ``error`` of an action still under way when the receipt was finalized."""
    return vocab.error_code(vocab.CANCELLED, vocab.UNFINISHED_MESSAGE)


# ------------------------------------------------------------------------------ turns


def _parts(request: Any) -> list[Any]:
    parts = getattr(request, "parts", None)
    return plain(list(parts)) if isinstance(parts, Sequence) else [plain(request)]


def task_content(request: Any, *, run_id: str, turn: int, parent: Mapping[str, Any] | None,
                 channel: Mapping[str, Any] | None, nested_in: str | None) -> dict[str, Any]:
    """The ``task`` of a turn: its input (the text when it is one text part), the run it is on, its number there."""
    parts = _parts(request)
    given: Any = parts
    if len(parts) == 1 and isinstance(parts[0], Mapping) and parts[0].get("type") == "text":
        given = parts[0].get("text")
    extras: dict[str, Any] = {"input": parts, "run_id": run_id, "turn": turn, "request_type": type(request).__name__}
    if parent is not None:
        extras["parent"] = dict(parent)
    team = None
    if channel is not None:
        extras["channel"] = dict(channel)
        team = {"name": channel.get("type"), "id": channel.get("channel_id"), "type": "ag2.network.Channel"}
    return _nest(vocab.task(FRAMEWORK, task=given, team=team, extras=extras), nested_in)


@dataclasses.dataclass(frozen=True)
class ModelFacts:
    """What an agent's model config says of the model: never the config itself (it holds keys)."""

    provider: str | None = None
    model: str | None = None
    config_type: str | None = None


def _count(usage: Any, name: str) -> int | None:
    value = getattr(usage, name, None)
    return value if type(value) is int else None


def _usage(usage: Any) -> dict[str, Any] | None:
    if usage is None or not dataclasses.is_dataclass(usage) or isinstance(usage, type):
        return None
    return {f.name: getattr(usage, f.name, None) for f in dataclasses.fields(usage)
            if isinstance(getattr(usage, f.name, None), (int, float))}


def _proposed(response: Any) -> list[dict[str, Any]]:
    """The tool calls a model reply asks for, arguments as the vocabulary keeps them."""
    batch = getattr(response, "tool_calls", None)
    calls = getattr(batch, "calls", None) or []
    out = []
    for call in calls[:MAX_ITEMS]:
        arguments, malformed = vocab.parse_arguments(getattr(call, "arguments", None))
        entry = {"call_id": plain(getattr(call, "id", None)), "name": plain(getattr(call, "name", None)),
                 "arguments": plain(arguments)}
        if malformed:
            entry["arguments_malformed"] = True
        out.append(entry)
    return out


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def reply_content(response: Any, *, facts: ModelFacts, latency_ms: float, nested_in: str | None) -> dict[str, Any]:
    """A model reply: a ``message`` with its ``model`` (provider, models, tokens, finish reason, latency)."""
    usage = getattr(response, "usage", None)
    finish = getattr(response, "finish_reason", None)
    model = vocab.model_reply(
        provider=_text_or_none(getattr(response, "provider", None)) or facts.provider or facts.config_type,
        request_model=facts.model,
        response_model=_text_or_none(getattr(response, "model", None)),
        input_tokens=_count(usage, "prompt_tokens"),
        output_tokens=_count(usage, "completion_tokens"),
        finish_reasons=None if finish is None else [text(finish)],
        latency_ms=round(latency_ms, 3),
    )
    extras = {"message_type": type(response).__name__, "tool_calls": _proposed(response),
              "usage": _usage(usage), "forced": bool(getattr(response, "response_force", False))}
    return vocab.message(FRAMEWORK, content=plain(getattr(response, "content", None)),
                         message_id=_text_or_none(getattr(response, "response_id", None)), role="assistant",
                         model=model, nested_in=nested_in, extras=extras)


def model_failure_content(exc: BaseException, *, latency_ms: float, nested_in: str | None) -> dict[str, Any]:
    """A model call that raised (AG2 leaves no event for it): an ``error`` step, phase ``model_call``."""
    return vocab.error_step(FRAMEWORK, error=error_info(exc), phase="model_call", nested_in=nested_in,
                            extras={"latency_ms": round(latency_ms, 3)})


def result_value(result: Any) -> Any:
    """What a tool gave back to the model: a ``ToolResult``'s text or JSON data (a list for several parts)."""
    parts = getattr(result, "parts", None)
    if not isinstance(parts, list):
        return plain(result)
    values = []
    for part in parts[:MAX_ITEMS]:
        kind = type(part).__name__
        if kind == "TextInput" and isinstance(getattr(part, "content", None), str):
            values.append(text(part.content))
        elif kind == "DataInput" and hasattr(part, "data"):
            values.append(plain(part.data))
        else:
            values.append(plain(part))
    return values[0] if len(values) == 1 else values


#: ``error.type`` of a call the collector's gate refused, by its decision (spec/steps.md, *error*).
_REFUSED = {"denied": "approval_denied", "pending": "approval_pending"}


def tool_call_content(call: Any, outcome: Any, *, error: BaseException | None, ran: Mapping[str, Any] | None,
                      refused: str | None = None, cut_off: bool = False,
                      nested_in: str | None = None) -> tuple[dict[str, Any], str]:
    """One tool call, and its step status: what was asked (call id, name, arguments) and what came back.

    ``outcome`` is the event the call settled as (a result, an error, a not-found, a client
    call), or None when it raised ``error`` or was ``cut_off`` by ``finalize()``. ``ran`` is
    what an approval gate saw run; ``refused`` the gate's decision when it stopped the call.
    """
    kind = type(outcome).__name__ if outcome is not None else None
    extras: dict[str, Any] = {"source": plain(getattr(call, "source", None)), "outcome": kind}
    result = getattr(outcome, "result", None)
    failure = getattr(outcome, "error", None)
    err: dict[str, Any] | None = None
    value: Any = None
    if cut_off:
        status, err = "cancelled", cut_off_error()
    elif error is not None:
        status, err = failure_status(error), error_info(error)
    elif refused is not None:
        status, err = "cancelled", vocab.error_code(_REFUSED.get(refused, "approval_denied"),
                                                    _told(result) or f"approval {refused}")
        extras["executed"] = False
    elif isinstance(failure, BaseException):
        status, err = "error", error_info(failure)
    elif kind == "ToolNotFoundEvent":
        status, err = "error", vocab.error_code("unknown_tool", f"no tool named {text(getattr(call, 'name', ''))}")
    else:
        status, value = "ok", result_value(result)
    if status == "error" and err is not None and vocab.parse_arguments(getattr(call, "arguments", None))[1]:
        # AG2 raises while reading arguments that are not a JSON object: refused before the tool
        # ran, ``arguments_invalid`` as in every collector; the exception's class is kept beside it
        extras["exception"] = err["type"]
        err = vocab.error_code(vocab.ARGUMENTS_INVALID, err["message"])
    if status != "ok" and result is not None:
        extras["model_saw"] = result_value(result)  # what the framework gave the model instead of a result
    if getattr(result, "final", False) is True:
        extras["final"] = True
    if kind == "ClientToolCallEvent":
        extras["client_call"] = True  # the tool runs on the client: no result here
    digest = None
    if ran is not None:
        digest = ran.get("arguments_digest")
        extras.update({k: v for k, v in ran.items() if k != "arguments_digest"})
    content = vocab.tool_call(FRAMEWORK, name=text(getattr(call, "name", "") or "tool"),
                              call_id=plain(getattr(call, "id", None)), arguments=getattr(call, "arguments", None),
                              result=value, error=err, arguments_digest=digest, nested_in=nested_in, extras=extras)
    return _bounded_arguments(content), status


def _told(result: Any) -> str | None:
    value = result_value(result) if result is not None else None
    return value if isinstance(value, str) else None


def human_input_content(request: Any, answer: Any, error: BaseException | None, *, in_call: str | None,
                        cut_off: bool = False, nested_in: str | None = None) -> dict[str, Any]:
    """A question put to a human (``ctx.input()``) and the answer; ``input`` is null when none came."""
    err = cut_off_error() if cut_off else error_info(error) if error is not None else None
    extras: dict[str, Any] = {"timeout": plain(getattr(request, "timeout", None))}
    if in_call is not None:
        extras["in_call"] = in_call
    return vocab.human_input(FRAMEWORK, prompt=plain(getattr(request, "content", None)),
                             input=plain(getattr(answer, "content", None)) if answer is not None else None,
                             request_id=plain(getattr(request, "id", None)), error=err, nested_in=nested_in,
                             extras=extras)


def human_approval_content(request: Any, call: Any, answer: Any, error: BaseException | None, always: bool, *,
                           cut_off: bool = False, nested_in: str | None = None) -> dict[str, Any]:
    """AG2's own ``approval_required`` question, answered by a human (or not: ``pending``).

    ``decision`` reads the answer as AG2 does: ``y``/``yes``/``1`` or ``always`` approve
    (``always`` also grants every later call of the same tool on that context).
    """
    reply = getattr(answer, "content", None) if answer is not None else None
    word = reply.lower() if isinstance(reply, str) else None
    granted_always = always and word == "always"
    if cut_off or error is not None or word is None:
        decision = "pending"
    elif granted_always or word in ("y", "yes", "1"):
        decision = "approved"
    else:
        decision = "denied"
    err = cut_off_error() if cut_off else error_info(error) if error is not None else None
    scope = plain(getattr(call, "source", None) or getattr(call, "name", None)) if call is not None else None
    extras = {
        "question": plain(getattr(request, "content", None)),
        "request_id": plain(getattr(request, "id", None)),
        "timeout": plain(getattr(request, "timeout", None)),
        "answer": plain(reply),
        "grant": "always" if granted_always else None,
        "grant_scope": scope if granted_always else None,
        "via": "ag2.approval_required",
    }
    content = vocab.approval(FRAMEWORK, decision=decision,
                             name=text(call.name) if call is not None and getattr(call, "name", None) else None,
                             call_id=plain(getattr(request, "tool_call_id", None)),
                             arguments=getattr(call, "arguments", None) if call is not None else None,
                             responder="human", error=err, nested_in=nested_in, extras=extras)
    return _bounded_arguments(content)


def approval_content(*, approval_id: str, call_id: str, tool: str, arguments: Any, digest: str | None,
                     port: str, decision: str, reason: str | None, edited: bool, run_id: str,
                     error: Mapping[str, Any] | None = None, nested_in: str | None = None) -> dict[str, Any]:
    """A decision of the collector's approval gate: the digest of exactly the arguments it decided on."""
    extras = {"approval_id": approval_id, "decided_by": "gate", "reason": plain(reason), "edited": edited,
              "run_id": run_id}
    content = vocab.approval(FRAMEWORK, decision=decision, name=tool, call_id=call_id, arguments=arguments,
                             arguments_digest=digest, responder=port, error=error, nested_in=nested_in,
                             extras=extras)
    return _bounded_arguments(content)


def _turn_facts(run_id: str, turn: int, replies: int, tool_calls: int, response: Any) -> dict[str, Any]:
    facts: dict[str, Any] = {"run_id": run_id, "turn": turn, "model_replies": replies, "tool_calls": tool_calls}
    if response is not None:
        facts.update(final=plain(getattr(response, "content", None)),
                     forced=bool(getattr(response, "response_force", False)))
    return facts


def turn_end_content(*, outcome: str, run_id: str, turn: int, response: Any, error: Mapping[str, Any] | None,
                     replies: int, tool_calls: int, step_statuses: Mapping[str, int]) -> dict[str, Any]:
    """The ``termination`` of a turn that is a run of its own (not inside a channel or another agent's call).

    AG2 gives no stop reason: a turn ends when the model replies without tool calls, or on
    a final tool result (``forced``).
    """
    reason = None
    if outcome == "unfinished":
        reason = UNFINISHED
    elif response is not None and bool(getattr(response, "response_force", False)):
        reason = "final tool result"
    return vocab.termination(FRAMEWORK, outcome=outcome, reason=reason, messages=None, step_statuses=step_statuses,
                             error=error, extras=_turn_facts(run_id, turn, replies, tool_calls, response))


def turn_error_content(error: Mapping[str, Any], *, run_id: str, turn: int, nested_in: str | None) -> dict[str, Any]:
    """An agent's turn that raised or was cut off: an ``error`` step, phase ``reply``."""
    return vocab.error_step(FRAMEWORK, error=error, phase="reply", nested_in=nested_in,
                            extras={"run_id": run_id, "turn": turn})


def turn_reply_content(response: Any, *, run_id: str, turn: int, replies: int, tool_calls: int,
                       nested_in: str | None) -> dict[str, Any]:
    """The end of a turn inside a channel or another agent's call: the reply it hands back, a ``message``.

    The run there is the channel (or the parent's turn), which has its own ``termination``.
    """
    return vocab.message(FRAMEWORK, content=plain(getattr(response, "content", None)), role="assistant",
                         nested_in=nested_in, extras={"turn_end": True, **_turn_facts(run_id, turn, replies,
                                                                                      tool_calls, response)})


# ------------------------------------------------------------------------------ networks


def _channel_facts(channel_id: str, kind: str, payload: Any, name: Callable[[Any], str | None]) -> dict[str, Any]:
    facts: dict[str, Any] = {"channel_id": channel_id, "event": kind}
    body = payload if isinstance(payload, Mapping) else {}
    metadata = body.get("metadata")
    if metadata is not None:
        manifest = getattr(metadata, "manifest", None)
        facts["type"] = plain(getattr(manifest, "type", None))
        facts["creator"] = name(getattr(metadata, "creator_id", None))
        facts["participants"] = [name(getattr(p, "agent_id", None)) for p in
                                 list(getattr(metadata, "participants", None) or [])[:MAX_ITEMS]]
        facts["state"] = plain(getattr(getattr(metadata, "state", None), "value", None))
        facts["close_reason"] = plain(getattr(metadata, "close_reason", None)) or None
        labels = getattr(metadata, "labels", None)
        if isinstance(labels, Mapping) and labels.get("intent"):
            facts["intent"] = plain(labels["intent"])
        knobs = getattr(metadata, "knobs", None)
        if isinstance(knobs, Mapping) and "graph" in knobs:
            facts["graph"] = plain(knobs["graph"])
    if "reason" in body:
        facts["reason"] = plain(body["reason"])
    return facts


def channel_task_content(channel_id: str, payload: Any, name: Callable[[Any], str | None]) -> dict[str, Any]:
    """A channel created: the run's ``task`` (its intent, else its type and participants), the channel as team."""
    facts = _channel_facts(channel_id, "created", payload, name)
    given: Any = facts.get("intent") or {"type": facts.get("type"), "participants": facts.get("participants")}
    team = {"name": facts.get("type"), "id": channel_id, "type": "ag2.network.Channel"}
    return vocab.task(FRAMEWORK, task=given, team=team, extras=facts)


def channel_content(channel_id: str, kind: str, payload: Any, name: Callable[[Any], str | None]) -> dict[str, Any]:
    """Another channel lifecycle event the hub reported (opened, ...): a ``message`` with no content."""
    return vocab.message(FRAMEWORK, content=None, extras=_channel_facts(channel_id, kind, payload, name))


def channel_end_content(channel_id: str, kind: str, payload: Any, name: Callable[[Any], str | None], *,
                        step_statuses: Mapping[str, int]) -> tuple[dict[str, Any], str]:
    """A channel closed (``finished``, with its close reason), expired (``timeout``), or open at finalize
    (``unfinished``): the run's ``termination`` and its status."""
    facts = _channel_facts(channel_id, kind, payload, name)
    outcome = {"closed": "finished", "expired": "timeout"}.get(kind, "unfinished")
    reason = facts.get("reason") or facts.get("close_reason")
    if outcome == "unfinished":
        reason = UNFINISHED
    content = vocab.termination(FRAMEWORK, outcome=outcome, reason=reason if isinstance(reason, str) else None,
                                messages=None, step_statuses=step_statuses,
                                error=cut_off_error() if outcome == "unfinished" else None, extras=facts)
    return content, vocab.outcome_status(outcome)


def _routing_facts(channel_id: str, envelope: Any, routing: Mapping[str, Any], sender: str | None) -> dict[str, Any]:
    return {"channel_id": channel_id, "from": sender, "kind": plain(routing.get("kind")),
            "tool": plain(routing.get("tool")), "reason": plain(routing.get("reason")),
            "summary": plain(routing.get("summary")),
            "body": plain((getattr(envelope, "event_data", None) or {}).get("body"))}


def handoff_content(channel_id: str, envelope: Any, routing: Mapping[str, Any], sender: str | None,
                    target: str, call_id: str | None) -> dict[str, Any]:
    """A ``Handoff`` a tool returned, as the hub posted it: the target, its reason, the call that asked."""
    facts = _routing_facts(channel_id, envelope, routing, sender)
    return vocab.handoff(FRAMEWORK, target=target, content=facts["reason"],
                         message_id=plain(getattr(envelope, "envelope_id", None)) or None, call_id=call_id,
                         extras=facts)


def handoff_cut_off_content(channel_id: str, sender: str, tool: str, call_id: str, target: Any,
                            reason: str | None = None) -> dict[str, Any]:
    """A ``Handoff`` a tool returned whose envelope the hub never posted: not yet when the receipt was
    finalized, or not before its channel ended (``reason``)."""
    content = vocab.handoff(FRAMEWORK, target=text(target), content=None, call_id=call_id,
                            extras={"channel_id": channel_id, "from": sender, "tool": tool})
    content["error"] = cut_off_error() if reason is None else vocab.error_code(vocab.CANCELLED, reason)
    return content


def routing_message_content(channel_id: str, envelope: Any, routing: Mapping[str, Any],
                            sender: str | None) -> dict[str, Any]:
    """A ``Finish`` (or another routing decision) a tool returned: a ``message`` whose content is its summary.

    The channel's close that follows is the run's ``termination``.
    """
    facts = _routing_facts(channel_id, envelope, routing, sender)
    return vocab.message(FRAMEWORK, content=facts["summary"], role="assistant",
                         message_id=plain(getattr(envelope, "envelope_id", None)) or None, extras=facts)


def speaker_content(channel_id: str, next_speaker: str | None, turn: int, after: Any, close_reason: Any,
                    mechanism: str) -> dict[str, Any]:
    """The speaker the channel's adapter (its transition graph) expects after a turn; none: it ends."""
    extras = {"channel_id": channel_id, "after_turn": turn, "after_envelope": plain(after),
              "ends": next_speaker is None, "close_reason": plain(close_reason) or None}
    return vocab.speaker_selection(FRAMEWORK, selected=[next_speaker] if next_speaker is not None else [],
                                   mechanism=mechanism, extras=extras)


def turn_failed_content(channel_id: str, agent: str | None, envelope_id: Any, exc: Any) -> dict[str, Any]:
    """A network turn that failed (the hub's report): an ``error`` step, phase ``reply``."""
    error = error_info(exc) if isinstance(exc, BaseException) else vocab.error_code("turn_failed", text(exc))
    return vocab.error_step(FRAMEWORK, error=error, phase="reply",
                            extras={"channel_id": channel_id, "agent": agent, "envelope_id": plain(envelope_id)})


def rejected_content(envelope: Any, reason: Any, sender: str | None) -> dict[str, Any]:
    """An envelope the hub refused, and why: an ``error`` step, phase ``validation``."""
    extras = {"channel_id": plain(getattr(envelope, "channel_id", None)),
              "envelope_id": plain(getattr(envelope, "envelope_id", None)) or None, "sender": sender,
              "event_type": plain(getattr(envelope, "event_type", None)), "reason": plain(reason)}
    return vocab.error_step(FRAMEWORK, error=vocab.error_code("envelope_rejected", text(reason)), phase="validation",
                            extras=extras)
