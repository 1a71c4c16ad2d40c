"""The collector methods of aer1-autogen 0.1.15 that code written for it calls directly.

``record_agentchat_turn``, ``record_legacy_message`` and ``record_legacy_tool`` take that
package's arguments and record through :meth:`aer1.Collector.safe_record`, so the steps
are ours (hash-chained, evidence kept) and a recording failure never breaks the run.
They read their inputs by shape (attribute and class names), so they need no AutoGen
import, exactly as duck-typed test doubles expect. ``to_json`` and ``reset`` complete
the surface (``step_count`` and ``session_id`` are :class:`aer1.Collector`'s own).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from aer1.errors import UsageError

__all__ = ["CompatMethods"]

#: The step label of a tool whose name the caller did not give (the peer's label too).
UNNAMED_TOOL = "tool"
#: The goal of a collector made without one (the peer's ``goal`` is optional; ours is not).
DEFAULT_GOAL = "autogen run"


def _class(value: Any) -> str:
    return type(value).__name__


def _items(value: Any) -> list[Any]:
    """The list an event's ``content`` holds (anything else: none)."""
    content = getattr(value, "content", None)
    return list(content) if isinstance(content, (list, tuple)) else []


class CompatMethods:
    """Mixin for :class:`~aer1.collectors.AER1AutoGenCollector`: the peer's recording methods."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if not args and kwargs.get("goal") is None:
            kwargs["goal"] = DEFAULT_GOAL
        if len(args) > 2 and isinstance(args[2], str) and args[2].startswith(("https://", "http://")):
            # aer1-autogen took verify_url third; ours is signing_key: say so, never read a URL as a key file
            raise UsageError("the third positional parameter is signing_key, got a URL: pass verify_url=... by keyword")
        # Kept for reset(): a fresh run takes the same options (and the same session_id).
        self._compat_options = (args, dict(kwargs))
        super().__init__(*args, **kwargs)

    # -------------------------------------------------------- AgentChat (duck-typed)

    def record_agentchat_turn(
        self, agent_name: str, incoming: Sequence[Any], response: Any, started: float, ended: float
    ) -> None:
        """Record one agent turn: its tool executions, then its handoff or message step."""
        inner = list(getattr(response, "inner_messages", None) or [])
        calls = {
            getattr(call, "id", None): call
            for event in inner if _class(event) == "ToolCallRequestEvent"
            for call in _items(event)
        }  # fmt: skip
        tool_steps = 0
        for event in inner:
            if _class(event) != "ToolCallExecutionEvent":
                continue
            for result in _items(event):
                call_id = getattr(result, "call_id", None)
                call = calls.get(call_id)
                name = str(getattr(result, "name", None) or getattr(call, "name", None) or UNNAMED_TOOL)
                is_error = bool(getattr(result, "is_error", False))
                self.safe_record(  # type: ignore[attr-defined]
                    name,
                    {"tool": name, "arguments": getattr(call, "arguments", None),
                     "result": getattr(result, "content", None), "is_error": is_error},
                    agent=agent_name, kind="tool_call", status="error" if is_error else "ok",
                    started_at=started, ended_at=ended,
                    call_id=call_id if isinstance(call_id, str) and call_id else None,
                )  # fmt: skip
                tool_steps += 1
        chat = getattr(response, "chat_message", None)
        if chat is None or (_class(chat) == "ToolCallSummaryMessage" and tool_steps):
            return  # a summary repeats the tool steps just recorded
        content = getattr(chat, "content", None)
        if _class(chat) == "HandoffMessage":
            target = getattr(chat, "target", None)
            self.safe_record(  # type: ignore[attr-defined]
                "handoff", {"message_type": "HandoffMessage", "content": content, "target": target},
                agent=agent_name, kind="handoff", started_at=started, ended_at=ended,
                target=target if isinstance(target, str) and target else None,
            )  # fmt: skip
            return
        reply_to = getattr(incoming[-1], "source", None) if incoming else None
        self.safe_record(  # type: ignore[attr-defined]
            "message", {"message_type": _class(chat), "content": content},
            agent=agent_name, kind="message", started_at=started, ended_at=ended,
            reply_to=reply_to if isinstance(reply_to, str) and reply_to else None,
        )  # fmt: skip

    # ------------------------------------------------------------- legacy pyautogen

    def record_legacy_message(
        self, sender: str, recipient: str, message: Any, started: float | None = None, ended: float | None = None
    ) -> None:
        """Record one message a legacy agent sent, with its recipient."""
        self.safe_record(  # type: ignore[attr-defined]
            "message", {"message": message}, agent=sender, kind="message",
            started_at=started, ended_at=ended, recipient=recipient or None,
        )  # fmt: skip

    def record_legacy_tool(
        self, agent_name: str, name: str | None, func_call: Any, ok: bool, result: Any, started: float, ended: float
    ) -> None:
        """Record one function a legacy agent executed (status ``error`` when it failed)."""
        label = str(name or UNNAMED_TOOL)
        arguments = func_call.get("arguments") if isinstance(func_call, dict) else None
        self.safe_record(  # type: ignore[attr-defined]
            label, {"tool": label, "arguments": arguments, "result": result},
            agent=agent_name, kind="tool_call", status="ok" if ok else "error", started_at=started, ended_at=ended,
        )  # fmt: skip

    # ------------------------------------------------------------------ receipts

    def verify(self, receipt: Any = None, *, workflow: Any = None) -> list[str]:
        """:meth:`aer1.Collector.verify`, also under the peer's argument name ``workflow=``."""
        if workflow is not None and receipt is not None:
            raise TypeError("verify() takes receipt or workflow, not both")
        return super().verify(receipt if receipt is not None else workflow)  # type: ignore[misc, no-any-return]

    def to_json(self, workflow: Any = None, indent: int | None = 2) -> str:
        """The receipt (this collector's when none is given: finalized now, or as it was) as JSON text."""
        if workflow is None:
            parts = self._closed_parts  # type: ignore[attr-defined]
            if parts is None:
                workflow = self.finalize()  # type: ignore[attr-defined]
            else:  # already finalized, whatever the final answer was: the receipt it returned
                workflow = {**orjson.loads(parts[0]), "steps": self._steps(), **orjson.loads(parts[1])}  # type: ignore[attr-defined]
        option = orjson.OPT_INDENT_2 if indent else 0
        return orjson.dumps(workflow, option=option).decode("utf-8")

    def reset(self) -> None:
        """Start a fresh run: new workflow and receipt ids, same options and session_id.

        A receipt already finalized stays valid; steps recorded and not finalized are
        dropped (as the peer drops them). Refused with a journal: the journal file
        belongs to one run, and a second run would overwrite the first's record.
        """
        args, kwargs = self._compat_options
        if getattr(self, "journal", None) is not None:
            raise UsageError("reset() is refused for a collector with a journal: start a new collector instead")
        kwargs["session_id"] = self.session_id  # type: ignore[attr-defined]
        if len(args) > 1:  # session_id given positionally: keep it there
            args = (args[0], self.session_id, *args[2:])  # type: ignore[attr-defined]
            del kwargs["session_id"]
        self.__init__(*args, **kwargs)  # type: ignore[misc]
