"""Streaming verification of large receipt files: peak memory about the file's size.

The in-memory path parses the whole receipt into dicts (about 2 bytes of Python objects
per byte of file) while it still holds the file's bytes and text, so its peak is about
four times the file size. This path reads the file in chunks, walks the top-level object
with the standard library's JSON scanner and parses the ``steps`` array one element at a
time. Each step goes through the same per-step checks at once and leaves only 32-byte
values behind (its Merkle leaf and receipt hash) and its canonical bytes, which go to a
temporary file: they are read back only to check a signature (Ed25519 needs the whole
signed message in memory), after everything else is freed.

It gives the same report as the in-memory path, check for check (a test holds both to
that). Anything outside its shape (a parse error, a duplicate key, a step after which the
profile claim changes, ...) returns None and the caller verifies in memory, which then
names the problem exactly as it always does.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import struct
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any

import orjson

from ..canonical import CanonicalizationError, exact_bytes
from ..chain import PROFILE, genesis_digest, step_digest_hex, uuid8_from_hex
from ..limits import MAX_VALUE_BYTES
from ..merkle import leaf_receipt_id, leaf_seq_output, merkle_root
from ..receipt import CLOSE_KIND, evidence_path_for
from ..signing import PAYLOAD_TYPE, pae, parse_signature
from ._checks import _check_step, _check_workflow_members, _is_hex64, check_chain_end, check_expected, check_signature
from ._evidence import check_evidence
from ._output import unreadable_report
from ._parse import (
    MAX_INPUT_BYTES,
    MAX_STRING_CHARS,
    MalformedInput,
    _float,
    _int,
    _no_constants,
    _pairs,
    check_json_value,
    check_parse_cost,
    open_regular,
)
from ._report import CHECKS, FAIL, CheckResult, Report

__all__ = ["STREAM_MIN_BYTES", "verify_streaming"]

#: Receipt files from this size on are verified by streaming.
STREAM_MIN_BYTES = 32 * 1024 * 1024
#: Bytes read from the file at a time.
CHUNK_BYTES = 4 * 1024 * 1024
#: The in-memory members check stops after this many failures; streaming stops reading there.
_MAX_MEMBER_FAILURES = 20
#: A decode error this close to the end of the buffer may be a value cut by the chunk's end.
_CUT_MARGIN = 8
_LEAF = 32
_KEY_BYTES = 8
_LEN_FIELD = 8
_WS = re.compile(r"[ \t\n\r]*")
_SEP = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
_NOT_PROFILE_NOTE = (
    "not an aer1-chain-v1 receipt: only the AER-1 base checks apply; step contents, agents "
    "and order are not bound beyond receipt ids and the Merkle root"
)


class _Fallback(Exception):
    """The document is not in the shape this path handles: verify it in memory instead."""


class _TooLong(MalformedInput):
    """One value (a step, a member) is longer than MAX_VALUE_BYTES: the file is refused."""


class _Settled(Exception):
    """The verdict cannot change any more (the members check failed past its cut-off): stop reading."""


class _Hashes(Sequence[Mapping[str, str]]):
    """The steps as the evidence check sees them: only each step's receipt_hash."""

    def __init__(self, raw: bytearray) -> None:
        self._raw = raw

    def __len__(self) -> int:
        return len(self._raw) // _LEAF

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            raise TypeError("slices are not supported")
        if i < 0:
            i += len(self)
        return {"receipt_hash": self._raw[i * _LEAF:(i + 1) * _LEAF].hex()}

    def __iter__(self) -> Iterator[Mapping[str, str]]:
        return (self[i] for i in range(len(self)))


def _jcs_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


