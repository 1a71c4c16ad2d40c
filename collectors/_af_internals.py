"""Every name of Microsoft Agent Framework that the collector reads and the framework does not document.

One module, so that a release that renames one of them breaks one canary test
(``tests/agent_framework/test_af_internals.py``) instead of silently emptying receipts.
Tested with ``agent-framework-core`` 1.23 and ``agent-framework-orchestrations`` 1.4.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CALL_ID_METADATA_KEY", "function_call_id"]

#: Key under which the function-invocation loop puts the model's call id into
#: ``FunctionInvocationContext.metadata`` (the context has no public call id member).
CALL_ID_METADATA_KEY = "call_id"


def function_call_id(context: Any) -> str | None:
    """The model's call id of the tool call a function middleware sees, or None if absent."""
    metadata = getattr(context, "metadata", None)
    value = metadata.get(CALL_ID_METADATA_KEY) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) and value else None
