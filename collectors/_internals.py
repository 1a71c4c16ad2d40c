"""The one shape of the collectors' tables of framework internals.

A collector that relies on names its framework does not document (a private attribute, a
method it patches) lists each of them once, as a :class:`Private` entry of its
framework's :class:`Table` (``_agentchat_internals``, ``_legacy_internals``,
``_af_internals``, ``_ag2_internals``, ``_otel_internals``): the kind of object that has it, the name, and what
the collector uses it for. Call sites read and write through the entries, never through a
string, so the table is the whole list. Each framework has a canary test that checks every
entry on the installed version (:meth:`Table.missing`), and :meth:`Table.warn_if_unchecked`
logs once, with the version, when the installed version is not one the table was checked
against (the collector still runs: a missing name degrades to "not observed").

Importing this module imports no framework.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Private", "Table", "installed_versions", "resolve_owner"]

log = logging.getLogger("aer1")

_ABSENT = object()


@dataclass(frozen=True)
class Private:
    """One name the collector relies on: ``attr`` of the objects of kind ``owner``, and why.

    ``owner`` is ``module:Qualified.Path`` (``module`` alone: the module), or a class name
    where the canary builds real objects; ``also``: other kinds that have the same name.
    ``instance``: set in ``__init__``, so checked on an instance, not on the class.
    """

    owner: str
    attr: str
    why: str
    instance: bool = False
    also: tuple[str, ...] = ()

    @property
    def owners(self) -> tuple[str, ...]:
        """Every kind of object that has the name."""
        return (self.owner, *self.also)

    def get(self, obj: Any, default: Any = None) -> Any:
        """``obj.<attr>``, or ``default`` when ``obj`` has no such attribute."""
        return getattr(obj, self.attr, default)

    def set(self, obj: Any, value: Any) -> None:
        """Set ``obj.<attr>`` (a hook replacing the framework's own object)."""
        setattr(obj, self.attr, value)

    def has(self, obj: Any) -> bool:
        """True when ``obj`` has the name."""
        return getattr(obj, self.attr, _ABSENT) is not _ABSENT


def resolve_owner(owner: str) -> Any:
    """The object named ``module:Qualified.Path`` (``module`` alone: the module), imported now."""
    module_name, _, path = owner.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in filter(None, path.split(".")):
        obj = getattr(obj, part)
    return obj


def installed_versions(distributions: Iterable[str]) -> dict[str, str]:
    """Distribution -> installed version, for those of ``distributions`` that are installed."""
    found: dict[str, str] = {}
    for dist in distributions:
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


class Table:
    """Every private name one framework's collector relies on, and the versions they were checked on.

    ``checked``: distribution -> the versions the canary passed on. ``installed``: the
    framework's distributions installed now (by default those of ``checked`` that are).
    """

    def __init__(
        self,
        framework: str,
        entries: Iterable[Private],
        checked: Mapping[str, tuple[str, ...]],
        installed: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        self.framework = framework
        self.entries = tuple(entries)
        self.checked = dict(checked)
        self._installed = installed if installed is not None else lambda: installed_versions(self.checked)
        self._warned = False
        self._lock = threading.Lock()

    def installed(self) -> dict[str, str]:
        """The framework's distributions installed now, with their versions."""
        return dict(self._installed())

    def unchecked(self) -> dict[str, str]:
        """The installed distributions whose version the table was not checked against."""
        return {d: v for d, v in self.installed().items() if v not in self.checked.get(d, ())}

    def warn_if_unchecked(self) -> None:
        """Log once (a warning, with the version) when an installed version is not a checked one."""
        with self._lock:
            if self._warned:
                return
            self._warned = True
        try:
            unchecked = self.unchecked()
        except Exception as e:  # unreadable metadata: nothing to compare
            log.debug("aer1: %s version not read: %s", self.framework, e)
            return
        for dist, version in sorted(unchecked.items()):
            log.warning(
                "aer1: %s %s is not a version the %s collector was checked with (%s): a name it relies on "
                "may be gone, and the receipt then records less",
                dist, version, self.framework, ", ".join(self.checked.get(dist, ())) or "none",
            )  # fmt: skip

    def missing(
        self, resolve: Callable[[Private, str], Any], applies: Callable[[Private], bool] | None = None
    ) -> list[str]:
        """``owner.attr`` of every entry that the object ``resolve(entry, owner)`` lacks (empty: all there).

        ``resolve`` raising counts as missing (a renamed class, module or constructor);
        ``applies``: which entries hold for the installed version (default: all).
        """
        gone: list[str] = []
        for entry in self.entries:
            if applies is not None and not applies(entry):
                continue
            for owner in entry.owners:
                try:
                    getattr(resolve(entry, owner), entry.attr)
                except Exception:
                    gone.append(f"{owner}.{entry.attr}")
        return gone
