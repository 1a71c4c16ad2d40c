"""Which files an archive run verifies: the receipts and proofs a list of paths names.

A path is a file, ``-`` (standard input), a local folder (every ``*.json`` under it, walked
without following symlinked folders) or a storage prefix (every ``*.json`` object under it).
Nothing is passed over silently: what cannot be verified comes back with its reason.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Sequence

from .._limits import MAX_FILES
from .._storage import is_url
from ..errors import StorageError
from ._output import CliError

__all__ = ["PROOF_SUFFIX", "STDIN", "expand_paths", "is_folder"]

#: The name ending of a proof (``aer1 prove``); other ``*.json`` files are receipts.
PROOF_SUFFIX = ".proof.json"
#: The path that names standard input.
STDIN = "-"
_RECEIPT_SUFFIX = ".json"


def _walk(folder: str, on_error: Callable[[OSError], None]) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk`` top-down with sorted folders, without recursion: a folder nested thousands deep
    is walked (os.walk recursed once per level and ran out of stack). Symlinked folders are
    listed among the folders but not entered."""
    stack = [folder]
    while stack:
        root = stack.pop()
        try:
            with os.scandir(root) as it:
                entries = list(it)
        except OSError as e:
            on_error(e)
            continue
        dirs: list[str] = []
        files: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry.name)
        dirs.sort()
        yield root, dirs, files
        stack.extend(os.path.join(root, d) for d in reversed(dirs) if not os.path.islink(os.path.join(root, d)))


def _scan(folder: str) -> list[tuple[str, str | None]]:
    """(path, None) for each *.json under ``folder``, (path, why) for what cannot be verified.

    Nothing is skipped silently: an unreadable subfolder, a symlinked folder (not followed,
    so no loop and no escape from the folder) and a *.json that is not a regular file each
    come back with the reason it could not be verified.
    """
    out: list[tuple[str, str | None]] = []

    def walk_error(e: OSError) -> None:
        out.append((e.filename or folder, f"folder unreadable: {e.strerror or e}"))

    for root, dirs, files in _walk(folder, walk_error):
        for d in dirs:
            if os.path.islink(os.path.join(root, d)):
                out.append((os.path.join(root, d), "a symlinked folder: not followed"))
        for name in sorted(files):
            if not name.endswith(_RECEIPT_SUFFIX):
                continue
            path = os.path.join(root, name)
            try:
                mode = os.stat(path).st_mode
            except OSError as e:
                out.append((path, f"cannot read: {e.strerror or e}"))
                continue
            out.append((path, None if stat.S_ISREG(mode) else "not a regular file"))
        if len(out) > MAX_FILES:
            raise CliError(f"{folder}: more than {MAX_FILES} files to verify")
    return out


def _find_urls(prefix: str) -> list[str]:
    """Every ``*.json`` object under the storage prefix ``prefix``, sorted (spec/storage.md)."""
    from .._storage import find

    try:
        found = find(prefix, lambda name: name.endswith(_RECEIPT_SUFFIX), MAX_FILES)
    except StorageError as e:
        raise CliError(str(e)) from e
    if not found:
        raise CliError(f"{prefix}: no *.json objects under this prefix")
    return found


def is_folder(path: str) -> bool:
    """True when ``path`` names many receipts: a local folder, or a storage prefix (no ``.json`` name)."""
    return (is_url(path) and not path.endswith(_RECEIPT_SUFFIX)) or os.path.isdir(path)


def expand_paths(paths: Sequence[str]) -> list[tuple[str, bool, str | None]]:
    """(path, is_proof, why it cannot be verified or None) for each file to verify."""
    out: list[tuple[str, bool, str | None]] = []
    for path in paths:
        if is_url(path) and not path.endswith(_RECEIPT_SUFFIX):  # a prefix in storage: its *.json objects
            found_urls = _find_urls(path)
            out.extend((f, f.endswith(PROOF_SUFFIX), None) for f in found_urls)
        elif os.path.isdir(path):
            found = _scan(path)
            if not found:
                raise CliError(f"{path}: no *.json files in this directory")
            out.extend((f, f.endswith(PROOF_SUFFIX), why) for f, why in found)
        elif path == STDIN:
            if out or len(paths) > 1:
                raise CliError("- (standard input) goes alone")
            out.append((path, False, None))
        else:
            out.append((path, path.endswith(PROOF_SUFFIX), None))
        if len(out) > MAX_FILES:
            raise CliError(f"more than {MAX_FILES} files to verify")
    return out
