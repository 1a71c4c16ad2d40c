"""Every private name of the OpenTelemetry SDK that ``ReceiptSpanProcessor`` relies on, in one place.

The processor tags every span of a run (``aer1.workflow_id``) and reads two attributes of
each. Through the SDK's public calls that is its dominant cost: ``Span.set_attribute`` takes
the span's lock, checks the key and cleans the value, and the attributes view answers a
missing name by raising and catching ``KeyError``. On the SDK's own ``Span`` the processor
instead reads the span's attribute dict and writes into it directly, within the limits the
SDK's ``set_attribute`` honours and under the lock its writers hold (:func:`tag` the attributes'
lock, :func:`name_step` the span's); any span that is not the SDK's
as checked here, or that a limit would touch, goes through the public calls, so what an
exporter receives is the same either way.

One module, so that an SDK release that renames one of these names breaks one canary test
(``tests/collectors/otel/test_otel_internals.py``), and :data:`TABLE` warns once when the
installed SDK is not a version the names were checked on. Tested with opentelemetry-sdk 1.45.2.
"""

from __future__ import annotations

from typing import Any

from ._internals import Private, Table, resolve_owner

__all__ = [
    "DISTRIBUTION", "EXECUTE_TOOL", "NAMES", "NOT_SDK", "OPERATION", "PINNED", "TABLE", "TOOL_CALL_ID", "Name",
    "missing", "name_step", "store", "tag", "tool_call_id",
]

#: The distribution of the SDK and the version the names were checked on.
DISTRIBUTION = "opentelemetry-sdk"
PINNED = "1.45.2"

Name = Private

_SPAN = "opentelemetry.sdk.trace:Span"
_READABLE = "opentelemetry.sdk.trace:ReadableSpan"
_ATTRIBUTES = "opentelemetry.attributes:BoundedAttributes"

SPAN_ATTRIBUTES = Name(_READABLE, "_attributes", "a span's attributes (its BoundedAttributes)", instance=True,
                       also=(_SPAN,))
SPAN_LOCK = Name(_SPAN, "_lock", "naming a step: held while the span is checked open and written", instance=True)
SPAN_END_TIME = Name(_SPAN, "_end_time", "naming a step: None while the span is open", instance=True)
STORE = Name(_ATTRIBUTES, "_dict", "the attributes themselves: read without a KeyError, written without checks",
             instance=True)
STORE_LOCK = Name(_ATTRIBUTES, "_lock", "held while a span's start is tagged, as the SDK holds it", instance=True)
IMMUTABLE = Name(_ATTRIBUTES, "_immutable", "True once the span ended: nothing is written then", instance=True)

NAMES: tuple[Name, ...] = (SPAN_ATTRIBUTES, SPAN_LOCK, SPAN_END_TIME, STORE, STORE_LOCK, IMMUTABLE)

#: The table of the SDK (its canary: ``tests/collectors/otel/test_otel_internals.py``).
TABLE = Table("OpenTelemetry SDK", NAMES, {DISTRIBUTION: (PINNED,)})

# The names as the accessors below read them (each one an entry above).
_SPAN_ATTRIBUTES, _SPAN_LOCK, _SPAN_END_TIME = SPAN_ATTRIBUTES.attr, SPAN_LOCK.attr, SPAN_END_TIME.attr
_STORE, _STORE_LOCK, _IMMUTABLE = STORE.attr, STORE_LOCK.attr, IMMUTABLE.attr


