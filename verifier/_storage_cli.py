"""``--storage-options JSON``: how the commands reach storage named by URL (spec/storage.md)."""

from __future__ import annotations

import argparse

from ..errors import StorageError
from ._output import CliError

__all__ = ["add_storage_argument", "use_storage_options"]


def add_storage_argument(p: argparse.ArgumentParser) -> None:
    """``--storage-options JSON``: how URLs (``s3://bucket/prefix``) reach their storage (spec/storage.md)."""
    p.add_argument("--storage-options", metavar="JSON",
                   help="fsspec options for s3://... and other URLs, a JSON object such as "
                   '\'{"endpoint_url": "https://..."}\' (default: the environment\'s AWS settings)')


def use_storage_options(args: argparse.Namespace) -> None:
    """Apply ``--storage-options`` to every URL this process opens; a bad value is one line."""
    if getattr(args, "storage_options", None) is None:
        return
    from .._storage import parse_options, use_options

    try:
        use_options(parse_options(args.storage_options))
    except StorageError as e:
        raise CliError(str(e)) from e
