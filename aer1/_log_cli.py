"""``aer1 log``: create a transparency log of receipts and append receipts to it (spec/log.md).

``aer1 log init DIR --origin ORIGIN --key LOGKEY``, ``aer1 log append DIR RECEIPT...`` and
``aer1 log prove DIR RECEIPT...`` (the proofs again, against the current checkpoint).
Further ``aer1 log`` commands register themselves in :data:`LOG_COMMANDS` (each: a help
line, and what adds its arguments and sets ``func``).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ._cli_json import add_json_argument, checkpoint_json, emit
from ._cli_lazy import lazy_arguments
from .verifier._output import CliError
from .verifier._storage_cli import add_storage_argument, use_storage_options

if TYPE_CHECKING:
    from ._logdir import Logged

__all__ = ["LOG_COMMANDS", "add_log_arguments"]


@contextmanager
def _failing(command: str, log: str, refused: tuple[type[Exception], ...]) -> Iterator[None]:
    """Turn what ``command`` on the log at ``log`` refuses (``refused``) or cannot read or write into one line."""
    try:
        yield
    except refused as e:
        raise CliError(f"{command}: {e}") from e
    except OSError as e:
        where = f"{e.filename}: " if e.filename and str(e.filename) != str(log) else ""
        raise CliError(f"{command} {log}: {where}{e.strerror or e}") from e


def _logged(args: argparse.Namespace, command: str, done: Sequence[tuple[str, int] | Logged], line: str) -> int:
    """The result of ``append`` or ``prove``: each receipt's index and proof, and the log's checkpoint now.

    For ``append``, each receipt also says whether the log held it before (``logged_before``)."""
    from ._logdir import LogDir, Logged
    from ._tlog import proof_path_for

    receipts: list[dict[str, Any]] = []
    lines = []
    for d in done:
        r: dict[str, Any] = {"path": d[0], "index": d[1], "proof": proof_path_for(d[0])}
        if isinstance(d, Logged):
            r["logged_before"] = d.before
        receipts.append(r)
        lines.append(line.format(**r) + ("; it was logged before: not logged again" if r.get("logged_before") else ""))
    doc = {"dir": args.dir, "checkpoint": checkpoint_json(LogDir(args.dir).checkpoint()[0]), "receipts": receipts}
    return emit(args, command, doc, lines)


def _init(args: argparse.Namespace) -> int:
    use_storage_options(args)
    from ._logdir import LOG_VKEY, init_log
    from ._signing import KeyFileError
    from ._storage import is_url
    from .errors import LogMalformed, UsageError

    with _failing("log init", args.dir, (KeyFileError, LogMalformed, UsageError)):
        vkey = init_log(args.dir, args.origin, args.key)
    where = f"{args.dir.rstrip('/')}/{LOG_VKEY}" if is_url(args.dir) else os.path.join(args.dir, LOG_VKEY)
    return emit(args, "log init", {"dir": args.dir, "origin": args.origin, "vkey": vkey, "vkey_file": where},
                [f"created log {args.origin} in {args.dir}; verifier key (also in {where}):", vkey])


def _append(args: argparse.Namespace) -> int:
    use_storage_options(args)
    from ._cli_input import read_receipt
    from ._logdir import append_receipts
    from ._signing import KeyFileError
    from .errors import LogInvalid, LogMalformed, UsageError

    receipts = [(path, read_receipt(path)) for path in args.receipts]
    with _failing("log append", args.dir, (KeyFileError, LogMalformed, LogInvalid, UsageError)):
        done = append_receipts(args.dir, receipts, key=args.key)
    return _logged(args, "log append", done, "{path}: logged at index {index}; proof {proof}")


def _prove(args: argparse.Namespace) -> int:
    use_storage_options(args)
    from ._cli_input import read_receipt
    from ._logdir import prove_receipts
    from .errors import LogInvalid, LogMalformed, UsageError

    receipts = [(path, read_receipt(path)) for path in args.receipts]
    with _failing("log prove", args.dir, (LogMalformed, LogInvalid, UsageError)):
        done = prove_receipts(args.dir, receipts)
    return _logged(args, "log prove", done, "{path}: entry {index}; proof {proof} against the current checkpoint")


def _init_arguments(p: argparse.ArgumentParser) -> None:
    add_storage_argument(p)
    p.add_argument("dir", metavar="DIR", help="a new or empty folder for the log, or a storage prefix (s3://bucket/log)")
    p.add_argument("--origin", required=True, help="the log's name, e.g. example.com/receipts (no spaces, no '+')")
    p.add_argument("--key", required=True, metavar="LOGKEY", help="the log's Ed25519 private key (from aer1 keygen)")
    add_json_argument(p)
    p.set_defaults(func=_init)


def _log_and_receipts(p: argparse.ArgumentParser, receipts: str) -> None:
    """The arguments ``append`` and ``prove`` share: the storage options, the log folder, the receipts."""
    add_storage_argument(p)
    p.add_argument("dir", metavar="DIR", help="the log folder")
    p.add_argument("receipts", nargs="+", metavar="RECEIPT", help=receipts)


def _append_arguments(p: argparse.ArgumentParser) -> None:
    _log_and_receipts(p, "receipt files: one batch, one new checkpoint")
    p.add_argument("--key", metavar="LOGKEY", help="the log's private key (default: the one named at init)")
    add_json_argument(p)
    p.set_defaults(func=_append)


def _prove_arguments(p: argparse.ArgumentParser) -> None:
    _log_and_receipts(p, "logged receipt files")
    add_json_argument(p)
    p.set_defaults(func=_prove)


#: ``aer1 log`` commands: name -> (help line, adds its arguments).
LOG_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "init": ("create an empty log: DIR --origin ORIGIN --key LOGKEY", _init_arguments),
    "append": ("log receipts as one batch and write NAME.tlog-proof beside each", _append_arguments),
    "prove": ("write NAME.tlog-proof again against the current (e.g. cosigned) checkpoint", _prove_arguments),
    "serve": ("serve the log over HTTP: its tiles read-only, entries taken by POST /add (spec/witness.md)",
              lazy_arguments("._log_server", "add_serve_arguments")),
    "witness": ("gather witness cosignatures onto the log's checkpoint (spec/witness.md)",
                lazy_arguments("._log_witness", "add_log_witness_arguments")),
}


def add_log_arguments(p: argparse.ArgumentParser) -> None:
    """The ``aer1 log`` command and its subcommands."""
    sub = p.add_subparsers(dest="log_command", required=True, metavar="COMMAND")
    for name, (help_line, add) in LOG_COMMANDS.items():
        add(sub.add_parser(name, help=help_line, description=help_line))
