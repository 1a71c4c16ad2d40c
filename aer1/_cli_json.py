"""The ``--json`` form shared by the ``aer1 log`` and ``aer1 witness`` commands: one object on standard output.

Kept apart from the commands so that the log, witness and server commands, which register
one another, share it without importing each other.
"""

from __future__ import annotations

import argparse
import base64
import sys
from typing import TYPE_CHECKING, Any

from .verifier._output import dump_json, one_line

if TYPE_CHECKING:
    from ._tlog import Checkpoint

__all__ = ["add_json_argument", "checkpoint_json", "emit"]


def add_json_argument(p: argparse.ArgumentParser) -> None:
    """``--json``: the command's result as one JSON object on standard output (an error too)."""
    p.add_argument("--json", action="store_true", help="one JSON object on standard output (errors too)")


def emit(args: argparse.Namespace, command: str, doc: dict[str, Any], lines: list[str], code: int = 0) -> int:
    """Print ``lines`` or, with ``--json``, ``doc`` (with the command and exit code) as one object; returns ``code``."""
    if getattr(args, "json", False):
        sys.stdout.write(dump_json({"command": command, **doc, "exit_code": code}))
    else:
        for line in lines:
            print(one_line(line))
    return code


def checkpoint_json(cp: Checkpoint) -> dict[str, Any]:
    """A checkpoint as a command's JSON gives it: origin, size, root (base64)."""
    return {"origin": cp.origin, "size": cp.size, "root": base64.b64encode(cp.root).decode("ascii")}
