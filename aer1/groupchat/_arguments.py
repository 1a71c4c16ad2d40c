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

from aer1._steps_vocab import UnfitArguments, exact_json
from aer1.errors import MalformedInputError

from ._approval import arguments_digest
from ._schema import json_type_name


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


def parse_arguments(text: str) -> ExactArguments:
    """Parse a tool call's ``function.arguments`` (the vocabulary's one rule); :class:`ArgumentsError` if unfit."""
    try:
        exact, canonical = exact_json(text)
    except UnfitArguments as e:
        raise ArgumentsError(str(e)) from e
    if not isinstance(exact, dict):
        raise ArgumentsError(f"arguments must be a JSON object, got {json_type_name(exact)}")
    return ExactArguments(canonical, arguments_digest(exact))
