"""``aer1-verify``: re-check receipts (or one-step proofs) offline, one line per check.

Exit codes: 0 valid, 1 invalid, 2 usage error or unreadable/malformed input. No input,
option or file name ends in a traceback: every problem is one line on standard error
(with ``--json``, one JSON object on standard output) and exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import stat
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from .._limits import MAX_INPUT_BYTES
from .._signing import KeyFileError, key_id, load_public_key
from ..errors import Aer1Error
from ._archive import SCHEMA, report_doc
from ._auditor import add_auditor_options, auditor_run, check_summary_file
from ._inputs import STDIN, expand_paths, is_folder
from ._output import CliError, OneLineParser, dump_json, exit_now, one_line, run_cli
from ._report import NOT_CHECKED, Report
from ._storage_cli import add_storage_argument, use_storage_options
from ._time_cli import add_time_arguments
from ._trust import Trust

__all__ = ["console", "main", "refuse_unless_regular", "trust_from_options", "trusted_ids"]

_PROG = "aer1-verify"
_KEY_SUFFIXES = (".pub", ".pem")
_STDIN_CHUNK = 4 * 1024 * 1024


def _parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog=_PROG,
        description="Verify AER-1 workflow receipts offline: members, sequence, Merkle root, hash chain, "
        "signature, evidence.",
        epilog="Exit codes: 0 valid, 1 invalid, 2 usage error or unreadable/malformed input.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH",
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
    p.add_argument("--bundle", action="store_true",
                   help="PATH is a bundle folder: a parent receipt and its linked children, verified as one tree")
    p.add_argument("--receipt", metavar="FILE",
                   help="for one proof (or a --bundle folder holding a link proof): a receipt signed by a trusted "
                   "key (--key/--trusted-keys) that pins its root")
    add_storage_argument(p)
    add_time_arguments(p)
    add_auditor_options(p)
    from ._tlog_cli import add_log_arguments

    add_log_arguments(p)
    return p


def refuse_unless_regular(option: str, path: str, noun: str = "a key file") -> None:
    """Refuse ``path`` unless it is a regular file (symlinks followed), before anything reads it."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise CliError(f"{option} {path}: {e.strerror or e}") from e
    if stat.S_ISDIR(mode):
        raise CliError(f"{option} {path}: a directory, not {noun}")
    if not stat.S_ISREG(mode):
        raise CliError(f"{option} {path}: not a regular file")


def trusted_ids(args: argparse.Namespace) -> set[str] | None:
    sources: list[tuple[str, str]] = [("--key", k) for k in args.key]
    if args.trusted_keys:
        d = args.trusted_keys
        if not os.path.isdir(d):
            raise CliError(f"--trusted-keys {d}: not a directory")
        try:
            names = os.listdir(d)
        except OSError as e:
            raise CliError(f"--trusted-keys {d}: {e.strerror or e}") from e
        found = sorted(os.path.join(d, n) for n in names if n.endswith(_KEY_SUFFIXES))
        if not found:
            raise CliError(f"--trusted-keys {d}: no *.pub or *.pem files")
        sources.extend(("--trusted-keys", f) for f in found)
    if not sources:
        return None
    ids = set()
    for option, src in sources:
        if option == "--key" and os.path.isdir(src):
            raise CliError(f"key file {src} is a directory (use --trusted-keys for a directory of keys)")
        if option == "--key" and not os.path.lexists(src):
            raise CliError(f"key file {src} does not exist")
        refuse_unless_regular(option, src)
        try:
            ids.add(key_id(load_public_key(src)))
        except KeyFileError as e:
            raise CliError(f"key file {src}: {e}") from e
    return ids


