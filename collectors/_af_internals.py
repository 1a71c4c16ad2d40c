"""Every name of Microsoft Agent Framework that the collector reads and the framework does not document.

One module, so that a release that renames one of them breaks one canary test
(``tests/collectors/agent_framework/test_af_internals.py``) instead of silently emptying receipts.
Tested with ``agent-framework-core`` 1.23 and ``agent-framework-orchestrations`` 1.4.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ACTIVE_RUN_ATTRIBUTE",
    "ARGUMENTS_ERROR",
    "CALL_ID_METADATA_KEY",
    "MAX_ROUNDS_ATTRIBUTE",
    "PROVIDER_ATTRIBUTE",
    "RAW_ARGUMENTS_KEY",
    "STREAM_ERROR_ATTRIBUTE",
    "active_run",
    "function_call_id",
    "is_arguments_error",
    "max_rounds",
    "model_arguments",
    "model_facts",
    "response_model",
    "stream_error",
]

#: Key under which the function-invocation loop puts the model's call id into
#: ``FunctionInvocationContext.metadata`` (the context has no public call id member).
CALL_ID_METADATA_KEY = "call_id"

#: The class name of the exception the framework raises for arguments its tool's schema refuses.
ARGUMENTS_ERROR = "_FunctionArgumentValidationError"

#: The one key of the mapping ``Content.parse_arguments`` makes of arguments text that is not
#: JSON (``{"raw": text}``): the model's text, which the vocabulary keeps as text, marked malformed.
RAW_ARGUMENTS_KEY = "raw"

#: Attribute of a group chat or Magentic orchestrator executor holding its round limit (None: no limit).
MAX_ROUNDS_ATTRIBUTE = "_max_rounds"

#: Attribute of a ``Workflow`` holding a weak reference to the event stream of its current
#: run; ``workflow.run(stream=False)`` consumes that stream, so its update transforms see
#: every event of a run that is not streamed to the caller.
ACTIVE_RUN_ATTRIBUTE = "_active_run"


def active_run(workflow: Any) -> Any:
    """The ``ResponseStream`` of the workflow's current run, or None when it cannot be reached."""
    ref = getattr(workflow, ACTIVE_RUN_ATTRIBUTE, None)
    stream = ref() if callable(ref) else None
    return stream if callable(getattr(stream, "with_update_transform", None)) else None


def function_call_id(context: Any) -> str | None:
    """The model's call id of the tool call a function middleware sees, or None if absent."""
    metadata = getattr(context, "metadata", None)
    value = metadata.get(CALL_ID_METADATA_KEY) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) and value else None


def max_rounds(workflow: Any) -> int | None:
    """The round limit of the workflow's orchestrator (group chat, Magentic), or None if it has none."""
    for executor in workflow.get_executors_list():
        value = getattr(executor, MAX_ROUNDS_ATTRIBUTE, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


#: Attribute of a ``ResponseStream`` holding the exception that ended it while its cleanup
#: hooks run (None on a normal end); cleanup hooks take no arguments, so it is the only way
#: a hook can tell a failed stream from a finished one.
STREAM_ERROR_ATTRIBUTE = "_stream_error"


def stream_error(stream: Any) -> BaseException | None:
    """The exception that ended ``stream``, read from inside one of its cleanup hooks; None otherwise."""
    value = getattr(stream, STREAM_ERROR_ATTRIBUTE, None)
    return value if isinstance(value, BaseException) else None


def model_arguments(function: Any, arguments: Any) -> Any:
    """The arguments as the model sent them: the text itself when the framework wrapped unparsable text.

    A tool that has a parameter of that name got real arguments: they are returned as they are.
    """
    if not (isinstance(arguments, dict) and list(arguments) == [RAW_ARGUMENTS_KEY]
            and isinstance(arguments[RAW_ARGUMENTS_KEY], str)):
        return arguments
    try:
        properties = function.parameters().get("properties") or {}
    except Exception:  # no schema to tell: keep what the tool received
        return arguments
    return arguments if RAW_ARGUMENTS_KEY in properties else arguments[RAW_ARGUMENTS_KEY]


def is_arguments_error(exc: BaseException) -> bool:
    """True for the framework's refusal of a call's arguments (raised before the tool runs)."""
    return type(exc).__name__ == ARGUMENTS_ERROR


#: Class attribute of a chat client naming its provider as OpenTelemetry does (``gen_ai.provider.name``);
#: the base client's value ``"unknown"`` means its class says nothing.
PROVIDER_ATTRIBUTE = "OTEL_PROVIDER_NAME"
_UNKNOWN_PROVIDER = "unknown"


def model_facts(agent: Any) -> tuple[str | None, str | None]:
    """(provider, request model) of an agent's chat client; (None, None) without one. Never its configuration.

    The provider is the client's OpenTelemetry provider name, else its class; the model is the
    agent's default ``model`` option, else the client's ``model``.
    """
    client = getattr(agent, "client", None)
    if client is None:
        return None, None
    provider = getattr(type(client), PROVIDER_ATTRIBUTE, None)
    if not isinstance(provider, str) or not provider or provider == _UNKNOWN_PROVIDER:
        provider = type(client).__name__
    options = getattr(agent, "default_options", None)
    model = options.get("model") if isinstance(options, dict) else None
    if not isinstance(model, str) or not model:
        model = getattr(client, "model", None)
    return provider, model if isinstance(model, str) and model else None


def response_model(response: Any) -> str | None:
    """The model an agent's response says answered: ``model`` of the chat response (or update) it was built from."""
    raw = getattr(response, "raw_representation", None)
    for item in reversed(raw) if isinstance(raw, list) else (raw,):
        model = getattr(item, "model", None)
        if isinstance(model, str) and model:
            return model
    return None
