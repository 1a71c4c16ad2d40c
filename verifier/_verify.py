"""Checks 1 to 10 of one receipt, by whichever path fits its size: the run behind every receipt verified.

Kept apart from the package so that what verifies receipts inside the verifier (bundles,
proofs pinned by a receipt, the trust object) imports it, never the package back.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ._report import Report

if TYPE_CHECKING:
    from .._keyring import KeyEntry
    from ._tsa_trust import TsaTrust

__all__ = ["check_receipt"]


def check_receipt(
    receipt: Mapping[str, Any] | str | os.PathLike[str] | bytes,
    *,
    evidence: str | os.PathLike[str] | None = None,
    trusted_key_ids: Iterable[str] | None = None,
    expected_root: str | None = None,
    expected_head: str | None = None,
    tsa_trust: TsaTrust | None = None,
    keyring: Mapping[str, KeyEntry] | None = None,
    jobs: int = 1,
) -> Report:
    """Run checks 1 to 10 on a receipt: a parsed dict, a path to a receipt file, or its bytes.

    What :func:`aer1.verifier.verify_receipt` and :class:`aer1.verifier.Trust` run, before a
    policy or the log check; the arguments are theirs.

    ``evidence``: an evidence file; by default, for a path, ``<stem>.evidence.jsonl``
    beside the receipt is used when it exists. ``trusted_key_ids``: key ids (SHA-256 of
    the raw public key) whose signatures are authentic; when given, a receipt that is not
    signed by one of them fails. ``tsa_trust``: TSA roots for the timestamp check;
    ``keyring``: key windows and revocations for the key check. ``jobs``: processes for a
    receipt file of 1 MiB or more in the saved layout (cut into runs of step lines) and for
    the steps of a parsed receipt of 20,000 steps or more (two cores busy with other work
    rarely beat one: measure). A file too large or too costly to hold parsed is verified by
    streaming; every path gives the same checks and the same report.
    """
    from ._driver import verify_on_paths

    return verify_on_paths(receipt, evidence=evidence, trusted_key_ids=trusted_key_ids, expected_root=expected_root,
                           expected_head=expected_head, tsa_trust=tsa_trust, keyring=keyring, jobs=jobs)
