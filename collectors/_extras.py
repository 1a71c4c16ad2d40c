"""Which optional extra each framework module of ``aer1.collectors`` needs, checked without importing it.

A module imported without its framework says which extra to install, instead of a bare
``No module named ...``; ``dir(aer1.collectors)``, ``help()`` and ``import *`` list only the
names whose framework is installed, so they work with any set of extras.
"""

from __future__ import annotations

import sys
from importlib.util import find_spec

__all__ = ["FRAMEWORKS", "installed", "missing_framework"]

#: Collector module -> (the pip extra that installs its framework, the top-level packages it imports).
FRAMEWORKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "agentchat": ("agentchat", ("autogen_agentchat", "autogen_core", "autogen_ext")),
    "autogen_core": ("agentchat", ("autogen_core", "pydantic")),
    "agent_framework": ("agent-framework", ("agent_framework",)),
    "grpc_runtime": ("grpc", ("autogen_core", "autogen_ext", "grpc")),
    "ag2": ("ag2", ("ag2",)),
}


def _absent(package: str) -> bool:
    if package in sys.modules:  # None there: the interpreter was told not to import it
        return sys.modules[package] is None
    try:
        return find_spec(package) is None
    except (ImportError, ValueError):  # a finder that refuses the name: it cannot be imported either
        return True


def _missing(module: str) -> list[str]:
    _, packages = FRAMEWORKS.get(module, ("", ()))
    return [p for p in packages if _absent(p)]


def installed(module: str) -> bool:
    """Whether the framework packages of collector ``module`` (e.g. ``"agentchat"``) are installed."""
    return not _missing(module)


def missing_framework(module: str, error: ImportError | None = None) -> ImportError:
    """The error for collector ``module`` imported without its framework: what is missing, which extra to install.

    ``error``: the import that failed, named when every package is there (another version of it).
    """
    missing = ", ".join(_missing(module))
    extra = f"pip install 'aer1[{FRAMEWORKS[module][0]}]'"
    if not missing and error is not None:
        return ImportError(f"aer1.collectors.{module} cannot import its framework (got {error}): {extra}")
    return ImportError(f"aer1.collectors.{module} needs {missing or 'a package of its framework'}, "
                       f"which is not installed: {extra}")
