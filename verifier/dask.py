"""Verify an archive on a Dask cluster from Python (a notebook): ``verify_archive(client, folder_or_url)``.

The same run as ``aer1-verify --dask ADDRESS FOLDER``: the same files, checks and trust
settings, each outcome yielded in the order of the files as its batch comes back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ._dask import dask_outcomes
from ._run_file import ArchiveOptions, Outcome

if TYPE_CHECKING:
    from ._policy import Policy

__all__ = ["Outcome", "verify_archive"]


def verify_archive(client: Any, *paths: str | os.PathLike[str], trusted_key_ids: set[str] | None = None,
                   expected_root: str | None = None, keyring: str | None = None, tsa_roots: str | None = None,
                   tsa_policy: str | None = None, policy: Policy | None = None,
                   batch: int | None = None, storage_options: dict[str, Any] | None = None) -> Iterator[Outcome]:
    """Each file's :class:`Outcome` (``.report`` is its :class:`~aer1.verifier.Report`), in order.

    ``paths``: folders (every ``*.json`` under them), files, and storage URLs
    (``s3://bucket/prefix/``: every ``*.json`` object under it), read by the workers, so
    they must reach them (a shared disk, or the storage); ``storage_options`` (fsspec's
    keyword arguments: endpoint, profile...) are used here to list and shipped to the
    workers to read. ``keyring`` and ``tsa_roots`` are read here and shipped.
    Raises :class:`aer1.errors.UsageError` for a path that cannot be listed.
    """
    from .._storage import use_options
    from ._inputs import expand_paths

    if storage_options is not None:
        use_options(storage_options)
    tasks = expand_paths([os.fspath(p) for p in paths])
    opts = ArchiveOptions(trusted=None if trusted_key_ids is None else frozenset(trusted_key_ids),
                          expected_root=expected_root, policy=policy, tsa_roots=tsa_roots, tsa_policy=tsa_policy,
                          keyring=keyring, run_id=os.urandom(8).hex(),
                          storage_options=None if storage_options is None else json.dumps(storage_options))
    return dask_outcomes(tasks, opts, client, batch=batch)
