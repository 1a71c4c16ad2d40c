"""Tool-call arguments: from the model's JSON text to the exact values a tool receives.

The text is parsed strictly (no duplicate keys, no ``NaN``/``Infinity``) and must be an
object that :func:`aer1._canonical.check_exact` accepts: no lone surrogate, no integer
beyond ±(2^53 − 1), no number that overflows to infinity. Its RFC 8785 bytes are then the
one source of every later copy: the reviewer, the schema check and the tool each get a
fresh parse of those bytes, so the approved digest determines the values the tool
receives, their JSON types included (``2.0`` reaches the tool as the integer ``2``, as it
reads back from its canonical form), and no holder of one copy can change another.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aer1._canonical import CanonicalizationError, exact_bytes
from aer1.errors import MalformedInputError

from ._approval import arguments_digest
from ._schema import json_type_name

SHOWN_CHARS = 80
"""Longest piece of the model's text quoted back in an error message."""


class ArgumentsError(MalformedInputError):
    """The arguments text cannot be turned into exact JSON values; the message says why."""


@dataclass(frozen=True)
class ExactArguments:
    """A call's arguments as RFC 8785 bytes, and their digest (as bound into approvals)."""

    canonical: bytes
    digest: str

    def values(self) -> dict[str, Any]:
        """A fresh, independent copy of the argument values."""
        value: dict[str, Any] = json.loads(self.canonical)
        return value


def _shown(text: str) -> str:
    """``text`` quoted for an error message, cut to ``SHOWN_CHARS`` characters."""
    return repr(text[:SHOWN_CHARS]) + ("..." if len(text) > SHOWN_CHARS else "")


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for key, item in pairs:
        if key in value:
            raise ArgumentsError(f"arguments repeat the key {_shown(key)}")
        value[key] = item
    return value


def _refuse_constant(name: str) -> Any:
    raise ArgumentsError(f"arguments hold {name}, which is not a JSON number")


def parse_arguments(text: str) -> ExactArguments:
    """Parse a tool call's ``function.arguments``; raise :class:`ArgumentsError` if unfit."""
    try:
        value = json.loads(text, object_pairs_hook=_refuse_duplicate_keys, parse_constant=_refuse_constant)
    except ArgumentsError:
        raise
    except RecursionError as e:
        raise ArgumentsError("arguments are nested too deeply to parse") from e
    except ValueError as e:  # malformed JSON, or an integer with too many digits
        raise ArgumentsError(f"arguments are not valid JSON: {e}") from e
    if not isinstance(value, dict):
        raise ArgumentsError(f"arguments must be a JSON object, got {json_type_name(value)}")
    try:
        canonical = exact_bytes(value)
    except CanonicalizationError as e:
        raise ArgumentsError(f"arguments have no exact JSON form: {e}") from e
    exact = json.loads(canonical)
    return ExactArguments(canonical, arguments_digest(exact))