def _hex_arg(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    v = value.strip().lower()
    if len(v) != 64 or any(c not in "0123456789abcdef" for c in v):
        raise CliError(f"{name} must be 64 hex characters, got {value!r}")
    return v


def _refuse_for_proofs(args: argparse.Namespace, files: list[tuple[str, bool, str | None]]) -> None:
    """Options that cannot apply to what is verified are refused, never ignored."""
    proofs = [path for path, is_proof, _ in files if is_proof or args.proof]
    if args.receipt is not None and (len(files) != 1 or not proofs):
        raise CliError("--receipt goes with exactly one proof (it pins the proof's root)")
    if not proofs:
        return
    what = f"{proofs[0]} is a proof" if len(files) > 1 else "a proof is verified"
    if args.expected_head is not None:
        raise CliError(f"--expected-head cannot apply to a proof ({what}; a proof has no chain_head)")
    if args.evidence is not None:
        raise CliError(f"--evidence cannot apply to a proof ({what}; its content is inside it)")
    if args.tsa_roots is not None or args.keyring is not None:
        raise CliError(f"--tsa-roots/--keyring cannot apply to a proof ({what}; a proof carries no token or signature)")
    if (args.key or args.trusted_keys) and args.receipt is None:
        raise CliError(f"--key/--trusted-keys apply to a proof only with --receipt ({what}; "
                       "a proof carries no signature)")
    if args.receipt is not None and not (args.key or args.trusted_keys):
        raise CliError("--receipt pins a proof's root only with --key or --trusted-keys")
    if args.receipt is not None:
        refuse_unless_regular("--receipt", args.receipt, "a receipt file")


def _verify_stdin(args: argparse.Namespace, trust: Trust) -> Report:
    """Standard input, spooled to a private file first: a large receipt is then streamed like a file.

    With ``--proof`` the spooled file is checked as a proof, under the same read limits as a
    proof file.
    """
    import tempfile  # only standard input is spooled

    with tempfile.TemporaryDirectory(prefix="aer1-verify-") as folder:
        spooled = os.path.join(folder, "stdin.json")
        with open(spooled, "wb") as f:
            left = MAX_INPUT_BYTES + 1  # one byte more than the limit: the verifier then names the limit
            while left > 0:
                chunk = sys.stdin.buffer.read(min(_STDIN_CHUNK, left))
                if not chunk:
                    break
                f.write(chunk)
                left -= len(chunk)
        report = trust.verify_proof(spooled) if args.proof else trust.verify_receipt(spooled, evidence=args.evidence)
    report.source = "(standard input)"
    evidence_check = next((c for c in report.checks if c.name == "evidence"), None)
    if args.evidence is None and evidence_check is not None and evidence_check.status == NOT_CHECKED:
        evidence_check.detail = "no evidence file (give --evidence with standard input)"
    for c in report.checks:  # messages name the spooled file: name standard input instead
        c.detail = c.detail.replace(spooled, "(standard input)")
    return report


#: What ``--summary FILE`` takes besides itself: any other option would be silently ignored.
_SUMMARY_OPTIONS = frozenset({"summary", "key", "trusted_keys", "json", "help", "storage_options"})


def _refuse_beside_summary(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse an option ``--summary`` does not use (a pinned root, a keyring, --jobs...): it checks none of them."""
    given = [max(a.option_strings, key=len) if a.option_strings else str(a.metavar) for a in parser._actions
             if a.dest not in _SUMMARY_OPTIONS and getattr(args, a.dest, None) not in (parser.get_default(a.dest), [])]
    if given:
        raise CliError(f"--summary FILE goes alone (with --key/--trusted-keys and --json): got {', '.join(given)}, "
                       "which a summary check would not use")


def _run(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    use_storage_options(args)
    if args.summary is not None:
        _refuse_beside_summary(parser, args)
        return check_summary_file(args, Trust(_frozen(trusted_ids(args))))
    if not args.paths and not (args.log or args.complete or args.since):  # --since alone: told it needs --log
        raise CliError(f"the following arguments are required: PATH (usage: {_PROG} --help)")
    if args.evidence and len(args.paths) != 1:
        raise CliError("--evidence goes with exactly one receipt")
    if args.evidence:
        refuse_unless_regular("--evidence", args.evidence, "an evidence file")
    trust = trust_from_options(args)
    policy = trust.policy
    if (args.log_key or args.witness or args.log or args.complete or args.since or args.min_witnesses is not None
            or getattr(policy, "log_keys", None) or getattr(policy, "witnesses", None)
            or getattr(policy, "min_witnesses", None) or "log" in getattr(policy, "require", ())):
        from ._tlog_cli import log_only_run, log_trust, prepare_log

        if args.bundle or args.proof:
            raise CliError("the log options apply to receipts: not with --bundle or --proof")
        prepare_log(args, log_trust(args, policy))
        trust = dataclasses.replace(trust, log=args.log_trust)
        if not args.paths:
            return log_only_run(args)
    if args.bundle:
        return _run_bundle(args, trust)
    files = expand_paths(args.paths)
    _refuse_for_proofs(args, files)
    if files[0][0] == STDIN and (args.junit or args.attest):
        raise CliError("--junit and --attest name the files verified: not with - (standard input)")
    if files[0][0] == STDIN and args.dask is not None:
        raise CliError("--dask verifies many receipts: not - (standard input)")
    if files[0][0] != STDIN:
        return auditor_run(args, files, trust, single=len(files) == 1 and not is_folder(args.paths[0]))
    reports = [_verify_stdin(args, trust)]  # standard input goes alone
    code = max(r.exit_code for r in reports)
    single = len(reports) == 1 and not os.path.isdir(args.paths[0])
    counts = {v: sum(r.verdict == v for r in reports) for v in ("VALID", "INVALID", "MALFORMED")}
    if args.json:
        doc: Any
        if single:
            doc = report_doc(reports[0])
        else:
            doc = {
                "verdict": "VALID" if code == 0 else ("INVALID" if code == 1 else "MALFORMED"),
                "exit_code": code,
                "summary": counts,
                "results": [r.to_dict() for r in reports],
            }
        sys.stdout.write(dump_json(doc))
    else:
        for r in reports:
            if r.malformed:
                print(one_line(f"{r.source}: MALFORMED: {r.checks[0].detail}"))
            else:
                print(r.to_text(every=args.verbose))
        if not single:
            print(f"{counts['VALID']} valid, {counts['INVALID']} invalid, {counts['MALFORMED']} unreadable "
                  f"(of {len(reports)})")
    if code == 2 and not args.json and single:
        print(one_line(f"{_PROG}: {reports[0].checks[0].detail}"), file=sys.stderr)
    return code


def _run_bundle(args: argparse.Namespace, trust: Trust) -> int:
    """``--bundle DIR``: the tree of linked receipts in one folder, one verdict."""
    if len(args.paths) != 1 or args.paths[0] == STDIN:
        raise CliError("--bundle goes with exactly one folder")
    refused = (("--evidence", args.evidence), ("--proof", args.proof),
               ("--policy", args.policy), ("--require", args.require), ("--tsa-roots", args.tsa_roots),
               ("--tsa-policy", args.tsa_policy), ("--keyring", args.keyring), ("--junit", args.junit),
               ("--attest", args.attest), ("--only-failures", args.only_failures), ("--verbose", args.verbose),
               ("--jobs", args.jobs), ("--dask", args.dask))
    for option, given in refused:
        if given:
            raise CliError(f"{option} cannot apply to a bundle (it verifies the receipts in the folder with "
                           "checks 1 to 8, each with its evidence beside it)")
    if args.receipt:
        refuse_unless_regular("--receipt", args.receipt, "a receipt file")
    from ._bundle import BundleError

    try:
        bundle = trust.verify_bundle(args.paths[0])
    except BundleError as e:
        raise CliError(str(e)) from e
    sys.stdout.write(dump_json(bundle.to_dict()) if args.json else bundle.to_text() + "\n")
    return bundle.exit_code


def _frozen(ids: set[str] | None) -> frozenset[str] | None:
    return None if ids is None else frozenset(ids)


def trust_from_options(args: argparse.Namespace) -> Trust:
    """The options as one :class:`Trust`; the trust files the policy's ``[trust]`` names become the options'.

    Shared with ``aer1 show`` and ``aer1 report``, whose parsers have the options that change a verdict
    but no pinned root, head or receipt.
    """
    if args.tsa_policy is not None and args.tsa_roots is None and not args.policy:
        raise CliError("--tsa-policy goes with --tsa-roots")
    try:
        trust = Trust.load(key_ids=trusted_ids(args), keyring=args.keyring, tsa_roots=args.tsa_roots,
                           tsa_policy=args.tsa_policy, policy=args.policy, require=args.require,
                           expected_root=_hex_arg("--expected-root", getattr(args, "expected_root", None)),
                           expected_head=_hex_arg("--expected-head", getattr(args, "expected_head", None)),
                           receipt=getattr(args, "receipt", None))
    except Aer1Error as e:  # a key, keyring, TSA root or policy that cannot be used; options that cannot hold
        raise CliError(str(e)) from e
    args.keyring, args.tsa_roots, args.tsa_policy = (trust.files[k] for k in ("keyring", "tsa_roots", "tsa_policy"))
    return trust


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``aer1-verify``."""
    args = list(sys.argv[1:] if argv is None else argv)
    return run_cli(_PROG, args, _run, {"schema": SCHEMA, "verdict": "MALFORMED"})


def console() -> NoReturn:
    """The ``aer1-verify`` console script: :func:`main`, then exit without the interpreter's teardown."""
    exit_now(main())


if __name__ == "__main__":
    sys.exit(main())
