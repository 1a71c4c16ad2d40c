"""The ``log`` check and the completeness walk: receipts against a transparency log (spec/log.md).

* :func:`check_receipt_log`: one receipt's ``NAME.tlog-proof`` shows its entry (computed
  here from the receipt) in a checkpoint signed by a trusted log key and cosigned by at
  least K trusted witnesses. Offline: the proof file alone suffices.
* :func:`walk_log`: the whole log: the checkpoint's signatures, every tile and entry bundle
  checked against the checkpoint's root, every entry read; ``since`` a checkpoint kept
  earlier, the current one must extend it.
* :class:`Completeness`: the archive's receipts against the log's entries: listed but
  missing or not matching, in the archive but not listed, opened and never closed.

Only the format layer (``aer1._tlog``) is used: this module writes nothing.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
from dataclasses import dataclass, field
from typing import Any

from .._receipt import is_uuid
from .._tlog import (
    HASH_SIZE,
    MAX_PROOF_BYTES,
    TILE_WIDTH,
    Checkpoint,
    TileHashReader,
    Verifier,
    at,
    check_bundle,
    consistency_proof,
    dir_bundle_reader,
    dir_tile_reader,
    leaf_hash,
    not_a_key_path,
    open_checkpoint,
    parse_tlog_proof,
    parse_vkey,
    proof_path_for,
    read_file_bounded,
    verify_consistency,
    verify_tlog_proof,
)
from .._tlog._entry import CLOSED, IDS_BYTES, OPENED, canonical_ids, entry_ids, receipt_entry_bytes
from ..errors import LogInvalid, LogMalformed
from ._report import PASS, CheckResult, Report

__all__ = [
    "LOG_CHECK",
    "MAX_NAMED",
    "Completeness",
    "LogTrust",
    "LogWalk",
    "check_receipt_log",
    "receipt_entry",
    "receipt_ids",
    "walk_log",
]

#: The check this module adds to a receipt's report.
LOG_CHECK = "log"
#: Receipts named per kind of completeness problem (the count is always exact).
MAX_NAMED = 10
_MAX_CHECKPOINT_BYTES = 1024 * 1024
#: Checkpoints a worker remembers as opened (each a few hundred bytes).
_OPENED_CACHED = 256


@dataclass(frozen=True)
class LogTrust:
    """What the log check trusts (picklable: key strings, parsed in each worker once)."""

    log_keys: tuple[str, ...]
    witnesses: tuple[str, ...] = ()
    min_witnesses: int = 0

    def __getstate__(self) -> dict[str, Any]:
        """The key strings only: the parsed keys and opened checkpoints (unpicklable) are made again in a worker."""
        return {k: v for k, v in self.__dict__.items() if k not in ("verifiers", "_opened")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @functools.cached_property
    def verifiers(self) -> tuple[list[Verifier], list[Verifier]]:
        """The parsed (log keys, witness keys)."""
        return [parse_vkey(k) for k in self.log_keys], [parse_vkey(k) for k in self.witnesses]

    def open_checkpoint(self, note: bytes, logs: Any, witnesses: Any, origin: str | None) -> Any:
        """:func:`open_checkpoint` under these keys, remembered per note: the receipts of one batch share it."""
        cache: dict[bytes, Any] = self.__dict__.setdefault("_opened", {})
        key = bytes(note)
        if key not in cache:
            if len(cache) >= _OPENED_CACHED:
                cache.clear()
            try:
                cache[key] = open_checkpoint(key, logs, witnesses, origin)
            except (LogMalformed, LogInvalid) as e:
                cache[key] = e
        got = cache[key]
        if isinstance(got, Exception):
            raise got
        return got


def load_vkey(text_or_path: str) -> str:
    """A verifier key string given as itself or as a file holding it (``log.vkey``)."""
    text = text_or_path
    if os.path.isfile(text_or_path):
        try:
            text = read_file_bounded(text_or_path, 8192).decode("utf-8").strip()  # a key name is UTF-8
        except (UnicodeDecodeError, FileNotFoundError) as e:
            raise LogMalformed(f"{text_or_path}: not a verifier key file") from e
    elif (why := not_a_key_path(text_or_path)) is not None:  # say what the path is, not how many '+' it lacks
        raise LogMalformed(why)
    parse_vkey(text)
    return text


def receipt_entry(workflow: dict[str, Any] | None) -> tuple[bytes | None, str]:
    """The closed entry's bytes for a parsed receipt, or None and why it has none."""
    if workflow is None:
        return None, "the receipt could not be read again"
    try:
        return receipt_entry_bytes(workflow), ""
    except LogMalformed as e:
        return None, str(e)


