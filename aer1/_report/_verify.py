"""The verification a view rests on: ``aer1-verify``'s own options and checks, for ``aer1 show`` and ``aer1 report``.

A page or a listing never verifies differently from ``aer1-verify``: the same option
parsing (keys, keyring, TSA roots, policy) and the same per-file run (``verify_file``).
"""

from __future__ import annotations

import argparse
import os

from ..verifier._archive import ArchiveOptions, Outcome, verify_file
from ..verifier._auditor import build_policy
from ..verifier._cli import _expand, _regular, _trusted_ids
from ..verifier._output import CliError
from ..verifier._policy import Policy
from ..verifier._time_cli import add_time_arguments, time_options, trusted_with_keyring

__all__ = ["ViewOptions", "add_verify_options", "expand_paths", "verify_for_view", "view_options"]

ViewOptions = ArchiveOptions


def add_verify_options(p: argparse.ArgumentParser) -> None:
    """The options of ``aer1-verify`` that change a verdict: keys, keyring, TSA roots, policy."""
    p.add_argument("--evidence", metavar="FILE", help="evidence file (default: NAME.evidence.jsonl beside it)")
    p.add_argument("--key", metavar="FILE", action="append", default=[],
                   help="trusted public key (PEM or 64-char hex); repeatable")
    p.add_argument("--trusted-keys", metavar="DIR", help="directory of trusted public keys (*.pub, *.pem)")
    p.add_argument("--policy", metavar="FILE", help="a TOML policy file (spec/policy.md)")
    p.add_argument("--require", metavar="LIST", action="append", default=[],
                   help="checks that must PASS, comma-separated: chain, signature, evidence, timestamp, log")
    add_time_arguments(p)
    from ..verifier._tlog_cli import add_log_key_arguments

    add_log_key_arguments(p)


def view_options(args: argparse.Namespace) -> ViewOptions:
    """What every receipt is verified against, from the options; CliError when one cannot be used."""
    if args.evidence:
        _regular("--evidence", args.evidence, "an evidence file")
    timing = time_options(args)
    policy: Policy | None
    policy, trusted = build_policy(args, trusted_with_keyring(_trusted_ids(args), timing))
    from ..verifier._tlog_cli import log_trust

    return ArchiveOptions(evidence=args.evidence, trusted=None if trusted is None else frozenset(trusted),
                          policy=policy, tsa_roots=args.tsa_roots, tsa_policy=args.tsa_policy,
                          keyring=args.keyring, run_id=os.urandom(8).hex(), log=log_trust(args, policy))


def expand_paths(path: str) -> list[tuple[str, bool, str | None]]:
    """The receipts to view: one file, or every *.json under a folder (proofs are not receipts: left out)."""
    if path == "-":
        raise CliError("- (standard input) cannot be viewed: give a file, so its evidence can be found beside it")
    if not os.path.isdir(path):
        _regular("receipt", path, "a receipt file")
    return [f for f in _expand([path]) if not f[1]]


def verify_for_view(task: tuple[str, bool, str | None], opts: ViewOptions) -> Outcome:
    """One receipt verified exactly as ``aer1-verify`` would, policy applied."""
    return verify_file(task, opts)
