"""``aer1-verify``: re-check receipts (or one-step proofs) offline, one line per check.

Exit codes: 0 valid, 1 invalid, 2 usage error or unreadable/malformed input.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

import orjson

from ..signing import KeyError_, key_id, load_public_key
from . import verify_proof, verify_receipt
from ._parse import MAX_INPUT_BYTES

__all__ = ["main"]

_PROG = "aer1-verify"
_KEY_SUFFIXES = (".pub", ".pem")
_PROOF_SUFFIX = ".proof.json"
_STDIN = "-"
_RECEIPT_SUFFIX = ".json"
#: Most files verified from directories in one run.
MAX_FILES = 100_000


class _UsageError(Exception):
    """Bad arguments or unreadable auxiliary input (exit 2)."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=_PROG,
        description="Verify AER-1 workflow receipts offline: members, sequence, Merkle root, hash chain, "
        "signature, evidence.",
        epilog="Exit codes: 0 valid, 1 invalid, 2 usage error or unreadable/malformed input.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="receipt file, - for standard input, or a directory: every *.json under it "
                   "(*.proof.json as proofs)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--evidence", metavar="FILE", help="evidence file (default: NAME.evidence.jsonl beside it)")
    p.add_argument("--key", metavar="FILE", action="append", default=[],
                   help="trusted public key (PEM or 64-char hex); repeatable")
    p.add_argument("--trusted-keys", metavar="DIR", help="directory of trusted public keys (*.pub, *.pem)")
    p.add_argument("--expected-root", metavar="HEX", help="merkle_root kept elsewhere")
    p.add_argument("--expected-head", metavar="HEX", help="chain_head kept elsewhere")
    p.add_argument("--proof", action="store_true", help="PATH is a one-step inclusion proof")
    p.add_argument("--receipt", metavar="FILE",
                   help="for one proof: a receipt signed by a trusted key (--key/--trusted-keys) that pins its root")
    return p


def _trusted_ids(args: argparse.Namespace) -> set[str] | None:
    sources: list[str] = list(args.key)
    if args.trusted_keys:
        d = args.trusted_keys
        if not os.path.isdir(d):
            raise _UsageError(f"--trusted-keys {d}: not a directory")
        found = sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(_KEY_SUFFIXES))
        if not found:
            raise _UsageError(f"--trusted-keys {d}: no *.pub or *.pem files")
        sources.extend(found)
    if not sources:
        return None
    ids = set()
    for src in sources:
        if os.path.isdir(src):
            raise _UsageError(f"key file {src} is a directory (use --trusted-keys for a directory of keys)")
        if not os.path.isfile(src):
            raise _UsageError(f"key file {src} does not exist")
        try:
            ids.add(key_id(load_public_key(src)))
        except KeyError_ as e:
            raise _UsageError(f"key file {src}: {e}") from e
    return ids


def _expand(paths: Sequence[str]) -> list[tuple[str, bool]]:
    """(path, is_proof) for each file to verify."""
    out: list[tuple[str, bool]] = []
    for path in paths:
        if os.path.isdir(path):
            found: list[str] = []
            for root, dirs, files in os.walk(path):
                dirs.sort()
                found.extend(os.path.join(root, f) for f in sorted(files) if f.endswith(_RECEIPT_SUFFIX))
            if not found:
                raise _UsageError(f"{path}: no *.json files in this directory")
            out.extend((f, f.endswith(_PROOF_SUFFIX)) for f in found)
        elif path == _STDIN:
            if out or len(paths) > 1:
                raise _UsageError("- (standard input) goes alone")
            out.append((path, False))
        else:
            out.append((path, path.endswith(_PROOF_SUFFIX)))
        if len(out) > MAX_FILES:
            raise _UsageError(f"more than {MAX_FILES} files to verify")
    return out


