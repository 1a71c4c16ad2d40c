"""The verifier's transparency-log options: ``--log``, ``--log-key``, ``--witness``, ``--min-witnesses``,
``--complete``, ``--since`` (spec/log.md), with the policy's ``[trust]`` and ``[require]`` keys."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..errors import LogMalformed
from ._output import CliError, dump_json

if TYPE_CHECKING:
    from ._policy import Policy
    from ._tlog import LogTrust

__all__ = ["add_log_arguments", "add_log_key_arguments", "check_log_option", "log_only_run", "log_trust", "prepare_log"]


def add_log_key_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the per-receipt log check (also for ``aer1 show`` and ``aer1 report``)."""
    p.add_argument("--log-key", metavar="VKEY", action="append", default=[],
                   help="a trusted log's verifier key (name+id+key, or a file such as log.vkey): adds the log "
                   "check (NAME.tlog-proof beside each receipt); repeatable")
    p.add_argument("--witness", metavar="VKEY", action="append", default=[],
                   help="a trusted witness's cosignature key (type 0x04); repeatable")
    p.add_argument("--min-witnesses", metavar="K", type=int, default=None,
                   help="cosignatures by distinct trusted witnesses every checkpoint needs (default 0)")


def add_log_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options to the verifier's parser."""
    add_log_key_arguments(p)
    p.add_argument("--log", metavar="DIR",
                   help="a log folder or storage prefix (s3://bucket/log): its checkpoint, tiles and every entry are "
                   "checked")
    p.add_argument("--complete", metavar="ARCHIVE",
                   help="with --log: the receipts under ARCHIVE against the log's entries (missing, not matching, "
                   "not listed, opened and never closed)")
    p.add_argument("--since", metavar="CHECKPOINT",
                   help="with --log: a checkpoint kept earlier; the log's current one must extend it")


def _keys(values: list[str], option: str) -> tuple[str, ...]:
    from ._tlog import load_vkey

    out = []
    for v in values:
        try:
            out.append(load_vkey(v))
        except LogMalformed as e:
            raise CliError(f"{option} {v[:80]}: {e}") from e
    return tuple(out)


def log_trust(args: argparse.Namespace, policy: Policy | None) -> LogTrust | None:
    """The log check's trust from the options and the policy; None when no log key is given."""
    from ._tlog import LogTrust

    log_keys = list(args.log_key) + list(getattr(policy, "log_keys", ()) or ())
    witnesses = list(args.witness) + list(getattr(policy, "witnesses", ()) or ())
    k = args.min_witnesses
    named = getattr(policy, "min_witnesses", None)
    if k is not None and named is not None and k != named:
        raise CliError(f"--min-witnesses {k} and the policy's [require] min_witnesses {named} disagree: give one")
    k = k if k is not None else named if named is not None else 0
    if not log_keys:
        if policy is not None and "log" in policy.require:
            raise CliError("log is required, but no log key is trusted: give --log-key or a policy's [trust] log_keys")
        later = [(o, getattr(args, o[2:], None)) for o in ("--log", "--complete", "--since")]
        for option, given in [("--witness", witnesses), ("--min-witnesses", k), *later]:
            if given:
                raise CliError(f"{option} goes with --log-key (the log key that must sign the checkpoint)")
        return None
    if not 0 <= k <= len(witnesses):
        raise CliError(f"--min-witnesses: got {k}, want 0 to the number of trusted witnesses ({len(witnesses)})")
    trust = LogTrust(_keys(log_keys, "--log-key"), _keys(witnesses, "--witness"), k)
    from .._tlog import CosignatureVerifier, Ed25519Verifier

    logs, wits = trust.verifiers
    if not all(isinstance(v, Ed25519Verifier) for v in logs):
        raise CliError("--log-key: want an Ed25519 log key (type 0x01), got a cosignature key")
    if not all(isinstance(v, CosignatureVerifier) for v in wits):
        raise CliError("--witness: want a witness cosignature key (type 0x04)")
    return trust


def check_log_option(log: str) -> None:
    """``--log DIR`` names a folder or a storage prefix (its checkpoint and tiles are read by the walk)."""
    import os

    from .._storage import is_url

    if not is_url(log) and not os.path.isdir(log):
        raise CliError(f"--log {log}: not a directory")


def prepare_log(args: argparse.Namespace, trust: LogTrust | None) -> None:
    """Check the log options together; for ``--complete``, the archive becomes the path verified."""
    args.log_trust = trust
    args.log_sink = None
    if args.complete is not None or args.since is not None:
        if args.log is None:
            raise CliError("--complete and --since go with --log DIR")
    if trust is not None and args.paths == ["-"]:
        raise CliError("the log check reads NAME.tlog-proof beside the receipt: not with - (standard input)")
    if args.complete is not None:
        if args.paths:
            raise CliError("--complete ARCHIVE names the receipts itself: give no other PATH")
        args.paths = [args.complete]
    if args.log is not None and trust is not None:
        check_log_option(args.log)
        if args.complete is not None or not args.paths:
            from ._tlog import Completeness, walk_log

            walk = walk_log(args.log, trust, args.since)
            args.log_sink = Completeness(walk, trust) if args.complete is not None else None
            args.log_walk = walk
        elif args.log is not None:
            raise CliError("--log DIR checks the log alone, or with --complete ARCHIVE: not with PATHs "
                           "(each receipt's own proof is checked with --log-key)")


def log_only_run(args: argparse.Namespace) -> int:
    """``--log DIR`` with no receipts: the log's own checks; exit 0, 1 or 2."""
    from ._archive import SCHEMA
    from ._tlog import exit_code, log_section, section_lines

    doc = log_section(args.log_walk)
    if args.json:
        sys.stdout.write(dump_json({"schema": SCHEMA, "kind": "log", "log": doc, "verdict": doc["verdict"],
                                    "exit_code": exit_code(doc)}))
    else:
        print("\n".join(section_lines(doc)))
    return exit_code(doc)
