"""Step contents in the one vocabulary every collector writes (``spec/steps.md``).

One builder per kind. Every collector (AgentChat, autogen-core, legacy, Agent Framework,
the built-in manager, and any added later) calls these instead of assembling dicts of its
own, so that the same run shape gives the same members whoever recorded it. A builder
takes the vocabulary's members by keyword and the framework's own facts as ``extras``,
which go under the one member that names the framework (:data:`FRAMEWORK_MEMBERS`).

Producer code: the verifier never imports it (it reads with :mod:`aer1._vocabulary`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._canonical import CanonicalizationError, exact_bytes, normalize
from ._vocabulary import FRAMEWORK_MEMBERS, VOCABULARY, VOCABULARY_MEMBER
from .errors import MalformedInputError

__all__ = [
    "ARGUMENTS_INVALID",
    "CANCELLATIONS",
    "CANCELLED",
    "CONFLICT_SUBJECTS",
    "EXIT_CODE",
    "LIFECYCLE_OPERATIONS",
    "MAX_ERROR_MESSAGE_CHARS",
    "OUTCOMES",
    "TOOL_ERROR",
    "UNFINISHED_MESSAGE",
    "UnfitArguments",
    "approval",
    "code_execution",
    "code_status",
    "config_change",
    "error_code",
    "error_info",
    "error_step",
    "exact_json",
    "exception_message",
    "failure_status",
    "handoff",
    "human_input",
    "lifecycle",
    "message",
    "model_reply",
    "outcome_status",
    "parse_arguments",
    "recording_conflict",
    "speaker_selection",
    "state_digest",
    "task",
    "termination",
    "tool_call",
    "tool_failure",
]

#: Longest error message kept in a step (the rest is cut, and the cut is said).
MAX_ERROR_MESSAGE_CHARS = 4000
#: ``termination.outcome`` values and the step status each gives (spec/steps.md, *termination*).
OUTCOMES: dict[str, str] = {
    "finished": "ok",
    "unobserved": "ok",
    "error": "error",
    "cancelled": "cancelled",
    "timeout": "cancelled",
    "unfinished": "cancelled",
}
#: ``error.type`` codes of failures seen without an exception (spec/steps.md, *error*).
TOOL_ERROR = "tool_error"
ARGUMENTS_INVALID = "arguments_invalid"
EXIT_CODE = "exit_code"
CANCELLED = "cancelled"
#: ``lifecycle.operation`` values (spec/steps.md, *lifecycle*).
LIFECYCLE_OPERATIONS = ("reset", "load_state", "save_state")
#: ``subject`` values of ``lifecycle``, ``config_change`` and ``recording_conflict``: an agent or a team.
CONFLICT_SUBJECTS = ("agent", "team")
#: The message of an action still running when the receipt was finalized.
UNFINISHED_MESSAGE = "still running when the receipt was finalized"


#: Exceptions that end work without it failing: recorded with status ``cancelled``.
CANCELLATIONS: tuple[type[BaseException], ...] = (
    asyncio.CancelledError,
    concurrent.futures.CancelledError,
    GeneratorExit,
    KeyboardInterrupt,
)


# ------------------------------------------------------------------ shared members


def failure_status(exc: BaseException) -> str:
    """``cancelled`` for a cancellation (see :data:`CANCELLATIONS`), else ``error``."""
    return "cancelled" if isinstance(exc, CANCELLATIONS) else "error"



def _bounded(text: str) -> str:
    if len(text) > MAX_ERROR_MESSAGE_CHARS:
        cut = len(text) - MAX_ERROR_MESSAGE_CHARS
        text = f"{text[:MAX_ERROR_MESSAGE_CHARS]}... [{cut} more characters]"
    return text


def exception_message(exc: BaseException) -> str:
    """``str(exc)``, bounded to :data:`MAX_ERROR_MESSAGE_CHARS` (never raises)."""
    try:
        text = str(exc)
    except Exception as e:  # an exception whose __str__ raises: say so instead
        text = f"<message unavailable: {type(e).__name__}>"
    return _bounded(text)


def error_info(exc: BaseException) -> dict[str, Any]:
    """The ``error`` member for an exception: its qualified class name, module and bounded message."""
    cls = type(exc)
    return {"type": cls.__qualname__, "module": cls.__module__, "message": exception_message(exc)}


def error_code(code: str, message: Any) -> dict[str, Any]:
    """The ``error`` member for a failure reported without an exception (``tool_error``, ``exit_code`` ...)."""
    return {"type": code, "module": None, "message": _bounded(message if isinstance(message, str) else str(message))}


def tool_failure(arguments: Any, message: Any) -> dict[str, Any]:
    """The ``error`` of a tool call the framework marks failed without an exception.

    ``arguments_invalid`` when the model's arguments are not a JSON object (the framework
    refused them before the tool ran), else ``tool_error``.
    """
    return error_code(ARGUMENTS_INVALID if parse_arguments(arguments)[1] else TOOL_ERROR, message)


def _content(framework: str, extras: Mapping[str, Any] | None, members: dict[str, Any], *,
             error: Mapping[str, Any] | None = None, nested_in: str | None = None) -> dict[str, Any]:
    """A vocabulary content: the marker, the kind's members, then the optional shared ones."""
    if framework not in FRAMEWORK_MEMBERS:
        raise ValueError(f"framework must be one of {', '.join(FRAMEWORK_MEMBERS)}; got {framework!r}")
    content: dict[str, Any] = {VOCABULARY_MEMBER: VOCABULARY, **members}
    if error is not None:
        content["error"] = dict(error)
    if nested_in is not None:
        content["nested_in"] = nested_in
    if extras:
        content[framework] = dict(extras)
    return content


