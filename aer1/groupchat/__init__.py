"""Built-in group chat manager: a multi-agent chat recorded natively into an AER-1 receipt.

Needs no agent framework. ``GroupChat(agents, ...).run(task)`` returns the messages,
the stop reason and the receipt; see ``spec/groupchat.md`` for the protocol and the
exact step contents.
"""

from __future__ import annotations

from .agents import Agent, AgentError, FunctionAgent, HumanProxy, ScriptedAgent, StopChat
from .approval import (
    ApprovalDecision,
    ApprovalPort,
    ApprovalRequest,
    ApprovalToken,
    CallbackApproval,
    DeferredApproval,
    TokenAuthority,
    TokenRefused,
)
from .code_executor import CodeExecutor
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
    "ApprovalRequest",
    "ApprovalToken",
    "AutoSelector",
    "CallableSelector",
    "CallbackApproval",
    "ChatResult",
    "CodeExecutor",
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
    "ToolDefinitionError",
    "ToolExecutor",
    "ToolOutcome",
    "TurnContext",
    "function_schema",
    "validate_message",
]
