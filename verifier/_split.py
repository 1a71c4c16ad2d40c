"""A large receipt file in the saved layout, its step lines checked in several processes at once.

A receipt file we save (``aer1._layout``) holds each step on a line of its own, so the
file cuts into runs of whole steps without parsing it: the members around the steps are
parsed here (a few kilobytes), and each process reads, parses and checks a run of step
lines by the quick path (``_fast``), keeping only what the report needs (the Merkle nodes,
each step's receipt hash, the signed bytes of its steps when the receipt is signed).

Nothing is taken on trust from the layout. The members around the steps are parsed
strictly with a random marker standing in for the steps, which must come back as the
top-level ``steps`` array; each block of step lines must be what orjson writes back for
the steps it parsed from them, one step a line (so the strict parser would read the
same steps); the runs must join (each starts where the one before ended, its first
``prev_digest`` the digest before it). Whatever is not certainly passing (a cut that does
not fall where a step's ``seq`` says, a line in another layout, a step the quick path
doubts, a worker that gives no answer) makes :func:`verify_split` answer None, and the
caller verifies the file by the in-memory or streaming path: failures and their wording
are always those paths'.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import orjson

from .._limits import MAX_EVIDENCE_BYTES, MAX_EVIDENCE_LINE_BYTES
from .._receipt import MERKLE_VERSION, evidence_path_for
from .._signing import signing_input_of_parts
from ._assemble import fresh_checks, skip_rest, steps_checked
from ._checks import check_workflow_members
from ._evidence import check_evidence, evidence_passed, header_ok, line_exact
from ._fast import Run, Runs, combine
from ._kind import refuse_unless_receipt
from ._parallel import collect, fork_job, fork_safe, reap
from ._parse import MAX_INPUT_BYTES, MalformedInput, check_parse_cost, open_regular, parse_strict
from ._paths import DEFAULT_PATHS, Paths
from ._report import CheckResult, Report
from ._signed import Hashes, passed_steps_bytes
from ._steps import StepChecker

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._assemble import Given

__all__ = ["verify_split"]

#: A line longer than this is left to the other paths (their limits bound one value).
_MAX_CHUNK_BYTES = 16 * 1024 * 1024
#: Bytes read after a cut to find the next block edge (a cut is dropped when none lies within them).
_CUT_WINDOWS = (512 * 1024, 4 * 1024 * 1024)
#: Bytes read at each end of the file to find where the step lines begin and end (then more).
_EDGES = (64 * 1024, 1024 * 1024)
_INDENT = b"\n    "
_LINE_BREAK = b"," + _INDENT
_OPEN = b'\n  "steps": ['
_FIRST = _OPEN + _INDENT + b"{"
_LINE = _INDENT + b'{"'
_CLOSE = b"\n  ]"
_HASH = 32
#: How an evidence line of ours starts, and how far into the line its seq (and the comma after it) ends at the latest.
_SEQ_PREFIX = b'{"seq":'
_SEQ_END = len(_SEQ_PREFIX) + 20


class _Read:
    """Bytes of the file by offset: from the bytes already in memory, or read at an offset.

    ``paths``: the block and read sizes of this verification (``aer1.verifier._paths``).
    """

    def __init__(self, data: bytes | None, fd: int, size: int, paths: Paths) -> None:
        self.data, self.fd, self.size, self.paths = data, fd, size, paths

    def __call__(self, start: int, end: int) -> bytes:
        end = min(end, self.size)
        if start >= end:
            return b""
        if self.data is not None:
            return self.data[start:end]
        got = os.pread(self.fd, end - start, start)
        while len(got) < end - start:  # a short read: the file shrank (the run then fails to join) or a signal
            more = os.pread(self.fd, end - start - len(got), start + len(got))
            if not more:
                break
            got += more
        return got


@dataclass
class _Part:
    """What one process leaves of its run of steps."""

    runs: list[Run]
    hashes: bytes  # each step's receipt_hash, 32 bytes a step
    spilled: int  # bytes of the steps' signed form written to the part's spill file
    last: Any  # the run's last step
    sha256: str | None = None  # the whole file's digest, from the last run's process when the file is in memory


def _edges(read: _Read) -> tuple[int, int] | None:
    """Where the step lines lie: from the newline before the first to the newline that closes them."""
    for size in _EDGES:  # a short read first: the members around the steps are usually a few kilobytes
        at = read(0, size).find(_FIRST)
        if at >= 0:
            break
    else:
        return None
    begin = at + len(_OPEN)
    for size in _EDGES:
        tail_at = max(begin, read.size - size)
        tail = read(tail_at, read.size)
        line = tail.rfind(_LINE)
        end = tail.find(b"\n", line + 1) if line >= 0 else -1
        if end >= 0:
            break
    else:
        return None
    if not tail.startswith(_CLOSE, end):
        return None
    return begin, tail_at + end


def _members(read: _Read, begin: int, end: int) -> dict[str, Any] | None:
    """The receipt's members other than ``steps``, parsed strictly with a marker in the steps' place.

    None unless the marker comes back as the top-level ``steps`` array, alone: the cut
    is then exactly the top-level steps array's items.
    """
    marker = os.urandom(16).hex()
    skeleton = read(0, begin) + _INDENT + b'"' + marker.encode() + b'"' + read(end, read.size)
    try:
        value = parse_strict(skeleton, what="the receipt")
    except MalformedInput:
        return None
    if type(value) is not dict or value.get("steps") != [marker]:
        return None
    del value["steps"]
    return value


def _cuts(read: _Read, begin: int, end: int, jobs: int) -> list[tuple[int, int, int]] | None:
    """Runs of step lines for ``jobs`` processes: (first step's index, start, end), starts at block edges.

    A cut goes where a step line's ``seq`` puts a multiple of a block's steps; the seq is a
    claim, checked when the runs join (``combine``).
    """
    starts = [(0, begin)]
    for k in range(1, jobs):
        at = begin + (end - begin) * k // jobs
        if at <= starts[-1][1]:
            continue
        for size in _CUT_WINDOWS:  # a block of steps is a few hundred kilobytes: a short read first
            try:
                found = _block_edge(read(at, min(end, at + size)), read.paths.block_steps)
            except ValueError:
                return None
            if found is not None:
                break
        if found is None:
            break
        lo, i = found
        starts.append((lo, at + i))
    if len(starts) < 2:
        return None
    return [(lo, start, starts[j + 1][1] if j + 1 < len(starts) else end) for j, (lo, start) in enumerate(starts)]


def _block_edge(window: bytes, block_steps: int) -> tuple[int, int] | None:
    """(index of the step, offset of the newline before its line) of the first block edge in ``window``.

    None when the window holds none; ValueError when a step line's ``seq`` is not a positive integer.
    """
    i = window.find(_LINE)
    stop = window.find(b"\n", i + 1) if i >= 0 else -1
    if stop < 0:
        return None
    line = window[i + len(_INDENT):stop]
    try:
        seq = orjson.loads(line[:-1] if line.endswith(b",") else line).get("seq")
    except AttributeError as e:  # orjson's decode error is a ValueError
        raise ValueError("a step line that is not an object") from e
    if type(seq) is not int or seq < 1:
        raise ValueError("a step line whose seq is not a positive integer")
    skip = -(seq - 1) % block_steps
    for _ in range(skip):
        i = window.find(b"\n", i + 1)
        if i < 0:
            return None
    return seq - 1 + skip, i


def _pieces(read: _Read, start: int, end: int, *, lines: bool, max_line: int) -> Iterator[bytes]:
    """The text from ``start`` to ``end`` in pieces of about ``read.paths.split_read_bytes``, each cut at a newline.

    ``lines``: each piece ends with its newline, and so must the text (evidence lines);
    otherwise the newline begins the next piece and the last piece is what is left (step
    lines). ValueError when a line held over a read edge is longer than ``max_line``, or the
    last of ``lines`` has no newline. A long line is read in reads as long as what is held
    (linear, not quadratic).
    """
    carry = b""
    at = start
    chunk = read.paths.split_read_bytes
    while at < end:
        step = max(chunk, len(carry))
        piece = carry + read(at, min(end, at + step))
        at = min(end, at + step)
        if at >= end and not lines:
            yield piece
            return
        cut = piece.rfind(b"\n") + lines  # after the newline, or before it (never a piece of nothing)
        if cut > 0:
            yield piece[:cut]
        carry = piece[max(cut, 0):]
        if len(carry) > max_line:
            raise ValueError("a line too long")
    if carry:
        raise ValueError("the last line has no newline")


def _parse_chunk(text: bytes, final: bool) -> list[Any] | None:
    """The steps a piece of the step lines holds (a comma after each but the receipt's last), or None.

    Only when the piece is exactly the saved layout of the steps orjson parsed from it: each
    step on its own line, indented, written as orjson writes it back. Then no member is
    repeated, nothing is spelled two ways, and the strict parser would read the same steps.
    """
    if not final:
        if not text.endswith(b","):
            return None
        text = text[:-1]
    try:
        check_parse_cost(text, "steps")  # a long line of small containers: what parsing it would hold
        steps: list[Any] = orjson.loads(b"[" + text + b"]")
        if not steps:  # a piece of no step (a line of only a comma, cut off by a read edge): the joined pieces
            return None  # would hold two commas in a row, which no parser reads
        # orjson reads values nested deeper than it writes (JSONEncodeError, a TypeError: "Recursion limit reached")
        if _INDENT + _LINE_BREAK.join([orjson.dumps(step) for step in steps]) != text:
            return None
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, MalformedInput):
        return None
    return steps


def _check_part(read: _Read, lo: int, start: int, end: int, final: bool, spill: IO[bytes] | None) -> _Part | None:
    """Parse and check steps ``lo`` onwards, the lines from ``start`` to ``end``; None: not certainly passing.

    Steps are checked in blocks of ``read.paths.block_steps`` (``lo`` is a multiple of it), the
    last block of the part perhaps shorter.
    """
    block_steps = read.paths.block_steps
    runs = Runs(read.paths.levels, lo)
    hashes: list[str] = []
    spilled = 0
    pending: list[Any] = []
    last = None

    def check(block: list[Any], is_last: bool) -> bool:
        nonlocal spilled, last
        if runs.check(block, last=is_last) is None:
            return False
        hashes.extend([s["receipt_hash"] for s in block])
        if spill is not None:
            data = passed_steps_bytes(block)
            spilled += spill.write(b"," + data if spilled else data)
        last = block[-1]
        return True

    try:
        pieces = _pieces(read, start, end, lines=False, max_line=_MAX_CHUNK_BYTES)
        piece = next(pieces, None)
        while piece is not None:
            following = next(pieces, None)
            steps = _parse_chunk(piece, final and following is None)
            if steps is None:
                return None
            pending += steps
            piece = following
            at = 0
            while len(pending) - at > block_steps or (piece is None and at < len(pending)):
                block = pending[at:at + block_steps]
                at += len(block)
                if not check(block, final and piece is None and at == len(pending)):
                    return None
            del pending[:at]
        if spill is not None:
            spill.flush()  # a worker leaves by os._exit: nothing buffered would reach the file
    except (ValueError, OSError):
        return None
    if not runs.runs:
        return None
    part = _Part(runs.runs, bytes.fromhex("".join(hashes)), spilled, last)
    if final and read.data is not None:  # a worker's spare time, while this process checks the first run
        part.sha256 = hashlib.sha256(read.data).hexdigest()
    return part


def _forked(jobs: list[Callable[[], Any]]) -> list[Any] | None:
    """Every job's answer, in order: the first run here while the others run in child processes.

    None when any job answers None or a worker gives no answer.
    """
    workers: list[tuple[int, int]] = []
    was_enabled = gc.isenabled()
    try:
        for job in jobs[1:]:
            workers.append(fork_job(job))
        gc.disable()  # as in the workers: thousands of new dicts, none in a cycle
        answers = [jobs[0]()]
        if was_enabled:
            gc.enable()
        while workers:
            answers.append(collect(*workers.pop(0)))
    finally:
        if was_enabled:
            gc.enable()
        reap(workers)
    return None if any(a is None for a in answers) else answers


def _parts(read: _Read, cuts: list[tuple[int, int, int]], spills: list[IO[bytes]] | None) -> list[_Part] | None:
    """Every run's part, the first checked here while the others are checked in child processes."""
    last = len(cuts) - 1

    def job(k: int) -> Callable[[], _Part | None]:
        lo, start, end = cuts[k]
        return lambda: _check_part(read, lo, start, end, k == last, None if spills is None else spills[k])

    parts = _forked([job(k) for k in range(len(cuts))])
    if parts is None or not all(isinstance(p, _Part) for p in parts):
        return None
    return parts


def _evidence_part(read: _Read, start: int, end: int, hashes: bytes) -> tuple[int, int] | None:
    """(first seq, last seq) of the evidence lines from ``start`` to ``end``, each our writer's line for its step.

    None on any doubt (the reference then checks the whole file and words what fails).
    """
    n = len(hashes) // _HASH
    first = seq = 0
    try:
        for piece in _pieces(read, start, end, lines=True, max_line=MAX_EVIDENCE_LINE_BYTES):
            lines = piece.split(b"\n")
            lines.pop()  # what follows the last newline: nothing
            for line in lines:
                if len(line) >= MAX_EVIDENCE_LINE_BYTES:  # with its newline, over the limit the reference reads by
                    return None  # (_pieces bounds only what is carried over a read edge, not a line in one piece)
                if not first:
                    head = line[:_SEQ_END]
                    if not head.startswith(_SEQ_PREFIX):
                        return None
                    digits = head[len(_SEQ_PREFIX):head.find(b",")]
                    if not digits.isdigit() or digits.startswith(b"0"):
                        return None
                    first = int(digits)
                    seq = first - 1
                seq += 1
                if seq > n or not line_exact(line + b"\n", seq + 1, seq, hashes[(seq - 1) * _HASH:seq * _HASH].hex()):
                    return None
    except (ValueError, OSError):
        return None
    return (first, seq) if first else None


def _evidence_quick(path: str, workflow_id: Any, hashes: bytes, jobs: int, paths: Paths) -> bool:
    """True when the evidence file holds exactly our writer's lines for every step, checked in ``jobs`` processes.

    The header names the workflow; then a line a step, from the first to the last, each
    hashing to its step's receipt_hash. False on any doubt.
    """
    try:
        with open_regular(path, what="an evidence file") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_EVIDENCE_BYTES:
                return False
            read = _Read(None, f.fileno(), size, paths)
            head = read(0, paths.header_bytes)
            begin = head.find(b"\n") + 1
            if not begin or not header_ok(head[:begin], workflow_id):
                return False
            starts = [begin]
            for k in range(1, jobs):
                at = begin + (size - begin) * k // jobs
                i = read(at - 1, at - 1 + paths.header_bytes).find(b"\n")
                if i >= 0 and at + i > starts[-1] and at + i < size:
                    starts.append(at + i)
            bounds = list(zip(starts, [*starts[1:], size], strict=True))
            spans = _forked([functools.partial(_evidence_part, read, lo, hi, hashes) for lo, hi in bounds])
    except (OSError, MalformedInput):
        return False
    if spans is None:
        return False
    want = 1
    for first, last in spans:
        if first != want:
            return False
        want = last + 1
    return want == len(hashes) // _HASH + 1


def verify_split(source: str, data: bytes | None, jobs: int, *, paths: Paths = DEFAULT_PATHS,
                 **given: Unpack[Given]) -> Report | None:
    """Verify the receipt file ``source`` (its bytes ``data`` when already read) in ``jobs`` processes.

    ``paths``: the smallest file cut, and the block and read sizes (``aer1.verifier._paths``);
    ``given``: the caller's evidence and trust (:class:`~._assemble.Given`).

    None when this path does not apply or does not certainly pass every step: the caller
    then verifies the file by the in-memory or streaming path, which words any failure.
    """
    if jobs < 2 or not fork_safe():
        return None
    import tempfile

    try:
        with contextlib.ExitStack() as stack:
            if data is None:
                fd = stack.enter_context(open_regular(source)).fileno()
                size = os.fstat(fd).st_size
            else:
                fd, size = -1, len(data)
            if not paths.split_min_bytes <= size <= MAX_INPUT_BYTES:
                return None
            read = _Read(data, fd, size, paths)
            edges = _edges(read)
            if edges is None:
                return None
            rest = _members(read, *edges)
            if (rest is None or not ("profile" in rest or "chain_head" in rest)
                    or rest.get("merkle_version") != MERKLE_VERSION):
                return None
            cuts = _cuts(read, *edges, jobs)
            if cuts is None:
                return None
            spills: list[IO[bytes]] | None = None
            if "signature" in rest:
                spills = [stack.enter_context(tempfile.TemporaryFile(prefix="aer1-verify-")) for _ in cuts]
            parts = _parts(read, cuts, spills)
            if parts is None:
                return None
            passed = combine([run for p in parts for run in p.runs])
            if passed is None:
                return None
            checker = StepChecker.from_passed(passed, parts[-1].last)
            return _report(source, data, rest, checker, parts, spills, jobs, paths, given)
    except (OSError, MalformedInput):
        return None  # the other paths say what cannot be read


def _report(source: str, data: bytes | None, rest: dict[str, Any], checker: StepChecker, parts: list[_Part],
            spills: list[IO[bytes]] | None, jobs: int, paths: Paths, given: Given) -> Report:
    checks = fresh_checks()
    c_parse, c_members = checks[0], checks[1]
    report = Report(source, checks)
    c_parse.passed("strict UTF-8 JSON; no duplicate keys; size and depth within limits")
    if data is not None:  # what a later reader of the file (a policy, a bundle's links) checks it reads by
        c_parse.facts["sha256"] = parts[-1].sha256 or hashlib.sha256(data).hexdigest()
    beside = evidence_path_for(source)
    evidence = given.get("evidence")
    if evidence is None and os.path.lexists(beside):
        evidence = beside
    if refuse_unless_receipt(report, rest):
        return report
    check_workflow_members(rest, True, c_members)
    if not checker.members_result(c_members):
        skip_rest(checks[2:], "members check failed")
        return report
    hashes = b"".join(p.hashes for p in parts)
    signed = None
    if spills is not None:
        pieces = list(zip(spills, (p.spilled for p in parts), strict=True))
        signed = lambda: signing_input_of_parts(rest, pieces, None)  # noqa: E731

    def evidence_check(view: Mapping[str, Any], path: str, result: CheckResult) -> None:
        if _evidence_quick(path, rest.get("workflow_id"), hashes, jobs, paths):
            evidence_passed(result, checker.n, path)
        else:  # the reference decides, and words what fails
            check_evidence(view, path, result)

    return steps_checked(report, rest, checker, evidence_view={**rest, "steps": Hashes(bytearray(hashes))},
                         evidence=evidence, beside=beside, trusted_key_ids=given.get("trusted_key_ids"),
                         expected_root=given.get("expected_root"), expected_head=given.get("expected_head"),
                         signed=signed, tsa_trust=given.get("tsa_trust"), keyring=given.get("keyring"),
                         links=checker.links or 0, evidence_check=evidence_check)