class _Text:
    """The file as text, decoded chunk by chunk; ``buf`` holds what is not consumed yet."""

    def __init__(self, f: IO[bytes]) -> None:
        self._f = f
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.buf = ""
        self.eof = False
        self.read_more()
        if self.buf.startswith("\ufeff"):
            raise _Fallback("byte order mark")

    def read_more(self, size: int = 0) -> bool:
        """Append the next ``size`` bytes (a chunk by default); False at the end of the file."""
        if self.eof:
            return False
        data = self._f.read(max(size, CHUNK_BYTES))
        self.eof = not data
        try:
            self.buf += self._decoder.decode(data, final=self.eof)
        except UnicodeDecodeError as e:
            raise _Fallback("not UTF-8") from e
        return not self.eof

    def drop(self, i: int) -> int:
        """Forget ``buf[:i]``; returns the new index of what was at ``i``."""
        if i >= CHUNK_BYTES:
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

    def __init__(self, text: _Text, spill: IO[bytes]) -> None:
        self.text = text
        self.decode = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_no_constants,
                                       parse_int=_int, parse_float=_float).raw_decode
        self.rest: dict[str, Any] = {}
        self.n = 0
        self.profile: bool | None = None
        self.steps_seen = False
        # members: failures of the step checks, grouped by step (the in-memory path cuts off after 20)
        self.step_members = CheckResult(2, "members")
        self.member_groups: list[tuple[int, int]] = []
        self.member_failures = 0
        self.broken = False  # a step failed its members check: the later checks will not run
        self.stopped = False  # reading stopped once the members check failed past its cut-off
        # sequence
        self.order_fail: tuple[str, int, int, Any] | None = None
        self.dup_fail: tuple[str, int, str] | None = None
        self.seen: dict[int, int] = {}
        self.seen_full: dict[bytes, int] = {}
        # merkle
        self.leaves = bytearray()
        self.output_leaves = bytearray()
        self.output_bad: int | None = None
        # chain
        self.first_prev: Any = None
        self.prev = ""
        self.chain_fail: tuple[str, int, Any, Any] | None = None
        self.close_at: int | None = None
        self.last: Any = None
        # signature: the JCS bytes of every step, comma-separated, spilled to a file; evidence: receipt hashes
        self.spill = spill
        self.spilled = 0
        self.hashes = bytearray()
        self.unencodable: str | None = None  # a step with no exact JCS form: the signature check's failure

    # ------------------------------------------------------------- parsing

    def _expect(self, i: int, char: str) -> int:
        if self.text.char(i) != char:
            raise _Fallback(f"expected {char!r}")
        return self.text.ws(i + 1)

    def run(self) -> None:
        """Walk the document; raise :class:`_Fallback` when it is not a plain receipt object."""
        t = self.text
        i = self._expect(t.ws(0), "{")
        while True:
            if t.char(i) != '"':
                raise _Fallback("expected a member name")
            key, i = t.value(self.decode, i)
            i = self._expect(t.ws(i), ":")
            if key in self.rest or (key == "steps" and self.steps_seen):
                raise _Fallback("duplicate key")
            if key == "steps":
                if t.char(i) != "[":
                    raise _Fallback("steps is not an array")
                i = self._steps(i)
            else:
                if self.steps_seen and not self.profile and key in ("profile", "chain_head"):
                    raise _Fallback("the profile is claimed after the steps")
                self.rest[key], i = t.value(self.decode, i)
            i = t.ws(i)
            if t.char(i) == ",":
                i = t.ws(i + 1)
                continue
            i = self._expect(i, "}")
            break
        if t.char(i) != "":
            raise _Fallback("extra data after the receipt object")
        check_json_value(self.rest)

    def _steps(self, i: int) -> int:
        t = self.text
        self.steps_seen = True
        i = t.ws(i + 1)
        if t.char(i) == "]":
            return i + 1
        decode, sep = self.decode, _SEP.match
        while True:
            buf = t.buf
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
                raise _Fallback("expected , or ] in steps")
            return i + 1

    # -------------------------------------------------------------- checks

    def _step(self, step: Any, span: int) -> None:
        """Check one step; ``span`` is the length of its JSON text."""
        i = self.n
        self.n += 1
        has_prev = isinstance(step, dict) and "prev_digest" in step
        if self.profile is None:
            self.profile = "profile" in self.rest or "chain_head" in self.rest or has_prev
        elif has_prev and not self.profile:
            raise _Fallback("a later step claims the profile")
        self.last = step
        flat = False
        before = self.member_failures
        if _check_step(step, i, self.profile, self.step_members):
            # a well-formed profile step holds only strings and integers; no string is longer than its text
            flat = self.profile and span <= MAX_STRING_CHARS
        else:
            self.member_failures = len(self.step_members.failures)
            self.member_groups.append((before, self.member_failures))
            self.broken = True
            if self.member_failures > _MAX_MEMBER_FAILURES:
                raise _Settled
        if not flat:
            check_json_value([[step]])  # the step sits two levels down, as in the whole document
        if self.broken:
            return
        seq, rid = step["seq"], step["receipt_id"]
        if self.order_fail is None and seq != i + 1:
            self.order_fail = (f"seq out of order: array position {i + 1} carries seq {seq!r}", i + 1, i + 1, seq)
        leaf = leaf_receipt_id(rid)
        self._duplicate(leaf, rid, i)
        self.leaves += leaf
        self.hashes += bytes.fromhex(step["receipt_hash"])
        if not self.profile:
            oh = step.get("output_hash")
            if _is_hex64(oh):
                self.output_leaves += leaf_seq_output(seq, oh)
            elif self.output_bad is None:
                self.output_bad = i + 1
        elif self.chain_fail is None:
            self._chain(step, i)
        try:
            data = _step_bytes(step, bool(self.profile))
        except CanonicalizationError as e:  # as in memory: the chain fails, and no signature can be checked
            if self.unencodable is None:
                self.unencodable = f"could not verify: receipt cannot be canonicalized: {e}"
            return
        self.spilled += self.spill.write(b"," + data if i else data)

    def _duplicate(self, leaf: bytes, rid: str, i: int) -> None:
        if self.dup_fail is not None:
            return
        key = int.from_bytes(leaf[:_KEY_BYTES], "big")
        first = self.seen.get(key)
        if first is None:
            self.seen[key] = i + 1
            return
        if self.leaves[(first - 1) * _LEAF:first * _LEAF] != leaf:  # two ids share 64 bits: compare in full
            first = self.seen_full.setdefault(leaf, i + 1)
            if first == i + 1:
                return
        self.dup_fail = (f"receipt_id repeats the one of step {first}", i + 1, rid)

    def _chain(self, step: dict[str, Any], i: int) -> None:
        seq = i + 1
        if self.close_at is not None:
            self.chain_fail = ("a close step before the last step", self.close_at + 1, None, None)
            return
        if i == 0:
            self.first_prev = step["prev_digest"]  # compared with workflow_id's genesis at the end
        elif step["prev_digest"] != self.prev:
            self.chain_fail = (f"prev_digest does not link to the digest of step {i}", seq, self.prev,
                               step["prev_digest"])
            return
        try:
            digest_hex = step_digest_hex(step, flat=True)
        except CanonicalizationError as e:
            self.chain_fail = (f"step cannot be canonicalized: {e}", seq, None, None)
            return
        rid = uuid8_from_hex(digest_hex)
        if step["receipt_id"] != rid:
            self.chain_fail = ("receipt_id is not derived from the step's digest (a member was changed)", seq, rid,
                               step["receipt_id"])
            return
        self.prev = digest_hex
        if step["kind"] == CLOSE_KIND:
            self.close_at = i

    # ------------------------------------------------------------- results

    def members(self, result: CheckResult) -> bool:
        if not self.stopped:
            _check_workflow_members(self.rest, bool(self.profile), result)
        else:  # the members after the steps were never read: report only on those that were
            read = CheckResult(result.number, result.name)
            _check_workflow_members(self.rest, bool(self.profile), read)
            for f in read.failures:
                if f.message.split(" ", 1)[0] in self.rest:
                    result.fail(f.message, seq=f.seq, expected=f.expected, actual=f.actual)
        if self.n == 0:
            result.fail("steps is not a non-empty array")
        failures = self.step_members.failures
        for start, end in self.member_groups:
            for f in failures[start:end]:
                result.fail(f.message, seq=f.seq, expected=f.expected, actual=f.actual)
            if len(result.failures) > _MAX_MEMBER_FAILURES:
                break
        result.passed(f"{self.n} steps; Table 2 and Table 3 members well-formed"
                      + ("; profile members well-formed" if self.profile else ""))
        return result.status != FAIL

    def sequence(self, result: CheckResult) -> None:
        if self.order_fail is not None:
            message, seq, expected, actual = self.order_fail
            result.fail(message, seq=seq, expected=expected, actual=actual)
        if self.dup_fail is not None:
            message, seq, rid = self.dup_fail
            result.fail(message, seq=seq, actual=rid)
        result.passed(f"seq 1..{self.n} in order; receipt ids unique")

    def merkle(self, result: CheckResult) -> None:
        version = self.rest.get("merkle_version", "receipt-id-v0")
        if version == "receipt-id-v0":
            raw = self.leaves
        elif self.output_bad is not None:
            result.fail("output_hash (needed by seq-output-v1) is not 64 lowercase hex", seq=self.output_bad)
            return
        else:
            raw = self.output_leaves
        root = merkle_root([bytes(raw[k:k + _LEAF]) for k in range(0, len(raw), _LEAF)]).hex()
        if root != self.rest["merkle_root"]:
            result.fail(f"merkle_root does not match the {version} root of the steps",
                        expected=root, actual=self.rest["merkle_root"])
            return
        result.passed(f"{version} root over {self.n} steps matches")

    def chain(self, result: CheckResult) -> None:
        wf, n, last = self.rest, self.n, self.last
        assert last is not None
        genesis = genesis_digest(wf["workflow_id"])
        if self.first_prev != genesis:
            result.fail("prev_digest does not link to the genesis digest of workflow_id", seq=1, expected=genesis,
                        actual=self.first_prev)
            return
        if self.chain_fail is not None:
            message, seq, expected, actual = self.chain_fail
            result.fail(message, seq=seq, expected=expected, actual=actual)
            return
        check_chain_end(wf, self.prev, last, n, result)

    def signing_input(self) -> bytearray:
        """``pae(PAYLOAD_TYPE, JCS(receipt without signature))``, the steps' bytes read back into place."""
        body = {k: v for k, v in self.rest.items() if k != "signature"}
        keys = sorted([*body, "steps"], key=_jcs_key)
        cut = keys.index("steps")

        def members(names: list[str]) -> bytes:
            return b",".join(exact_bytes(k) + b":" + exact_bytes(body[k]) for k in names)

        before, after = members(keys[:cut]), members(keys[cut + 1:])
        head = pae(PAYLOAD_TYPE, b"")[:-_LEN_FIELD]  # the domain and the type; the body's length comes next
        front = b"{" + before + (b"," if before else b"") + b'"steps":['
        back = b"]" + (b"," if after else b"") + after + b"}"
        msg = bytearray(len(head) + _LEN_FIELD + len(front) + self.spilled + len(back))
        view = memoryview(msg)
        at = len(head) + _LEN_FIELD
        view[:len(head)] = head
        view[len(head):at] = struct.pack(">Q", len(msg) - at)
        view[at:at + len(front)] = front
        at += len(front)
        self.spill.seek(0)
        end = len(msg) - len(back)
        while at < end:
            chunk = self.spill.read(min(CHUNK_BYTES, end - at))
            if not chunk:
                raise OSError("the spilled step bytes ended early")
            view[at:at + len(chunk)] = chunk
            at += len(chunk)
        view[at:] = back
        view.release()
        return msg


