"""aer1.verifier: offline verification of AER-1 workflow receipts, from any producer.

Checks, in order (each name is the reason reported when it fails):

1. ``parse``: valid UTF-8 JSON, no duplicate keys, no NaN/Infinity, bounded size and depth;
2. ``members``: AER-1 Table 2 and Table 3 members present and well-formed (and ours, if claimed);
3. ``sequence``: seq is 1..n in array order, no duplicate receipt_id;
4. ``merkle_root``: recomputed under merkle_version (absent means receipt-id-v0);
5. ``chain``: prev_digest links, derived receipt ids, chain_head, the close step (our profile);
6. ``signature``: valid under its embedded key; trusted only with a given key;
7. ``evidence``: every content hashes to its step's receipt_hash;
8. ``expected``: merkle_root / chain_head equal values kept elsewhere;
9. ``timestamp``: RFC 3161 tokens chain to trusted TSA roots and are over this receipt;
10. ``key``: the signing key was valid at the TSA's time, by the auditor's keyring.

This package imports nothing from the collectors.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_exports
from ._parse import MalformedInput
from ._report import CHECKS, FAIL, NOT_CHECKED, PASS, CheckResult, Failure, Report

if TYPE_CHECKING:  # loaded on first use: a command that only reads files (aer1 recover) does not load the checks
    from .._keyring import KeyEntry
    from ._policy import Policy
    from ._trust import Trust, verify_bundle, verify_proof
    from ._tsa_trust import TsaTrust

__all__ = [
    "CHECKS",
    "FAIL",
    "NOT_CHECKED",
    "PASS",
    "CheckResult",
    "Failure",
    "MalformedInput",
    "Policy",
    "Report",
    "Trust",
    "TsaTrust",
    "verify_bundle",
    "verify_proof",
    "verify_receipt",
]


def verify_receipt(
    receipt: Mapping[str, Any] | str | os.PathLike[str] | bytes,
    *,
    evidence: str | os.PathLike[str] | None = None,
    trusted_key_ids: Iterable[str] | None = None,
    expected_root: str | None = None,
    expected_head: str | None = None,
    tsa_trust: TsaTrust | None = None,
    keyring: Mapping[str, KeyEntry] | None = None,
    jobs: int = 1,
    policy: Policy | str | os.PathLike[str] | None = None,
    trust: Trust | None = None,
) -> Report:
    """Run every check on a receipt: a parsed dict, a path to a receipt file, its bytes, or a
    storage URL (``s3://bucket/runs/r1.json``, ``pip install 'aer1[s3]'``).

    ``evidence``: an evidence file; by default, for a path or URL, ``<stem>.evidence.jsonl``
    beside the receipt is used when it exists. A URL is read (credentials and endpoint from
    the usual AWS environment, spec/storage.md) into a private copy, which is verified; the
    report names the URL. ``trusted_key_ids``: key ids (SHA-256 of
    the raw public key) whose signatures are authentic; when given, a receipt that is not
    signed by one of them fails. ``tsa_trust``: TSA roots for the timestamp check;
    ``keyring``: key windows and revocations for the key check. ``policy``: a parsed
    :class:`Policy` or a policy file (spec/policy.md), added as check ``policy``. Or give
    what is trusted and required as one ``trust`` (:class:`Trust`) instead of those. ``jobs``:
    processes for a receipt file of 1 MiB or more in the saved layout (cut into runs of step
    lines) and for the steps of a parsed receipt of 20,000 steps or more (two cores busy with
    other work rarely beat one: measure). A file too large or too costly to hold parsed is
    verified by streaming; every path gives the same checks and the same report.
    """
    from ._trust import given_trust

    chosen = given_trust(trust, trusted_key_ids=trusted_key_ids, expected_root=expected_root,
                         expected_head=expected_head, tsa_trust=tsa_trust, keyring=keyring, policy=policy)
    return chosen.verify_receipt(receipt, evidence=evidence, jobs=jobs)


__getattr__, __dir__ = lazy_exports(__name__, {
    "Policy": "._policy", "Trust": "._trust", "TsaTrust": "._tsa_trust", "verify_bundle": "._trust",
    "verify_proof": "._trust"}, __all__, globals())
