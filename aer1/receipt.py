"""AER-1 workflow receipt constants and the content of the close step.

The close step's content is the workflow's own members (:data:`CLOSE_BOUND_MEMBERS`,
those present) plus the step count, so the chain and the Merkle root bind the goal,
the session, the status, the output hash and the rest: a verifier rebuilds this
content from the workflow and compares its hash with the close step's receipt_hash.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "CLOSED_BY_RECOVERY",
    "CLOSE_AGENT",
    "CLOSE_BOUND_MEMBERS",
    "CLOSE_KIND",
    "DEFAULT_VERIFY_URL",
    "KINDS",
    "MERKLE_VERSION",
    "STEP_OPTIONAL_MEMBERS",
    "STEP_STATUSES",
    "WORKFLOW_STATUSES",
    "WORKFLOW_TYPE",
    "WORKFLOW_VERSION",
    "close_content",
    "evidence_path_for",
]

WORKFLOW_TYPE = "verifiable-workflow-receipt"
WORKFLOW_VERSION = "1"
MERKLE_VERSION = "receipt-id-v0"
#: Where the verification procedure is documented: the AER-1 specification page.
DEFAULT_VERIFY_URL = "https://datatracker.ietf.org/doc/draft-zambo-aer1/"

KINDS = (
    "task",
    "message",
    "tool_call",
    "handoff",
    "speaker_selection",
    "termination",
    "code_execution",
    "approval",
    "human_input",
    "error",
    "link",
    "close",
)
CLOSE_KIND = "close"
#: The ``agent`` of the close step: the recorder itself.
CLOSE_AGENT = "aer1"
#: The ``closed_by`` member of a receipt that ``aer1 recover`` closed from a journal (status incomplete).
CLOSED_BY_RECOVERY = "recovery"
STEP_STATUSES = ("ok", "error", "cancelled")
WORKFLOW_STATUSES = ("ok", "error", "incomplete")
STEP_OPTIONAL_MEMBERS = ("reply_to", "target", "recipient", "call_id")

#: Workflow members bound by the close step's content, in this order.
CLOSE_BOUND_MEMBERS = (
    "type",
    "version",
    "profile",
    "workflow_id",
    "receipt_id",
    "session_id",
    "goal",
    "status",
    "output_hash",
    "verify_url",
    "merkle_version",
    "agents",
    "recording_failures",
    "closed_by",
)


def close_content(workflow: Mapping[str, Any], step_count: int) -> dict[str, Any]:
    """The close step's content: bound workflow members (those present) and the step count."""
    content = {k: workflow[k] for k in CLOSE_BOUND_MEMBERS if k in workflow}
    content["step_count"] = step_count
    return content


def evidence_path_for(receipt_path: str) -> str:
    """``dir/name.json`` -> ``dir/name.evidence.jsonl`` (where evidence is saved and looked for)."""
    base = receipt_path[:-5] if receipt_path.endswith(".json") else receipt_path
    return base + ".evidence.jsonl"
