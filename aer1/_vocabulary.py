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
    "ERROR_MEMBER",
    "FRAMEWORK_MEMBERS",
    "SHOWN_MEMBERS",
    "VOCABULARY",
    "VOCABULARY_MEMBER",
    "error_message",
    "follows_vocabulary",
    "shown_members",
    "status_counts",
]

#: The member every vocabulary content carries, and its value for this version.
VOCABULARY_MEMBER = "vocabulary"
VOCABULARY = "aer1-steps/1"
#: The one member per framework under which a collector keeps what the vocabulary does not define.
FRAMEWORK_MEMBERS = ("agentchat", "autogen_core", "legacy", "ag2", "agent_framework", "groupchat", "otel")

#: The member a content has when its step failed or was cut: ``{"type", "message", "module"}``.
ERROR_MEMBER = "error"
#: Per kind, what a view shows of a vocabulary content: (field, members), the first member that
#: holds a value giving the field. The fields are the views' (``aer1/_report/_content.py``).
SHOWN_MEMBERS: Mapping[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "tool_call": (("tool", ("name",)), ("arguments", ("arguments",)), ("result", ("result",))),
    "message": (("text", ("content",)),),
    "task": (("text", ("task",)),),
    "handoff": (("target", ("target",)), ("text", ("content",))),
    "speaker_selection": (("choice", ("selected",)), ("mechanism", ("mechanism",))),
    "approval": (("decision", ("decision",)), ("tool", ("name",)), ("arguments", ("arguments",))),
    "human_input": (("text", ("input", "prompt")),),
    "code_execution": (("exit_code", ("exit_code",)), ("output", ("output",))),
    "error": (("text", ("phase",)),),
    "termination": (("text", ("reason", "outcome")), ("decision", ("outcome",))),
    "lifecycle": (("text", ("operation",)),),
    "config_change": (("text", ("changed",)),),
    "recording_conflict": (("text", ("other_workflow_ids",)),),
}


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


def shown_members(kind: str, content: Mapping[str, Any]) -> dict[str, Any]:
    """The fields a view shows of a vocabulary content of ``kind`` (values as the content holds them)."""
    out: dict[str, Any] = {}
    for field, members in SHOWN_MEMBERS.get(kind, ()):
        value = next((content[m] for m in members if content.get(m) is not None), None)
        if value is not None:
            out[field] = value
    return out


def error_message(content: Mapping[str, Any]) -> Any:
    """The message of a content's ``error`` member (the member itself when it has none); None without one."""
    error = content.get(ERROR_MEMBER)
    if not error:
        return None
    return error.get("message", error) if isinstance(error, Mapping) else error
