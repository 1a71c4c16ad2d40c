"""Built-in group chat manager: a multi-agent chat recorded natively into an AER-1 receipt.

Needs no agent framework. ``GroupChat(agents, ...).run(task)`` returns the messages,
the stop reason and the receipt; see ``spec/groupchat.md`` for the protocol and the
exact step contents.

A product of its own beside the receipt core: ``import aer1`` does not load it, and it
uses the core only through ``aer1.Collector`` and ``aer1.canonical``. Its code sandbox
is the subpackage ``aer1.groupchat.sandbox`` (``spec/sandbox.md``).
"""

from __future__ import annotations

from .agents import Agent, AgentError, FunctionAgent, HumanProxy, ScriptedAgent, StopChat
from .approval import (
    ApprovalDecision,
    ApprovalPort,
    ApprovalToken,
    CallbackApproval,
    DeferredApproval,
    TokenAuthority,
    TokenRefused,
    ToolApprovalRequest,
)
from .code_runner import CodeRunnerAgent
from .context import RunState, TurnContext
from .history import History, HistoryView
from .manager import MANAGER, ChatResult, GroupChat, GroupChatError
from .messages import Message, MessageValidationError, validate_message
from .model import ModelAgent
from .schema import ToolDefinitionError, function_schema
from .selection import (
    AutoSelector,
    CallableSelector,
    ManualSelector,
    RandomSelector,
    RoundRobin,
    Selection,
    SelectionContext,
    SelectionError,
    SpeakerSelector,
)
from .tools import Tool, ToolExecutor, ToolOutcome

__all__ = [
    "MANAGER",
    "Agent",
    "AgentError",
    "ApprovalDecision",
    "ApprovalPort",
    "ApprovalToken",
    "AutoSelector",
    "CallableSelector",
    "CallbackApproval",
    "ChatResult",
    "CodeRunnerAgent",
    "DeferredApproval",
    "FunctionAgent",
    "GroupChat",
    "GroupChatError",
    "History",
    "HistoryView",
    "HumanProxy",
    "ManualSelector",
    "Message",
    "MessageValidationError",
    "ModelAgent",
    "RandomSelector",
    "RoundRobin",
    "RunState",
    "ScriptedAgent",
    "Selection",
    "SelectionContext",
    "SelectionError",
    "SpeakerSelector",
    "StopChat",
    "TokenAuthority",
    "TokenRefused",
    "Tool",
    "ToolApprovalRequest",
    "ToolDefinitionError",
    "ToolExecutor",
    "ToolOutcome",
    "TurnContext",
    "function_schema",
    "validate_message",
]
