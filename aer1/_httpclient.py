"""A bounded HTTP client for the witness and log protocols: one request, one bounded answer.

Only ``http`` and ``https`` URLs are used; redirects are not followed (a witness or log
that moved says so with its status); an answer longer than the caller allows is refused
unread past the limit; every connect, read and write waits at most ``timeout`` seconds.
"""

from __future__ import annotations

import http.client
import urllib.parse
from dataclasses import dataclass

from .errors import Aer1Error

__all__ = ["Answer", "HttpClientError", "base_url", "request"]


class HttpClientError(Aer1Error, OSError):
    """A server could not be reached, or its answer could not be read within the limits."""


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: status, content type (without parameters, lower case), headers and body."""

    status: int
    content_type: str
    body: bytes
    retry_after: str | None = None


def base_url(url: str) -> urllib.parse.SplitResult:
    """``url`` split, checked to be http(s) with a host and no query or fragment. Raises ValueError."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"got URL {url!r}, want http://HOST[:PORT][/PREFIX] or https://...")
    if parts.query or parts.fragment:
        raise ValueError(f"URL {url!r} has a query or fragment: give the prefix only")
    return parts


def request(method: str, url: str, path: str, *, body: bytes | None = None, content_type: str | None = None,
            timeout: float, max_answer: int) -> Answer:
    """Send ``method`` to ``url``'s prefix + ``path`` and read the answer (at most ``max_answer`` bytes)."""
    parts = base_url(url)
    conn_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    try:
        conn = conn_type(parts.hostname or "", parts.port, timeout=timeout)
    except ValueError as e:  # a port that is not a number
        raise HttpClientError(f"{url}: {e}") from e
    target = parts.path.rstrip("/") + path
    headers = {"Content-Type": content_type} if content_type else {}
    try:
        conn.request(method, target, body=body, headers=headers)
        response = conn.getresponse()
        length = response.getheader("Content-Length")
        if length is not None and length.isdigit() and int(length) > max_answer:
            raise HttpClientError(f"{url}{path}: answer of {length} bytes, at most {max_answer} read")
        data = response.read(max_answer + 1)
        if len(data) > max_answer:
            raise HttpClientError(f"{url}{path}: answer longer than {max_answer} bytes")
        kind = (response.getheader("Content-Type") or "").split(";", 1)[0].strip().lower()
        return Answer(response.status, kind, data, response.getheader("Retry-After"))
    except (OSError, http.client.HTTPException) as e:
        if isinstance(e, HttpClientError):
            raise
        raise HttpClientError(f"{url}{path}: {type(e).__name__}: {e}") from e
    finally:
        conn.close()
