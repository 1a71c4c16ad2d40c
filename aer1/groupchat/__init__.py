"""Built-in group chat manager: a multi-agent chat recorded natively into an AER-1 receipt.

Needs no agent framework. ``GroupChat(agents, ...).run(task)`` returns the messages,
the stop reason and the receipt; see ``spec/groupchat.md`` for the protocol and the
exact step contents.

A product of its own beside the receipt core: ``import aer1`` does not load it, and it
uses the core only through ``aer1.Collector`` and ``aer1._canonical``. Every name a user
needs is exported here, the code sandbox's too (``spec/sandbox.md``); the modules behind
them are internal.
"""

from __future__ import annotations

from ._agents import Agent, AgentError, FunctionAgent, HumanProxy, ScriptedAgent, StopChat
from ._approval import (
    ApprovalDecision,
    ApprovalPort,
    ApprovalToken,
    CallbackApproval,
    DeferredApproval,
    TokenAuthority,
    TokenRefused,
    ToolApprovalRequest,
)
from ._code import CodeRunResult, FencedBlock, execute_code_blocks, extract_code_blocks
from ._code_runner import CodeRunnerAgent
from ._context import RunState, TurnContext
from ._history import History, HistoryView
from ._manager import MANAGER, ChatResult, GroupChat, GroupChatError
from ._messages import Message, MessageValidationError, validate_message
from ._model import ModelAgent
from ._sandbox import (
    BWRAP_PATH,
    DEFAULT_LIMITS,
    DISK_LIMIT_EXIT_CODE,
    TIMEOUT_EXIT_CODE,
    BubblewrapSandbox,
    Sandbox,
    SandboxError,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailableError,
    UnsandboxedExecutor,
    WorkDirError,
    default_sandbox,
    probe_bubblewrap,
)
from ._schema import ToolDefinitionError, function_schema
from ._selection import (
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
from ._tools import Tool, ToolExecutor, ToolOutcome

__all__ = [
    "BWRAP_PATH",
    "DEFAULT_LIMITS",
    "DISK_LIMIT_EXIT_CODE",
    "MANAGER",
    "TIMEOUT_EXIT_CODE",
    "Agent",
    "AgentError",
    "ApprovalDecision",
    "ApprovalPort",
    "ApprovalToken",
    "AutoSelector",
    "BubblewrapSandbox",
    "CallableSelector",
    "CallbackApproval",
    "ChatResult",
    "CodeRunResult",
    "CodeRunnerAgent",
    "DeferredApproval",
    "FencedBlock",
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
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailableError",
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
    "UnsandboxedExecutor",
    "WorkDirError",
    "default_sandbox",
    "execute_code_blocks",
    "extract_code_blocks",
    "function_schema",
    "probe_bubblewrap",
    "validate_message",
]
