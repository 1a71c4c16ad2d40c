"""The receipt schema: every AER-1 member name, kind, status, pattern and version, defined once.

The collector, recovery and the verifier import these facts from here (limits live in
:mod:`aer1._limits`); adding a required step member means adding it to
:data:`STEP_REQUIRED_MEMBERS`.

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
    "EVIDENCE_TYPE",
    "EVIDENCE_VERSION",
    "HEX64_PATTERN",
    "KINDS",
    "MERKLE_VERSION",
    "MERKLE_VERSIONS",
    "MERKLE_VERSION_SEQ_OUTPUT",
    "PROFILE",
    "PROOF_MEMBERS",
    "PROOF_TYPE",
    "PROOF_VERSION",
    "RFC3339_PATTERN",
    "STEP_OPTIONAL_MEMBERS",
    "STEP_REQUIRED_MEMBERS",
    "STEP_STATUSES",
    "TIMESTAMP_PATTERN",
    "TRACE_MEMBERS",
    "UUID_PATTERN",
    "WORKFLOW_ORDER",
    "WORKFLOW_STATUSES",
    "WORKFLOW_TYPE",
    "WORKFLOW_VERSION",
    "close_content",
    "close_workflow",
    "count_statuses",
    "evidence_path_for",
    "step_in_order",
    "trace_members_problem",
    "workflow_in_order",
]

#: The ``type`` of an AER-1 workflow receipt (Section 8).
WORKFLOW_TYPE = "verifiable-workflow-receipt"
#: Names the hash-chain construction (aer1._chain) and its version in the receipt's ``profile`` member.
PROFILE = "aer1-chain-v1"
#: The ``version`` of the workflow receipts we write.
WORKFLOW_VERSION = "1"
#: The Section 8.1 leaf construction our receipts use (and a receipt without merkle_version means).
MERKLE_VERSION = "receipt-id-v0"
MERKLE_VERSION_SEQ_OUTPUT = "seq-output-v1"
MERKLE_VERSIONS = (MERKLE_VERSION, MERKLE_VERSION_SEQ_OUTPUT)
#: The evidence file's header line: its ``type`` and ``version``.
EVIDENCE_TYPE = "aer1-evidence"
EVIDENCE_VERSION = "1"
#: An inclusion proof document: ``type``, ``version`` and every member it may have.
PROOF_TYPE = "aer1-inclusion-proof"
#: Version 2 adds ``close``: the close step and its path, which pin the tree size.
PROOF_VERSION = "2"
#: ``close`` and ``content`` are optional.
PROOF_MEMBERS = frozenset(
    ("type", "version", "workflow_id", "merkle_version", "merkle_root", "tree_size", "leaf_index", "step",
     "audit_path", "close", "content")
)
#: Where the verification procedure is documented: the AER-1 specification page.
DEFAULT_VERIFY_URL = "https://datatracker.ietf.org/doc/draft-zambo-aer1/"

#: The step kinds ``Collector.record`` accepts; any other tool name is recorded as ``tool_call``.
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
    "lifecycle",
    "config_change",
    "recording_conflict",
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
#: Members every step of our profile carries, in reading order (the order is not hashed: JCS sorts).
STEP_REQUIRED_MEMBERS = (
    "seq", "receipt_id", "tool", "kind", "agent", "receipt_hash", "started_at", "ended_at", "status", "prev_digest",
)
STEP_OPTIONAL_MEMBERS = ("reply_to", "target", "recipient", "call_id", "trace_id", "span_id")
#: The W3C trace context members of a step (spec/otel.md), each with its length in lowercase hex
#: digits; a step carries both or neither.
TRACE_MEMBERS = {"trace_id": 32, "span_id": 16}
#: Members of an ``agents`` entry: name and type required, the rest optional.
AGENT_MEMBERS = ("name", "type", "description", "config_digest")

#: A lowercase UUID (workflow_id, receipt_id, a step's receipt_id).
UUID_PATTERN = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
#: A SHA-256 digest: 64 lowercase hex characters.
HEX64_PATTERN = r"[0-9a-f]{64}"
#: Our step times: UTC with microseconds; group 1 is the calendar date (checked separately).
#: Every format pattern here spells its digits ``[0-9]``: ``\d`` would match any Unicode
#: digit (an Arabic-Indic zero passed as a time), and each is compiled with ``re.ASCII`` too.
TIMESTAMP_PATTERN = r"([0-9]{4}-[0-9]{2}-[0-9]{2})T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{6}Z"
#: Any RFC 3339 date-time (a receipt of another producer): groups 1 to 3 are year, month, day.
RFC3339_PATTERN = (r"([0-9]{4})-([0-9]{2})-([0-9]{2})T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?"
                   r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")

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
    "step_statuses",
)
#: Workflow members in the order finalize() and recovery write them (the order is not hashed).
WORKFLOW_ORDER = (
    "type", "version", "profile", "workflow_id", "receipt_id", "session_id", "goal", "status", "agents",
    "merkle_version", "output_hash", "verify_url", "recording_failures", "closed_by", "step_statuses",
)


def close_content(workflow: Mapping[str, Any], step_count: int) -> dict[str, Any]:
    """The close step's content: bound workflow members (those present) and the step count."""
    content = {k: workflow[k] for k in CLOSE_BOUND_MEMBERS if k in workflow}
    content["step_count"] = step_count
    return content


