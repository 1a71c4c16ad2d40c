"""``aer1 timestamp``, ``aer1 key revoke|retire`` and the keyring entry ``aer1 keygen`` writes.

A keyring is rewritten whole and atomically; a receipt gets its new tokens (and, when it
is signed, a new signature over them with the same key) written atomically too.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
from typing import Any

from ._imprint import DEFAULT_TSA_TIMEOUT_S, KEY_PROOF_MEMBER, MAX_TIMESTAMPS, MAX_TSA_TIMEOUT_S, TIMESTAMPS_MEMBER
from ._keyring import KeyEntry, KeyringError, dump_keyring, format_time, new_entry, parse_time
from ._layout import receipt_json
from ._outfile import replace_file
from ._receipt import evidence_path_for, is_hex64
from ._signing import KeyError_, key_id, load_private_key, load_public_key, sign_receipt
from .verifier import verify_receipt
from .verifier._keyring import load_keyring
from .verifier._output import CliError

__all__ = ["add_key_arguments", "add_keygen_keyring_arguments", "add_timestamp_arguments", "check_keygen_arguments",
           "stamp_receipt", "write_keygen_entry"]

_KEYRING_MODE = 0o644
#: Checks a receipt must pass before new tokens are added and it is signed again.
_MUST_PASS = ("members", "sequence", "merkle_root", "chain", "signature")


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def _time_arg(option: str, text: str | None) -> _dt.datetime | None:
    try:
        return None if text is None else parse_time(text, option)
    except KeyringError as e:
        raise CliError(str(e)) from e


def _read_keyring(path: str, *, may_be_missing: bool) -> dict[str, KeyEntry]:
    if may_be_missing and not os.path.lexists(path):
        return {}
    try:
        return dict(load_keyring(path))
    except ValueError as e:
        raise CliError(str(e)) from e


def _write_whole(path: str, data: bytes) -> None:
    """Write ``path`` whole or not at all (a temporary file renamed over it)."""
    replace_file(path, lambda f: f.write(data))


def _write_keyring(path: str, entries: dict[str, KeyEntry]) -> None:
    _write_whole(path, dump_keyring(entries))
    os.chmod(path, _KEYRING_MODE)


# ------------------------------------------------------------------ keygen


def add_keygen_keyring_arguments(p: argparse.ArgumentParser) -> None:
    """``aer1 keygen`` options for the keyring entry it writes."""
    p.add_argument("--keyring", metavar="FILE",
                   help="add the new key to this keyring (created if missing; default: NAME.keyring.json)")
    p.add_argument("--valid-until", metavar="TIME", help="end of the key's window (RFC 3339 UTC, ...Z)")


def write_keygen_entry(args: argparse.Namespace, public_pem: bytes) -> str:
    """Add the new key to its keyring (valid from now); returns the keyring's path."""
    path = args.keyring or f"{args.out}.keyring.json"
    if args.keyring is None and os.path.lexists(path) and not args.force:
        raise CliError(f"{path} exists (use --force to replace it, or --keyring FILE to add to a keyring)")
    entries = _read_keyring(path, may_be_missing=True) if args.keyring is not None else {}
    raw = load_public_key(public_pem).public_bytes_raw()
    try:
        entry = new_entry(raw, _now(), _time_arg("--valid-until", args.valid_until))
    except KeyringError as e:
        raise CliError(str(e)) from e
    entries[entry.key_id] = entry
    _write_keyring(path, entries)
    return path


def check_keygen_arguments(args: argparse.Namespace) -> None:
    """Refuse a bad --valid-until or an unusable --keyring before any key is written."""
    until = _time_arg("--valid-until", args.valid_until)
    if until is not None and until <= _now():
        raise CliError(f"--valid-until {args.valid_until} is not in the future")
    if args.keyring is not None:
        _read_keyring(args.keyring, may_be_missing=True)


# ------------------------------------------------------------------ key revoke / retire


def add_key_arguments(k: argparse.ArgumentParser) -> None:
    """``aer1 key revoke`` and ``aer1 key retire``: the subcommands of ``k``, each with its handler."""
    ks = k.add_subparsers(dest="key_command", required=True)
    r = ks.add_parser("revoke", help="mark a key revoked from a time on (default: now), with a reason")
    r.add_argument("keyring")
    r.add_argument("key", help="the key id (64 hex) or a public/private key file")
    r.add_argument("--reason", required=True, help="why (e.g. compromised, superseded)")
    r.add_argument("--at", metavar="TIME", help="revoked from this time on (RFC 3339 UTC, ...Z; default: now)")
    r.set_defaults(func=_revoke)
    t = ks.add_parser("retire", help="end a key's window (rotation): receipts it signed before stay valid")
    t.add_argument("keyring")
    t.add_argument("key", help="the key id (64 hex) or a public/private key file")
    t.add_argument("--at", metavar="TIME", help="the window ends at this time (RFC 3339 UTC, ...Z; default: now)")
    t.set_defaults(func=_retire)


def _entry_for(args: argparse.Namespace) -> tuple[dict[str, KeyEntry], KeyEntry]:
    entries = _read_keyring(args.keyring, may_be_missing=False)
    wanted = args.key.strip().lower()
    if not is_hex64(wanted):
        try:
            wanted = key_id(load_public_key(args.key))
        except KeyError_ as e:
            raise CliError(f"{args.key}: not a key id (64 hex) nor a readable key: {e}") from e
    if wanted not in entries:
        raise CliError(f"key {wanted} is not in {args.keyring}")
    return entries, entries[wanted]