def verify_streaming(
    source: str,
    *,
    evidence: str | os.PathLike[str] | None,
    trusted_key_ids: Any,
    expected_root: str | None,
    expected_head: str | None,
    in_memory_ok: bool = True,
) -> Report | None:
    """Verify the receipt file ``source`` by streaming.

    A file outside the shape this path reads gives None (verify it in memory) when
    ``in_memory_ok``, else a MALFORMED report naming the problem: a file too large or too
    costly to parse in memory is never handed back.
    """
    try:
        with open_regular(source) as f, tempfile.TemporaryFile(prefix="aer1-verify-") as spill:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_INPUT_BYTES:
                raise MalformedInput(f"{source} is {size} bytes, over the {MAX_INPUT_BYTES}-byte limit")
            walker = _Walker(_Text(f), spill)
            try:
                walker.run()
            except _Settled:
                walker.stopped = True
            walker.text.buf = ""
            return _report(walker, source, evidence, trusted_key_ids, expected_root, expected_head)
    except (_Fallback, json.JSONDecodeError, RecursionError, CanonicalizationError) as e:
        if in_memory_ok:
            return None
        why = f"not valid JSON: {e.msg}" if isinstance(e, json.JSONDecodeError) else str(e) or "nested too deeply"
        return unreadable_report(source, f"{source}: {why} (a file this large or costly is verified only by streaming)")
    except MalformedInput as e:
        return None if in_memory_ok and not isinstance(e, _TooLong) else unreadable_report(source, str(e))
    except OSError as e:
        return None if in_memory_ok else unreadable_report(source, f"cannot read {source}: {e.strerror or e}")