def receipt_ids(workflow: Any) -> bytes | None:
    """``b"<workflow_id>/<receipt_id>"`` of a parsed receipt whose entry cannot be computed, when both are
    lowercase UUIDs; else None."""
    if not isinstance(workflow, dict):
        return None
    wf, rid = workflow.get("workflow_id"), workflow.get("receipt_id")
    return f"{wf}/{rid}".encode("ascii") if is_uuid(wf) and is_uuid(rid) else None


def check_receipt_log(report: Report, path: str, trust: LogTrust, entry: bytes | None, why: str = "") -> CheckResult:
    """Add the ``log`` check to ``report`` for the receipt at ``path``, whose entry is ``entry`` (None: ``why``).

    The entry is computed once by the caller from the receipt the checks parsed
    (:func:`receipt_entry`), and serves the completeness walk too."""
    result, open_ = _log_result(report)
    if not open_:
        return result
    proof_path = proof_path_for(path)
    name = os.path.basename(proof_path)
    try:
        data = read_file_bounded(proof_path, MAX_PROOF_BYTES)
    except FileNotFoundError:
        result.skip(f"no {name} beside the receipt")
        return result
    except LogMalformed as e:  # it names the proof file
        return _failed(result, str(e))
    if entry is None:
        return _failed(result, f"the receipt has no log entry: {why}")
    logs, witnesses = trust.verifiers
    try:
        proof = parse_tlog_proof(data)
        done = verify_tlog_proof(proof, entry, logs, witnesses, trust.min_witnesses, opener=trust.open_checkpoint)
    except LogMalformed as e:
        return _failed(result, f"malformed {name}: {e}")
    except LogInvalid as e:
        return _failed(result, f"{name}: {e}")
    _included(result, done.index, _inclusion(done.checkpoint, done.log_key, list(done.cosigners), trust,
                                             "its checkpoint"))
    return result


def _failed(result: CheckResult, message: str) -> CheckResult:
    """``result`` with the failure ``message`` recorded."""
    result.fail(message)
    return result


def _log_result(report: Report) -> tuple[CheckResult, bool]:
    """The ``log`` check added to ``report``, and False when it is NOT CHECKED already (no entry to check)."""
    result = CheckResult(len(report.checks) + 1, LOG_CHECK)
    report.checks.append(result)
    if report.malformed:
        result.skip("the receipt could not be read")
        return result, False
    if report.check("chain").status != PASS:
        result.skip("the chain check did not pass: the members an entry binds are not bound")
        return result, False
    return result, True


def _inclusion(cp: Checkpoint, log_key: str, cosigners: list[tuple[str, int]], trust: LogTrust,
               where: str) -> tuple[dict[str, Any], str]:
    """What a passed ``log`` check says of checkpoint ``cp`` (``where``: which one), but the entry's index:
    (its facts, the end of its detail); the same for every receipt of a completeness run."""
    names = [n for n, _ in cosigners]
    cosigned = f"; cosigned by {len(names)} of {len(trust.witnesses)} trusted witnesses ({', '.join(names)})" if (
        trust.witnesses) else "; no witness trusted"
    facts = {"origin": cp.origin, "size": cp.size, "root": base64.b64encode(cp.root).decode("ascii"),
             "log_key": log_key, "witnesses": [{"name": n, "timestamp": t} for n, t in cosigners],
             "min_witnesses": trust.min_witnesses}
    return facts, f" of {cp.origin} in {where} of size {cp.size}, signed by {log_key}{cosigned}"


