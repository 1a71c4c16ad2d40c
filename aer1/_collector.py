"""The Collector: records steps into a hash chain and assembles the AER-1 receipt."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from hashlib import sha256
from math import floor
from operator import itemgetter
from time import time_ns
from typing import TYPE_CHECKING, Any

import orjson

from . import _timefmt as timefmt
from ._canonical import (
    CanonicalizationError,
    canonical_bytes,
    check_exact,
    exact_bytes,
    is_plain,
    normalize,
    sorted_json,
)
from ._chain import genesis_digest, step_link
from ._commit import Personal, commit_content, marker_for
from ._evidence import EvidenceSink
from ._imprint import DEFAULT_TSA_TIMEOUT_S, KEY_PROOF_MEMBER, MAX_TSA_TIMEOUT_S, TIMESTAMPS_MEMBER
from ._journal import DEFAULT_FSYNC, DEFAULT_FSYNC_INTERVAL_MS, Journal, journal_header
from ._layout import write_receipt
from ._limits import (
    CLOSE_RESERVE_BYTES,
    LINE_COST_SLACK_BYTES,
    MAX_AGENTS_BYTES,
    MAX_CONTENT_BYTES,
    MAX_COST_PER_BYTE,
    MAX_EVIDENCE_BYTES,
    MAX_INPUT_BYTES,
    MAX_MEMBER_CHARS,
    MAX_PARSE_COST_BYTES,
    STEP_OVERHEAD_BYTES,
    parse_cost,
)
from ._merkle import merkle_root_hex
from ._outfile import check_output, replace_file
from ._receipt import (
    CLOSE_AGENT,
    CLOSE_KIND,
    DEFAULT_VERIFY_URL,
    KINDS,
    STEP_STATUSES,
    WORKFLOW_STATUSES,
    close_content,
    close_workflow,
    evidence_path_for,
)
from ._redact import NOT_PLAIN, Redactor, default_redactor, plain_redacted, redact_plain
from ._signing import ENV_SIGNING_KEY, load_private_key, sign_receipt
from ._timefmt import format_ns
from ._timestamp import TSA, add_key_proof, normalize_tsas, request_timestamps
from ._trace import step_recorded, step_span
from .errors import UsageError

if TYPE_CHECKING:
    from ._bundle import LinkedChild
    from ._logdir import ReceiptLog

__all__ = ["DEFAULT_AGENT", "LABEL_CACHE_SIZE", "Collector", "CollectorClosedError"]

log = logging.getLogger("aer1")

#: The ``agent`` of a step recorded without one.
DEFAULT_AGENT = "unattributed"
_SORT = orjson.OPT_SORT_KEYS
#: Parse cost a content may have: its evidence line adds its own few members.
_CONTENT_COST_ROOM = MAX_PARSE_COST_BYTES - LINE_COST_SLACK_BYTES
#: Room for steps in the receipt and the evidence: the close step and the workflow members go in the reserve.
_RECEIPT_ROOM = MAX_INPUT_BYTES - CLOSE_RESERVE_BYTES
_EVIDENCE_ROOM = MAX_EVIDENCE_BYTES - CLOSE_RESERVE_BYTES
#: Each kind and status, mapped to one shared string object (a step holds the shared one).
_KINDS = {k: k for k in KINDS}
_STATUSES = {s: s for s in STEP_STATUSES}
#: Validated tool and agent names a collector remembers (each with its JSON text); a name
#: recorded past this many is checked and encoded on every record instead.
LABEL_CACHE_SIZE = 1024
_CLOSE_JSON = orjson.dumps(CLOSE_KIND).decode()
_CLOSE_AGENT_JSON = orjson.dumps(CLOSE_AGENT).decode()
_RECEIPT_ID = itemgetter("receipt_id")
#: Kinds whose status says how the run ended (spec/steps.md, *The workflow's status*).
_RUN_END_KINDS = frozenset({"termination", "error"})
#: ``error.type`` values of an action cut off by a cancellation (not stopped by a decision).
_CANCELLATION_TYPES = frozenset({"cancelled", "CancelledError", "KeyboardInterrupt"})


def _cut_by_cancellation(content: Any) -> bool:
    """True when a ``cancelled`` step's content says a cancellation cut it off (spec/steps.md, workflow status)."""
    error = content.get("error") if isinstance(content, dict) else None
    return isinstance(error, dict) and error.get("type") in _CANCELLATION_TYPES



