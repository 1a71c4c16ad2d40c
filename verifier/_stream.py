"""Streaming verification of large receipt files: peak memory about the file's size.

The in-memory path parses the whole receipt into dicts (about 2 bytes of Python objects
per byte of file) while it still holds the file's bytes and text, so its peak is about
four times the file size. This path reads the file in chunks, walks the top-level object
with the standard library's JSON scanner and parses the ``steps`` array one element at a
time. Each step goes through the same per-step checks at once and leaves only 32-byte
values behind (its Merkle leaf and receipt hash) and its canonical bytes, which go to a
temporary file: they are read back only to check a signature (Ed25519 needs the whole
signed message in memory), after everything else is freed.

Both paths feed their steps to the one step checker (``_steps``) and assemble the report
in one place (``_assemble``), so this path gives the same report as the in-memory path,
check for check (a test holds both to that). It is used only for files too large or too
costly to parse in memory, so it never hands a file back: anything outside its shape (a
parse error, a duplicate key, a step after which the profile claim changes, ...) is a
MALFORMED report naming the problem.
"""

from __future__ import annotations

import codecs
import json
import os
import re
from typing import IO, TYPE_CHECKING, Any

import orjson

from .._canonical import CanonicalizationError, exact_bytes
from .._limits import MAX_VALUE_BYTES
from .._link import LINK_KIND
from .._receipt import MERKLE_VERSION, evidence_path_for
from .._signing import signing_input_of_parts
from ._assemble import fresh_checks, skip_rest, steps_checked
from ._checks import check_workflow_members
from ._fast import Runs
from ._kind import refuse_unless_receipt
from ._output import unreadable_report
from ._parse import (
    MAX_INPUT_BYTES,
    MAX_STRING_CHARS,
    MalformedInput,
    check_json_value,
    check_parse_cost,
    json_float,
    json_int,
    json_pairs,
    no_constants,
    open_regular,
    parse_line_quick,
)
from ._paths import DEFAULT_PATHS, Paths
from ._report import CheckResult, Report
from ._signed import Hashes, passed_steps_bytes
from ._steps import MAX_MEMBER_FAILURES, StepChecker

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ._assemble import Given

__all__ = ["verify_streaming"]

#: A decode error this close to the end of the buffer may be a value cut by the chunk's end.
_CUT_MARGIN = 8
_WS = re.compile(r"[ \t\n\r]*")
_SEP = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
# The quick path checks ``paths.block_steps`` steps at once: a whole Merkle subtree, so runs combine;
# small enough that the block's dicts are still in the CPU caches when it is checked (16 times as
# many steps took 1.7 µs a step more at 200,000 steps).


class _Unwalkable(Exception):
    """The document is not a receipt object this path can walk: the file is MALFORMED."""


class _TooLong(MalformedInput):
    """One value (a step, a member) is longer than MAX_VALUE_BYTES: the file is refused."""


class _Settled(Exception):
    """The verdict cannot change any more (the members check failed past its cut-off): stop reading."""


class _Quit(Exception):
    """The quick path did not pass every step: verify the file again with the reference step checker."""