class UnfitArguments(MalformedInputError):
    """Tool-call arguments text with no exact JSON form; the message says why."""


#: Longest piece of the model's text quoted back in an error message.
SHOWN_CHARS = 80


def _shown(text: str) -> str:
    """``text`` quoted for an error message, cut to ``SHOWN_CHARS`` characters."""
    return repr(text[:SHOWN_CHARS]) + ("..." if len(text) > SHOWN_CHARS else "")


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for key, item in pairs:
        if key in value:
            raise UnfitArguments(f"arguments repeat the key {_shown(key)}")
        value[key] = item
    return value


def _refuse_constant(name: str) -> Any:
    raise UnfitArguments(f"arguments hold {name}, which is not a JSON number")


def exact_json(text: str) -> tuple[Any, bytes]:
    """The model's arguments text parsed strictly, with its RFC 8785 bytes; :class:`UnfitArguments` if unfit.

    Strict: no duplicate keys, no ``NaN``/``Infinity``, and a value
    :func:`aer1._canonical.exact_bytes` accepts (no lone surrogate, no integer beyond
    ±(2^53 − 1), no number that overflows). The value returned is the one read back from
    those bytes. The one parsing rule of every collector and the built-in manager.
    """
    try:
        value = json.loads(text, object_pairs_hook=_refuse_duplicate_keys, parse_constant=_refuse_constant)
    except UnfitArguments:
        raise
    except RecursionError as e:
        raise UnfitArguments("arguments are nested too deeply to parse") from e
    except ValueError as e:  # malformed JSON, or an integer with too many digits
        raise UnfitArguments(f"arguments are not valid JSON: {e}") from e
    try:
        canonical = exact_bytes(value)
    except CanonicalizationError as e:
        raise UnfitArguments(f"arguments have no exact JSON form: {e}") from e
    return json.loads(canonical), canonical


def parse_arguments(raw: Any) -> tuple[Any, bool]:
    """Tool arguments as the vocabulary keeps them: ``(value, malformed)``.

    A mapping is the object itself; text that :func:`exact_json` reads as a JSON object is
    that object; ``None`` stays ``None`` (no request seen). Anything else (text that is not
    exact JSON, or JSON that is not an object, ``""`` included) is kept as text and marked
    malformed.
    """
    if raw is None:
        return None, False
    if isinstance(raw, Mapping):
        return dict(raw), False
    if isinstance(raw, (str, bytes, bytearray)):
        text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8", "replace")
        try:
            value, _ = exact_json(text)
        except UnfitArguments:
            return text, True
        return (value, False) if isinstance(value, dict) else (text, True)
    return str(raw), True


def _call_members(name: str | None, call_id: str | None, arguments: Any,
                  arguments_digest: str | None) -> dict[str, Any]:
    """The members that name a tool call, in a ``tool_call`` or an ``approval``: ``arguments`` parsed, and
    ``arguments_malformed`` when they were not JSON, ``arguments_digest`` when given."""
    value, malformed = parse_arguments(arguments)
    members: dict[str, Any] = {"name": name, "call_id": call_id, "arguments": value}
    if malformed:
        members["arguments_malformed"] = True
    if arguments_digest is not None:
        members["arguments_digest"] = arguments_digest
    return members


