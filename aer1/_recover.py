"""Recovery: a verifiable receipt from the journal of a run that never finalized.

``aer1 recover run.journal -o receipt.json [--key KEY]`` reads the journal line by line
and re-checks each step as a verifier would (seq, ``prev_digest`` link, derived
``receipt_id``, content hash). It keeps every step up to the first line that fails and
leaves out everything after it: past a broken link nothing is trustworthy. A torn last
line (no newline: the write a crash interrupted) is reported and left out.

* Whatever the journal claims, a close step made by recovery ends the chain; the
  workflow has status ``incomplete`` and ``closed_by: "recovery"`` (bound by that close
  step). The journal is not signed, so a journaled close step (``finalize()`` ran) cannot
  be told from a forgery: it is checked, then set aside, lending only its ``output_hash``
  and ``recording_failures``; otherwise ``output_hash`` is the SHA-256 of the empty
  string (there is no final answer).

The evidence (every kept step's content) is written beside the receipt.
Exit codes of the command: 0 every line of the journal is in the receipt; 1 a receipt
was written but lines were left out (each problem reported with its line and seq);
2 no receipt was written (not a journal, unreadable, bad arguments).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from . import _timefmt as timefmt
from ._canonical import CanonicalizationError, exact_bytes
from ._chain import PROFILE, genesis_digest, step_link
from ._content_hash import hash_of_canonical
from ._evidence import evidence_header, evidence_line
from ._journal import JOURNAL_TYPE, JOURNAL_VERSION
from ._layout import receipt_json
from ._limits import MAX_AGENTS_BYTES, MAX_JOURNAL_LINE_BYTES, MAX_MEMBER_CHARS, STEP_OVERHEAD_BYTES
from ._member_rules import TIME_FORM, agent_problem, is_hex64, is_http_url, is_label, is_uuid, step_problems
from ._merkle import merkle_root_hex
from ._outfile import TEMP_FLAGS, check_output, replace_file, temp_path
from ._receipt import (
    CLOSE_AGENT,
    CLOSE_BOUND_MEMBERS,
    CLOSE_KIND,
    CLOSED_BY_RECOVERY,
    MERKLE_VERSION,
    STEP_OPTIONAL_MEMBERS,
    WORKFLOW_STATUSES,
    WORKFLOW_TYPE,
    WORKFLOW_VERSION,
    close_content,
    close_workflow,
    evidence_path_for,
    step_in_order,
)
from ._signing import ENV_SIGNING_KEY, KeyFileError, load_private_key, sign_receipt
from .errors import Aer1Error, MalformedInputError
from .verifier._output import dump_json, one_line
from .verifier._parse import MalformedInput, check_parse_cost, open_regular

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_LEFT_OUT",
    "EXIT_OK",
    "MAX_JOURNAL_LINE_BYTES",
    "Problem",
    "RecoveryError",
    "RecoveryResult",
    "cli_recover",
    "recover_journal",
    "same_file",
]

#: Every line of the journal is in the recovered receipt.
EXIT_OK = 0
#: A receipt was written, but lines were left out (torn last line, broken link, bad line).
EXIT_LEFT_OUT = 1
#: No receipt was written.
EXIT_BAD_INPUT = 2
_EMPTY_OUTPUT_HASH = hashlib.sha256(b"").hexdigest()
_HEADER_STRINGS = ("session_id", "goal", "verify_url")


class RecoveryError(MalformedInputError):
    """The journal cannot be recovered at all (not a journal, unreadable, bad arguments)."""


@dataclass(frozen=True)
class Problem:
    """A journal line left out of the recovered receipt, and why."""

    line: int
    message: str
    seq: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}" + (f" (seq {self.seq})" if self.seq is not None else "")
        return f"{where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"line": self.line, "seq": self.seq, "message": self.message}


@dataclass
class RecoveryResult:
    """What recovery found and wrote."""

    journal: str
    receipt_path: str
    evidence_path: str | None
    receipt: dict[str, Any]
    steps_recovered: int
    finalized: bool
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lines_left_out: int = 0

    @property
    def exit_code(self) -> int:
        """0 when every journal line is in the receipt, 1 when lines were left out."""
        return EXIT_LEFT_OUT if self.problems else EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        """JSON form (what ``aer1 recover --json`` prints)."""
        return {
            "journal": self.journal,
            "receipt": self.receipt_path,
            "evidence": self.evidence_path,
            "workflow_id": self.receipt["workflow_id"],
            "status": self.receipt["status"],
            "steps_recovered": self.steps_recovered,
            "steps": len(self.receipt["steps"]),
            "finalized": self.finalized,
            "closed_by": self.receipt.get("closed_by"),
            "signed": "signature" in self.receipt,
            "lines_left_out": self.lines_left_out,
            "problems": [p.to_dict() for p in self.problems],
            "notes": list(self.notes),
            "exit_code": self.exit_code,
        }


class BadLine(Aer1Error):
    """A journal line that cannot be trusted: recovery stops before it."""

    def __init__(self, message: str, seq: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.seq = seq


# ------------------------------------------------------------------- reading


def _lines(f: IO[bytes]) -> Iterator[bytes]:
    while True:
        line = f.readline(MAX_JOURNAL_LINE_BYTES + 1)
        if not line:
            return
        yield line


def parse_line(line: bytes, seq: int | None) -> Any:
    try:
        check_parse_cost(line, "the line")  # a line of tiny containers would take many times its size
        return orjson.loads(line)
    except MalformedInput as e:
        raise BadLine(str(e), seq) from e
    except orjson.JSONDecodeError as e:
        raise BadLine(f"not a journal record (invalid JSON at byte {e.pos})", seq) from e


def check_header(header: Any, path: str) -> dict[str, Any]:
    if not isinstance(header, dict) or header.get("type") != JOURNAL_TYPE:
        raise RecoveryError(f"{path} is not an aer1 journal (line 1 is not a journal header)")
    if header.get("version") != JOURNAL_VERSION or header.get("profile") != PROFILE:
        raise RecoveryError(f"{path}: unsupported journal version {header.get('version')!r} "
                            f"or profile {header.get('profile')!r}")
    for name in ("workflow_id", "receipt_id"):
        if not is_uuid(header.get(name)):
            raise RecoveryError(f"{path}: journal header {name} is not a lowercase UUID")
    for name in _HEADER_STRINGS:
        v = header.get(name)
        if not is_label(v):
            raise RecoveryError(f"{path}: journal header {name} is not a non-empty string")
        if len(v) > MAX_MEMBER_CHARS:
            raise RecoveryError(f"{path}: journal header {name} is {len(v)} characters long, over the "
                                f"{MAX_MEMBER_CHARS} limit of a receipt member")
    if not is_http_url(header["verify_url"]):
        raise RecoveryError(f"{path}: journal header verify_url is not an http(s) URL")
    if type(header.get("evidence")) is not bool:
        raise RecoveryError(f"{path}: journal header evidence is not true or false")
    return header


def _check_agent(agent: Any) -> dict[str, Any]:
    if not isinstance(agent, dict) or agent_problem(agent) is not None:
        raise BadLine("agent record is not {name, type, description?, config_digest?}")
    if any(len(v) > MAX_MEMBER_CHARS for v in agent.values()):
        raise BadLine(f"agent record has a member over the {MAX_MEMBER_CHARS}-character limit")
    return agent


def check_step_members(step: dict[str, Any], seq: int) -> None:
    """The step member rules of our profile (``_member_rules``), and the length limit of a receipt member."""
    problems = step_problems(step, profile=True)
    if problems:
        first = problems[0]
        if first.rule == TIME_FORM:
            raise BadLine(f"{first.member} is not a real date and time YYYY-MM-DDTHH:MM:SS.ffffffZ", seq)
        raise BadLine(first.message, seq)
    for name in ("tool", "agent", *(m for m in STEP_OPTIONAL_MEMBERS if m in step)):
        if len(step[name]) > MAX_MEMBER_CHARS:
            raise BadLine(f"{name} is {len(step[name])} characters long, over the {MAX_MEMBER_CHARS} limit", seq)


class _Recovery:
    """Replays a journal: the chain state, the kept steps and the evidence written so far."""

    def __init__(self, header: dict[str, Any], evidence: IO[bytes] | None) -> None:
        self.header = header
        self.head = genesis_digest(header["workflow_id"])
        self.steps: list[dict[str, Any]] = []
        self.agents: dict[str, dict[str, Any]] = {}
        self.agents_bytes = 0  # counted as the collector counts it, so the agents member stays readable
        self.close: dict[str, Any] | None = None
        self.close_id = ""
        self.close_head = ""
        self.final: dict[str, Any] | None = None
        self.evidence = evidence

    def take(self, record: Any) -> None:
        """Check one parsed line and keep it, or raise :class:`BadLine`."""
        seq = len(self.steps) + 1
        if not isinstance(record, dict):
            raise BadLine("not a journal record (not an object)", seq)
        kind = record.get("type")
        if self.final is not None:
            raise BadLine("a line after the final line")
        if kind == "final":
            self._take_final(record)
        elif self.close is not None:
            raise BadLine(f"a {kind!r} line after the close step")
        elif kind == "step":
            self._take_step(record, seq)
        elif kind == "agent" and set(record) == {"type", "agent"}:
            agent = _check_agent(record["agent"])
            known = self.agents.get(agent["name"])
            if known is not None and known != agent:
                raise BadLine(f"agent {agent['name']!r} registered again with a different identity")
            if known is None:
                size = self.agents_bytes + len(orjson.dumps(agent)) + STEP_OVERHEAD_BYTES
                if size > MAX_AGENTS_BYTES:
                    raise BadLine(f"the agents member would grow past {MAX_AGENTS_BYTES} bytes")
                self.agents_bytes = size
            self.agents[agent["name"]] = agent
        else:
            raise BadLine(f"unknown journal record type {kind!r}", seq)

    def _take_step(self, record: dict[str, Any], expected: int) -> None:
        step = record.get("step")
        if not isinstance(step, dict):
            raise BadLine("step record without a step object", expected)
        seq = step.get("seq")
        if type(seq) is not int or seq != expected:
            raise BadLine(f"seq {seq!r} out of order (the journal is cut or reordered here)", expected)
        wants_content = self.header["evidence"] or step.get("kind") == CLOSE_KIND
        if set(record) != ({"type", "step", "content"} if wants_content else {"type", "step"}):
            raise BadLine("step record members are not {type, step" + (", content}" if wants_content else "}"),
                           seq)
        check_step_members(step, seq)
        if step["prev_digest"] != self.head:
            what = "the genesis digest of workflow_id" if seq == 1 else f"the digest of seq {seq - 1}"
            raise BadLine(f"prev_digest does not link to {what}: the chain is broken here", seq)
        rid = step.pop("receipt_id")
        try:
            hbytes = exact_bytes(step)
            cbytes = exact_bytes(record["content"]) if wants_content else None
        except CanonicalizationError as e:
            raise BadLine(f"line cannot be canonicalized: {e}", seq) from e
        head, derived = step_link(hbytes)
        if derived != rid:
            raise BadLine("receipt_id is not derived from the step's members (the line was changed)", seq)
        if cbytes is not None and hash_of_canonical(cbytes) != step["receipt_hash"]:
            raise BadLine("content does not hash to receipt_hash (the line was changed)", seq)
        if step["kind"] == CLOSE_KIND:
            # Checked, then set aside: recovery always ends the chain with its own close step.
            self._check_close(step, record["content"], seq)
            self.close_id, self.close_head = rid, head
            return
        self.head = head
        rhash = step["receipt_hash"]
        self.steps.append(step_in_order(step, rid))
        if self.evidence is not None and cbytes is not None:
            self.evidence.write(evidence_line(seq, rhash, cbytes))

    def _check_close(self, step: Mapping[str, Any], content: Any, seq: int) -> None:
        if step["tool"] != CLOSE_KIND or step["agent"] != CLOSE_AGENT:
            raise BadLine("close step tool/agent are not close/aer1", seq)
        allowed = {*CLOSE_BOUND_MEMBERS, "step_count"}
        if not isinstance(content, dict) or not set(content) <= allowed or content.get("step_count") != seq \
                or not isinstance(content.get("agents", []), list):
            raise BadLine("close step content is not the workflow members and the step count", seq)
        for name in ("workflow_id", "receipt_id", "session_id", "goal", "verify_url"):
            if content.get(name) != self.header[name]:
                raise BadLine(f"close step {name} differs from the journal header", seq)
        fixed = {"type": WORKFLOW_TYPE, "version": WORKFLOW_VERSION, "profile": PROFILE,
                 "merkle_version": MERKLE_VERSION}
        if any(content.get(k) != v for k, v in fixed.items()) or content.get("status") not in WORKFLOW_STATUSES:
            raise BadLine("close step content does not describe an aer1 workflow", seq)
        if not is_hex64(content.get("output_hash")):
            raise BadLine("close step output_hash is not 64 lowercase hex characters", seq)
        self.close = content

    def _take_final(self, record: dict[str, Any]) -> None:
        if self.close is None:
            raise BadLine("a final line without a close step before it")
        n = len(self.steps) + 1
        want = {"step_count": n, "chain_head": self.close_head, "merkle_root": merkle_root_hex(
            [*(s["receipt_id"] for s in self.steps), self.close_id]), "status": self.close["status"]}
        if any(record.get(k) != v for k, v in want.items()) or not set(record) <= {"type", "signature", *want}:
            raise BadLine("the final line does not match the steps before it")
        self.final = record


# ------------------------------------------------------------------- building


def _recovery_close(state: _Recovery) -> tuple[dict[str, Any], bytes]:
    """The workflow of a recovered run and the close step's content bytes (appended by the caller).

    Whatever the journal claims, the status is ``incomplete`` and ``closed_by`` is
    ``recovery``: a journal is not signed, so a finalized one cannot be told from a forgery.
    A journaled close step only lends its ``output_hash`` and ``recording_failures``.
    """
    h = state.header
    claimed = state.close or {}
    failures = claimed.get("recording_failures")
    failures = failures if type(failures) is int and failures >= 1 else 0
    workflow = close_workflow(
        workflow_id=h["workflow_id"], receipt_id=h["receipt_id"], session_id=h["session_id"], goal=h["goal"],
        status="incomplete", output_hash=claimed.get("output_hash", _EMPTY_OUTPUT_HASH), verify_url=h["verify_url"],
        agents=list(state.agents.values()), recording_failures=failures,
        closed_by=CLOSED_BY_RECOVERY,
    )
    return workflow, exact_bytes(close_content(workflow, len(state.steps) + 1))


def _append_close(state: _Recovery, cbytes: bytes) -> None:
    seq = len(state.steps) + 1
    stamp = timefmt.format_ns(timefmt.now_ns())
    header: dict[str, Any] = {
        "seq": seq, "tool": CLOSE_KIND, "kind": CLOSE_KIND, "agent": CLOSE_AGENT,
        "receipt_hash": hash_of_canonical(cbytes), "started_at": stamp, "ended_at": stamp,
        "status": "ok", "prev_digest": state.head,
    }
    rhash = header["receipt_hash"]
    state.head, rid = step_link(exact_bytes(header))
    state.steps.append(step_in_order(header, rid))
    if state.evidence is not None:
        state.evidence.write(evidence_line(seq, rhash, cbytes))


def same_file(a: str, b: str) -> bool:
    """True when paths ``a`` and ``b`` name the same file (through links too)."""
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): compare the resolved names
        return os.path.realpath(a) == os.path.realpath(b)


def _write_atomic(path: str, data: bytes) -> None:
    replace_file(path, lambda f: f.write(data))


def recover_journal(
    journal: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    signing_key: Any = None,
) -> RecoveryResult:
    """Rebuild a receipt from ``journal`` and write it to ``output`` (evidence beside it).

    ``signing_key``: a key object, PEM or path (as for the Collector); the receipt is then
    signed. Raises :class:`RecoveryError` when nothing can be recovered.
    """
    path, out = os.fspath(journal), os.fspath(output)
    for written in (out, evidence_path_for(out)):
        if same_file(path, written):
            raise RecoveryError(f"the output must not be the journal itself ({written} would overwrite it)")
        check_output(written)
    try:
        key = load_private_key(signing_key) if signing_key is not None else None
    except KeyFileError as e:
        raise RecoveryError(str(e)) from e
    try:
        f = open_regular(path, what="a journal")
    except MalformedInput as e:
        raise RecoveryError(str(e)) from e
    with f:
        first = f.readline(MAX_JOURNAL_LINE_BYTES + 1)
        if not first.endswith(b"\n"):
            raise RecoveryError(f"{path} is not an aer1 journal (no complete header line)")
        try:
            check_parse_cost(first, f"{path} line 1")
            header = check_header(orjson.loads(first), path)
        except MalformedInput as e:
            raise RecoveryError(str(e)) from e
        except orjson.JSONDecodeError as e:
            raise RecoveryError(f"{path} is not an aer1 journal (line 1 is not JSON)") from e
        evidence_path = evidence_path_for(out) if header["evidence"] else None
        ev_tmp = temp_path(evidence_path) if evidence_path else None
        ev_file = os.fdopen(os.open(ev_tmp, TEMP_FLAGS, 0o666), "wb") if ev_tmp else None
        try:
            if ev_file is not None:
                ev_file.write(evidence_header(header["workflow_id"]))
            result = _replay(path, out, evidence_path, header, f, ev_file, key)
            if ev_file is not None and evidence_path is not None and ev_tmp is not None:
                ev_file.close()
                os.replace(ev_tmp, evidence_path)
        finally:
            if ev_file is not None:
                ev_file.close()
            if ev_tmp is not None and os.path.exists(ev_tmp):
                os.unlink(ev_tmp)
    _write_atomic(out, receipt_json(result.receipt))
    return result


def _replay(path: str, out: str, evidence_path: str | None, header: dict[str, Any], f: IO[bytes],
            ev_file: IO[bytes] | None, key: Any) -> RecoveryResult:
    state = _Recovery(header, ev_file)
    problems: list[Problem] = []
    notes: list[str] = []
    left_out = 0
    lines = _lines(f)
    for number, line in enumerate(lines, start=2):
        seq_next = len(state.steps) + 1
        if len(line) > MAX_JOURNAL_LINE_BYTES:
            left_out = 1 + sum(1 for _ in lines if _.endswith(b"\n"))
            problems.append(Problem(number, f"line longer than {MAX_JOURNAL_LINE_BYTES} bytes: it and "
                                    f"{left_out - 1} later line(s) left out", seq_next))
            break
        if not line.endswith(b"\n"):
            problems.append(Problem(number, f"torn last line ({len(line)} bytes, no newline): an interrupted "
                                    "write; left out", None if state.close else seq_next))
            left_out = 1
            break
        try:
            state.take(parse_line(line, None if state.close else seq_next))
        except BadLine as e:
            left_out = 1 + sum(1 for _ in lines)
            problems.append(Problem(number, e.message, e.seq))
            if left_out > 1:
                problems.append(Problem(number + 1, f"{left_out - 1} later line(s) left out: "
                                        "nothing after a bad line can be trusted"))
            break
    steps_recovered = len(state.steps)
    finalized = state.close is not None
    if state.close is not None:
        notes.append(f"the run reached finalize() (journaled status {state.close['status']!r}), but a journal "
                     "is not signed: its close step is replaced by a recovery close step (status incomplete, "
                     "closed_by recovery); its output_hash is kept")
        if state.final is None:
            notes.append("the final line is missing: finalize() was interrupted after writing the close step")
        elif "signature" in state.final:
            notes.append("the journaled signature is not reused: it signs the finalized receipt, not this one")
    workflow, close_bytes = _recovery_close(state)
    _append_close(state, close_bytes)
    receipt: dict[str, Any] = {**workflow, "steps": state.steps}
    receipt["merkle_root"] = merkle_root_hex([s["receipt_id"] for s in state.steps])
    receipt["chain_head"] = state.head
    if key is not None:
        receipt["signature"] = sign_receipt(receipt, key)
    if not state.header["evidence"]:
        notes.append("the run kept no evidence (evidence=False): no evidence file is written")
    return RecoveryResult(path, out, evidence_path, receipt, steps_recovered, finalized, problems, notes, left_out)


# ------------------------------------------------------------------- command


def add_recover_arguments(p: argparse.ArgumentParser) -> None:
    """Arguments of ``aer1 recover``."""
    p.add_argument("journal", help="the journal file (Collector(journal=...))")
    p.add_argument("-o", "--output", required=True, help="receipt file to write; evidence goes beside it")
    p.add_argument("--key", help=f"private key to sign with (PEM file); default ${ENV_SIGNING_KEY} if set")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--log", metavar="DIR", help="also append the recovered receipt to this log (closing the run's "
                   "opened entry) and write NAME.tlog-proof beside it (spec/log.md)")
    p.add_argument("--log-key", metavar="LOGKEY", help="the log's private key (default: the one named at init)")
    p.epilog = ("Exit codes: 0 every journal line is in the receipt; 1 receipt written, lines left out "
                "(reported); 2 no receipt written.")


def _text(result: RecoveryResult) -> str:
    r = result.receipt
    how = "closed by recovery (the journal claims a finalized run)" if result.finalized else \
        "closed by recovery"
    lines = [f"{result.journal}: {result.steps_recovered} steps recovered; {how}; status {r['status']}"
             + ("; signed" if "signature" in r else "")]
    lines += [f"  problem: {p}" for p in result.problems]
    lines += [f"  note: {n}" for n in result.notes]
    lines.append(f"receipt:  {result.receipt_path}")
    if result.evidence_path:
        lines.append(f"evidence: {result.evidence_path}")
    verdict = "OK: every journal line is in the receipt" if not result.problems else \
        f"LINES LEFT OUT: {len(result.problems)} problem(s) reported above"
    lines.append(f"recover: {verdict}")
    return "\n".join(one_line(line) for line in lines)  # file names from the command line: one line each


def cli_recover(args: argparse.Namespace) -> int:
    """Run ``aer1 recover``; returns the exit code."""
    key: Any = args.key if args.key else os.environ.get(ENV_SIGNING_KEY) or None
    try:
        result = recover_journal(args.journal, args.output, signing_key=key)
    except (RecoveryError, OSError) as e:
        message = f"{e.strerror or e}: {e.filename or ''}" if isinstance(e, OSError) else str(e)
        if args.json:  # --json output stays JSON, errors included
            sys.stdout.write(dump_json({"error": message, "exit_code": EXIT_BAD_INPUT}))
        else:
            print(one_line(f"aer1 recover: error: {message}"), file=sys.stderr)
        return EXIT_BAD_INPUT
    logged = None
    if getattr(args, "log", None):
        from ._logdir import append_receipts
        from .errors import Aer1Error

        try:
            logged = append_receipts(args.log, [(result.receipt_path, result.receipt)], key=args.log_key)[0][1]
        except (Aer1Error, OSError) as e:  # the receipt is written; only its logging failed: say so, exit 2
            message = f"the receipt is written, but it could not be logged in {args.log}: {e}"
            if args.json:
                sys.stdout.write(dump_json({**result.to_dict(), "log_error": message, "exit_code": EXIT_BAD_INPUT}))
            else:
                print(_text(result))
                print(one_line(f"aer1 recover: error: {message}"), file=sys.stderr)
            return EXIT_BAD_INPUT
    if args.json:
        sys.stdout.write(dump_json({**result.to_dict(), **({"log_index": logged} if logged is not None else {})}))
    else:
        print(_text(result) + (f"\nlogged:   entry {logged} of {args.log}" if logged is not None else ""))
    return result.exit_code
