"""The auditor's side of ``aer1-verify``: policies, archive runs, JUnit, signed summaries.

Kept apart from ``cli.py`` so that the command's base options stay in one place and these
in another: ``add_auditor_options`` adds the options, ``auditor_run`` runs files.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from ._archive import ArchiveOptions, Tally, file_sha256, run_archive, short_line, verify_file
from ._output import CliError, dump_json, one_line
from ._parse import MalformedInput
from ._report import failure_lines

if TYPE_CHECKING:  # the JUnit and summary modules load only when their options are given
    from ._trust import Trust

__all__ = ["add_auditor_options", "auditor_run", "check_summary_file"]


def add_auditor_options(p: argparse.ArgumentParser) -> None:
    """The options for auditors: what must hold, how an archive runs, what it writes."""
    p.add_argument("--require", metavar="LIST", action="append", default=[],
                   help="checks that must PASS, comma-separated: chain, signature, evidence, timestamp")
    p.add_argument("--policy", metavar="FILE", help="a TOML policy file (spec/policy.md)")
    p.add_argument("--jobs", "-j", metavar="N", type=int, default=None,
                   help="worker processes for many receipts, or for the steps of one receipt file of 1 MiB or "
                        "more (default: the number of cores)")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="verify many receipts on a Dask cluster: a scheduler address (tcp://HOST:PORT), or local "
                        "for a local cluster of --jobs worker processes (needs aer1[dask])")
    p.add_argument("--dask-batch", metavar="N", type=int, default=None,
                   help="with --dask: receipts per task (default: 512 down to 64 as the run nears its end; a "
                        "cluster of many machines wants more: spec/verifier.md)")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="full reports, every failure listed (also for one receipt)")
    p.add_argument("--only-failures", action="store_true", help="print only receipts that are not VALID")
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML file, a test case per receipt")
    p.add_argument("--attest", metavar="KEY", help="sign a verification summary with this private key (with -o)")
    p.add_argument("-o", "--output", metavar="FILE", help="where --attest writes the signed summary")
    p.add_argument("--summary", metavar="FILE", help="re-check a signed summary and the files it names")


#: Most worker processes ``--jobs`` may ask for: each is a Python interpreter, and a
#: mistyped count over a large archive must not start thousands of them.
MAX_JOBS = 256


def _jobs(args: argparse.Namespace) -> int:
    if args.jobs is None:
        return os.cpu_count() or 1
    if not 1 <= args.jobs <= MAX_JOBS:
        raise CliError(f"--jobs: got {args.jobs}, want 1 to {MAX_JOBS} (each job is a process)")
    return int(args.jobs)


def _check_outputs(args: argparse.Namespace) -> None:
    if (args.attest is None) != (args.output is None):
        raise CliError("--attest KEY and -o FILE go together")
    for option, path in (("--junit", args.junit), ("-o", args.output)):
        if path is not None:
            from .._outfile import check_output  # only for --junit and -o
            from .._storage import is_url

            if is_url(path):  # an object in storage, written whole when the run ends
                continue
            # Refused before any receipt is verified, so that nothing is printed before the error:
            # a device, FIFO or folder, and a file that cannot be created where it is named.
            folder = os.path.dirname(path) or "."
            if not os.path.isdir(folder) or not os.access(folder, os.W_OK | os.X_OK):
                raise CliError(f"{option} {path}: cannot create a file in {folder}")
            try:
                check_output(path)
            except OSError as e:
                raise CliError(f"{option} {path}: {e.strerror or e}") from e


def _trust_files(args: argparse.Namespace) -> dict[str, Any]:
    """Every input file the verdicts rest on, for a signed summary, each by name and SHA-256.

    Checks 9 and 10 trusted the keyring and the TSA roots, the policy file set the rules and
    ``--receipt`` pinned a proof's root: ``--summary`` re-hashes each (spec/verifier.md).
    """
    def digest(path: str) -> str:
        try:
            return file_sha256(path)
        except (OSError, MalformedInput) as e:
            raise CliError(f"cannot read {path} to record it in the summary: {e}") from e

    def named(path: str | None) -> dict[str, str] | None:
        return None if path is None else {"path": path, "sha256": digest(path)}

    out: dict[str, Any] = {"tsa_policy": args.tsa_policy}
    out["keyring"] = named(args.keyring)
    out["policy_file"] = named(args.policy)
    out["receipt"] = named(args.receipt)
    roots = None
    if args.tsa_roots is not None:
        names = sorted(n for n in os.listdir(args.tsa_roots) if os.path.isfile(os.path.join(args.tsa_roots, n)))
        roots = [named(os.path.join(args.tsa_roots, n)) for n in names]
    out["tsa_roots"] = roots
    return out


def auditor_run(args: argparse.Namespace, files: list[tuple[str, bool, str | None]], trust: Trust,
                *, single: bool) -> int:
    """Verify ``files`` against ``trust`` (one receipt: its full report; many: a line each and a summary)."""
    _check_outputs(args)
    jobs = _jobs(args)
    if args.dask_batch is not None and (args.dask is None or args.dask_batch < 1):
        raise CliError(f"--dask-batch: got {args.dask_batch}, want a positive number of receipts"
                       if args.dask is not None else "--dask-batch goes with --dask")
    if args.dask is not None and single:
        raise CliError("--dask verifies many receipts (a folder or several files): one receipt is verified here")
    opts = ArchiveOptions.from_trust(trust, evidence=args.evidence, proof=args.proof, digests=args.attest is not None,
                                     run_id=os.urandom(8).hex(), steps_jobs=jobs if single else 1,
                                     log_walked=getattr(args, "log_sink", None) is not None,
                                     storage_options=getattr(args, "storage_options", None))
    sinks: list[Any] = []
    junit = None
    if args.junit:
        from ._junit import JUnitWriter

        junit = JUnitWriter(args.junit)
    summary = None
    if args.attest is not None:
        from ._attest import SummaryWriter

        summary = SummaryWriter(args.attest, args.output, trust.policy, {
            "trusted_key_ids": None if trust.trusted_key_ids is None else sorted(trust.trusted_key_ids),
            "expected_root": trust.expected_root, "expected_head": trust.expected_head,
            **_trust_files(args),
        })
    sinks = [s for s in (junit, summary, getattr(args, "log_sink", None)) if s is not None]
    if single and getattr(args, "log_sink", None) is None:
        tally = Tally()
        outcome = verify_file(files[0], opts)
        outcome.skipped = None  # a file named alone is verified, not skipped: not a receipt is MALFORMED
        tally.add(outcome)
        for s in sinks:
            s.add(outcome)
        r = outcome.report
        if args.json:
            from ._archive import report_doc

            sys.stdout.write(dump_json(report_doc(r)))
        elif r.malformed:
            print(short_line(r))
            print(one_line(f"aer1-verify: {r.checks[0].detail}"), file=sys.stderr)
        elif not (args.only_failures and r.valid):
            print(r.to_text(every=args.verbose))
    elif args.dask is not None:
        from ._dask import DaskUnavailable, close, connect  # loaded only for --dask

        try:
            client = connect(args.dask, jobs)
        except DaskUnavailable as e:
            raise CliError(str(e)) from e
        try:
            tally = run_archive(files, opts, jobs=jobs, as_json=args.json, verbose=args.verbose,
                                only_failures=args.only_failures, out=sys.stdout, sinks=sinks, client=client,
                                dask_batch=args.dask_batch)
        finally:
            close(client)
    else:
        tally = run_archive(files, opts, jobs=jobs, as_json=args.json, verbose=args.verbose,
                            only_failures=args.only_failures, out=sys.stdout, sinks=sinks)
    if junit is not None:
        try:
            junit.close()
        except OSError as e:
            raise CliError(f"--junit {args.junit}: {e.strerror or e}") from e
    if summary is not None:
        summary.write(tally)
    return tally.exit_code


def check_summary_file(args: argparse.Namespace, trust: Trust) -> int:
    """``--summary FILE``: the summary's own checks, then its verdict; exit 0, 1 or 2."""
    if args.paths or args.policy or args.require or args.attest or args.junit:
        raise CliError("--summary FILE goes alone (with --key/--trusted-keys and --json)")
    result = trust.verify_summary(args.summary)
    checks, facts, verdict, code = result.checks, result.facts, result.verdict, result.exit_code
    if args.json:
        from ._archive import SCHEMA

        sys.stdout.write(dump_json({
            "schema": SCHEMA, "kind": "summary", "source": args.summary, "verdict": verdict, "exit_code": code,
            "checks": [c.to_dict() for c in checks], "summarized": {k: v for k, v in facts.items() if k != "source"},
        }))
        return code
    print(one_line(f"{args.summary}: {verdict}"))
    for c in checks:
        print(one_line(f"  {c.number} {c.name:<12} {c.status:<11} {c.detail}"))
        for line in failure_lines(c, see="--json lists every one"):
            print(one_line(line))
    inputs = facts.get("inputs", [])
    named = [f"{i['option']} {i['path']}" for i in inputs if i["option"] != "--evidence"]
    evidence = sum(i["option"] == "--evidence" for i in inputs)
    if evidence:
        named.append(f"{evidence} evidence file" + ("s" if evidence > 1 else ""))
    if named:
        print(one_line(f"  inputs: {', '.join(named)} (named in the summary; give the same to verify the receipts "
                       "again)"))
    if verdict == "VALID":
        signer = "trusted key" if facts.get("trusted") else "an untrusted key"
        print(one_line(f"verdict: VALID (summary of {facts.get('receipts')} receipts, signed by {signer} "
                       f"{facts.get('key_id')}, made {facts.get('verified_at')}; it said {facts.get('verdict')})"))
    else:
        bad = next((c for c in checks if c.status != "PASS"), checks[-1])
        first = bad.failures[0].reason if bad.failures else f"{bad.name}: {bad.detail}"
        print(one_line(f"verdict: {verdict}: {first}"))
    return code