class CollectorClosedError(UsageError, RuntimeError):
    """The collector was finalized: its chain is closed to new steps."""


def _check_label(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return _check_text(name, value)


def _check_text(name: str, value: str) -> str:
    """Receipt members are hashed exactly and bounded: no lone surrogate, at most MAX_MEMBER_CHARS."""
    if len(value) > MAX_MEMBER_CHARS:
        raise ValueError(f"{name} is {len(value)} characters long, over the {MAX_MEMBER_CHARS} limit")
    try:
        check_exact(value)
    except CanonicalizationError as e:
        raise ValueError(f"{name} is not valid text: {e}") from e
    return value


class Collector:
    """Records observed steps into a hash-chained AER-1 workflow receipt.

    ``record()`` hashes each step's content, links the step to the one before and
    streams the content to the evidence sink; only step headers stay in memory.
    ``finalize()`` appends the close step and returns the receipt (signed when a
    signing key is given or ``$AER1_SIGNING_KEY`` is set). With ``timestamp`` (a TSA URL,
    a callable from DER request to DER response, or a list of them) it first asks for
    RFC 3161 tokens, waiting at most ``timestamp_timeout`` seconds (spec/timestamp.md).
    ``personal`` (content paths such as ``arguments.email`` or ``*.email``, or a predicate
    over (path, value)) marks fields that are committed with a salt and disclosed beside
    the evidence, so they can be erased later (spec/erasure.md).
    With ``log`` (a folder made by ``aer1 log init``, or an ``aer1 log serve`` URL) it logs an
    "opened" entry now (unless
    ``log_opened=False``) and the receipt at finalize; ``save()`` writes ``NAME.tlog-proof``
    beside the receipt (spec/log.md). ``log_key``: the log's private key file, when not the
    one named at init.
    """

    def __init__(
        self,
        goal: str,
        session_id: str | None = None,
        signing_key: Any = None,
        verify_url: str | None = None,
        evidence: bool = True,
        redact: Redactor | bool | None = None,
        journal: str | os.PathLike[str] | None = None,
        fsync: str = DEFAULT_FSYNC,
        fsync_interval_ms: int = DEFAULT_FSYNC_INTERVAL_MS,
        timestamp: TSA | Sequence[TSA] | None = None,
        timestamp_timeout: float = DEFAULT_TSA_TIMEOUT_S,
        personal: Personal | None = None,
        log: str | os.PathLike[str] | None = None,
        log_key: str | None = None,
        log_opened: bool = True,
        _ids: tuple[str, str] | None = None,
    ) -> None:
        self.goal = _check_label("goal", goal)
        self.session_id = _check_label("session_id", session_id) if session_id is not None else str(uuid.uuid4())
        url = verify_url if verify_url is not None else DEFAULT_VERIFY_URL
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            raise ValueError(f"verify_url must be an http(s) URL, got {url!r}")
        self.verify_url = _check_text("verify_url", url)
        if signing_key is None and os.environ.get(ENV_SIGNING_KEY):
            signing_key = os.environ[ENV_SIGNING_KEY]
        self._signing_key = load_private_key(signing_key) if signing_key is not None else None
        # RFC 3161 TSAs asked at finalize (spec/timestamp.md); never waited for past the timeout
        self._tsas = normalize_tsas(timestamp)
        if not 0 < timestamp_timeout <= MAX_TSA_TIMEOUT_S:
            raise ValueError(f"timestamp_timeout must be in (0, {MAX_TSA_TIMEOUT_S}] seconds, "
                             f"got {timestamp_timeout!r}")
        self._tsa_timeout = float(timestamp_timeout)
        if redact is None or redact is True:
            self._redact: Callable[[Any], Any] | None = default_redactor
        elif redact is False:
            self._redact = None
        elif callable(redact):
            self._redact = redact
        else:
            raise TypeError(f"redact must be None, a bool or a callable, got {type(redact).__name__}")
        # ``_ids`` (workflow_id, receipt_id) is private: tests fix ids to compare receipts byte for byte.
        ids = _ids if _ids is not None else (str(uuid.uuid4()), str(uuid.uuid4()))
        self.workflow_id, self.receipt_id = ids
        self._lock = threading.Lock()
        self._seq = 0
        self._head = genesis_digest(self.workflow_id)
        # The receipt's steps, members in reading order: finalize() hands this list and these
        # dicts over as the receipt's steps, so no second copy of a step is ever held.
        self._step_list: list[dict[str, Any]] = []
        self._labels: dict[str, tuple[str, str]] = {}  # see LABEL_CACHE_SIZE
        self._receipt_bytes = self._evidence_bytes = 0  # what the saved files will take, steps so far
        # The workflow status rule (spec/steps.md): steps by status, and whether a termination or
        # error step said the run raised (error) or was cut short (cancelled).
        self._status_counts = dict.fromkeys(STEP_STATUSES, 0)
        self._run_error = self._cut_short = False
        # Actions under way (a turn, a tool call) that finalize() must record as cut off: key -> closer.
        self._open_actions: dict[Any, Callable[[], None]] = {}
        self._agents: dict[str, dict[str, Any]] = {}
        self._agents_bytes = 0
        # Personal fields (paths or a predicate) are committed, not hashed as they are (spec/erasure.md).
        self._personal_option = personal
        self._personal = marker_for(personal)
        self._sink: EvidenceSink | None = (EvidenceSink(self.workflow_id, disclosures=self._personal is not None)
                                           if evidence else None)
        # After finalize(): the receipt's members other than steps, as JSON (head, tail).
        self._closed_parts: tuple[bytes, bytes] | None = None
        self._closing = False  # set by finalize(): only the close step may follow
        self._final_args: tuple[Any, ...] | None = None
        self.recording_failures = 0
        self.late_records = 0
        #: Child receipts bound by :meth:`link`, kept for :meth:`save_bundle`.
        self.linked_children: dict[str, LinkedChild] = {}  # by workflow_id, in link order
        #: Workflow ids in this receipt's tree of links (itself, its children, theirs), kept as
        #: children are linked so each link checks a new child against it without a rescan.
        self.linked_tree_ids: set[str] = {self.workflow_id}
        #: The crash-safe journal (``journal=`` path), or None; see :mod:`aer1._journal`.
        self.journal: Journal | None = None if journal is None else Journal(
            journal,
            journal_header(workflow_id=self.workflow_id, receipt_id=self.receipt_id, session_id=self.session_id,
                           goal=self.goal, verify_url=self.verify_url, evidence=evidence),
            fsync=fsync, fsync_interval_ms=fsync_interval_ms,
        )
        #: The transparency log (``log=`` folder, spec/log.md): an "opened" entry now, the receipt at finalize.
        self.log: ReceiptLog | None = None
        if log is not None:
            from ._log_client import RemoteReceiptLog, is_log_url
            from ._logdir import ReceiptLog  # only a logging collector loads the log writer

            if is_log_url(log) and log_key is not None:
                raise UsageError("log_key goes with a log folder: a log server signs with its own key")
            self.log = RemoteReceiptLog(str(log)) if is_log_url(log) else ReceiptLog(log, log_key)
        if self.log is not None and log_opened and not self.log.opened(
                self.workflow_id, self.receipt_id, timefmt.format_ns(timefmt.now_ns())):
            self.recording_failures += 1  # the run's start is not in the log: the receipt says so

    # ------------------------------------------------------------------ state

    @property
    def step_count(self) -> int:
        """Steps recorded so far (the close step included once finalized)."""
        return self._seq

    @property
    def closed(self) -> bool:
        """True once ``finalize()`` has closed the chain."""
        return self._closed_parts is not None

    @property
    def signed(self) -> bool:
        """True when receipts from this collector are signed."""
        return self._signing_key is not None

    # -------------------------------------------------------------- recording

    def _content_bytes(self, content: Any) -> bytes:
        """Canonical bytes of the redacted, normalized content."""
        if self._redact is default_redactor:
            plain, redacted = redact_plain(content)
            if plain:
                try:
                    return orjson.dumps(redacted, option=_SORT)  # plain data: orjson is exact JCS
                except orjson.JSONEncodeError:
                    pass  # a lone surrogate: normalization repairs it
        elif self._redact is None and is_plain(content):
            try:
                return orjson.dumps(content, option=_SORT)
            except orjson.JSONEncodeError:
                pass
        content = normalize(content)
        if self._redact is not None:
            content = self._redact(content)
        try:
            return exact_bytes(content)  # normalized once: its tags must not be escaped again
        except CanonicalizationError:
            return canonical_bytes(content)  # a custom redactor returned values that need normalizing

    def _label(self, name: str, value: Any) -> tuple[str, str]:
        """A tool or agent name checked, with its JSON text; remembered, so a repeated name is one lookup.

        The remembered string object is the one every later step holds, however the caller
        made its copy of the name.
        """
        _check_label(name, value)
        found = (value, orjson.dumps(value).decode())
        if type(value) is str and len(self._labels) < LABEL_CACHE_SIZE:
            found = self._labels.setdefault(value, found)
        return found

    def record(
        self,
        tool: str,
        content: Any,
        *,
        agent: str | None = None,
        kind: str | None = None,
        status: str = "ok",
        started_at: Any = None,
        ended_at: Any = None,
        reply_to: str | None = None,
        target: str | None = None,
        recipient: str | None = None,
        call_id: str | None = None,
    ) -> dict[str, Any]:
        """Record one step; returns a copy of the step as it appears in the receipt."""
        labels = self._labels
        found = labels.get(tool) if type(tool) is str else None
        tool, tool_json = found if found is not None else self._label("tool", tool)
        if kind is None:
            kind = _KINDS.get(tool, "tool_call")
        else:
            known = _KINDS.get(kind) if isinstance(kind, str) else None
            if known is None:
                raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
            kind = known
        if kind == CLOSE_KIND:
            raise ValueError("kind 'close' is reserved for finalize()")
        known_status = _STATUSES.get(status) if isinstance(status, str) else None
        if known_status is None:
            raise ValueError(f"status must be one of {', '.join(STEP_STATUSES)}; got {status!r}")
        if agent is None:
            agent = DEFAULT_AGENT
        found = labels.get(agent) if type(agent) is str else None
        agent, agent_json = found if found is not None else self._label("agent", agent)
        extras: dict[str, str] | None = None
        if reply_to is not None or target is not None or recipient is not None or call_id is not None:
            extras = {}
            for name, value in (("reply_to", reply_to), ("target", target), ("recipient", recipient),
                                ("call_id", call_id)):
                if value is None:
                    continue
                if type(value) is not str:
                    raise TypeError(f"{name} must be a string, got {type(value).__name__}")
                if value == "":  # the verifier rejects an empty member: leave it out (None) instead
                    raise ValueError(f"{name} must be a non-empty string or None, got ''")
                if len(value) > MAX_MEMBER_CHARS:
                    raise ValueError(f"{name} is {len(value)} characters long, over the {MAX_MEMBER_CHARS} limit")
                extras[name] = value
        if started_at is None or ended_at is None:
            now = time_ns()
        # timefmt.to_ns, its float case inlined (the hooks' times are time.time() floats)
        if started_at is None:
            start_ns = now
        else:
            start_ns = floor(started_at * 1_000_000) * 1000 if type(started_at) is float else timefmt.to_ns(started_at)
        if ended_at is None:
            end_ns = now if now >= start_ns else start_ns  # the wall clock may step back: clamp
        else:
            end_ns = floor(ended_at * 1_000_000) * 1000 if type(ended_at) is float else timefmt.to_ns(ended_at)
            if end_ns < start_ns:
                raise ValueError("ended_at is before started_at")
        cbytes = None
        if self._redact is default_redactor:  # _content_bytes' first case, inlined
            redacted = plain_redacted(content, 0)
            if redacted is not NOT_PLAIN:
                try:
                    cbytes = orjson.dumps(redacted, option=_SORT)  # plain data: orjson is exact JCS
                except orjson.JSONEncodeError:
                    pass  # a lone surrogate: _content_bytes repairs it
        if cbytes is None:
            cbytes = self._content_bytes(content)
        if len(cbytes) > MAX_CONTENT_BYTES:
            raise ValueError(f"content is {len(cbytes)} canonical bytes, over the {MAX_CONTENT_BYTES}-byte limit")
        if len(cbytes) * MAX_COST_PER_BYTE > _CONTENT_COST_ROOM and parse_cost(cbytes) > _CONTENT_COST_ROOM:
            # the verifier would refuse to parse its evidence line
            raise ValueError(f"content would take about {parse_cost(cbytes) >> 20} MiB to verify, over the "
                             f"{MAX_PARSE_COST_BYTES >> 20} MiB limit: too many objects, arrays or items")
        disclosures = None
        if self._personal is not None:  # personal fields out of what is hashed, disclosed on the evidence side
            cbytes, disclosures = commit_content(cbytes, self._personal)
        traced = step_span(self, call_id)  # the step's OpenTelemetry span and its W3C ids (spec/otel.md), or None
        if traced is not None:
            extras = {**extras, **traced[1]} if extras else traced[1]
        step = self._append(tool, tool_json, kind, agent, agent_json, known_status, start_ns, end_ns, cbytes, extras,
                            disclosures)
        if traced is not None:
            step_recorded(self, traced[0], step)
        if known_status == "cancelled" and kind not in _RUN_END_KINDS and _cut_by_cancellation(content):
            with self._lock:
                self._cut_short = True  # an action cut off by a cancellation: so was its run
        return step.copy()

    def _append(
        self,
        tool: str,
        tool_json: str,
        kind: str,
        agent: str,
        agent_json: str,
        status: str,
        start_ns: int,
        end_ns: int,
        cbytes: bytes,
        extras: dict[str, str] | None = None,
        disclosures: list[list[Any]] | None = None,
    ) -> dict[str, Any]:
        """Chain one step and keep it (the hot path of every record: keep it flat); returns the kept step."""
        rhash = sha256(cbytes).hexdigest()
        started = format_ns(start_ns)
        ended = started if end_ns == start_ns else format_ns(end_ns)
        with self._lock:
            if self._closed_parts is not None or (self._closing and kind != CLOSE_KIND):
                raise CollectorClosedError("collector is finalized; its chain takes no new steps")
            seq = self._seq + 1
            prev = self._head
            if extras:  # rare: the optional members sort in among the others
                header: dict[str, Any] = {"seq": seq, "tool": tool, "kind": kind, "agent": agent,
                                          "receipt_hash": rhash, "started_at": started, "ended_at": ended,
                                          "status": status, "prev_digest": prev, **extras}
                try:
                    hbytes = orjson.dumps(header, option=_SORT)
                except orjson.JSONEncodeError as e:
                    raise ValueError(f"step member is not valid text: {e}") from e
            else:
                # The RFC 8785 bytes of the header: members in sorted order, tool and agent as JSON
                # text, every other value plain ASCII (kinds and statuses are identifiers,
                # timestamps and digests are digits and hex letters).
                hbytes = (f'{{"agent":{agent_json},"ended_at":"{ended}","kind":"{kind}","prev_digest":"{prev}",'
                          f'"receipt_hash":"{rhash}","seq":{seq},"started_at":"{started}","status":"{status}",'
                          f'"tool":{tool_json}}}').encode()
            receipt_bytes = self._receipt_bytes + len(hbytes) + STEP_OVERHEAD_BYTES
            evidence_bytes = self._evidence_bytes + len(cbytes) + STEP_OVERHEAD_BYTES
            if kind != CLOSE_KIND and (receipt_bytes > _RECEIPT_ROOM or evidence_bytes > _EVIDENCE_ROOM):
                raise ValueError("the receipt or its evidence would grow past the size the verifier reads "
                                 f"({MAX_INPUT_BYTES} and {MAX_EVIDENCE_BYTES} bytes)")
            self._receipt_bytes, self._evidence_bytes = receipt_bytes, evidence_bytes
            h, rid = step_link(hbytes)
            if self.journal is not None:
                keep = self._sink is not None or kind == CLOSE_KIND  # the close content is always journaled
                self.journal.write_step(rid, hbytes, cbytes if keep else None)
            if self._sink is not None:
                self._sink.write(seq, rhash, cbytes)
                if disclosures:
                    self._sink.disclose(seq, disclosures)
            # one dict display in reading order: this dict is the receipt's step
            step = {"seq": seq, "receipt_id": rid, "tool": tool, "kind": kind, "agent": agent, "receipt_hash": rhash,
                    "started_at": started, "ended_at": ended, "status": status, "prev_digest": prev}
            if extras:
                step.update(extras)  # after prev_digest, in STEP_OPTIONAL_MEMBERS order
            self._step_list.append(step)
            self._head = h
            self._seq = seq
            if kind != CLOSE_KIND:
                self._status_counts[status] += 1
                if kind in _RUN_END_KINDS and status != "ok":
                    if status == "error":
                        self._run_error = True
                    else:
                        self._cut_short = True
        if self.journal is not None:
            self.journal.sync_step()
        return step

    def safe_record(self, tool: str, content: Any, **kwargs: Any) -> dict[str, Any] | None:
        """Like :meth:`record` but never raises: a failure is logged and counted.

        Framework hooks use this, so recording can never break a run; the receipt
        then reports ``recording_failures`` and status ``incomplete``.
        """
        try:
            return self.record(tool, content, **kwargs)
        except Exception as e:
            self._record_failed(tool, e)
        return None

    def _record_failed(self, tool: Any, exc: Exception) -> None:
        """Log and count a step :meth:`record` refused (what :meth:`safe_record` does with it)."""
        if isinstance(exc, CollectorClosedError):
            self.late_records += 1
            log.warning("aer1: step %r arrived after finalize() and is not in the receipt", tool)
            return
        with self._lock:
            self.recording_failures += 1
        log.warning("aer1: failed to record step %r: %s: %s", tool, type(exc).__name__, exc)

    def count_recording_failure(self, what: str, exc: BaseException) -> None:
        """Count (under the lock) and log an observation a hook could not record.

        For framework hooks whose own code failed outside :meth:`safe_record`; the
        receipt then reports ``recording_failures`` and status ``incomplete``.
        """
        with self._lock:
            self.recording_failures += 1
        log.warning("aer1: could not observe %s: %s: %s", what, type(exc).__name__, exc)

    def status_counts(self) -> dict[str, int]:
        """Steps recorded so far by status (``ok``, ``error``, ``cancelled``), the close step left out."""
        with self._lock:
            return dict(self._status_counts)

    def open_action(self, key: Any, closer: Callable[[], None]) -> None:
        """Note an action under way; if ``finalize()`` comes first, it calls ``closer`` to record it cut off.

        ``closer`` records (with :meth:`safe_record`) what was requested and not finished, as
        ``cancelled``; :meth:`close_action` forgets the action once it is recorded normally.
        """
        with self._lock:
            self._open_actions[key] = closer

    def close_action(self, key: Any) -> bool:
        """Forget an action noted with :meth:`open_action`; False when finalize() already recorded it."""
        with self._lock:
            return self._open_actions.pop(key, None) is not None

    def _close_open_actions(self) -> None:
        """Record every action still under way as cut off (finalize() does this before the close step)."""
        while True:
            with self._lock:
                if not self._open_actions or self._closing or self._closed_parts is not None:
                    return
                _, closer = self._open_actions.popitem()
                self._cut_short = True  # an action was under way at finalize(): the run did not end by itself
            try:
                closer()
            except Exception as e:  # never silent: the receipt says incomplete
                self.count_recording_failure("an action still under way at finalize()", e)

    def child(self, goal: str, **options: Any) -> Collector:
        """A collector for a nested run, to be linked into this one: same key, redaction, evidence, session."""
        settings: dict[str, Any] = {"session_id": self.session_id, "signing_key": self._signing_key,
                                    "verify_url": self.verify_url, "evidence": self._sink is not None,
                                    "redact": self._redact if self._redact is not None else False,
                                    "personal": self._personal_option}
        settings.update(options)
        return type(self)(goal, **settings)  # a framework collector's child records as it does

    def link(self, child: Any, **options: Any) -> dict[str, Any]:
        """Record a ``link`` step binding a child receipt (or finalized child Collector); see :mod:`aer1._bundle`."""
        from ._bundle import link_child

        return link_child(self, child, **options)

    def save_bundle(self, folder: str | os.PathLike[str], workflow: Mapping[str, Any] | None = None) -> list[str]:
        """Save this receipt and every linked child into ``folder`` (for ``aer1-verify --bundle``)."""
        from ._bundle import save_bundle

        return save_bundle(self, folder, workflow)

    def config_digest(self, config: Any) -> str:
        """The ``config_digest`` of ``config`` as :meth:`register_agent` lists it: SHA-256 of its redacted bytes."""
        return hashlib.sha256(self._content_bytes(config)).hexdigest()

    def register_agent(
        self, name: str, *, type: str, description: str | None = None, config: Any = None
    ) -> dict[str, Any]:
        """List an agent once in the receipt's ``agents`` member.

        ``config`` (system message, model name, tool schemas...) is redacted and
        hashed into ``config_digest``; it is never stored. Registering the same name
        again with the same identity is a no-op; a different identity is an error.
        """
        _check_label("agent name", name)
        _check_label("agent type", type)
        identity: dict[str, Any] = {"name": name, "type": type}
        if description is not None:
            identity["description"] = _check_text("agent description", str(description))
        if config is not None:
            identity["config_digest"] = self.config_digest(config)
        with self._lock:
            known = self._agents.get(name)
            if known is not None:
                if known != identity:
                    raise ValueError(f"agent {name!r} is already registered with a different identity")
                return dict(known)
            if self._closed_parts is not None or self._closing:
                raise CollectorClosedError("collector is finalized; agents can no longer be registered")
            size = self._agents_bytes + len(orjson.dumps(identity)) + STEP_OVERHEAD_BYTES
            if size > MAX_AGENTS_BYTES:
                raise ValueError(f"the agents member would grow past {MAX_AGENTS_BYTES} bytes")
            self._agents_bytes = size
            if self.journal is not None:
                self.journal.write_agent(identity)
            self._agents[name] = identity
        return dict(identity)

    # ------------------------------------------------------------- finishing

    def _output_hash(self, final_answer: Any) -> str:
        if final_answer is None:
            data = b""
        elif isinstance(final_answer, str):
            data = final_answer.encode("utf-8", "surrogatepass")
        else:
            data = canonical_bytes(final_answer)
        return hashlib.sha256(data).hexdigest()

    def finalize(self, final_answer: Any = None, *, status: str | None = None) -> dict[str, Any]:
        """Close the chain with the close step and return the AER-1 workflow receipt.

        ``final_answer`` is hashed into ``output_hash`` (a string as UTF-8, anything
        else as canonical JSON, None as the empty string). Calling again with the same
        arguments returns an equal receipt; the chain is closed only once.

        The receipt's steps are the step dicts the collector kept while recording, handed
        over without a copy (a receipt of a million steps is not held twice), as the
        aer1-autogen collector hands over its own: copy the receipt (``copy.deepcopy``)
        before editing it. A later call returns the kept steps as they are then, after
        checking them against the chain: a change is logged as a warning naming the step.
        """
        args = (final_answer if isinstance(final_answer, (str, type(None))) else canonical_bytes(final_answer), status)
        self._close_open_actions()
        with self._lock:
            if self._closed_parts is not None:
                if args != self._final_args:
                    raise CollectorClosedError("collector is already finalized with other arguments")
                return self._finalized()
            if status is not None and status not in WORKFLOW_STATUSES:
                raise ValueError(f"status must be one of {', '.join(WORKFLOW_STATUSES)}; got {status!r}")
            if self._closing:
                raise CollectorClosedError("collector is being finalized by another caller")
            # From here on record() refuses new steps, so the close step is the last one.
            self._closing = True
            failures, step_count = self.recording_failures, self._seq + 1
            cut_short, run_error = self._cut_short, self._run_error
            counts = dict(self._status_counts)
        if status is None:  # the one workflow status rule (spec/steps.md)
            status = "incomplete" if failures or cut_short else ("error" if run_error else "ok")
        workflow = close_workflow(
            workflow_id=self.workflow_id, receipt_id=self.receipt_id, session_id=self.session_id, goal=self.goal,
            status=status, output_hash=self._output_hash(final_answer), verify_url=self.verify_url,
            agents=list(self._agents.values()), recording_failures=failures, step_statuses=counts,
        )
        content = close_content(workflow, step_count)
        now = timefmt.now_ns()
        self._append(CLOSE_KIND, _CLOSE_JSON, CLOSE_KIND, CLOSE_AGENT, _CLOSE_AGENT_JSON, "ok", now, now,
                     canonical_bytes(content))
        with self._lock:
            steps = self._step_list  # handed over as they are: no step is copied
            tail: dict[str, Any] = {
                "merkle_root": merkle_root_hex(map(_RECEIPT_ID, steps)),
                "chain_head": self._head,
            }
            receipt: dict[str, Any] = {**workflow, "steps": steps, **tail}
        if self._tsas:  # outside the lock: a slow TSA holds up nothing but this call, and only until the timeout
            add_key_proof(receipt, self._signing_key)
            if KEY_PROOF_MEMBER in receipt:
                tail[KEY_PROOF_MEMBER] = receipt[KEY_PROOF_MEMBER]
            tail[TIMESTAMPS_MEMBER] = receipt[TIMESTAMPS_MEMBER] = request_timestamps(
                receipt, self._tsas, self._tsa_timeout)
        with self._lock:
            if self._signing_key is not None:
                tail["signature"] = receipt["signature"] = sign_receipt(receipt, self._signing_key)
            self._closed_parts = (orjson.dumps(workflow), orjson.dumps(tail))
            self._final_args = args
            if self.journal is not None:
                self.journal.finish(receipt)
        if self.log is not None:
            self.log.closed(receipt)  # failures are logged and kept in self.log.errors, never raised
        return receipt

    def receipt(self) -> dict[str, Any]:
        """The receipt ``finalize()`` returned, however it was called; finalizes (no arguments) if not yet."""
        with self._lock:
            if self._closed_parts is not None:
                return self._finalized()
        return self.finalize()

    def _finalized(self) -> dict[str, Any]:
        """The receipt ``finalize()`` returned, again (called under the lock, once finalized)."""
        assert self._closed_parts is not None
        head_bytes, tail_bytes = self._closed_parts
        return {**orjson.loads(head_bytes), "steps": self._steps(), **orjson.loads(tail_bytes)}

    def _steps(self) -> list[dict[str, Any]]:
        """The receipt's steps: a new list of the kept step dicts, which are checked against the chain.

        The first ``finalize()`` hands the kept dicts over as the receipt's steps, so a
        caller who changed one has changed the only copy. Each step is hashed again and held
        to the chain (its ``prev_digest``, its derived id, the kept chain head): a change is
        never passed on unsaid.
        """
        steps = self._step_list
        changed = self._first_changed(steps)
        if changed is not None:
            log.warning("aer1: the receipt finalize() returned was changed (%s); the collector keeps no other "
                        "copy of its steps, so its receipt is now the changed one: copy a receipt "
                        "(copy.deepcopy) before editing it", changed)
        return list(steps)

    def _first_changed(self, steps: list[Any]) -> str | None:
        """Where ``steps`` first differ from the steps recorded, or None when they are exactly those."""
        prev = genesis_digest(self.workflow_id)
        for i, step in enumerate(steps):
            if type(step) is not dict or step.get("seq") != i + 1 or step.get("prev_digest") != prev:
                return f"step {i + 1}"
            try:
                h, rid = step_link(sorted_json({k: v for k, v in step.items() if k != "receipt_id"}))
            except (TypeError, ValueError):
                return f"step {i + 1}"
            if step.get("receipt_id") != rid:
                return f"step {i + 1}"
            prev = h
        if len(steps) != self._seq:
            return f"it has {len(steps)} steps, {self._seq} were recorded"
        if prev != self._head:
            return f"step {len(steps)}"
        return None

    def verify(self, receipt: Mapping[str, Any] | None = None) -> list[str]:
        """Every offline check of a receipt (this collector's when none is given): [] when valid.

        The evidence is checked too when the receipt is this collector's and it keeps
        evidence: the evidence written so far goes to a temporary file, which the verifier
        reads exactly as ``aer1-verify`` reads the file saved beside the receipt.
        """
        from .verifier import verify_receipt  # local import: the verifier stands alone

        if receipt is None:
            receipt = self.receipt()
        if self._sink is None or receipt.get("workflow_id") != self.workflow_id:
            return [f.reason for f in verify_receipt(receipt).failures]
        with tempfile.TemporaryDirectory(prefix="aer1-verify-") as folder:
            evidence = os.path.join(folder, "evidence.jsonl")
            self._sink.save_to(evidence)
            report = verify_receipt(receipt, evidence=evidence)
        return [f.reason for f in report.failures]

    def save(self, path: str | os.PathLike[str], workflow: Mapping[str, Any] | None = None) -> str:
        """Write the receipt as JSON and its evidence beside it; returns the receipt path."""
        if workflow is None:
            workflow = self.receipt()
        target = os.fspath(path)
        keeps_evidence = self._sink is not None and workflow.get("workflow_id") == self.workflow_id
        if keeps_evidence:
            check_output(evidence_path_for(target))  # refused before the receipt is written
        replace_file(target, lambda f: write_receipt(f, workflow))
        if keeps_evidence and self._sink is not None:
            self._sink.save_to(evidence_path_for(target))
        if self.log is not None and workflow.get("receipt_id") == self.receipt_id:
            self.log.write_proof(target)  # NAME.tlog-proof beside the receipt
        return target
