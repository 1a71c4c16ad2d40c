"""Obtaining RFC 3161 timestamp tokens for a receipt at finalize (the producer side).

Each TSA is asked over the RFC 3161 HTTP transport (POST ``application/timestamp-query``)
or through a callable that takes the DER request and returns the DER response. All TSAs
are asked at once and waited for at most one stated timeout: a TSA that is down, slow or
answers nonsense gives an entry that says why there is no token (and a log warning), and
the receipt is finalized anyway. A reply is kept only if it is granted, carries our nonce
and is over our imprint; whether its TSA is trusted is for the verifier to say.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from rfc3161_client import (
    HashAlgorithm,
    PKIStatus,
    TimeStampRequest,
    TimestampRequestBuilder,
    decode_timestamp_response,
)

from ._imprint import (
    DEFAULT_TSA_TIMEOUT_S,
    KEY_PROOF_MEMBER,
    MAX_TIMESTAMPS,
    MAX_TOKEN_BYTES,
    MAX_TSA_ERROR_CHARS,
    MAX_TSA_NAME_CHARS,
    imprint_message,
    key_proof_input,
)
from ._signing import key_id
from .errors import Aer1Error

__all__ = ["TSA", "TimestampUnavailable", "add_key_proof", "make_key_proof", "normalize_tsas", "request_timestamps",
           "tsa_name"]

log = logging.getLogger("aer1.timestamp")

#: A TSA: its http(s) URL, or a callable from DER request bytes to DER response bytes.
TSA: TypeAlias = "str | Callable[[bytes], bytes]"
_QUERY_TYPE = "application/timestamp-query"
_REPLY_TYPE = "application/timestamp-reply"


class TimestampUnavailable(Aer1Error):
    """A TSA gave no usable token (down, slow, refused, or a reply that does not fit the request)."""


def tsa_name(tsa: TSA) -> str:
    """The name recorded for a TSA: its URL, or the callable's qualified name."""
    name = tsa if isinstance(tsa, str) else getattr(tsa, "__qualname__", None) or type(tsa).__name__
    return name[:MAX_TSA_NAME_CHARS]


def normalize_tsas(timestamp: TSA | Sequence[TSA] | None) -> list[TSA]:
    """``Collector(timestamp=...)`` as a list of TSAs, each checked; [] for None."""
    if timestamp is None:
        return []
    tsas: list[TSA] = [timestamp] if isinstance(timestamp, str) or callable(timestamp) else list(timestamp)
    if len(tsas) > MAX_TIMESTAMPS:
        raise ValueError(f"timestamp: at most {MAX_TIMESTAMPS} TSAs, got {len(tsas)}")
    for tsa in tsas:
        if isinstance(tsa, str):
            if not tsa.startswith(("https://", "http://")) or len(tsa) > MAX_TSA_NAME_CHARS:
                raise ValueError(f"timestamp: want an http(s) URL of at most {MAX_TSA_NAME_CHARS} characters, "
                                 f"got {tsa[:80]!r}")
        elif not callable(tsa):
            raise TypeError(f"timestamp: want a URL or a callable, got {type(tsa).__name__}")
    return tsas


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A TSA answers where it was asked: a redirect is an HTTP error, never followed (to another scheme either)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _http_post(url: str, request: bytes, timeout: float) -> bytes:
    req = urllib.request.Request(url, data=request, method="POST", headers={"Content-Type": _QUERY_TYPE})
    try:
        with _OPENER.open(req, timeout=timeout) as reply:
            ctype = reply.headers.get("Content-Type", "")
            if ctype.split(";")[0].strip().lower() != _REPLY_TYPE:
                raise TimestampUnavailable(f"reply content type: got {ctype!r}, want {_REPLY_TYPE!r}")
            data: bytes = reply.read(MAX_TOKEN_BYTES + 1)
    except urllib.error.HTTPError as e:
        raise TimestampUnavailable(f"HTTP {e.code} {e.reason}") from e
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        if isinstance(reason, TimeoutError):
            raise TimestampUnavailable(_timed_out(timeout)) from e
        raise TimestampUnavailable(f"unreachable: {reason}") from e
    return data