def _revoke(args: argparse.Namespace) -> int:
    entries, entry = _entry_for(args)
    reason = args.reason.strip()
    if not reason or len(reason) > 512:
        raise CliError("--reason: want non-empty text of at most 512 characters")
    if entry.revoked_at is not None:
        raise CliError(f"key {entry.key_id} is already revoked at {format_time(entry.revoked_at)}")
    at = _time_arg("--at", args.at) or _now()
    entries[entry.key_id] = KeyEntry(entry.key_id, entry.public_key, entry.valid_from, entry.valid_until, at, reason)
    _write_keyring(args.keyring, entries)
    print(f"key {entry.key_id} revoked at {format_time(at)} ({reason}) in {args.keyring}")
    return 0


def _retire(args: argparse.Namespace) -> int:
    entries, entry = _entry_for(args)
    at = _time_arg("--at", args.at) or _now()
    if at <= entry.valid_from:
        raise CliError(f"--at {format_time(at)} is not after the key's valid_from {format_time(entry.valid_from)}")
    if entry.valid_until is not None and entry.valid_until < at:
        raise CliError(f"key {entry.key_id} already ends at {format_time(entry.valid_until)}")
    entries[entry.key_id] = KeyEntry(entry.key_id, entry.public_key, entry.valid_from, at, entry.revoked_at,
                                     entry.revocation_reason)
    _write_keyring(args.keyring, entries)
    print(f"key {entry.key_id} valid until {format_time(at)} in {args.keyring}")
    return 0


# ------------------------------------------------------------------ timestamp


def add_timestamp_arguments(t: argparse.ArgumentParser) -> None:
    """``aer1 timestamp RECEIPT --tsa URL``: the arguments of ``t``; the caller sets ``func``."""
    t.add_argument("receipt")
    t.add_argument("--tsa", metavar="URL", action="append", required=True, help="TSA URL; repeatable")
    t.add_argument("--timeout", type=float, default=DEFAULT_TSA_TIMEOUT_S,
                   help=f"seconds to wait for the TSAs (default {DEFAULT_TSA_TIMEOUT_S:g})")
    t.add_argument("--key", metavar="FILE", help="the receipt's signing key (a signed receipt is signed again)")
    t.add_argument("-o", "--output", help="write here (default: replace the receipt)")


def stamp_receipt(args: argparse.Namespace, receipt: dict[str, Any]) -> int:
    """Add a token from each ``--tsa`` to ``receipt`` (re-signing it) and write it; 2 if no TSA gave one."""
    import shutil

    from ._recover import same_file
    from ._timestamp import add_key_proof, normalize_tsas, request_timestamps  # the TSA client: only here

    if not 0 < args.timeout <= MAX_TSA_TIMEOUT_S:
        raise CliError(f"--timeout must be in (0, {MAX_TSA_TIMEOUT_S:g}] seconds, got {args.timeout:g}")
    try:
        tsas = normalize_tsas(args.tsa)
    except ValueError as e:
        raise CliError(f"--tsa: {e}") from e
    report = verify_receipt(receipt)
    bad = [c for c in report.checks if c.name in _MUST_PASS and c.status != "PASS" and
           not (c.name == "signature" and "signature" not in receipt)]
    if "chain_head" not in receipt or bad:
        why = bad[0].detail if bad else "not an aer1-chain-v1 receipt (no chain_head)"
        raise CliError(f"{args.receipt} cannot be timestamped: {why}")
    key = None
    if "signature" in receipt:
        if args.key is None:
            raise CliError(f"{args.receipt} is signed: give its signing key (--key) to sign it again over the tokens")
        try:
            key = load_private_key(args.key)
        except KeyError_ as e:
            raise CliError(f"--key {args.key}: {e}") from e
        if key_id(key.public_key()) != receipt["signature"]["key_id"]:
            raise CliError(f"--key {args.key} is not the key that signed {args.receipt}")
    kept = [e for e in receipt.get(TIMESTAMPS_MEMBER, []) if "token" in e]
    if len(kept) + len(tsas) > MAX_TIMESTAMPS:
        raise CliError(f"a receipt holds at most {MAX_TIMESTAMPS} tokens; it has {len(kept)}")
    body = {k: v for k, v in receipt.items() if k not in ("signature", TIMESTAMPS_MEMBER)}
    if not kept and KEY_PROOF_MEMBER not in body:  # tokens already there are over the members without one
        add_key_proof(body, key)
    new = request_timestamps(body, tsas, args.timeout, warn=False)
    failed = [e for e in new if "token" not in e]
    if failed:
        raise CliError("no token from " + "; ".join(f"{e['tsa']}: {e['error']}" for e in failed)
                       + f" ({args.receipt} left unchanged)")
    body[TIMESTAMPS_MEMBER] = kept + new
    if key is not None:
        body["signature"] = sign_receipt(body, key)
    out = args.output or args.receipt
    evidence, evidence_out = evidence_path_for(args.receipt), evidence_path_for(out)
    if same_file(out, evidence):
        raise CliError(f"the output {out} is the receipt's evidence file; choose another name")
    _write_whole(out, receipt_json(body))
    if not same_file(evidence_out, evidence) and os.path.isfile(evidence):  # same steps: same evidence
        shutil.copyfile(evidence, evidence_out)
    print(f"{len(new)} token(s) added; {out} written" + ("" if key is None else " and signed again"),
          file=sys.stdout)
    return 0
