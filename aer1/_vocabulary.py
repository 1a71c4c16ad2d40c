"""The names of the step vocabulary (``spec/steps.md``) that readers need, and reading it back.

Producers build contents with :mod:`aer1._steps_vocab`; readers (the verifier's policy
rules, ``aer1 show``) only need to know whether a content follows the vocabulary and
where its members are. This module holds those names once, and imports nothing but the
format layer, so the verifier can read it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._receipt import CLOSE_KIND, STEP_STATUSES

__all__ = [
    "FRAMEWORK_MEMBERS",
    "VOCABULARY",
    "VOCABULARY_MEMBER",
    "follows_vocabulary",
    "status_counts",
]

#: The member every vocabulary content carries, and its value for this version.
VOCABULARY_MEMBER = "vocabulary"
VOCABULARY = "aer1-steps/1"
#: The one member per framework under which a collector keeps what the vocabulary does not define.
FRAMEWORK_MEMBERS = ("agentchat", "autogen_core", "legacy", "ag2", "agent_framework", "groupchat", "otel")


def follows_vocabulary(content: Any) -> bool:
    """True when ``content`` says it follows ``spec/steps.md`` (this version)."""
    return isinstance(content, Mapping) and content.get(VOCABULARY_MEMBER) == VOCABULARY


def status_counts(receipt: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """``{"ok": N, "error": N, "cancelled": N}`` over a receipt's steps, the close step left out.

    Each step's status is bound by the chain: verify the receipt first, then count.
    A step whose status is none of the three is not counted.
    """
    steps = receipt.get("steps", ()) if isinstance(receipt, Mapping) else receipt
    counts = dict.fromkeys(STEP_STATUSES, 0)
    for step in steps if isinstance(steps, Iterable) else ():
        if isinstance(step, Mapping) and step.get("kind") != CLOSE_KIND and step.get("status") in counts:
            counts[step["status"]] += 1
    return counts
