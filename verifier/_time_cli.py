"""The verifier's options for independent time and key lifecycle: ``--tsa-roots``, ``--tsa-policy``, ``--keyring``."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ._output import CliError

__all__ = ["add_time_arguments", "load_time_options", "time_options", "trusted_with_keyring"]


def add_time_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options to the verifier's parser."""
    p.add_argument("--tsa-roots", metavar="DIR",
                   help="trusted TSA certificates (*.pem, *.crt): self-signed ones are roots, others intermediates")
    p.add_argument("--tsa-policy", metavar="OID", help="the TSA policy every timestamp token must carry")
    p.add_argument("--keyring", metavar="FILE",
                   help="keyring (spec/keys.md): its keys are trusted, within their windows and until revoked")


def load_time_options(tsa_roots: str | None, tsa_policy: str | None, keyring: str | None) -> dict[str, Any]:
    """``verify_receipt`` keyword arguments from the files named; ValueError when one cannot be used.

    The TSA and keyring modules load only when their file is named.
    """
    trust = None
    if tsa_roots is not None:
        from ._timestamp import load_tsa_trust

        trust = load_tsa_trust(tsa_roots, tsa_policy)
    if keyring is not None and os.path.isdir(keyring):
        raise ValueError(f"--keyring {keyring}: a directory, not a keyring file")
    ring = None
    if keyring is not None:
        from ._keyring import load_keyring

        ring = load_keyring(keyring)
    return {"tsa_trust": trust, "keyring": ring}


def _from_policy(args: argparse.Namespace) -> None:
    """Fill ``--keyring``, ``--tsa-roots`` and ``--tsa-policy`` from the policy's ``[trust]``.

    An option given on the command line and in the policy must name the same thing: two
    different trust anchors for one run are refused, never silently one of them.
    """
    path = getattr(args, "policy", None)
    if not path:
        return
    from ._policy import PolicyError, load_policy

    try:
        policy = load_policy(path)
    except PolicyError as e:
        raise CliError(str(e)) from e
    for option, attr in (("--keyring", "keyring"), ("--tsa-roots", "tsa_roots"), ("--tsa-policy", "tsa_policy")):
        named = getattr(policy, attr)
        given = getattr(args, attr)
        if named is None:
            continue
        if given is None:
            setattr(args, attr, named)
        elif (given != named if attr == "tsa_policy" else os.path.realpath(given) != os.path.realpath(named)):
            raise CliError(f"{option} {given} and the policy's [trust] {attr} {named} disagree: give one of them")


def time_options(args: argparse.Namespace) -> dict[str, Any]:
    """``verify_receipt`` keyword arguments from the options (and the policy's ``[trust]``)."""
    _from_policy(args)
    if args.tsa_policy is not None and args.tsa_roots is None:
        raise CliError("--tsa-policy goes with --tsa-roots")
    try:
        return load_time_options(args.tsa_roots, args.tsa_policy, args.keyring)
    except ValueError as e:
        raise CliError(str(e)) from e


def trusted_with_keyring(trusted: set[str] | None, options: dict[str, Any]) -> set[str] | None:
    """The trusted key ids: those given with --key/--trusted-keys, and every key of the keyring."""
    keyring = options.get("keyring")
    if keyring is None:
        return trusted
    return (trusted or set()) | set(keyring)