def _included(result: CheckResult, index: int, inclusion: tuple[dict[str, Any], str]) -> None:
    """Pass ``result``: the entry at ``index`` is in the checkpoint :func:`_inclusion` describes."""
    facts, tail = inclusion
    result.facts["index"] = index
    result.facts.update(facts)
    result.facts["witnesses"] = [dict(w) for w in facts["witnesses"]]
    result.passed(f"entry {index}{tail}")


def _key(ids: bytes) -> bytes:
    """A short key for ``b"<workflow_id>/<receipt_id>"``: the walk holds one per entry."""
    return hashlib.sha256(ids).digest()[:16]


def _closed_key(entry: bytes) -> bytes:
    """:func:`_key` of a closed entry :func:`receipt_entry` made (canonical: its ids at fixed places)."""
    return _key(canonical_ids(entry))


@dataclass
class LogWalk:
    """The log as the walk found it: its checkpoint, problems, and an index of its entries.

    The index holds no object per entry but its keys: an archive of millions of receipts is
    walked in memory that grows by tens of bytes an entry, and every entry's ids (for naming
    a problem) lie side by side in one byte string."""

    directory: str
    checkpoint: Checkpoint | None = None
    log_key: str | None = None
    cosigners: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    malformed: bool = False
    since: dict[str, Any] | None = None
    #: closed entries: leaf hash -> the first index holding it
    leaves: dict[bytes, int] = field(default_factory=dict)
    #: closed entries: key of (workflow_id, receipt_id) -> the first index with those ids
    closed: dict[bytes, int] = field(default_factory=dict)
    #: closed entries after the first with the same ids: key -> their indexes (a receipt logged again)
    later: dict[bytes, list[int]] = field(default_factory=dict)
    #: opened entries: key -> the first index
    opened: dict[bytes, int] = field(default_factory=dict)
    entries: int = 0
    #: The trusted witnesses' cosignatures on the checkpoint: (name, timestamp).
    cosigned: list[tuple[str, int]] = field(default_factory=list)
    #: The earliest and the latest ``started_at`` of the closed entries (one fixed format: compared as text).
    first_started: str | None = None
    last_started: str | None = None
    #: Every entry's leaf hash, entry i at ``32 * i`` (the level-0 tiles, checked).
    hashes: bytearray = field(default_factory=bytearray)
    #: Every entry's ``b"<workflow_id>/<receipt_id>"``, entry i at ``IDS_BYTES * i`` (blank: unreadable).
    ids: bytearray = field(default_factory=bytearray)

    def leaf(self, index: int) -> bytes:
        """The leaf hash of entry ``index``."""
        return bytes(self.hashes[index * HASH_SIZE : (index + 1) * HASH_SIZE])

    def ids_of(self, index: int) -> str:
        """``<workflow_id>/<receipt_id>`` of entry ``index``."""
        return self.ids[index * IDS_BYTES : (index + 1) * IDS_BYTES].decode("ascii")

    def closed_at(self, key: bytes) -> list[int]:
        """The indexes of the closed entries with the ids of ``key``, in log order (none: empty)."""
        first = self.closed.get(key)
        return [] if first is None else [first, *self.later.get(key, ())]

    def fail(self, message: str, *, malformed: bool = False) -> None:
        self.problems.append(message)
        self.malformed = self.malformed or malformed

    def refused(self, where: str, e: LogMalformed | LogInvalid) -> LogWalk:
        """This walk with ``where``'s error recorded (malformed input kept apart from a failed check)."""
        self.fail(f"{where}: {e}", malformed=isinstance(e, LogMalformed))
        return self


def _timestamp(sig: bytes) -> int:
    from .._tlog import cosignature_timestamp

    try:
        return cosignature_timestamp(sig)
    except LogMalformed:
        return -1


