"""``aer1``: key generation, one-step proofs, timelines, and verification."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import orjson

from .proof import build_step_proof
from .receipt import evidence_path_for
from .recover import add_recover_arguments, cli_recover
from .signing import generate_key_pair, key_id, load_public_key
from .timeline import format_timeline

__all__ = ["main"]

_PROG = "aer1"


class _CliError(Exception):
    """A usage or input problem (exit 2)."""


def _read_json(path: str) -> object:
    from .verifier._parse import MalformedInput, parse_strict, read_limited

    try:
        return parse_strict(read_limited(path), what=path)
    except MalformedInput as e:
        raise _CliError(str(e)) from e


def _keygen(args: argparse.Namespace) -> int:
    private_path, public_path = f"{args.out}.key", f"{args.out}.pub"
    for p in (private_path, public_path):
        if os.path.exists(p) and not args.force:
            raise _CliError(f"{p} exists (use --force to replace it)")
    pem_private, pem_public = generate_key_pair()
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem_private)
    with open(public_path, "wb") as f:
        f.write(pem_public)
    print(f"private key: {private_path}\npublic key:  {public_path}\nkey id:      "
          f"{key_id(load_public_key(pem_public))}")
    return 0


def _evidence_content(path: str, seq: int) -> object:
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            if number == 1:
                continue
            record = orjson.loads(line)
            if record.get("seq") == seq:
                return record.get("content")
    return None


def _prove(args: argparse.Namespace) -> int:
    receipt = _read_json(args.receipt)
    if not isinstance(receipt, dict):
        raise _CliError(f"{args.receipt} is not a receipt object")
    evidence = args.evidence or evidence_path_for(args.receipt)
    content = None
    if os.path.isfile(evidence):
        try:
            content = _evidence_content(evidence, args.step)
        except (OSError, orjson.JSONDecodeError) as e:
            raise _CliError(f"evidence {evidence} unreadable: {e}") from e
    try:
        proof = build_step_proof(receipt, args.step, content)
    except (ValueError, KeyError, TypeError) as e:
        raise _CliError(f"cannot build a proof: {e}") from e
    data = orjson.dumps(proof, option=orjson.OPT_INDENT_2) + b"\n"
    if args.output:
        with open(args.output, "wb") as f:
            f.write(data)
        print(f"proof for step {args.step} written to {args.output}")
    else:
        sys.stdout.write(data.decode())
    return 0


def _show(args: argparse.Namespace) -> int:
    receipt = _read_json(args.receipt)
    if not isinstance(receipt, dict):
        raise _CliError(f"{args.receipt} is not a receipt object")
    print(format_timeline(receipt, max_rows=args.rows))
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=_PROG, description="aer1: verifiable AER-1 receipts for agent runs")
    sub = p.add_subparsers(dest="command", required=True)
    k = sub.add_parser("keygen", help="write an Ed25519 key pair (NAME.key, NAME.pub)")
    k.add_argument("-o", "--out", default="aer1-signing", help="file name prefix (default: aer1-signing)")
    k.add_argument("--force", action="store_true", help="replace existing files")
    k.set_defaults(func=_keygen)
    pr = sub.add_parser("prove", help="write one step with its Merkle audit path")
    pr.add_argument("receipt")
    pr.add_argument("--step", type=int, required=True, help="the step's seq (1-based)")
    pr.add_argument("--evidence", help="evidence file (default: beside the receipt)")
    pr.add_argument("-o", "--output", help="output file (default: stdout)")
    pr.set_defaults(func=_prove)
    sh = sub.add_parser("show", help="print a receipt's timeline")
    sh.add_argument("receipt")
    sh.add_argument("--rows", type=int, default=60)
    sh.set_defaults(func=_show)
    rc = sub.add_parser("recover", help="build a receipt from a crash-safe journal (see spec/journal.md)")
    add_recover_arguments(rc)
    rc.set_defaults(func=cli_recover)
    v = sub.add_parser("verify", help="same as aer1-verify", add_help=False)
    v.add_argument("rest", nargs=argparse.REMAINDER)
    v.set_defaults(func=None)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``aer1``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["verify"]:
        from .verifier.cli import main as verify_main

        return int(verify_main(argv[1:]))
    try:
        args = _parser().parse_args(argv)
        return int(args.func(args))
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 2
    except _CliError as e:
        print(f"{_PROG}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{_PROG}: error: {e.strerror or e}: {e.filename or ''}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
