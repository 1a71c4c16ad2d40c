"""Collectors that feed AutoGen runs into an :class:`aer1.Collector`.

Nothing here imports an agent framework until a name is used:

* ``AER1AutoGenCollector``: needs no framework (AgentChat only for ``run``/``run_stream``);
* ``AER1AgentWrapper``: autogen-agentchat (``aer1.collectors.agentchat``);
* ``observe_tools``, ``observe_code_executor``, ``observe_approval``,
  ``AER1InterventionHandler``, ``was_call_recorded``: autogen-core
  (``aer1.collectors.autogen_core``);
* ``attach_legacy_hooks``, ``observe_groupchat``: pyautogen 0.2 (``aer1.collectors.legacy``);
* ``AER1AgentFrameworkCollector``: Microsoft Agent Framework (``aer1.collectors.agent_framework``);
* ``AER1AG2Collector``: AG2 1.x, ``from ag2 import Agent`` (``aer1.collectors.ag2``).

The rest of aer1-autogen 0.1.15's public names need no framework either (spec/compat.md):
verification and verdicts (``._compat_verify``), chain-head anchoring (``._compat_anchor``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from ._extras import installed

if TYPE_CHECKING:
    from ._collector import AER1AutoGenCollector
    from ._compat_anchor import (
        AnchorError,
        NostrBackend,
        OTSBackend,
        RFC3161Backend,
        anchor_chain_head,
        bip340_verify,
        proof_from_json,
        proof_to_json,
        verify_anchor,
    )
    from ._compat_verify import (
        CONSTRUCTION_VERSIONS,
        DEFAULT_VERIFY_URL,
        VERDICT_FAIL,
        VERDICT_NOT_CHECKED,
        VERDICT_PASS,
        VERDICT_UNAVAILABLE,
        WORKFLOW_TYPE,
        WORKFLOW_VERSION,
        all_verdicts_pass,
        merkle_root,
        verdicts_summary,
        verify_receipt_verdicts,
        verify_workflow_receipt,
    )
    from .ag2 import AER1AG2Collector
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
    "AER1AG2Collector": ".ag2",
    "AER1AgentWrapper": ".agentchat",
    "observe_tools": ".autogen_core",
    "observe_code_executor": ".autogen_core",
    "observe_approval": ".autogen_core",
    "was_call_recorded": ".autogen_core",
    "AER1InterventionHandler": ".autogen_core",
    "attach_legacy_hooks": ".legacy",
    "observe_groupchat": ".legacy",
    "CONSTRUCTION_VERSIONS": "._compat_verify",
    "DEFAULT_VERIFY_URL": "._compat_verify",
    "VERDICT_FAIL": "._compat_verify",
    "VERDICT_NOT_CHECKED": "._compat_verify",
    "VERDICT_PASS": "._compat_verify",
    "VERDICT_UNAVAILABLE": "._compat_verify",
    "WORKFLOW_TYPE": "._compat_verify",
    "WORKFLOW_VERSION": "._compat_verify",
    "all_verdicts_pass": "._compat_verify",
    "merkle_root": "._compat_verify",
    "verdicts_summary": "._compat_verify",
    "verify_receipt_verdicts": "._compat_verify",
    "verify_workflow_receipt": "._compat_verify",
    "AnchorError": "._compat_anchor",
    "NostrBackend": "._compat_anchor",
    "OTSBackend": "._compat_anchor",
    "RFC3161Backend": "._compat_anchor",
    "anchor_chain_head": "._compat_anchor",
    "bip340_verify": "._compat_anchor",
    "proof_from_json": "._compat_anchor",
    "proof_to_json": "._compat_anchor",
    "verify_anchor": "._compat_anchor",
}

__all__ = [
    "CONSTRUCTION_VERSIONS",
    "DEFAULT_VERIFY_URL",
    "VERDICT_FAIL",
    "VERDICT_NOT_CHECKED",
    "VERDICT_PASS",
    "VERDICT_UNAVAILABLE",
    "WORKFLOW_TYPE",
    "WORKFLOW_VERSION",
    "AER1AG2Collector",
    "AER1AgentFrameworkCollector",
    "AER1AgentWrapper",
    "AER1AutoGenCollector",
    "AER1InterventionHandler",
    "AnchorError",
    "NostrBackend",
    "OTSBackend",
    "RFC3161Backend",
    "all_verdicts_pass",
    "anchor_chain_head",
    "attach_legacy_hooks",
    "bip340_verify",
    "merkle_root",
    "observe_approval",
    "observe_code_executor",
    "observe_groupchat",
    "observe_tools",
    "proof_from_json",
    "proof_to_json",
    "verdicts_summary",
    "verify_anchor",
    "verify_receipt_verdicts",
    "verify_workflow_receipt",
    "was_call_recorded",
]


#: The framework module behind each name that needs one (collectors/_extras.py names its extra).
_FRAMEWORK_MODULES = {".agentchat", ".autogen_core", ".agent_framework", ".ag2"}

# dir(), help() and ``import *`` list only the names whose framework is installed, so that they
# work with any set of extras; any name still imports by name, and says which extra it needs.
__all__ = [n for n in __all__ if _EXPORTS.get(n) not in _FRAMEWORK_MODULES or installed(_EXPORTS[n][1:])]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__, globals())
