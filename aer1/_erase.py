"""``aer1 erase``: delete committed fields' disclosures and write signed erasure records beside the receipt.

The receipt and its evidence are never written: only the disclosures file loses lines and the
erasure records file gains them, each replaced whole and durably (temporary file, fsync,
rename, fsync of the folder), so a crash leaves each file old or new, never torn. The
records file is written first: a crash between the two leaves the disclosure in place (the
field still verifies as disclosed) and a record that, with no disclosure missing, counts for
nothing; running the command again completes the erasure.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Iterator
from time import time_ns
from typing import Any

from ._canonical import exact_bytes
from ._commit import (
    commitment,
    disclosures_header,
    disclosures_path_for,
    erasures_path_for,
    leaves,
    parse_path,
    pointer,
)
from ._erasure import erasure_record
from ._outfile import replace_file
from ._receipt import evidence_path_for
from ._timefmt import format_ns
from .errors import ErasureError, MalformedInputError

__all__ = ["add_erase_arguments", "erase_receipt", "holds_value", "receipts_in"]

#: Picks the disclosures to erase: (seq, path, value) -> True.
Selector = Callable[[int, str, Any], bool]


def holds_value(value: Any, text: str, contains: bool = False) -> bool:
    """True when a disclosed ``value`` is ``text`` or holds it as a string anywhere inside (a committed object).

    ``contains``: a string holding ``text`` anywhere counts too ("customer <alice@example.com>").
    """
    return any(type(v) is str and (v == text or (contains and text in v)) for v in leaves(value))


def _read_all(path: str) -> bytes:
    if not os.path.lexists(path):
        return b""
    from .verifier._parse import open_regular

    with open_regular(path, what="an erasure records file") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        raise ErasureError(f"{path} ends in a torn line: repair it before erasing more")
    return data


def erase_receipt(receipt: dict[str, Any], receipt_path: str, select: Selector, reason: str, key: Any,
                  erased_at: str | None = None) -> list[dict[str, Any]]:
    """Erase each disclosure of ``receipt`` that ``select`` picks; returns the erasure records written.

    Every disclosure picked is first checked against the evidence (its content hashes to its
    step's ``receipt_hash`` and holds the commitment at that path): nothing is signed for a
    field the receipt does not commit.
    """
    from .verifier._disclosures import committed_fields, read_disclosures
    from .verifier._parse import MalformedInput

    if not isinstance(receipt.get("chain_head"), str):
        raise ErasureError(f"{receipt_path} is not an aer1-chain-v1 receipt: an erasure record binds its chain_head")
    evidence = evidence_path_for(receipt_path)
    disclosures_file, records_file = disclosures_path_for(evidence), erasures_path_for(evidence)
    if not os.path.lexists(disclosures_file):
        return []
    try:
        lines = read_disclosures(disclosures_file, receipt.get("workflow_id"))
        picked = [(n, d) for n, _, d in lines if select(d[0], d[2], d[3])]
        committed = committed_fields(receipt, evidence) if picked else {}
    except MalformedInput as e:
        raise ErasureError(f"{receipt_path}: {e}") from e
    except OSError as e:
        raise ErasureError(f"{receipt_path}: cannot read {e.filename}: {e.strerror or e}") from e
    if not picked:
        return []
    when = erased_at if erased_at is not None else format_ns(time_ns())
    records = []
    for _, (seq, salt, where, value) in picked:
        digest = commitment(salt, where, value)
        if committed.get((seq, where)) != digest:
            raise ErasureError(f"{receipt_path}: step {seq}'s evidence does not commit {where} to its disclosure "
                               "(evidence and disclosures do not match): nothing erased")
        records.append(erasure_record(receipt, seq, where, digest, reason, key, when))
    old = _read_all(records_file)
    new = old + b"".join(exact_bytes(r) + b"\n" for r in records)
    replace_file(records_file, lambda f: f.write(new), durable=True)
    gone = {n for n, _ in picked}
    # The lines read and checked above, less the erased ones: never a second reading of the file.
    remaining = disclosures_header(receipt["workflow_id"]) + b"".join(line for n, line, _ in lines if n not in gone)
    replace_file(disclosures_file, lambda f: f.write(remaining), durable=True)
    return records


def receipts_in(folder: str) -> Iterator[str]:
    """Every receipt under ``folder`` that has a disclosures file beside its evidence, in name order."""
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            if name.endswith(".json") and os.path.lexists(disclosures_path_for(evidence_path_for(path))):
                yield path


def _selector(args: argparse.Namespace) -> Selector:
    if args.value is not None:
        text, contains = args.value, args.contains
        if not text:
            raise ErasureError("--value must not be empty")
        return lambda seq, where, value: holds_value(value, text, contains)
    if args.step is None or args.path is None:
        raise ErasureError("give --step N and --path P, or --value TEXT")
    try:
        want = pointer(parse_path(args.path))
    except ValueError as e:
        raise ErasureError(f"--path: {e}") from e
    step = args.step
    return lambda seq, where, value: seq == step and where == want


def _erase(args: argparse.Namespace) -> int:
    from .verifier._output import CliError

    try:
        return _erase_all(args)
    except (ErasureError, MalformedInputError, ValueError) as e:  # a key file, a reason: one line, exit 2
        raise CliError(str(e)) from e


def _erase_all(args: argparse.Namespace) -> int:
    from ._cli_input import read_receipt
    from ._signing import load_private_key

    if args.value is not None and (args.step is not None or args.path is not None):
        raise ErasureError("give --value TEXT, or --step N with --path P, not both")
    select = _selector(args)
    key = load_private_key(args.key)
    if os.path.isdir(args.target):
        if args.value is None:
            raise ErasureError("a folder is searched by --value TEXT (--step and --path name one receipt's field)")
        receipts = list(receipts_in(args.target))
    else:
        receipts = [args.target]
    erased: list[dict[str, Any]] = []
    for path in receipts:
        for r in erase_receipt(read_receipt(path), path, select, args.reason, key):
            erased.append({"receipt": path, "seq": r["seq"], "path": r["path"], "commitment": r["commitment"],
                           "erased_at": r["erased_at"], "key_id": r["signature"]["key_id"]})
    if not erased and args.value is None:
        raise ErasureError(f"{args.target} has no disclosure of step {args.step}'s {args.path}")
    if args.json:
        print(json.dumps({"erased": erased}, ensure_ascii=True))
    else:
        for e in erased:
            print(f"erased {e['receipt']}: step {e['seq']} {e['path']} (commitment {e['commitment'][:16]}...)")
        print(f"{len(erased)} field(s) erased in {len({e['receipt'] for e in erased})} receipt(s)")
    return 0


def add_erase_arguments(e: argparse.ArgumentParser) -> None:
    """The ``aer1 erase`` arguments (spec/erasure.md)."""
    e.add_argument("target", help="a receipt file, or a folder of receipts (with --value)")
    e.add_argument("--step", type=int, help="the step's seq (1-based)")
    e.add_argument("--path", help="the field: a JSON Pointer (/arguments/email) or dotted (arguments.email)")
    e.add_argument("--value", help="erase every disclosure of this value (a string), in one receipt or a folder")
    e.add_argument("--contains", action="store_true",
                   help="with --value: also erase disclosed strings that contain the value")
    e.add_argument("--reason", required=True, help="why (the request this erasure answers); in the signed record")
    e.add_argument("--key", required=True, help="the Ed25519 private key that signs the erasure records")
    e.add_argument("--json", action="store_true", help="one JSON object: the fields erased")
    e.set_defaults(func=_erase)
