"""Untrusted run data as JSON-ready values, cut to named limits: one rule for every collector that needs it.

Messages, arguments, results and payloads a framework hands a collector are untrusted and
unbounded. :func:`bounded` keeps mappings and sequences (counting what it leaves out),
pydantic models by their fields and anything else as :func:`bounded_text`; a collector
passes ``special`` to read its framework's own types by their members. Never evaluates
anything. Imports no agent framework.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_ITEMS", "MAX_TEXT_CHARS", "NOT_SPECIAL", "OMITTED_KEY", "bounded", "bounded_text"]

#: Longest text kept per value (messages and results are untrusted and unbounded).
MAX_TEXT_CHARS = 16_000
#: Most items kept per list or mapping of untrusted data (arguments, results, request payloads).
MAX_ITEMS = 256
#: Deepest nesting kept of untrusted data; deeper values are kept as bounded text.
MAX_DEPTH = 12
#: Key that counts the entries of a mapping left out past :data:`MAX_ITEMS`.
OMITTED_KEY = "(omitted entries)"
#: What a ``special`` reader returns for a value it does not read.
NOT_SPECIAL: object = object()

Special = Callable[[Any, int], Any]


def bounded_text(value: Any) -> str:
    """``value`` as text (its ``repr`` unless a string), cut to :data:`MAX_TEXT_CHARS` (the cut is said)."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = repr(value)
        except Exception as e:  # an object whose repr raises: say so instead
            text = f"<{type(value).__name__}: repr failed with {type(e).__name__}>"
    if len(text) > MAX_TEXT_CHARS:
        return f"{text[:MAX_TEXT_CHARS]}... [{len(text) - MAX_TEXT_CHARS} more characters]"
    return text


def bounded(value: Any, depth: int = 0, special: Special | None = None) -> Any:
    """JSON-ready ``value``, bounded: :data:`MAX_ITEMS` items per container, :data:`MAX_DEPTH` levels.

    ``special(value, depth)`` reads a framework's own types (returning :data:`NOT_SPECIAL`
    for any other value); it is asked after scalars and containers, before pydantic models.
    """
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return bounded_text(value)
    if depth >= MAX_DEPTH:
        return bounded_text(value)
    if isinstance(value, Mapping):
        out = {str(k): bounded(v, depth + 1, special) for k, v in itertools.islice(value.items(), MAX_ITEMS)}
        if len(value) > MAX_ITEMS:
            out[OMITTED_KEY] = len(value) - MAX_ITEMS
        return out
    if isinstance(value, (list, tuple)):
        items = [bounded(v, depth + 1, special) for v in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"... [{len(value) - MAX_ITEMS} more items]")
        return items
    if special is not None:
        read = special(value, depth)
        if read is not NOT_SPECIAL:
            return read
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return bounded(dump(), depth + 1, special)
        except Exception:  # a model that cannot dump itself: its text instead
            return bounded_text(value)
    return bounded_text(value)