class _Text:
    """The file as text, decoded chunk by chunk; ``buf`` holds what is not consumed yet."""

    def __init__(self, f: IO[bytes], chunk: int) -> None:
        self._f = f
        self._chunk = chunk  # bytes read at a time
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.buf = ""
        self.eof = False
        self.read_more()
        if self.buf.startswith("\ufeff"):
            raise _Unwalkable("byte order mark")

    def read_more(self, size: int = 0) -> bool:
        """Append the next ``size`` bytes (a chunk by default); False at the end of the file."""
        if self.eof:
            return False
        data = self._f.read(max(size, self._chunk))
        self.eof = not data
        try:
            self.buf += self._decoder.decode(data, final=self.eof)
        except UnicodeDecodeError as e:
            raise _Unwalkable("not UTF-8") from e
        return not self.eof

    def drop(self, i: int) -> int:
        """Forget ``buf[:i]``; returns the new index of what was at ``i``."""
        if i >= self._chunk:
            self.buf = self.buf[i:]
            return 0
        return i

    def ws(self, i: int) -> int:
        """Index of the first non-whitespace character from ``i`` (reading on as needed).

        Whitespace that fills the buffer is dropped before more is read, so a file of
        whitespace is read in constant memory and linear time.
        """
        while True:
            m = _WS.match(self.buf, i)
            assert m is not None
            i = m.end()
            if i < len(self.buf):
                return i
            self.buf, i = "", 0
            if not self.read_more():
                return i

    def char(self, i: int) -> str:
        """The character at ``i`` ('' at the end of the file)."""
        while i >= len(self.buf) and self.read_more():
            pass
        return self.buf[i:i + 1]

    def value(self, decode: Any, i: int) -> tuple[Any, int]:
        """Parse one JSON value at ``i``, reading on until it is complete.

        Each retry first reads as much again as is held, so a value that spans many chunks
        is rescanned a bounded number of times in all (linear, not quadratic); a value longer
        than MAX_VALUE_BYTES is refused before it is held.
        """
        while True:
            try:
                value, end = decode(self.buf, i)
            except json.JSONDecodeError as e:
                cut_short = e.pos >= len(self.buf) - _CUT_MARGIN or e.msg.startswith("Unterminated string")
                if not cut_short or self.eof:
                    raise
                held = len(self.buf) - i
                if held > MAX_VALUE_BYTES:
                    raise _TooLong(f"a single value longer than {MAX_VALUE_BYTES} bytes (limit of one step or "
                                   "one member)") from e
                check_parse_cost(self.buf[i:], "one value")  # each retry parses all that is held again
                self.read_more(held)
                continue
            if end < len(self.buf) or self.eof:
                return value, end
            self.read_more()  # a number could go on in the next chunk (a long one is refused by the parser)