def _resolve(name: Private, owner: str) -> Any:
    """A real object of ``owner``'s kind: the canary checks instance names on spans the SDK made."""
    from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

    if owner == _ATTRIBUTES:
        return resolve_owner(owner)() if name.instance else resolve_owner(owner)
    ended: list[ReadableSpan] = []

    class Keep(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            ended.append(span)

    provider = TracerProvider()
    provider.add_span_processor(Keep())
    span = provider.get_tracer("aer1 canary").start_span("aer1 canary")
    if owner == _READABLE:
        span.end()
        return ended[0]  # what on_end is handed
    return span


def missing() -> list[str]:
    """``owner.attr`` of every name the installed SDK lacks (empty when all are there)."""
    return TABLE.missing(_resolve)


def _bounded_attributes() -> type | None:
    """The SDK's ``BoundedAttributes`` class; None when it cannot be imported (then the public calls are used)."""
    try:
        found = resolve_owner(_ATTRIBUTES)
    except Exception:  # an API without that class: never the fast way
        return None
    return found if isinstance(found, type) else None


#: The GenAI semantic conventions' names :func:`tool_call_id` reads.
OPERATION = "gen_ai.operation.name"
EXECUTE_TOOL = "execute_tool"
TOOL_CALL_ID = "gen_ai.tool.call.id"
#: :func:`tool_call_id`'s answer for a span whose attributes are not the SDK's.
NOT_SDK: Any = object()


class _Unmatched:
    """Stands for ``BoundedAttributes`` when the SDK lacks it: no span's attributes are of this type."""


_BOUNDED: Any = _bounded_attributes() or _Unmatched  # Any: a type test must not narrow spans to object


def store(span: Any) -> dict[str, Any] | None:
    """The attributes of an SDK span as the SDK keeps them (its dict, read without a copy), or None: read the
    public view. For reading only: the dict is the span's own."""
    attributes = getattr(span, _SPAN_ATTRIBUTES, None)
    if type(attributes) is not _BOUNDED:
        return None
    found = getattr(attributes, _STORE, None)
    return found if type(found) is dict else None


def _writable(span: Any) -> tuple[Any, dict[str, Any]] | None:
    """(attributes, their dict) of an SDK span whose values no length limit cuts, else None."""
    attributes: Any = getattr(span, _SPAN_ATTRIBUTES, None)
    if type(attributes) is not _BOUNDED or attributes.max_value_len is not None:
        return None  # not the SDK's, or a string may be cut: the SDK's cleaning does it (and logs it)
    data = getattr(attributes, _STORE, None)
    return (attributes, data) if type(data) is dict else None


def _has_room(attributes: Any, data: dict[str, Any], added: int) -> bool:
    """Mutable, and ``added`` more fit under the count limit (else the SDK drops older ones: let it)."""
    if getattr(attributes, _IMMUTABLE, True) is not False:
        return False
    return attributes.maxlen is None or len(data) + added <= attributes.maxlen


def tag(span: Any, key: str, value: str) -> dict[str, Any] | None:
    """``span.set_attribute(key, value)`` on a span at its start, written into the SDK's dict; returns that dict (as
    :func:`store`), or None when nothing was written: then use the public call.

    Written only where the SDK would write the same: the span is the SDK's, its attributes
    mutable, no value length limit, and room under the attribute count limit. ``value`` is a
    plain string (the SDK's cleaning of it is skipped). The attributes' lock is held, as the
    SDK's own writes hold it: a ``ConcurrentMultiSpanProcessor`` runs the other processors'
    ``on_start`` in other threads at the same time, and one of them may set attributes.
    """
    attributes: Any = getattr(span, _SPAN_ATTRIBUTES, None)  # what _writable and _has_room check, inlined
    if type(attributes) is not _BOUNDED or attributes.max_value_len is not None:
        return None
    data = getattr(attributes, _STORE, None)
    lock = getattr(attributes, _STORE_LOCK, None)
    if type(data) is not dict or lock is None:
        return None
    with lock:
        if getattr(attributes, _IMMUTABLE, True) is not False:
            return None
        if key in data:  # set again: the key moves to the end, as in the SDK's dict
            del data[key]
        elif attributes.maxlen is not None and len(data) >= attributes.maxlen:
            return None  # the SDK would drop the oldest attribute: let it
        data[key] = value
    return data


def tool_call_id(span: Any) -> Any:
    """``gen_ai.tool.call.id`` of an ended ``execute_tool`` span (None for any other span), read from the SDK's
    dict; :data:`NOT_SDK` when the span's attributes are not the SDK's as checked: read the public view."""
    attributes = getattr(span, _SPAN_ATTRIBUTES, None)
    if type(attributes) is not _BOUNDED:
        return NOT_SDK
    data = getattr(attributes, _STORE, None)
    if type(data) is not dict:
        return NOT_SDK
    return data.get(TOOL_CALL_ID) if data.get(OPERATION) == EXECUTE_TOOL else None


def name_step(span: Any, seq: int | list[int], receipt_id: str | list[str], seq_key: str, id_key: str) -> bool:
    """``span.set_attributes({seq_key: seq, id_key: receipt_id})`` on a span another thread may end, written into
    the SDK's dict under the span's lock; False when not written (not an SDK span as checked, ended, a limit
    in reach): then use the public call. Lists are kept as tuples, as the SDK keeps them.

    The span's lock is the one ``Span.end`` and ``Span.set_attributes`` hold while they end the
    span or write its attributes, so under it the span is checked open and written with no
    other writer; the attributes' own lock is not taken again.
    """
    parts = _writable(span)
    span_lock = getattr(span, _SPAN_LOCK, None)
    if parts is None or span_lock is None:
        return False
    attributes, data = parts
    with span_lock:
        if getattr(span, _SPAN_END_TIME, 0) is not None or not _has_room(attributes, data, 2):
            return False  # ended (or not a span as checked), or near the count limit: the public call does it
        for key, value in ((seq_key, seq), (id_key, receipt_id)):
            if key in data:
                del data[key]
            data[key] = tuple(value) if type(value) is list else value
    return True
