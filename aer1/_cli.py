"""``aer1``: key generation, one-step proofs, timelines, and verification.

No input, option or file name ends in a traceback: every problem is one line on standard
error (with ``recover --json``, one JSON object on standard output) and exit code 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

from ._cli_input import read_receipt
from ._cli_lazy import lazy_arguments
from .verifier._output import CliError, OneLineParser, dump_json, exit_now, one_line, run_cli

_T = TypeVar("_T")

__all__ = ["console", "main"]

_PROG = "aer1"
_PRIVATE_MODE = 0o600
_PUBLIC_MODE = 0o644
#: Fewest and most rows ``aer1 show`` prints (a long timeline keeps its first and last steps).
MIN_ROWS, MAX_ROWS = 10, 100_000


def _write_new(path: str, data: bytes, mode: int) -> None:
    """Write ``data`` to a new file of exactly ``mode``: an existing file, link or FIFO there is replaced,
    never written through (so an old key's mode is not kept and nothing blocks)."""
    if os.path.lexists(path):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), mode)  # whatever the umask
        f.write(data)


def _keygen(args: argparse.Namespace) -> int:
    from ._lifecycle_cli import check_keygen_arguments, write_keygen_entry
    from ._outfile import check_folder
    from ._signing import generate_key_pair, key_id, load_public_key

    private_path, public_path = f"{args.out}.key", f"{args.out}.pub"
    for p in (private_path, public_path):
        if os.path.lexists(p) and not args.force:
            raise CliError(f"{p} exists (use --force to replace it)")
    check_folder(private_path)
    check_keygen_arguments(args)
    pem_private, pem_public = generate_key_pair()
    _write_new(private_path, pem_private, _PRIVATE_MODE)
    _write_new(public_path, pem_public, _PUBLIC_MODE)
    keyring = write_keygen_entry(args, pem_public)
    print(f"private key: {private_path}\npublic key:  {public_path}\nkeyring:     {keyring}\nkey id:      "
          f"{key_id(load_public_key(pem_public))}")
    return 0


def _evidence_content(path: str, seq: int) -> object:
    """Step ``seq``'s content from an evidence file, read under the verifier's rules and limits."""
    from .verifier._evidence import evidence_lines, parse_evidence_line

    for number, line in evidence_lines(path):
        if number == 1:
            continue
        record = parse_evidence_line(line, number)
        if isinstance(record, dict) and type(record.get("seq")) is int and record["seq"] == seq:
            return record.get("content")
    return None


def _check_content(receipt: dict[str, Any], seq: int, content: object, evidence: str) -> None:
    """Refuse evidence content that does not hash to step ``seq``: the proof would embed it and fail."""
    from ._canonical import CanonicalizationError
    from ._content_hash import content_hash

    steps = receipt["steps"]
    if content is None or not 1 <= seq <= len(steps):
        return  # no content to embed; an out-of-range step is refused when the proof is built
    try:
        got = content_hash(content)
    except CanonicalizationError as e:
        raise CliError(f"evidence {evidence}: step {seq}'s content has no exact JSON form: {e}") from e
    want = steps[seq - 1]["receipt_hash"]
    if got != want:
        raise CliError(f"evidence {evidence} does not match this receipt (another run's, or edited): "
                       f"step {seq}'s content hashes to {got}, want its receipt_hash {want}")


def _refuse_overwrite(output: str, inputs: Sequence[str]) -> None:
    from ._recover import same_file

    for path in inputs:
        if same_file(output, path):
            raise CliError(f"the output {output} is an input ({path}); choose another name")


