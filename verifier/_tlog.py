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

from .._tlog import (
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
    open_checkpoint,
    parse_tlog_proof,
    parse_vkey,
    proof_path_for,
    read_file_bounded,
    verify_consistency,
    verify_tlog_proof,
)
from .._tlog._entry import CLOSED, OPENED, parse_entry, receipt_entry_bytes
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
            text = read_file_bounded(text_or_path, 8192).decode("ascii").strip()
        except (UnicodeDecodeError, FileNotFoundError) as e:
            raise LogMalformed(f"{text_or_path}: not a verifier key file") from e
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


def check_receipt_log(report: Report, path: str, trust: LogTrust, entry: bytes | None, why: str = "") -> CheckResult:
    """Add the ``log`` check to ``report`` for the receipt at ``path``, whose entry is ``entry`` (None: ``why``).

    The entry is computed once by the caller from the receipt the checks parsed
    (:func:`receipt_entry`), and serves the completeness walk too."""
    result, open_ = _log_result(report)
    if not open_:
        return result
    proof_path = proof_path_for(path)
    try:
        data = read_file_bounded(proof_path, MAX_PROOF_BYTES)
    except FileNotFoundError:
        result.skip(f"no {os.path.basename(proof_path)} beside the receipt")
        return result
    except LogMalformed as e:
        result.fail(f"{proof_path}: {e}")
        return result
    if entry is None:
        result.fail(f"the receipt has no log entry: {why}")
        return result
    logs, witnesses = trust.verifiers
    try:
        proof = parse_tlog_proof(data)
        done = verify_tlog_proof(proof, entry, logs, witnesses, trust.min_witnesses, opener=trust.open_checkpoint)
    except LogMalformed as e:
        result.fail(f"malformed {os.path.basename(proof_path)}: {e}")
        return result
    except LogInvalid as e:
        result.fail(f"{os.path.basename(proof_path)}: {e}")
        return result
    _included(result, done.index, done.checkpoint, done.log_key, list(done.cosigners), trust, "its checkpoint")
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


def _included(result: CheckResult, index: int, cp: Checkpoint, log_key: str, cosigners: list[tuple[str, int]],
              trust: LogTrust, where: str) -> None:
    """Pass ``result``: the entry at ``index`` is in checkpoint ``cp`` (``where``: which one)."""
    names = [n for n, _ in cosigners]
    cosigned = f"; cosigned by {len(names)} of {len(trust.witnesses)} trusted witnesses ({', '.join(names)})" if (
        trust.witnesses) else "; no witness trusted"
    result.facts.update({"index": index, "origin": cp.origin, "size": cp.size,
                         "root": base64.b64encode(cp.root).decode("ascii"), "log_key": log_key,
                         "witnesses": [{"name": n, "timestamp": t} for n, t in cosigners],
                         "min_witnesses": trust.min_witnesses})
    result.passed(f"entry {index} of {cp.origin} in {where} of size {cp.size}, signed by {log_key}{cosigned}")


def _key(ids: tuple[str, str]) -> bytes:
    """A short key for a (workflow_id, receipt_id) pair: the walk holds one per entry."""
    return hashlib.sha256(f"{ids[0]}/{ids[1]}".encode()).digest()[:16]


def _closed_key(entry: bytes) -> bytes:
    """:func:`_key` of a closed entry :func:`receipt_entry` made (canonical: its ids are lines 3 and 4)."""
    lines = entry.split(b"\n", 4)
    return _key((lines[2][len(b"workflow_id "):].decode("ascii"), lines[3][len(b"receipt_id "):].decode("ascii")))