def _read_checkpoint(path: str, what: str) -> bytes:
    try:
        return read_file_bounded(path, _MAX_CHECKPOINT_BYTES)
    except FileNotFoundError as e:
        raise LogMalformed(f"{what} {path}: missing") from e


def walk_log(directory: str, trust: LogTrust, since: str | None = None) -> LogWalk:
    """Check the whole log in ``directory`` and index its entries (see the module's docstring)."""
    walk = LogWalk(directory)
    logs, witnesses = trust.verifiers
    try:
        note = _read_checkpoint(str(at(directory, "checkpoint")), "checkpoint")
        cp, _, sigs, cosigned = open_checkpoint(note, logs, witnesses)
    except (LogMalformed, LogInvalid) as e:
        return walk.refused("checkpoint", e)
    walk.checkpoint, walk.log_key = cp, f"{sigs[0].name}+{sigs[0].key_id:08x}"
    walk.cosigners = [v.name for v, _ in cosigned]
    walk.cosigned = [(v.name, _timestamp(s.sig)) for v, s in cosigned]
    if len(cosigned) < trust.min_witnesses:
        walk.fail(f"checkpoint: got {len(cosigned)} cosignatures by trusted witnesses, want at least "
                  f"{trust.min_witnesses}")
    try:
        reader = TileHashReader(cp.size, cp.root, dir_tile_reader(directory))
    except (LogMalformed, LogInvalid) as e:
        return walk.refused("tiles", e)
    if since is not None:
        try:
            walk.since = _since(since, cp, reader, trust)
        except (LogMalformed, LogInvalid) as e:
            walk.refused("since", e)
    try:
        _entries(walk, reader, directory)
    except (LogMalformed, LogInvalid) as e:
        walk.refused("tiles", e)
    return walk


def _since(path: str, cp: Checkpoint, reader: TileHashReader, trust: LogTrust) -> dict[str, Any]:
    """The current checkpoint must extend the one at ``path`` (signed by the same trusted log key)."""
    logs, _ = trust.verifiers
    try:
        old, _, _, _ = open_checkpoint(_read_checkpoint(path, "--since"), logs)
    except (LogMalformed, LogInvalid) as e:
        raise type(e)(f"--since {path}: {e}") from e
    if old.origin != cp.origin:
        raise LogInvalid(f"--since {path}: origin got {old.origin!r}, want {cp.origin!r}")
    if old.size > cp.size:
        raise LogInvalid(f"--since {path}: the log shrank: size got {cp.size}, want at least {old.size} (rolled back)")
    verify_consistency(old.size, cp.size, old.root, cp.root, consistency_proof(old.size, cp.size, reader.hash_at))
    return {"path": path, "size": old.size, "root": base64.b64encode(old.root).decode("ascii")}