def _report(walker: _Walker, source: str, evidence: str | os.PathLike[str] | None, trusted_key_ids: Any,
            expected_root: str | None, expected_head: str | None) -> Report:
    checks = [CheckResult(number, name) for number, name in CHECKS]
    c_parse, c_members, c_seq, c_merkle, c_chain, c_sig, c_evidence, c_expected = checks
    report = Report(source, checks)
    if walker.stopped:
        c_parse.skip(f"stopped reading after step {walker.n}: more than {_MAX_MEMBER_FAILURES} member failures "
                     "settle the verdict, so the rest of the file was not read")
        report.notes.append("reading stopped early: the members after the steps and the rest of the file "
                            "were not checked")
    else:
        c_parse.passed("strict UTF-8 JSON; no duplicate keys; size and depth within limits")
    beside = evidence_path_for(source)
    if evidence is None and os.path.lexists(beside):
        evidence = beside
    if not walker.members(c_members):
        for c in checks[2:]:
            c.skip("members check failed")
        return report
    wf = walker.rest
    report.workflow_id = wf["workflow_id"]
    report.steps = walker.n
    report.profile = PROFILE if walker.profile else None
    walker.sequence(c_seq)
    walker.seen, walker.seen_full = {}, {}
    walker.merkle(c_merkle)
    walker.leaves = bytearray()
    if walker.profile:
        walker.chain(c_chain)
    else:
        c_chain.skip(f"no chain: the receipt does not declare profile {PROFILE}")
        report.notes.append(_NOT_PROFILE_NOTE)
    if "signature" in wf and walker.unencodable is not None:  # the order of check_signature's failures
        try:
            parse_signature(wf["signature"])
        except ValueError as e:
            c_sig.fail(f"could not verify: malformed signature member: {e}")
        else:
            c_sig.fail(walker.unencodable)
    elif "signature" in wf:
        check_signature(wf, trusted_key_ids, c_sig, walker.signing_input())
    else:
        check_signature(wf, trusted_key_ids, c_sig)
    if evidence is not None:
        if c_chain.status == FAIL or c_members.status == FAIL:
            c_evidence.skip("chain check failed")
        else:
            check_evidence({**wf, "steps": _Hashes(walker.hashes)}, os.fspath(evidence), c_evidence)
    else:
        c_evidence.skip(f"no evidence file beside the receipt ({beside})")
    check_expected(wf, expected_root, expected_head, c_expected)
    return report