def _prove(args: argparse.Namespace) -> int:
    from ._proof import build_step_proof
    from ._receipt import evidence_path_for
    from .verifier._parse import MalformedInput

    receipt = read_receipt(args.receipt)
    evidence = args.evidence or evidence_path_for(args.receipt)
    content = None
    if args.evidence or os.path.lexists(evidence):
        try:
            content = _evidence_content(evidence, args.step)
        except MalformedInput as e:
            raise CliError(f"evidence {evidence} unreadable: {e}") from e
        _check_content(receipt, args.step, content, evidence)
    try:
        proof = build_step_proof(receipt, args.step, content)
    except (ValueError, KeyError, TypeError) as e:
        raise CliError(f"cannot build a proof: {e}") from e
    text = dump_json(proof)
    if args.output:
        from ._outfile import replace_file

        _refuse_overwrite(args.output, [args.receipt, evidence])
        replace_file(args.output, lambda f: f.write(text.encode("ascii")))
        print(f"proof for step {args.step} written to {args.output}")
    else:
        sys.stdout.write(text)
    return 0


def _show(args: argparse.Namespace) -> int:
    """The verdict on the first line, then one row per step (``--json``: the same as one object)."""
    from ._report._model import shown_content, verdict_line
    from ._report._verify import verify_for_view, view_options
    from ._timeline import evidence_contents, format_timeline, step_rows
    from .verifier._evidence import evidence_for

    if not MIN_ROWS <= args.rows <= MAX_ROWS:
        raise CliError(f"--rows must be {MIN_ROWS} to {MAX_ROWS}, got {args.rows}")
    if args.json + args.csv + args.jsonl + args.follow > 1:
        raise CliError("--json, --csv, --jsonl and --follow go one at a time")
    if args.follow:
        from ._follow import follow_cli

        return follow_cli(args.receipt)
    if os.path.isdir(args.receipt):
        raise CliError(f"{args.receipt} is a directory: show takes one receipt (aer1 report takes a folder)")
    opts = view_options(args)
    receipt = read_receipt(args.receipt)
    report = verify_for_view((args.receipt, False, None), opts).report
    verdict = f"verdict: {report.verdict} ({verdict_line(report)})" if report.valid else \
        f"verdict: {report.verdict}: {verdict_line(report)}"
    contents, unread = evidence_contents(evidence_for(args.receipt, args.evidence), MAX_ROWS)
    if args.csv or args.jsonl:  # the rows on standard output, the verdict on standard error
        from ._export import csv_text, export_rows, jsonl_lines

        rows = export_rows(receipt, contents)
        sys.stdout.writelines(csv_text(rows) if args.csv else jsonl_lines(rows))
        print(one_line(verdict + (f" (evidence: {unread})" if unread else "")), file=sys.stderr)
    elif args.json:
        sys.stdout.write(dump_json({
            "source": args.receipt, "verdict": report.verdict, "exit_code": report.exit_code,
            "basis": report.basis(), "reason": verdict_line(report), "goal": receipt.get("goal"),
            "status": receipt.get("status"), "evidence": unread or "read",
            "steps": [r.to_dict() for r in step_rows(receipt, contents, shown_content(report))],
        }))
    else:
        print(format_timeline(receipt, max_rows=args.rows, contents=contents, verdict=one_line(verdict),
                              display=shown_content(report)))
    return 0


def _read_option(flag: str, value: str | None, read: Callable[[str], _T]) -> _T | None:
    """``read(value)`` for an option that was given (None when not); its ValueError is one line for the user."""
    if value is None:
        return None
    try:
        return read(value)
    except ValueError as e:
        raise CliError(f"{flag}: {e}") from e


