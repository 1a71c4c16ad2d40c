"""Argument adders that import their command's module only when that command runs.

A command table lists every command with its help line; only the command named on the
command line gets its arguments, so only its modules load (start-up is most of a short run).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

__all__ = ["lazy_arguments"]


def lazy_arguments(module: str, adder: str) -> Callable[[argparse.ArgumentParser], None]:
    """An adder that calls ``adder`` of ``module`` (a module of this package, e.g. ``"._erase"``) on first use."""

    def add(p: argparse.ArgumentParser) -> None:
        getattr(importlib.import_module(module, __package__), adder)(p)

    return add
