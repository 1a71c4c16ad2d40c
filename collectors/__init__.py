"""Collectors that feed AutoGen runs into an :class:`aer1.Collector`.

Nothing here imports an agent framework until a name is used:

* ``AER1AutoGenCollector``: needs no framework (AgentChat only for ``run``/``run_stream``);
* ``AER1AgentWrapper``: autogen-agentchat (``aer1.collectors.agentchat``);
* ``observe_tools``, ``observe_code_executor``, ``observe_approval``,
  ``AER1InterventionHandler``, ``was_call_recorded``: autogen-core
  (``aer1.collectors.autogen_core``);
* ``attach_legacy_hooks``, ``observe_groupchat``: pyautogen 0.2 (``aer1.collectors.legacy``);
* ``AER1AgentFrameworkCollector``: Microsoft Agent Framework (``aer1.collectors.agent_framework``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._collector import AER1AutoGenCollector
    from .agent_framework import AER1AgentFrameworkCollector
    from .agentchat import AER1AgentWrapper
    from .autogen_core import (
        AER1InterventionHandler,
        observe_approval,
        observe_code_executor,
        observe_tools,
        was_call_recorded,
    )
    from .legacy import attach_legacy_hooks, observe_groupchat

#: Public name -> the submodule defining it (imported on first use).
_EXPORTS = {
    "AER1AutoGenCollector": "._collector",
    "AER1AgentFrameworkCollector": ".agent_framework",
    "AER1AgentWrapper": ".agentchat",
    "observe_tools": ".autogen_core",
    "observe_code_executor": ".autogen_core",
    "observe_approval": ".autogen_core",
    "was_call_recorded": ".autogen_core",
    "AER1InterventionHandler": ".autogen_core",
    "attach_legacy_hooks": ".legacy",
    "observe_groupchat": ".legacy",
}

__all__ = [
    "AER1AgentFrameworkCollector",
    "AER1AgentWrapper",
    "AER1AutoGenCollector",
    "AER1InterventionHandler",
    "attach_legacy_hooks",
    "observe_approval",
    "observe_code_executor",
    "observe_groupchat",
    "observe_tools",
    "was_call_recorded",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__, globals())