def _entries(walk: LogWalk, reader: TileHashReader, directory: str) -> None:
    """Read every entry bundle, check it against the tiles, and index the entries."""
    size = reader.size
    bundles = dir_bundle_reader(directory)
    blank = b" " * IDS_BYTES
    leaves, closed, later, opened, ids = walk.leaves, walk.closed, walk.later, walk.opened, walk.ids
    first: bytes | None = None  # the first and last started_at so far, as bytes (ASCII: ordered as the text)
    last: bytes | None = None
    for t in range(-(-size // TILE_WIDTH)):
        width = min(TILE_WIDTH, size - t * TILE_WIDTH)
        tile = reader.tile(0, t)
        hashes = [tile[i : i + HASH_SIZE] for i in range(0, len(tile), HASH_SIZE)]
        entries = check_bundle(bundles(t, width), hashes)
        walk.hashes += tile
        for k, raw in enumerate(entries):
            index = t * TILE_WIDTH + k
            try:
                kind, text, started = entry_ids(raw)
            except LogMalformed as e:
                walk.fail(f"entry {index}: {e}")
                ids += blank
                continue
            ids += text
            key = _key(text)
            if kind == CLOSED:
                leaves.setdefault(hashes[k], index)
                if closed.setdefault(key, index) != index:
                    later.setdefault(key, []).append(index)
                if first is None or started < first:
                    first = started
                    walk.first_started = started.decode("ascii")
                if last is None or started > last:
                    last = started
                    walk.last_started = started.decode("ascii")
            elif kind == OPENED:
                opened.setdefault(key, index)
    walk.entries = size


@dataclass
class _Problem:
    count: int = 0
    named: list[str] = field(default_factory=list)

    def add(self, name: str) -> None:
        self.count += 1
        if len(self.named) < MAX_NAMED:
            self.named.append(name)


#: The completeness problems, in the order reported.
PROBLEMS = (
    ("missing", "listed in the log, missing from the archive"),
    ("not_matching", "listed in the log, but the archive's receipt does not match its entry"),
    ("not_listed", "in the archive, not listed in the log"),
    ("never_closed", "opened in the log and never closed"),
)


class Completeness:
    """A sink for an archive run: each receipt's entry, then the comparison with the log.

    Per receipt it keeps a key and an int (the order its ids were first seen), and its leaf
    hash when the log holds it; a receipt the log lacks is kept whole, to be named."""

    def __init__(self, walk: LogWalk, trust: LogTrust) -> None:
        self.walk = walk
        self.trust = trust
        #: key of (workflow_id, receipt_id) -> the order those ids were first seen in
        self.seen: dict[bytes, int] = {}
        #: the leaf hashes of the archive's receipts that the log holds
        self.matched: set[bytes] = set()
        #: receipts whose entry the log does not hold: (order of their ids, key, source)
        self.unmatched: list[tuple[int, bytes, str]] = []
        self.problems = {name: _Problem() for name, _ in PROBLEMS}
        self.receipts = 0
        w = walk
        self._inclusion = None if w.problems or w.checkpoint is None or w.log_key is None else _inclusion(
            w.checkpoint, w.log_key, w.cosigned, trust, "the log's checkpoint")
        #: the last entry judged and its leaf hash (add follows judge for the same outcome)
        self._last: tuple[bytes | None, bytes] = (None, b"")

    def _leaf(self, entry: bytes) -> bytes:
        last, leaf = self._last
        if last is not entry:
            leaf = leaf_hash(entry)
            self._last = (entry, leaf)
        return leaf

    def judge(self, outcome: Any) -> None:
        """Before the outcome is counted and shown: its ``log`` check, answered from the walked log.

        In a completeness run the walk has checked every entry against the checkpoint, so a
        receipt whose entry the log holds is shown included in it without reading its proof
        file. Any other receipt (the log did not verify, or lacks its entry) has its proof
        checked as outside a completeness run: a proof of a tree that held the entry is the
        evidence of a fork. The worker left the check to this, unless a policy needed it first.
        """
        r = outcome.report
        if r.kind != "receipt" or any(c.name == LOG_CHECK for c in r.checks):
            return
        entry: bytes | None = getattr(outcome, "log_entry", None)
        why: str = getattr(outcome, "log_why", "")
        if entry is not None and self._inclusion is not None:
            found = self.walk.leaves.get(self._leaf(entry))
            if found is not None:
                result, open_ = _log_result(r)
                if open_:
                    _included(result, found, self._inclusion)
                return
        check_receipt_log(r, r.source or "", self.trust, entry, why)

    def add(self, outcome: Any) -> None:
        r = outcome.report
        if r.kind != "receipt":
            return
        self.receipts += 1
        entry: bytes | None = getattr(outcome, "log_entry", None)
        if entry is None:
            why = getattr(outcome, "log_why", "") or "its entry could not be computed"
            ids: bytes | None = getattr(outcome, "log_ids", None)
            if ids is None:
                self.problems["not_listed"].add(f"{r.source} ({why})")
                return
            # its ids are readable: the log's entry for them is not missing, it does not match (finish says which)
            key = _key(ids)
            self.unmatched.append((self.seen.setdefault(key, len(self.seen)), key, f"{r.source} ({why})"))
            return
        key = _closed_key(entry)
        order = self.seen.setdefault(key, len(self.seen))
        leaf = self._leaf(entry)
        if leaf in self.walk.leaves:
            self.matched.add(leaf)
        else:
            self.unmatched.append((order, key, r.source or "?"))

    def finish_run(self, tally: Any) -> None:
        """At the end of the run: the comparison, as the run's ``log`` section and into its exit code."""
        doc = self.finish()
        tally.sections["log"] = doc
        tally.section_text = section_lines(doc)
        tally.section_code = exit_code(doc)

    def finish(self) -> dict[str, Any]:
        """The comparison, as the JSON section of the run.

        Receipts are named by the order their ids were first seen, then as they came; log
        entries in log order."""
        w = self.walk
        for _, key, source in sorted(self.unmatched, key=lambda u: u[0]):
            at_ = w.closed_at(key)
            if not at_:
                self.problems["not_listed"].add(source)
            else:
                self.problems["not_matching"].add(f"{source} (entries {', '.join(str(i) for i in at_)})")
        for key, index in w.closed.items():
            if key not in self.seen:
                self.problems["missing"].add(f"{w.ids_of(index)} (entry {index})")
                continue
            for i in w.later.get(key, ()):
                if w.leaf(i) not in self.matched:
                    self.problems["not_matching"].add(f"{w.ids_of(i)} (entry {i}: another version than the archive's)")
        for key, index in w.opened.items():
            if key not in w.closed:
                self.problems["never_closed"].add(f"{w.ids_of(index)} (opened at entry {index})")
        return self.section()

    @property
    def failed(self) -> bool:
        return bool(self.walk.problems) or any(p.count for p in self.problems.values())

    def section(self) -> dict[str, Any]:
        doc = log_section(self.walk)
        doc["complete"] = {"receipts": self.receipts,
                           **{name: {"count": p.count, "named": p.named} for name, p in self.problems.items()}}
        doc["verdict"] = "MALFORMED" if self.walk.malformed else "INVALID" if self.failed else "VALID"
        return doc


def log_section(walk: LogWalk) -> dict[str, Any]:
    """The log's part of a run's JSON: the checkpoint, the witnesses, what was checked, the problems."""
    cp = walk.checkpoint
    return {
        "directory": walk.directory,
        "verdict": "MALFORMED" if walk.malformed else "INVALID" if walk.problems else "VALID",
        "checkpoint": None if cp is None else {"origin": cp.origin, "size": cp.size,
                                               "root": base64.b64encode(cp.root).decode("ascii")},
        "log_key": walk.log_key,
        "witnesses": list(walk.cosigners),
        "entries_checked": walk.entries,
        "since": walk.since,
        "problems": list(walk.problems),
    }


def section_lines(doc: dict[str, Any]) -> list[str]:
    """The log section as lines of text."""
    cp = doc["checkpoint"]
    lines = [f"log {doc['directory']}: {doc['verdict']}"]
    if cp is not None:
        lines.append(f"  checkpoint {cp['origin']} size {cp['size']} root {cp['root']}, signed by {doc['log_key']}")
        lines.append(f"  witnesses: {', '.join(doc['witnesses']) or 'none verified'}")
        lines.append(f"  tree recomputed from the tiles: {doc['entries_checked']} entries checked")
    if doc.get("since"):
        s = doc["since"]
        lines.append(f"  consistent with the earlier checkpoint {s['path']} (size {s['size']})")
    for p in doc["problems"]:
        lines.append(f"  problem: {p}")
    complete = doc.get("complete")
    if complete is not None:
        lines.append(f"  completeness over {complete['receipts']} receipts:")
        for name, what in PROBLEMS:
            p = complete[name]
            lines.append(f"    {p['count']} {what}" + (f": {', '.join(p['named'])}" if p["named"] else "")
                         + (" ..." if p["count"] > len(p["named"]) else ""))
    return lines


def exit_code(doc: dict[str, Any]) -> int:
    """0, 1 or 2 for a log section's verdict."""
    return {"VALID": 0, "INVALID": 1}.get(doc["verdict"], 2)
