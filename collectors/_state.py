"""Bookkeeping kept per collector by the framework hooks, living as long as the collector."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar
from weakref import WeakKeyDictionary

__all__ = ["PerCollector"]

_T = TypeVar("_T")


class PerCollector(Generic[_T]):
    """One ``_T`` per collector, made by ``factory`` on first use and dropped with the collector."""

    def __init__(self, factory: Callable[[], _T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._values: WeakKeyDictionary[Any, _T] = WeakKeyDictionary()

    def of(self, collector: Any) -> _T:
        """The collector's value (made now if it has none)."""
        with self._lock:
            value = self._values.get(collector)
            if value is None:
                value = self._values[collector] = self._factory()
            return value

    def peek(self, collector: Any) -> _T | None:
        """The collector's value, or None when it has none yet (nothing is made)."""
        with self._lock:
            return self._values.get(collector)