@dataclass
class LogWalk:
    """The log as the walk found it: its checkpoint, problems, and an index of its entries."""

    directory: str
    checkpoint: Checkpoint | None = None
    log_key: str | None = None
    cosigners: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    malformed: bool = False
    since: dict[str, Any] | None = None
    #: closed entries: key of (workflow_id, receipt_id) -> [(index, SHA-256 of the entry, ids text)]
    closed: dict[bytes, list[tuple[int, bytes, str]]] = field(default_factory=dict)
    #: opened entries: key -> (index, ids text)
    opened: dict[bytes, tuple[int, str]] = field(default_factory=dict)
    entries: int = 0
    #: The trusted witnesses' cosignatures on the checkpoint: (name, timestamp).
    cosigned: list[tuple[str, int]] = field(default_factory=list)
    #: The earliest and the latest ``started_at`` of the closed entries (one fixed format: compared as text).
    first_started: str | None = None
    last_started: str | None = None

    def fail(self, message: str, *, malformed: bool = False) -> None:
        self.problems.append(message)
        self.malformed = self.malformed or malformed


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
    except LogMalformed as e:
        walk.fail(f"checkpoint: {e}", malformed=True)
        return walk
    except LogInvalid as e:
        walk.fail(f"checkpoint: {e}")
        return walk
    walk.checkpoint, walk.log_key = cp, f"{sigs[0].name}+{sigs[0].key_id:08x}"
    walk.cosigners = [v.name for v, _ in cosigned]
    walk.cosigned = [(v.name, _timestamp(s.sig)) for v, s in cosigned]
    if len(cosigned) < trust.min_witnesses:
        walk.fail(f"checkpoint: got {len(cosigned)} cosignatures by trusted witnesses, want at least "
                  f"{trust.min_witnesses}")
    try:
        reader = TileHashReader(cp.size, cp.root, dir_tile_reader(directory))
    except LogMalformed as e:
        walk.fail(f"tiles: {e}", malformed=True)
        return walk
    except LogInvalid as e:
        walk.fail(f"tiles: {e}")
        return walk
    if since is not None:
        try:
            walk.since = _since(since, cp, reader, trust)
        except LogMalformed as e:
            walk.fail(f"since: {e}", malformed=True)
        except LogInvalid as e:
            walk.fail(f"since: {e}")
    try:
        _entries(walk, reader, directory)
    except LogMalformed as e:
        walk.fail(f"tiles: {e}", malformed=True)
    except LogInvalid as e:
        walk.fail(f"tiles: {e}")
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
    for t in range(-(-size // TILE_WIDTH)):
        width = min(TILE_WIDTH, size - t * TILE_WIDTH)
        hashes = reader.leaf_hashes(t)
        for k, raw in enumerate(check_bundle(bundles(t, width), hashes)):
            index = t * TILE_WIDTH + k
            try:
                entry = parse_entry(raw)
            except LogMalformed as e:
                walk.fail(f"entry {index}: {e}")
                continue
            ids = f"{entry.workflow_id}/{entry.receipt_id}"
            key = _key(entry.ids)
            if entry.kind == CLOSED:
                walk.closed.setdefault(key, []).append((index, hashes[k], ids))
                started = entry.started_at
                if walk.first_started is None or started < walk.first_started:
                    walk.first_started = started
                if walk.last_started is None or started > walk.last_started:
                    walk.last_started = started
            elif entry.kind == OPENED:
                walk.opened.setdefault(key, (index, ids))
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
    """A sink for an archive run: each receipt's entry, then the comparison with the log."""

    def __init__(self, walk: LogWalk, trust: LogTrust) -> None:
        self.walk = walk
        self.trust = trust
        self.seen: dict[bytes, list[tuple[bytes, str]]] = {}
        self.problems = {name: _Problem() for name, _ in PROBLEMS}
        self.receipts = 0

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
        w = self.walk
        if entry is not None and not w.problems and w.checkpoint is not None and w.log_key is not None:
            leaf = leaf_hash(entry)
            found = next((i for i, h, _ in w.closed.get(_closed_key(entry), ()) if h == leaf), None)
            if found is not None:
                result, open_ = _log_result(r)
                if open_:
                    _included(result, found, w.checkpoint, w.log_key, w.cosigned, self.trust, "the log's checkpoint")
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
            self.problems["not_listed"].add(f"{r.source} ({why})")
            return
        self.seen.setdefault(_closed_key(entry), []).append((leaf_hash(entry), r.source or "?"))

    def finish_run(self, tally: Any) -> None:
        """At the end of the run: the comparison, as the run's ``log`` section and into its exit code."""
        doc = self.finish()
        tally.sections["log"] = doc
        tally.section_text = section_lines(doc)
        tally.section_code = exit_code(doc)

    def finish(self) -> dict[str, Any]:
        """The comparison, as the JSON section of the run."""
        w = self.walk
        for key, found in self.seen.items():
            entries = w.closed.get(key)
            for leaf, source in found:
                if entries is None:
                    self.problems["not_listed"].add(source)
                elif not any(h == leaf for _, h, _ in entries):
                    self.problems["not_matching"].add(f"{source} (entries {', '.join(str(i) for i, _, _ in entries)})")
        for key, listed in w.closed.items():
            in_archive = self.seen.get(key)
            if in_archive is None:
                index, _, ids = listed[0]
                self.problems["missing"].add(f"{ids} (entry {index})")
                continue
            leaves = {leaf for leaf, _ in in_archive}
            for index, h, ids in listed[1:] if len(listed) > 1 else ():
                if h not in leaves:
                    self.problems["not_matching"].add(f"{ids} (entry {index}: another version than the archive's)")
        for key, (index, ids) in w.opened.items():
            if key not in w.closed:
                self.problems["never_closed"].add(f"{ids} (opened at entry {index})")
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