def close_workflow(
    *,
    workflow_id: str,
    receipt_id: str,
    session_id: str,
    goal: str,
    status: str,
    output_hash: str,
    verify_url: str,
    agents: list[dict[str, Any]] | None = None,
    recording_failures: int = 0,
    closed_by: str | None = None,
    step_statuses: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The workflow members a close step binds, as finalize() and recovery both write them.

    The fixed members (type, version, profile, merkle_version) are set here once; optional
    members appear only when they carry something.
    """
    members: dict[str, Any] = {
        "type": WORKFLOW_TYPE, "version": WORKFLOW_VERSION, "profile": PROFILE, "workflow_id": workflow_id,
        "receipt_id": receipt_id, "session_id": session_id, "goal": goal, "status": status,
        "merkle_version": MERKLE_VERSION, "output_hash": output_hash, "verify_url": verify_url,
    }
    if agents:
        members["agents"] = agents
    if recording_failures:
        members["recording_failures"] = recording_failures
    if closed_by is not None:
        members["closed_by"] = closed_by
    if step_statuses is not None:
        members["step_statuses"] = {k: step_statuses.get(k, 0) for k in STEP_STATUSES}
    return workflow_in_order(members)


def count_statuses(statuses: Any) -> dict[str, int]:
    """``{"ok": N, "error": N, "cancelled": N}`` of the step statuses given (others are not counted)."""
    counts = dict.fromkeys(STEP_STATUSES, 0)
    for status in statuses:
        if status in counts:
            counts[status] += 1
    return counts


def workflow_in_order(members: Mapping[str, Any]) -> dict[str, Any]:
    """The workflow members given, in :data:`WORKFLOW_ORDER` (steps and the tail come after)."""
    return {k: members[k] for k in WORKFLOW_ORDER if k in members}


def step_in_order(header: Mapping[str, Any], receipt_id: str) -> dict[str, Any]:
    """A step from its chained header and derived id, members in reading order."""
    step = {"seq": header["seq"], "receipt_id": receipt_id}
    for k in _AFTER_ID:
        step[k] = header[k]
    if len(header) >= len(STEP_REQUIRED_MEMBERS):  # optional members (reply_to, target, ..., span_id)
        for k in STEP_OPTIONAL_MEMBERS:
            if k in header:
                step[k] = header[k]
    return step


_HEX_DIGITS = frozenset("0123456789abcdef")


def trace_members_problem(step: Mapping[str, Any]) -> str | None:
    """Why a step's ``trace_id``/``span_id`` are malformed, or None when they are well-formed or absent.

    The one rule for these members (every verifier path and recovery apply it): both or
    neither; each exactly its length in lowercase ASCII hex digits, not all zero (W3C Trace
    Context calls an all-zero id invalid).
    """
    present = [name for name in TRACE_MEMBERS if name in step]
    if not present:
        return None
    if len(present) != len(TRACE_MEMBERS):
        return f"{present[0]} without {'span_id' if present[0] == 'trace_id' else 'trace_id'}"
    for name, digits in TRACE_MEMBERS.items():
        value = step[name]
        if type(value) is not str or len(value) != digits or not _HEX_DIGITS.issuperset(value):
            return f"{name} is not {digits} lowercase hex digits"
        if value.count("0") == digits:
            return f"{name} is all zero (an invalid W3C id)"
    return None


#: The header members after seq and receipt_id (the header has no receipt_id: it is derived from it).
_AFTER_ID = STEP_REQUIRED_MEMBERS[2:]


def evidence_path_for(receipt_path: str) -> str:
    """``dir/name.json`` -> ``dir/name.evidence.jsonl`` (where evidence is saved and looked for)."""
    base = receipt_path[:-5] if receipt_path.endswith(".json") else receipt_path
    return base + ".evidence.jsonl"
