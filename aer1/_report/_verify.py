"""The verification a view rests on: ``aer1-verify``'s own options and checks, for ``aer1 show`` and ``aer1 report``.

A page or a listing never verifies differently from ``aer1-verify``: the same option
parsing (keys, keyring, TSA roots, policy) and the same per-file run (``verify_file``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os

from ..verifier._cli import refuse_unless_regular, trust_from_options
from ..verifier._inputs import expand_paths as expand_cli_paths
from ..verifier._output import CliError
from ..verifier._run_file import ArchiveOptions, Outcome, verify_file
from ..verifier._time_cli import add_time_arguments

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
        refuse_unless_regular("--evidence", args.evidence, "an evidence file")
    trust = trust_from_options(args)
    from ..verifier._tlog_cli import log_trust

    trust = dataclasses.replace(trust, log=log_trust(args, trust.policy))
    return ArchiveOptions.from_trust(trust, evidence=args.evidence, run_id=os.urandom(8).hex())


def expand_paths(path: str) -> list[tuple[str, bool, str | None]]:
    """The receipts to view: one file, or every *.json under a folder (proofs are not receipts: left out)."""
    if path == "-":
        raise CliError("- (standard input) cannot be viewed: give a file, so its evidence can be found beside it")
    if not os.path.isdir(path):
        refuse_unless_regular("receipt", path, "a receipt file")
    return [f for f in expand_cli_paths([path]) if not f[1]]


def verify_for_view(task: tuple[str, bool, str | None], opts: ViewOptions) -> Outcome:
    """One receipt verified exactly as ``aer1-verify`` would, policy applied."""
    return verify_file(task, opts)
