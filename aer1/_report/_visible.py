"""Text from a receipt as a page shows it: characters that would hide or reorder what is around them, escaped.

A page shows receipt content as text, and escaping markup is not enough for an auditor to read it as it is:
a bidirectional override (U+202E) in an agent's name shows ``evil`` as ``live`` and reverses the rest of
its line, and a NUL or other control character shows as nothing. Each such character is written as its
``\\uXXXX`` (or ``\\xXX``) escape, as ``aer1 show`` writes it; line breaks and tabs stay. See spec/report.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["visible"]

#: The bidirectional formatting characters (embeddings, overrides, isolates, marks; Unicode UAX #9).
_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
#: C0 and C1 control characters and DEL, but the line break, carriage return and tab that text may hold.
_CONTROLS = (*(c for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)), *range(0x7F, 0xA0))
_ESCAPES = {c: repr(chr(c))[1:-1] for c in (*_BIDI, *_CONTROLS)}


def visible(value: Any) -> Any:
    """``value`` (a string, or strings in lists and dicts) with each hiding or reordering character escaped."""
    if isinstance(value, str):
        return value.translate(_ESCAPES)
    if isinstance(value, list):
        return [visible(v) for v in value]
    if isinstance(value, dict):
        return {k: visible(v) for k, v in value.items()}
    return value