def _report(args: argparse.Namespace) -> int:
    """``aer1 report``: the HTML page of a receipt, or of every receipt under a folder; exit as aer1-verify."""
    from collections import Counter

    from ._outfile import check_output
    from ._report import write_archive, write_receipt_page
    from ._report._frame import load_frame
    from ._report._trace_url import TraceUrl
    from ._report._verify import expand_paths, view_options
    from .verifier._storage_cli import use_storage_options

    use_storage_options(args)
    opts = view_options(args)
    if args.log is not None:  # refused before anything is read or written
        from .verifier._tlog_cli import check_log_option

        check_log_option(args.log)
    frame = _read_option("--frame", args.frame, load_frame)
    trace_url = _read_option("--trace-url", args.trace_url, TraceUrl)
    tasks = expand_paths(args.path)
    if not tasks:
        raise CliError(f"{args.path}: no receipts (*.json, not proofs) to report on")
    if os.path.isdir(args.path):  # a site of pages: its folder is made as needed
        os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    check_output(args.output)
    _refuse_overwrite(args.output, [t[0] for t in tasks])
    if os.path.isdir(args.path) and args.evidence:
        raise CliError("--evidence goes with exactly one receipt, not a folder")
    log = None
    if args.log is not None and opts.log is not None:  # without a log key, view_options refused --log
        import dataclasses

        from ._report._log import LogRun

        log = LogRun.open(args.log, opts.log)
        opts = dataclasses.replace(opts, log_walked=True)
    if os.path.isdir(args.path):
        outcomes = write_archive(args.path, tasks, opts, args.output, frame, trace_url, log)
    else:
        outcomes = [write_receipt_page(tasks[0], opts, args.output, frame, trace_url, log)]
    code = max(o.report.exit_code for o in outcomes)
    verdicts = Counter(o.report.verdict for o in outcomes)
    fact = None if log is None else log.finish()
    print(one_line(f"{args.output}: {len(outcomes)} receipt(s): {verdicts['VALID']} valid, "
                   f"{verdicts['INVALID']} invalid, {verdicts['MALFORMED']} unreadable"
                   + ("" if fact is None else f"; {fact.summary()}")))
    return code if fact is None else max(code, fact.exit_code)


def _recover(args: argparse.Namespace) -> int:
    from ._receipt import evidence_path_for
    from ._recover import cli_recover

    inputs = [args.journal, *([args.key] if args.key else [])]
    _refuse_overwrite(args.output, inputs)
    _refuse_overwrite(evidence_path_for(args.output), inputs)
    return int(cli_recover(args))


def _keygen_arguments(k: argparse.ArgumentParser) -> None:
    from ._lifecycle_cli import add_keygen_keyring_arguments

    k.add_argument("-o", "--out", default="aer1-signing", help="file name prefix (default: aer1-signing)")
    k.add_argument("--force", action="store_true", help="replace existing files")
    add_keygen_keyring_arguments(k)
    k.set_defaults(func=_keygen)


def _timestamp_arguments(t: argparse.ArgumentParser) -> None:
    from ._lifecycle_cli import add_timestamp_arguments, stamp_receipt

    add_timestamp_arguments(t)
    t.set_defaults(func=lambda a: stamp_receipt(a, read_receipt(a.receipt)))


def _prove_arguments(pr: argparse.ArgumentParser) -> None:
    pr.add_argument("receipt")
    pr.add_argument("--step", type=int, required=True, help="the step's seq (1-based)")
    pr.add_argument("--evidence", help="evidence file (default: beside the receipt)")
    pr.add_argument("-o", "--output", help="output file (default: stdout)")
    pr.set_defaults(func=_prove)


def _show_arguments(sh: argparse.ArgumentParser) -> None:
    from ._report._verify import add_verify_options

    sh.add_argument("receipt")
    sh.add_argument("--rows", type=int, default=60)
    sh.add_argument("--json", action="store_true", help="one JSON object: the verdict and the same rows")
    sh.add_argument("--csv", action="store_true", help="the steps as CSV rows with their content's fields "
                    "(formula cells neutralised); the verdict on standard error")
    sh.add_argument("--jsonl", action="store_true", help="the steps as JSON Lines with their whole content; "
                    "the verdict on standard error")
    sh.add_argument("--follow", action="store_true", help="RECEIPT is a run's journal: print its steps as they "
                    "are journaled until the run is finalized or its writer is gone (spec/report.md)")
    add_verify_options(sh)
    sh.set_defaults(func=_show)