def make_key_proof(receipt: Mapping[str, Any], private_key: Ed25519PrivateKey) -> dict[str, str]:
    """The ``key_proof`` member: the signing key's signature over the bound members, made before the tokens."""
    public = private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    value = private_key.sign(key_proof_input(receipt))
    return {"key_id": key_id(public), "value": base64.b64encode(value).decode("ascii")}


def add_key_proof(receipt: dict[str, Any], private_key: Ed25519PrivateKey | None) -> None:
    """Put a key proof into a receipt about to be timestamped, when it will be signed."""
    if private_key is not None:
        receipt[KEY_PROOF_MEMBER] = make_key_proof(receipt, private_key)


def _timed_out(timeout: float) -> str:
    return f"no reply within {timeout:g} s"


def _check_reply(reply: Any, request: TimeStampRequest) -> bytes:
    """The DER reply, if it is bytes within bounds, granted, and answers ``request``."""
    if not isinstance(reply, bytes):
        raise TimestampUnavailable(f"reply: got {type(reply).__name__}, want bytes")
    if len(reply) > MAX_TOKEN_BYTES:
        raise TimestampUnavailable(f"reply larger than {MAX_TOKEN_BYTES} bytes")
    try:
        response = decode_timestamp_response(reply)
        if response.status != PKIStatus.GRANTED:
            raise TimestampUnavailable(f"not granted: status {response.status} {response.status_string}")
        info = response.tst_info
        if info.nonce != request.nonce:
            raise TimestampUnavailable("reply nonce differs from the request's")
        if (info.message_imprint.hash_algorithm != request.message_imprint.hash_algorithm
                or info.message_imprint.message != request.message_imprint.message):
            raise TimestampUnavailable("reply is over another imprint than the request's")
    except TimestampUnavailable:
        raise
    except ValueError as e:  # what the decoder raises for malformed DER
        raise TimestampUnavailable(f"reply is not a time-stamp response: {e}") from e
    return reply


def _ask(tsa: TSA, request: TimeStampRequest, timeout: float) -> bytes:
    der = request.as_bytes()
    reply = _http_post(tsa, der, timeout) if isinstance(tsa, str) else tsa(der)
    return _check_reply(reply, request)


def request_timestamps(receipt: Mapping[str, Any], tsas: Sequence[TSA], timeout: float = DEFAULT_TSA_TIMEOUT_S,
                       *, warn: bool = True) -> list[dict[str, str]]:
    """One ``timestamps`` entry per TSA: a token, or why there is none; never waits past ``timeout``.

    Each TSA is asked in a worker thread (a callable TSA too); one still busy at the
    deadline is left behind. ``warn``: log each TSA that gave no token (finalize does;
    a command that reports the failure itself does not).
    """
    message = imprint_message(receipt)
    results: list[bytes | BaseException | None] = [None] * len(tsas)
    requests = [
        TimestampRequestBuilder().data(message).hash_algorithm(HashAlgorithm.SHA256)
        .nonce(nonce=True).cert_request(cert_request=True).build()
        for _ in tsas
    ]

    def run(i: int) -> None:
        try:
            results[i] = _ask(tsas[i], requests[i], timeout)
        except BaseException as e:  # whatever a caller's TSA callable raises: recorded, never raised
            results[i] = e

    threads = [threading.Thread(target=run, args=(i,), daemon=True, name="aer1-tsa") for i in range(len(tsas))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    entries: list[dict[str, str]] = []
    for tsa, request, result in zip(tsas, requests, list(results), strict=True):  # a late reply is ignored
        name = tsa_name(tsa)
        if isinstance(result, bytes):
            entries.append({"tsa": name, "nonce": str(request.nonce),
                            "token": base64.b64encode(result).decode("ascii")})
            continue
        why = _timed_out(timeout) if result is None else (str(result) or type(result).__name__)
        why = why[:MAX_TSA_ERROR_CHARS]
        if warn:
            log.warning("timestamp: no token from %s: %s; the receipt is finalized without it", name, why)
        entries.append({"tsa": name, "error": why})
    return entries