def _hex_arg(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    v = value.strip().lower()
    if len(v) != 64 or any(c not in "0123456789abcdef" for c in v):
        raise _UsageError(f"{name} must be 64 hex characters, got {value!r}")
    return v


def _refuse_for_proofs(args: argparse.Namespace, files: list[tuple[str, bool]]) -> None:
    """Options that cannot apply to what is verified are refused, never ignored."""
    proofs = [path for path, is_proof in files if is_proof or args.proof]
    if args.receipt is not None and (len(files) != 1 or not proofs):
        raise _UsageError("--receipt goes with exactly one proof (it pins the proof's root)")
    if not proofs:
        return
    what = f"{proofs[0]} is a proof" if len(files) > 1 else "a proof is verified"
    if args.expected_head is not None:
        raise _UsageError(f"--expected-head cannot apply to a proof ({what}; a proof has no chain_head)")
    if args.evidence is not None:
        raise _UsageError(f"--evidence cannot apply to a proof ({what}; its content is inside it)")
    if (args.key or args.trusted_keys) and args.receipt is None:
        raise _UsageError(f"--key/--trusted-keys apply to a proof only with --receipt ({what}; "
                          "a proof carries no signature)")
    if args.receipt is not None and not (args.key or args.trusted_keys):
        raise _UsageError("--receipt pins a proof's root only with --key or --trusted-keys")
    if args.receipt is not None and not os.path.isfile(args.receipt):
        raise _UsageError(f"--receipt {args.receipt}: no such file")


def _run(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.evidence and len(args.paths) != 1:
        raise _UsageError("--evidence goes with exactly one receipt")
    if args.evidence and os.path.isdir(args.evidence):
        raise _UsageError(f"--evidence {args.evidence}: a directory, not an evidence file")
    if args.evidence and not os.path.isfile(args.evidence):
        raise _UsageError(f"--evidence {args.evidence}: no such file")
    trusted = _trusted_ids(args)
    expected_root = _hex_arg("--expected-root", args.expected_root)
    expected_head = _hex_arg("--expected-head", args.expected_head)
    files = _expand(args.paths)
    _refuse_for_proofs(args, files)
    reports = []
    for path, is_proof in files:
        if path == _STDIN and args.proof:
            report = verify_proof(sys.stdin.buffer.read(MAX_INPUT_BYTES + 1), expected_root=expected_root,
                                  receipt=args.receipt, trusted_key_ids=trusted)
            report.source = "(standard input)"
            reports.append(report)
        elif path == _STDIN:
            report = verify_receipt(sys.stdin.buffer.read(MAX_INPUT_BYTES + 1), evidence=args.evidence,
                                    trusted_key_ids=trusted, expected_root=expected_root,
                                    expected_head=expected_head)
            report.source = "(standard input)"
            reports.append(report)
        elif is_proof or args.proof:
            reports.append(verify_proof(path, expected_root=expected_root, receipt=args.receipt,
                                        trusted_key_ids=trusted))
        else:
            reports.append(
                verify_receipt(path, evidence=args.evidence, trusted_key_ids=trusted,
                               expected_root=expected_root, expected_head=expected_head)
            )
    code = max(r.exit_code for r in reports)
    single = len(reports) == 1 and not os.path.isdir(args.paths[0])
    if args.json:
        doc: Any
        if single:
            doc = reports[0].to_dict()
        else:
            counts = {v: sum(r.verdict == v for r in reports) for v in ("VALID", "INVALID", "MALFORMED")}
            doc = {
                "verdict": "VALID" if code == 0 else ("INVALID" if code == 1 else "MALFORMED"),
                "exit_code": code,
                "summary": counts,
                "results": [r.to_dict() for r in reports],
            }
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        for r in reports:
            if r.malformed:
                print(f"{r.source}: MALFORMED: {r.checks[0].detail}")
            else:
                print(r.to_text())
        if not single:
            valid = sum(r.verdict == "VALID" for r in reports)
            print(f"{valid} of {len(reports)} valid")
    if code == 2 and not args.json and single:
        print(f"{_PROG}: {reports[0].checks[0].detail}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``aer1-verify``."""
    try:
        return _run(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return e.code if isinstance(e.code, int) else 2
    except _UsageError as e:
        print(f"{_PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{_PROG}: interrupted", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
