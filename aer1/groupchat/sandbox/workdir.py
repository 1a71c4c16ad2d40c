"""The work directory: which directories may be one, and creating it."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def interpreter_dirs() -> list[str]:
    """The directories the running interpreter needs: its prefixes, as given and resolved."""
    dirs: list[str] = []
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        for candidate in (os.path.abspath(prefix), os.path.realpath(prefix)):
            if candidate not in dirs and candidate != "/":
                dirs.append(candidate)
    return dirs


def prepare_work_dir(work_dir: str | os.PathLike[str]) -> Path:
    """Create ``work_dir`` if needed and return its resolved path.

    Refuses the filesystem root, the home directory and any directory holding the Python
    installation: sandboxed code may rewrite everything in ``work_dir``, and the host would
    then run what it wrote.
    """
    path = Path(work_dir).resolve()
    if path == Path(path.anchor):
        raise ValueError("work_dir must not be the filesystem root")
    home = os.path.expanduser("~")
    if os.path.isabs(home) and path == Path(home).resolve():
        raise ValueError(f"work_dir must not be the home directory ({path}); use a dedicated directory")
    for directory in interpreter_dirs():
        if Path(directory).resolve().is_relative_to(path):
            raise ValueError(f"work_dir {path} holds the Python installation {directory}; use a dedicated directory")
    path.mkdir(parents=True, exist_ok=True)
    return path