def _step_bytes(step: Any, profile: bool) -> bytes:
    """The step's JCS bytes, as the signature covers them; CanonicalizationError when it has none."""
    if profile:
        try:  # members checked: ASCII keys, string values, a safe integer seq: orjson is exact JCS
            return orjson.dumps(step, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            pass
    return exact_bytes(step)


class _Walker:
    """One pass over the file: top-level members kept, steps checked and dropped one by one."""

    def __init__(self, text: _Text, spill: IO[bytes], quick: bool, paths: Paths) -> None:
        self.text = text
        self.block_steps = paths.stream_block()
        # quick: steps checked in blocks by ``_fast``, any doubt quits (the caller then reads again without it)
        self.quick = quick
        self.block: list[Any] = []
        self.runs = Runs(paths.levels)
        self.last: Any = None  # the last step of the last block
        self.decode = json.JSONDecoder(object_pairs_hook=json_pairs, parse_constant=no_constants,
                                       parse_int=json_int, parse_float=json_float).raw_decode
        self.rest: dict[str, Any] = {}
        self.checker: StepChecker | None = None  # made at the first step, when the profile claim is known
        self.steps_seen = False
        self.links = 0  # link steps: their children are not followed here
        self.stopped = False  # reading stopped once the members check failed past its cut-off
        # signature: the JCS bytes of every step, comma-separated, spilled to a file; evidence: receipt hashes
        self.spill = spill
        self.spilled = 0
        self.hashes = bytearray()
        self.unencodable: str | None = None  # a step with no exact JCS form: the signature check's failure

    # ------------------------------------------------------------- parsing

    def _expect(self, i: int, char: str) -> int:
        if self.text.char(i) != char:
            raise _Unwalkable(f"expected {char!r}")
        return self.text.ws(i + 1)

    def run(self) -> None:
        """Walk the document; raise :class:`_Unwalkable` when it is not a plain receipt object."""
        t = self.text
        i = self._expect(t.ws(0), "{")
        while True:
            if t.char(i) != '"':
                raise _Unwalkable("expected a member name")
            key, i = t.value(self.decode, i)
            i = self._expect(t.ws(i), ":")
            if key in self.rest or (key == "steps" and self.steps_seen):
                raise _Unwalkable("duplicate key")
            if key == "steps":
                if t.char(i) != "[":
                    raise _Unwalkable("steps is not an array")
                i = self._steps(i)
            else:
                profile = self.quick or (self.checker is not None and self.checker.profile)
                if self.steps_seen and not profile and key in ("profile", "chain_head"):
                    raise _Unwalkable("the profile is claimed after the steps")
                self.rest[key], i = t.value(self.decode, i)
            i = t.ws(i)
            if t.char(i) == ",":
                i = t.ws(i + 1)
                continue
            i = self._expect(i, "}")
            break
        if t.char(i) != "":
            raise _Unwalkable("extra data after the receipt object")
        check_json_value(self.rest)

    def _steps(self, i: int) -> int:
        t = self.text
        self.steps_seen = True
        i = t.ws(i + 1)
        if t.char(i) == "]":
            self.quick = False
            return i + 1
        # the quick path stands in for the reference only where the profile is claimed before the steps
        self.quick = self.quick and ("profile" in self.rest or "chain_head" in self.rest)
        decode, sep = self.decode, _SEP.match
        while True:
            buf = t.buf
            line = buf.find("\n", i) if self.quick else -1  # the saved layout: one compact step a line
            end = line - 1 if line > i and buf[line - 1] == "," else line
            step = parse_line_quick(buf[i:end]) if end > i else None
            if step is None:  # not a line orjson reads as the strict parser does: the strict parser
                try:
                    step, end = decode(buf, i)
                except json.JSONDecodeError:
                    step, end = t.value(decode, i)  # cut by the chunk's end, or malformed
                else:
                    if end >= len(buf):  # a number could go on in the next chunk
                        step, end = t.value(decode, i)
            self._step(step, end - i)
            i = t.drop(end)
            m = sep(t.buf, i)
            if m is not None and m.end() < len(t.buf):  # the usual case: ", " and the next step is here
                i = m.end()
                continue
            i = t.ws(i)
            if t.char(i) == ",":
                i = t.ws(i + 1)
                continue
            if t.char(i) != "]":
                raise _Unwalkable("expected , or ] in steps")
            if self.block:
                self._flush(last=True)
            return i + 1

    # -------------------------------------------------------------- checks

    def _step(self, step: Any, span: int) -> None:
        """Check one step; ``span`` is the length of its JSON text."""
        if self.quick:
            if len(self.block) == self.block_steps:
                self._flush(last=False)
            self.block.append(step)
            return
        has_prev = isinstance(step, dict) and "prev_digest" in step
        checker = self.checker
        if checker is None:
            checker = self.checker = StepChecker("profile" in self.rest or "chain_head" in self.rest or has_prev)
        elif has_prev and not checker.profile:
            raise _Unwalkable("a later step claims the profile")
        i = checker.n
        # a well-formed profile step holds only strings and integers; no string is longer than its text
        flat = checker.feed(step) and checker.profile and span <= MAX_STRING_CHARS
        if checker.settled:
            raise _Settled
        if type(step) is dict and step.get("kind") == LINK_KIND:
            self.links += 1
        if not flat:
            check_json_value([[step]])  # the step sits two levels down, as in the whole document
        if checker.broken:
            return
        self.hashes += bytes.fromhex(step["receipt_hash"])
        try:
            data = _step_bytes(step, checker.profile)
        except CanonicalizationError as e:  # as in memory: the chain fails, and no signature can be checked
            if self.unencodable is None:
                self.unencodable = str(e)
            return
        self.spilled += self.spill.write(b"," + data if i else data)

    def _flush(self, *, last: bool) -> None:
        """Check the block of steps by the quick path, keep what the report needs of it, drop its steps."""
        block = self.block
        lo = self.runs.lo
        if self.runs.check(block, last=last) is None:
            raise _Quit  # seams are ``combine``'s, at the end
        # a passed run holds only dicts of strings and ints within the string limit
        self.hashes += bytes.fromhex("".join(s["receipt_hash"] for s in block))
        data = passed_steps_bytes(block)
        self.spilled += self.spill.write(b"," + data if lo else data)
        self.last = block[-1]
        self.block = []

    def settle_quick(self) -> None:
        """After the walk: the reference's state from the passed runs, or :class:`_Quit`."""
        if self.runs.runs and self.rest.get("merkle_version") == MERKLE_VERSION:
            passed = self.runs.passed()
            if passed is not None:
                self.checker = StepChecker.from_passed(passed, self.last)
                self.links = passed.links
                self.runs.runs = []
                return
        if self.runs.runs or self.block:
            raise _Quit

    # ------------------------------------------------------------- results

    def steps_checker(self) -> StepChecker:
        """The step checker (an empty one when there were no steps)."""
        if self.checker is None:
            self.checker = StepChecker("profile" in self.rest or "chain_head" in self.rest)
        return self.checker

    def members(self, result: CheckResult) -> bool:
        checker = self.steps_checker()
        if not self.stopped:
            check_workflow_members(self.rest, checker.profile, result)
        else:  # the members after the steps were never read: report only on those that were
            read = CheckResult(result.number, result.name)
            check_workflow_members(self.rest, checker.profile, read)
            for f in read.failures:
                if f.message.split(" ", 1)[0] in self.rest:
                    result.fail(f.message, seq=f.seq, expected=f.expected, actual=f.actual)
        return checker.members_result(result)

    def signing_input(self) -> bytearray:
        """``pae(PAYLOAD_TYPE, JCS(receipt without signature))``, the steps' bytes read back into place."""
        return signing_input_of_parts(self.rest, [(self.spill, self.spilled)], self.unencodable)


def verify_streaming(source: str, *, paths: Paths = DEFAULT_PATHS, **given: Unpack[Given]) -> Report:
    """Verify the receipt file ``source`` by streaming (``paths``: its read and block sizes; ``given``: the
    caller's evidence and trust, :class:`~._assemble.Given`).

    A file outside the shape this path reads is a MALFORMED report naming the problem:
    a file too large or too costly to parse in memory is never verified any other way.
    """
    try:
        import tempfile  # only large files come here: a plain verification does not load it

        for quick in (True, False):
            with open_regular(source) as f, tempfile.TemporaryFile(prefix="aer1-verify-") as spill:
                size = os.fstat(f.fileno()).st_size
                if size > MAX_INPUT_BYTES:
                    raise MalformedInput(f"{source} is {size} bytes, over the {MAX_INPUT_BYTES}-byte limit")
                walker = _Walker(_Text(f, paths.stream_read_bytes), spill, quick, paths)
                try:
                    walker.run()
                    walker.settle_quick()
                except _Settled:
                    walker.stopped = True
                except (_Quit, _Unwalkable, json.JSONDecodeError, RecursionError, CanonicalizationError,
                        MalformedInput):
                    if not quick:
                        raise
                    continue  # the reference reads the file again: its failures and words are the report's
                walker.text.buf = ""
                return _report(walker, source, given)
        raise AssertionError("the reference pass does not quit")
    except (_Unwalkable, json.JSONDecodeError, RecursionError, CanonicalizationError) as e:
        why = f"not valid JSON: {e.msg}" if isinstance(e, json.JSONDecodeError) else str(e) or "nested too deeply"
        return unreadable_report(source, f"{source}: {why} (a file this large or costly is verified only by streaming)")
    except MalformedInput as e:
        return unreadable_report(source, str(e))
    except OSError as e:
        return unreadable_report(source, f"cannot read {source}: {e.strerror or e}")


def _report(walker: _Walker, source: str, given: Given) -> Report:
    checks = fresh_checks()
    c_parse, c_members = checks[0], checks[1]
    report = Report(source, checks)
    checker = walker.steps_checker()
    if walker.stopped:
        c_parse.skip(f"stopped reading after step {checker.n}: more than {MAX_MEMBER_FAILURES} member failures "
                     "settle the verdict, so the rest of the file was not read")
        report.notes.append("reading stopped early: the members after the steps and the rest of the file "
                            "were not checked")
    else:
        c_parse.passed("strict UTF-8 JSON; no duplicate keys; size and depth within limits")
    # A read stopped early before the type member settles nothing more: it stays INVALID.
    if ("type" in walker.rest or not walker.stopped) and refuse_unless_receipt(report, walker.rest):
        return report
    beside = evidence_path_for(source)
    evidence = given.get("evidence")
    if evidence is None and os.path.lexists(beside):
        evidence = beside
    if not walker.members(c_members):
        skip_rest(checks[2:], "members check failed")
        return report
    wf = walker.rest
    return steps_checked(report, wf, checker, evidence_view={**wf, "steps": Hashes(walker.hashes)},
                         evidence=evidence, beside=beside, trusted_key_ids=given.get("trusted_key_ids"),
                         expected_root=given.get("expected_root"), expected_head=given.get("expected_head"),
                         signed=walker.signing_input, tsa_trust=given.get("tsa_trust"), keyring=given.get("keyring"),
                         links=walker.links)