# ------------------------------------------------------------------ kinds


def tool_call(
    framework: str,
    *,
    name: str,
    call_id: str | None,
    arguments: Any,
    result: Any,
    error: Mapping[str, Any] | None = None,
    arguments_digest: str | None = None,
    nested_in: str | None = None,
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``tool_call`` content; ``arguments`` as the model sent them (parsed here, see :func:`parse_arguments`)."""
    members = _call_members(name, call_id, arguments, arguments_digest)
    members["result"] = result
    return _content(framework, extras, members, error=error, nested_in=nested_in)


def code_status(exit_code: Any, exc: BaseException | None = None, *, cancelled: bool = False) -> str:
    """A code execution's step status: ``ok`` only for exit code 0 (see spec/steps.md)."""
    if cancelled:
        return "cancelled"
    if exc is not None:
        return failure_status(exc)
    return "ok" if exit_code == 0 else "error"


def code_execution(
    framework: str,
    *,
    blocks: Sequence[Mapping[str, Any]],
    exit_code: Any,
    output: Any,
    error: Mapping[str, Any] | None = None,
    nested_in: str | None = None,
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``code_execution`` content; a non-zero exit without ``error`` gets ``error.type`` ``exit_code``."""
    code_blocks = [{"language": str(b.get("language") or ""), "code": b.get("code")} for b in blocks]
    if error is None and isinstance(exit_code, int) and exit_code != 0:
        error = error_code(EXIT_CODE, f"exit code {exit_code}")
    members = {"language": code_blocks[0]["language"] if code_blocks else "", "code_blocks": code_blocks,
               "exit_code": exit_code, "output": output}
    return _content(framework, extras, members, error=error, nested_in=nested_in)


def model_reply(
    *,
    provider: str | None = None,
    request_model: str | None = None,
    response_model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    finish_reasons: Iterable[str] | None = None,
    latency_ms: float | None = None,
) -> dict[str, Any]:
    """The ``model`` member of a message that is a model's reply (never a credential)."""
    def count(value: Any) -> int | None:
        return value if type(value) is int and value >= 0 else None

    def text(value: Any) -> str | None:
        return value if isinstance(value, str) and value else None

    return {
        "provider": text(provider),
        "request_model": text(request_model),
        "response_model": text(response_model),
        "input_tokens": count(input_tokens),
        "output_tokens": count(output_tokens),
        "finish_reasons": None if finish_reasons is None else [str(r) for r in finish_reasons],
        "latency_ms": latency_ms if isinstance(latency_ms, (int, float)) and latency_ms >= 0 else None,
    }


def message(
    framework: str,
    *,
    content: Any,
    message_id: str | None = None,
    role: str | None = None,
    model: Mapping[str, Any] | None = None,
    error: Mapping[str, Any] | None = None,
    nested_in: str | None = None,
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``message`` content (``error``: a delivery or handler that failed)."""
    members = {"content": content, "message_id": message_id, "role": role,
               "model": None if model is None else dict(model)}
    return _content(framework, extras, members, error=error, nested_in=nested_in)


def task(
    framework: str,
    *,
    task: Any,
    message_ids: Sequence[str] = (),
    team: Mapping[str, Any] | None = None,
    nested_in: str | None = None,
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``task`` content; ``team`` is ``{"name", "id", "type"}`` or None for a single agent."""
    members = {"task": task, "message_ids": list(message_ids),
               "team": None if team is None else {k: team.get(k) for k in ("name", "id", "type")}}
    return _content(framework, extras, members, nested_in=nested_in)


def handoff(
    framework: str,
    *,
    target: str,
    content: Any,
    message_id: str | None = None,
    call_id: str | None = None,
    nested_in: str | None = None,
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``handoff`` content."""
    members = {"target": target, "content": content, "message_id": message_id, "call_id": call_id}
    return _content(framework, extras, members, nested_in=nested_in)


def speaker_selection(
    framework: str,
    *,
    selected: Sequence[str],
    mechanism: str | None,
    candidates: Sequence[str] | None = None,
    model_replies: Sequence[str] | None = None,
    error: Mapping[str, Any] | None = None,
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``speaker_selection`` content."""
    members = {"selected": list(selected), "mechanism": mechanism,
               "candidates": None if candidates is None else list(candidates),
               "model_replies": None if model_replies is None else list(model_replies)}
    return _content(framework, extras, members, error=error)


def approval(
    framework: str,
    *,
    decision: str,
    name: str | None,
    call_id: str | None,
    arguments: Any,
    responder: str | None = None,
    error: Mapping[str, Any] | None = None,
    arguments_digest: str | None = None,
    nested_in: str | None = None,
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``approval`` content; ``decision`` is approved, denied, pending or requested."""
    if decision not in ("approved", "denied", "pending", "requested"):
        raise ValueError(f"decision must be approved, denied, pending or requested; got {decision!r}")
    members: dict[str, Any] = {"decision": decision,
                               "approved": True if decision == "approved" else False if decision == "denied" else None,
                               **_call_members(name, call_id, arguments, arguments_digest)}
    members["responder"] = responder
    return _content(framework, extras, members, error=error, nested_in=nested_in)


def human_input(
    framework: str,
    *,
    prompt: Any,
    input: Any,
    request_id: str | None = None,
    error: Mapping[str, Any] | None = None,
    nested_in: str | None = None,
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``human_input`` content."""
    members = {"prompt": prompt, "input": input, "request_id": request_id}
    return _content(framework, extras, members, error=error, nested_in=nested_in)


def error_step(
    framework: str,
    *,
    error: Mapping[str, Any],
    phase: str | None,
    nested_in: str | None = None,
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An ``error`` content: an agent's turn, or a manager's phase, raised."""
    return _content(framework, extras, {"phase": phase}, error=error, nested_in=nested_in)


def outcome_status(outcome: str) -> str:
    """The step status of a ``termination`` with this ``outcome``."""
    try:
        return OUTCOMES[outcome]
    except KeyError:
        raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}; got {outcome!r}") from None


def termination(
    framework: str,
    *,
    outcome: str,
    reason: str | None,
    messages: int | None,
    step_statuses: Mapping[str, int],
    error: Mapping[str, Any] | None = None,
    nested_in: str | None = None,
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``termination`` content; its step status is :func:`outcome_status` of ``outcome``."""
    outcome_status(outcome)
    members = {"outcome": outcome, "reason": reason, "observed": outcome not in ("unobserved", "unfinished"),
               "messages": messages, "step_statuses": dict(step_statuses)}
    return _content(framework, extras, members, error=error, nested_in=nested_in)


def state_digest(state: Any) -> str | None:
    """Hex SHA-256 of the RFC 8785 bytes of ``state`` as normalized (spec/canonical.md), before redaction.

    None when the state has no exact JSON form: the step then says nothing it cannot bind.
    """
    try:
        return hashlib.sha256(exact_bytes(normalize(state))).hexdigest()
    except (CanonicalizationError, ValueError, TypeError, RecursionError):
        return None


def _check_subject(subject: str) -> None:
    if subject not in CONFLICT_SUBJECTS:
        raise ValueError(f"subject must be one of {', '.join(CONFLICT_SUBJECTS)}; got {subject!r}")


def lifecycle(
    framework: str,
    *,
    operation: str,
    subject: str,
    state: Any = None,
    error: Mapping[str, Any] | None = None,
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``lifecycle`` content: an agent or team reset, or its state saved or loaded (a digest, never the state)."""
    if operation not in LIFECYCLE_OPERATIONS:
        raise ValueError(f"operation must be one of {', '.join(LIFECYCLE_OPERATIONS)}; got {operation!r}")
    _check_subject(subject)
    has_state = operation != "reset" and isinstance(state, Mapping)
    members = {"operation": operation, "subject": subject,
               "state_digest": state_digest(state) if has_state else None,
               "state_members": sorted(str(k) for k in state) if has_state else None}
    return _content(framework, extras, members, error=error)


def config_change(
    framework: str,
    *,
    agent: str,
    subject: str,
    old_digest: str | None,
    new_digest: str,
    changed: Sequence[str],
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``config_change`` content: digests and the names of the members that changed, never their values."""
    _check_subject(subject)
    members = {"agent": agent, "subject": subject, "old_digest": old_digest, "new_digest": new_digest,
               "changed": sorted(str(c) for c in changed)}
    return _content(framework, extras, members)


def recording_conflict(
    framework: str,
    *,
    subject: str,
    name: str,
    other_workflow_ids: Sequence[str],
    detected: str,
    extras: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``recording_conflict`` content: another open collector records the same agent or team."""
    _check_subject(subject)
    members = {"subject": subject, "name": name, "other_workflow_ids": sorted(set(other_workflow_ids)),
               "detected": detected}
    return _content(framework, extras, members)