def _report_arguments(rp: argparse.ArgumentParser) -> None:
    from ._report._verify import add_verify_options

    rp.add_argument("path", help="a receipt file, or a folder: every *.json under it")
    rp.add_argument("-o", "--output", required=True,
                    help="the HTML file to write (for a folder: its pages go beside it, the folder made as needed)")
    rp.add_argument("--frame", metavar="NAME", help="add a section mapping what was verified onto obligations: a "
                    "shipped frame (eu-ai-act) or a frame file (spec/report.md)")
    rp.add_argument("--trace-url", metavar="TEMPLATE", help="link the run and each step with a span to a trace "
                    "viewer: an http(s) URL with {trace_id} and optionally {span_id}, e.g. "
                    "https://jaeger.example/trace/{trace_id} (spec/report.md)")
    add_verify_options(rp)
    from .verifier._storage_cli import add_storage_argument

    rp.add_argument("--log", metavar="DIR", help="with --log-key: walk this transparency log (a folder or a storage "
                    "prefix, s3://bucket/log) over the receipts reported on, as aer1-verify --log DIR --complete "
                    "PATH does; the frame's retention item rests on it (spec/report.md)")
    add_storage_argument(rp)
    rp.set_defaults(func=_report)


def _diff_arguments(df: argparse.ArgumentParser) -> None:
    from ._diff_cli import add_diff_arguments, diff_cli

    add_diff_arguments(df)
    df.set_defaults(func=lambda a: diff_cli(a, read_receipt))


def _recover_arguments(rc: argparse.ArgumentParser) -> None:
    from ._recover import add_recover_arguments

    add_recover_arguments(rc)
    rc.set_defaults(func=_recover)


#: Each command: its help line and what adds its arguments and handler. Only the command
#: that runs gets its arguments, so only its modules load (start-up is most of a short run).
_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "keygen": ("write an Ed25519 key pair (NAME.key, NAME.pub) and its keyring entry", _keygen_arguments),
    "key": ("change a key's entry in a keyring (spec/keys.md)", lazy_arguments("._lifecycle_cli", "add_key_arguments")),
    "timestamp": ("add RFC 3161 timestamp tokens to a receipt (spec/timestamp.md)", _timestamp_arguments),
    "prove": ("write one step with its Merkle audit path", _prove_arguments),
    "show": ("print a receipt's verdict and timeline", _show_arguments),
    "report": ("write a self-contained HTML page of a receipt or of a folder of receipts", _report_arguments),
    "recover": ("build a receipt from a crash-safe journal (see spec/journal.md)", _recover_arguments),
    "erase": ("erase committed personal fields, leaving signed erasure records (spec/erasure.md)",
              lazy_arguments("._erase", "add_erase_arguments")),
    "log": ("a transparency log of receipts: init, append (spec/log.md)",
            lazy_arguments("._log_cli", "add_log_arguments")),
    "witness": ("run a transparency-log witness: cosign checkpoints (spec/witness.md)",
                lazy_arguments("._witness_server", "add_witness_arguments")),
    "diff": ("compare two receipts of the same task step by step (exit 0 same, 1 differ, 2 unreadable)",
             _diff_arguments),
}


def _command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first positional argument (the top level has no valued options)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _parser(command: str | None) -> argparse.ArgumentParser:
    """The parser: every command listed with its help line, the arguments of ``command`` only."""
    p: argparse.ArgumentParser = OneLineParser(prog=_PROG, description="aer1: verifiable AER-1 receipts for agent runs")
    sub = p.add_subparsers(dest="command", required=True)
    for name, (help_line, add_arguments) in _COMMANDS.items():
        sp = sub.add_parser(name, help=help_line)
        if name == command:
            add_arguments(sp)
    v = sub.add_parser("verify", help="same as aer1-verify", add_help=False)
    v.add_argument("rest", nargs=argparse.REMAINDER)
    v.set_defaults(func=None)
    return p


def _run(argv: list[str]) -> int:
    args = _parser(_command(argv)).parse_args(argv)
    return int(args.func(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``aer1``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["verify"]:
        from .verifier._cli import main as verify_main

        return int(verify_main(args[1:]))
    return int(run_cli(_PROG, args, _run, {}))


def console() -> NoReturn:
    """The ``aer1`` console script: :func:`main`, then exit without the interpreter's teardown."""
    exit_now(main())


if __name__ == "__main__":
    sys.exit(main())
