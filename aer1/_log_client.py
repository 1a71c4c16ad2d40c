"""The client of ``aer1 log serve``: send one entry, get back its offline proof.

``Collector(log="http://HOST:PORT")`` uses it at finalize. The entry, not the receipt,
is sent (a few hundred bytes whatever the run's size). The answer is checked before it is
believed: it must be a tlog-proof whose inclusion path leads from this entry's leaf hash,
at the index it names, to the root of the checkpoint it carries; the log's signature on
that checkpoint is for the verifier to check with the key it trusts. A server that is busy
(503 with ``Retry-After``) is asked again, at most :data:`MAX_ATTEMPTS` times and within
the caller's time budget.
"""

from __future__ import annotations

import logging
import time
from http import HTTPStatus

from ._httpclient import HttpClientError, base_url, request
from ._logdir import ReceiptLog
from .errors import Aer1Error, LogInvalid, LogMalformed

__all__ = ["DEFAULT_LOG_TIMEOUT_S", "MAX_ATTEMPTS", "LogServerError", "RemoteReceiptLog", "append_entry", "is_log_url"]

#: Longest one ``append_entry`` may take in all (seconds): the server's own answer time and a margin.
DEFAULT_LOG_TIMEOUT_S = 40.0
#: Requests sent for one entry while the server answers 503 (busy).
MAX_ATTEMPTS = 3
#: Longest wait between two of them (seconds), whatever ``Retry-After`` asks.
_MAX_BACKOFF_S = 5.0

_logger = logging.getLogger("aer1")


class LogServerError(Aer1Error, OSError):
    """The log server did not take the entry (unreachable, refused, busy, timed out, or a wrong proof)."""


def is_log_url(target: object) -> bool:
    """True when ``target`` names a log server (``http://`` or ``https://``) rather than a log folder."""
    return isinstance(target, str) and target.startswith(("http://", "https://"))


def _retry_after(value: str | None) -> float:
    try:
        return min(_MAX_BACKOFF_S, max(0.0, float(value))) if value is not None else 1.0
    except ValueError:
        return 1.0


def _checked_proof(answer: bytes, entry: bytes) -> bytes:
    """``answer`` if it is a tlog-proof that includes ``entry`` in the tree of its checkpoint."""
    from ._tlog._checkpoint import parse_checkpoint
    from ._tlog._note import parse_note
    from ._tlog._proof import parse_tlog_proof
    from ._tlog._tree import leaf_hash, verify_inclusion

    try:
        proof = parse_tlog_proof(answer)
        checkpoint = parse_checkpoint(parse_note(proof.checkpoint).text)
        if proof.index >= checkpoint.size:
            raise LogInvalid(f"index {proof.index} is not below the checkpoint's size {checkpoint.size}")
        verify_inclusion(leaf_hash(entry), proof.index, checkpoint.size, proof.path, checkpoint.root)
    except (LogMalformed, LogInvalid) as e:
        raise LogServerError(f"the log server's answer is not a proof of this entry: {e}") from e
    return answer


def append_entry(url: str, entry: bytes, timeout: float = DEFAULT_LOG_TIMEOUT_S) -> bytes:
    """Send ``entry`` to the log server at ``url``; its checked tlog-proof once a checkpoint includes it."""
    from ._tlog._proof import MAX_PROOF_BYTES

    try:
        base_url(url)
    except ValueError as e:
        raise LogServerError(str(e)) from e
    deadline = time.monotonic() + timeout
    why = "no attempt"
    for _ in range(MAX_ATTEMPTS):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            answer = request("POST", url, "/add", body=entry, content_type="application/octet-stream",
                             timeout=left, max_answer=MAX_PROOF_BYTES)
        except HttpClientError as e:
            raise LogServerError(str(e)) from e
        if answer.status == HTTPStatus.OK:
            return _checked_proof(answer.body, entry)
        why = f"{answer.status}: " + answer.body.split(b"\n", 1)[0][:200].decode("utf-8", "backslashreplace")
        if answer.status != HTTPStatus.SERVICE_UNAVAILABLE:
            raise LogServerError(f"the log server refused the entry with {why}")
        pause = _retry_after(answer.retry_after)
        if time.monotonic() + pause >= deadline:
            break
        time.sleep(pause)
    raise LogServerError(f"the log server did not take the entry within {timeout:g} s ({why})")


class RemoteReceiptLog(ReceiptLog):
    """A collector's log on a log server (``Collector(log="http://...")``): the same duties as the folder
    case (the opened entry, then the receipt at finalize, the proof written beside the saved receipt),
    each entry sent with :func:`append_entry`. A failure never breaks the run and is never silent."""

    def __init__(self, url: str, timeout: float = DEFAULT_LOG_TIMEOUT_S) -> None:
        super().__init__(url)
        self.url = url
        self._timeout = timeout

    @property
    def _where(self) -> str:
        return f"server {self.url}"

    def _log(self, entry: bytes, proof: bool = True) -> tuple[int, bytes | None]:
        """Send one entry with :func:`append_entry` (which checks the proof includes it; the server always
        answers with one)."""
        from ._tlog._proof import parse_tlog_proof

        answered = append_entry(self.url, entry, self._timeout)
        return parse_tlog_proof(answered).index, answered
