"""Every name of AG2 1.x the collector reads and every behaviour it relies on, in one place.

One module, so that a release that renames one of them, or changes how it behaves,
breaks one canary test (``tests/collectors/ag2/test_ag2_internals.py``) instead of
silently emptying receipts. :data:`NAMES` lists the names; the behaviours (hook order,
where the call id is, the deep copy of tools, which callable the innermost tool
middleware is handed) have a canary each in that test. Tested with ``ag2`` 1.2.1.

Importing this module imports no AG2.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
from typing import Any

from ._internals import Private, Table, resolve_owner

__all__ = [
    "ALWAYS_GRANTS_KEY",
    "CHANNEL_DEPENDENCY",
    "DISTRIBUTION",
    "HUB_DEPENDENCY",
    "NAMES",
    "PINNED",
    "TABLE",
    "Name",
    "channel_of",
    "installed",
    "is_tool_itself",
    "missing",
]

#: The distribution of AG2 1.x and the version the tests pin.
DISTRIBUTION = "ag2"
PINNED = "1.2.1"

#: Where AG2's ``approval_required`` keeps its "always" answers (``context.variables``);
#: public in ``ag2.middleware.builtin.tools.approval`` as ``BYPASS_KEY``.
ALWAYS_GRANTS_KEY = "ag:approval_required:always"
#: Keys under which a network turn's middleware context carries its channel and hub
#: (``ag2.network.policies.CHANNEL_DEP`` / ``HUB_DEP``).
CHANNEL_DEPENDENCY = "ag2.network.channel"
HUB_DEPENDENCY = "ag2.network.hub"


#: One dependency: ``attr`` of ``owner`` (``module:Qualified.Path``), and why; an ``instance``
#: one is checked on a fresh instance (``owner("aer1_canary")``), not the class.
Name = Private

NAMES: tuple[Name, ...] = (
    Name("ag2:Agent", "insert_middleware", "observe(): the recorder goes in outermost"),
    Name("ag2:Agent", "middleware", "identity: agent middleware descriptions; finding the recorder"),
    Name("ag2:Agent", "tools", "identity: tool schemas and sources", instance=True),
    Name("ag2:Agent", "config", "identity: the model config's type, provider and model", instance=True),
    Name("ag2:Agent", "name", "the actor of an agent's steps", instance=True),
    Name("ag2:Agent", "system_prompt", "identity: the system prompt"),
    Name("ag2:Agent", "observers", "identity: observer names"),
    Name("ag2:Agent", "response_schema", "identity: the response schema"),
    Name("ag2.middleware:BaseMiddleware", "on_turn", "task, end of turn, turn failures"),
    Name("ag2.middleware:BaseMiddleware", "on_llm_call", "model replies and model failures"),
    Name("ag2.middleware:BaseMiddleware", "on_tool_execution", "tool calls"),
    Name("ag2.middleware:BaseMiddleware", "on_human_input", "human input and AG2 approvals"),
    Name("ag2.tools.final:FunctionTool", "source", "a tool's implementation"),
    Name("ag2.tools.final:FunctionTool", "schema", "identity: tool schemas"),
    Name("ag2.tools.final:FunctionTool", "middleware", "identity: tool middleware descriptions"),
    Name("ag2.events:ToolCallEvent", "serialized_arguments", "the gate: the arguments that run"),
    Name("ag2.events:ToolCallEvent", "handled_by", "the gate: copying a call"),
    Name("ag2.events:ToolErrorEvent", "from_call", "the gate: refusing a call"),
    Name("ag2.events:ToolResultEvent", "from_call", "the gate: answering a pending or denied call"),
    Name("ag2.events:ModelResponse", "model", "a reply's response model"),
    Name("ag2.events:ModelResponse", "provider", "a reply's provider"),
    Name("ag2.events:ModelResponse", "finish_reason", "a reply's finish reason"),
    Name("ag2.events:ModelResponse", "response_id", "a reply's message id"),
    Name("ag2.events:ModelResponse", "usage", "a reply's token counts"),
    Name("ag2.events:ModelResponse", "response_force", "a turn ended by a final tool result"),
    Name("ag2.events:Usage", "prompt_tokens", "a reply's input tokens"),
    Name("ag2.events:Usage", "completion_tokens", "a reply's output tokens"),
    Name("ag2.network:Handoff", "target", "a handoff a tool returned, in flight until the hub posts it"),
    Name("ag2.events", "ToolApprovalRequest", "AG2 approvals (tool_call_id)"),
    Name("ag2.events", "ToolNotFoundEvent", "a tool not in the tool set"),
    Name("ag2.events", "HumanMessage", "human answers"),
    Name("ag2.middleware.builtin.tools.approval", "BYPASS_KEY", "AG2's always grants"),
    Name("ag2.network.policies", "CHANNEL_DEP", "a network turn's channel"),
    Name("ag2.network.policies", "HUB_DEP", "a network turn's hub"),
    Name("ag2.network.hub.listener:BaseHubListener", "on_envelope_posted", "routing decisions"),
    Name("ag2.network.hub.listener:BaseHubListener", "on_channel_event", "channel opened and closed"),
    Name("ag2.network.hub.listener:BaseHubListener", "on_turn_failed", "turn failures"),
    Name("ag2.network.hub.listener:BaseHubListener", "on_envelope_rejected", "rejected envelopes"),
    Name("ag2.network:Hub", "register_listener", "observe_hub()"),
    Name("ag2.network:Hub", "adapter_state", "the next speaker the graph picked (read at once, not awaited)"),
    Name("ag2.network:Hub", "name_for", "participant names for agent ids"),
    Name("ag2.network.adapters.workflow:WorkflowState", "expected_next_speaker", "the next speaker"),
    Name("ag2.network.adapters.workflow:WorkflowState", "turn_count", "one next speaker per turn"),
)


def installed() -> str | None:
    """The installed version of AG2 1.x (the ``ag2`` distribution at 1.0 or later), or None."""
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        version = importlib.metadata.version(DISTRIBUTION)
        major = version.split(".", 1)[0]
        return version if major.isdigit() and int(major) >= 1 else None
    return None


#: The table of AG2 1.x (its canary: ``tests/collectors/ag2/test_ag2_internals.py``).
TABLE = Table("AG2", NAMES, {DISTRIBUTION: (PINNED,)},
              installed=lambda: {DISTRIBUTION: version} if (version := installed()) is not None else {})


def _resolve(name: Private, owner: str) -> Any:
    obj = resolve_owner(owner)
    return obj("aer1_canary") if name.instance else obj


def missing() -> list[str]:
    """``owner.attr`` of every name the installed AG2 lacks (empty when all are there)."""
    return TABLE.missing(_resolve)


# ------------------------------------------------------------------------ accessors


def is_tool_itself(call_next: Any) -> bool:
    """True when a tool middleware's ``call_next`` is the tool (the middleware is innermost).

    ``FunctionTool.register`` wraps the tool itself with its middleware, last listed
    innermost, so the last one is handed the ``FunctionTool``: the call it passes on is
    the call that runs.
    """
    from ag2.tools.final import FunctionTool

    return isinstance(call_next, FunctionTool)


def channel_of(context: Any) -> Any:
    """The network channel a turn runs in (from its context's dependencies), or None."""
    dependencies = getattr(context, "dependencies", None)
    try:
        return dependencies.get(CHANNEL_DEPENDENCY) if dependencies is not None else None
    except Exception:
        return None
