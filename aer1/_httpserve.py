"""Bounded HTTP/1.1 servers on the standard library, for the witness and the log server.

Every request a server takes is bounded before any of it is held: at most
``max_connections`` connections are served at once (one more is answered 503 and closed),
each socket read waits at most ``timeout`` seconds, a request's line and headers and then its
body each arrive within a few timeouts (a client sending a byte at a time is cut off), a body must state its length
(``Content-Length``; chunked bodies are refused 411) and a longer one than the endpoint
allows is refused 413 unread. Errors are one line of ``text/plain``; an exception in a
handler is answered 500 and logged as one line, never a traceback to the client.
"""

from __future__ import annotations

import io
import logging
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any, ClassVar

from ._limits import MAX_OPTION_SECONDS
from .errors import Aer1Error

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_TIMEOUT_S",
    "MAX_MESSAGE_CHARS",
    "BoundedHandler",
    "BoundedServer",
    "HttpFailure",
    "check_seconds",
    "parse_listen",
    "running",
    "serve_until_stopped",
]

#: Most connections one server handles at once; one more is answered 503 and closed.
DEFAULT_MAX_CONNECTIONS = 64
#: Longest wait for one read from, or write to, a client socket (seconds).
DEFAULT_TIMEOUT_S = 10.0
#: Longest error message sent to a client (characters; the rest is cut).
MAX_MESSAGE_CHARS = 300
#: A request's line and headers, and then its body, must each arrive within this many read timeouts.
_REQUEST_TIMEOUTS = 3
#: How often a serving loop looks for a stop request (seconds).
_POLL_S = 0.05
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
         b"Content-Length: 32\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
         b"too many connections, try again\n")

_log = logging.getLogger("aer1.http")


class HttpFailure(Aer1Error):
    """A request is answered with ``status`` and the one-line ``message`` (raised by handlers)."""

    def __init__(self, status: int, message: str, headers: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = tuple(headers)


def _one_line(text: str) -> str:
    """``text`` as one printable ASCII line of at most MAX_MESSAGE_CHARS (untrusted parts stay data)."""
    flat = text.encode("ascii", "backslashreplace").decode("ascii")
    flat = "".join(c if " " <= c <= "~" else f"\\x{ord(c):02x}" for c in flat)
    return flat if len(flat) <= MAX_MESSAGE_CHARS else flat[: MAX_MESSAGE_CHARS - 3] + "..."


class BoundedServer(ThreadingHTTPServer):
    """A threading HTTP server that serves at most ``max_connections`` connections at once."""

    daemon_threads = True
    #: A restarted server can bind the port its predecessor just left.
    allow_reuse_address = True
    #: Connections the kernel holds before they are accepted (socketserver's 5 resets a burst of clients).
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BoundedHandler], *,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections: got {max_connections}, want at least 1")
        self._slots = threading.BoundedSemaphore(max_connections)
        self.client_timeout = timeout
        super().__init__(address, handler)

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` of the bound socket (the port the system chose for port 0)."""
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection in a thread if a slot is free, else answer 503 and close it."""
        if not self._slots.acquire(blocking=False):
            try:
                request.settimeout(1.0)
                request.sendall(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """Serve one connection, then give its slot back."""
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One log line for a connection that failed outside a handler (a reset, a timeout)."""
        import sys

        error = sys.exc_info()[1]
        _log.warning("connection from %s failed: %s", client_address[0] if client_address else "?",
                     _one_line(f"{type(error).__name__}: {error}"))


class _DeadlineReader(io.RawIOBase):
    """A client socket's bytes, each read waiting at most the read timeout and never past the handler's deadline."""

    def __init__(self, sock: socket.socket, handler: BoundedHandler) -> None:
        super().__init__()
        self._sock, self._handler = sock, handler

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._handler.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request was sent too slowly")
        self._sock.settimeout(min(self._handler.server.client_timeout, left))
        return self._sock.recv_into(buffer)


class BoundedHandler(BaseHTTPRequestHandler):
    """Request handling with bounded bodies and one-line plain-text errors.

    Subclasses define ``get(path)`` and/or ``post(path)`` (the path without its query);
    either raises :class:`HttpFailure` to answer an error.
    """

    protocol_version = "HTTP/1.1"  # keep-alive, as the witness protocol recommends
    #: A request line without a version is answered with a status line too (never HTTP/0.9's bare body).
    default_request_version = "HTTP/1.0"
    server_version = "aer1"
    sys_version = ""
    server: BoundedServer
    #: Methods a subclass serves, for the ``Allow`` header of a 405.
    methods: ClassVar[tuple[str, ...]] = ("GET",)
    #: When the request being read must have arrived (``time.monotonic()``): its headers, then its body.
    deadline: float = 0.0

    def setup(self) -> None:
        """Bound every socket read and write by the server's timeout."""
        super().setup()
        self.connection.settimeout(self.server.client_timeout)
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self))
        # Headers and body leave in two writes: without this, Nagle's algorithm holds the body until the
        # client's delayed ACK of the headers (40 ms a keep-alive request).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _request_window(self) -> float:
        return max(self.server.client_timeout, 1.0) * _REQUEST_TIMEOUTS

    def handle_one_request(self) -> None:
        """One request, its line and headers within their deadline (a late one closes the connection)."""
        self.deadline = time.monotonic() + self._request_window()
        super().handle_one_request()

    # ------------------------------------------------------------------ dispatch

    def get(self, path: str) -> None:
        raise HttpFailure(HTTPStatus.METHOD_NOT_ALLOWED, "GET is not served here", [("Allow", ", ".join(self.methods))])

    def post(self, path: str) -> None:
        raise HttpFailure(HTTPStatus.METHOD_NOT_ALLOWED, "POST is not served here",
                          [("Allow", ", ".join(self.methods))])

    def do_GET(self) -> None:
        self._guarded(self.get)

    def do_POST(self) -> None:
        self._guarded(self.post)

    def do_HEAD(self) -> None:
        self._guarded(lambda path: self.fail(HttpFailure(HTTPStatus.METHOD_NOT_ALLOWED, "HEAD is not served",
                                                         [("Allow", ", ".join(self.methods))])))

    def _other(self) -> None:
        self._guarded(lambda path: self.fail(HttpFailure(HTTPStatus.METHOD_NOT_ALLOWED,
                                                         f"{self.command} is not served",
                                                         [("Allow", ", ".join(self.methods))])))

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _other

    def _guarded(self, handle: Callable[[str], None]) -> None:
        path = self.path.split("?", 1)[0]
        try:
            handle(path)
        except HttpFailure as e:
            self.fail(e)
        except (ConnectionError, TimeoutError) as e:
            self.close_connection = True
            _log.info("client %s gone: %s", self.client_address[0], _one_line(str(e)))
        except Exception as e:  # the invariant: a client never sees a traceback, the log gets one line
            _log.error("internal error serving %s: %s", _one_line(path), _one_line(f"{type(e).__name__}: {e}"))
            self.fail(HttpFailure(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error"))

    # ------------------------------------------------------------------ bodies

    def read_body(self, limit: int) -> bytes:
        """The request body, refused unread when it does not state its length or states more than ``limit``."""
        if self.headers.get("Transfer-Encoding") is not None:
            self.close_connection = True
            raise HttpFailure(HTTPStatus.LENGTH_REQUIRED, "send the body with a Content-Length, not chunked")
        given = self.headers.get_all("Content-Length") or []
        if len(set(given)) > 1:  # which one frames the body is ambiguous (RFC 9112 6.3): never guess
            self.close_connection = True
            raise HttpFailure(HTTPStatus.BAD_REQUEST, "Content-Length: got several different values")
        text = given[0] if given else None
        if text is None:
            self.close_connection = True
            raise HttpFailure(HTTPStatus.LENGTH_REQUIRED, "a Content-Length is required")
        if not (text.isascii() and text.isdigit()) or len(text) > 19:
            self.close_connection = True
            raise HttpFailure(HTTPStatus.BAD_REQUEST, f"Content-Length: got {text!r}, want a decimal byte count")
        length = int(text)
        if length > limit:
            self.close_connection = True  # the body is never read: the connection cannot be reused
            raise HttpFailure(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"body of {length} bytes, at most {limit} taken")
        self.deadline = time.monotonic() + self._request_window()
        chunks: list[bytes] = []
        got = 0
        while got < length:
            try:
                chunk = self.rfile.read1(length - got)
            except TimeoutError as e:
                if time.monotonic() < self.deadline:
                    raise
                self.close_connection = True
                raise HttpFailure(HTTPStatus.REQUEST_TIMEOUT, "the body was sent too slowly") from e
            if not chunk:
                self.close_connection = True
                raise ConnectionError(f"body cut short: {got} of {length} bytes")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    # ------------------------------------------------------------------ answers

    def reply(self, status: int, body: bytes, content_type: str, headers: Iterable[tuple[str, str]] = ()) -> None:
        """Send a whole answer: status, headers, ``Content-Length`` and body."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def fail(self, failure: HttpFailure) -> None:
        """Answer ``failure`` as one line of plain text."""
        body = (_one_line(failure.message) + "\n").encode("ascii")
        try:
            self.reply(failure.status, body, "text/plain; charset=utf-8", failure.headers)
        except OSError:
            self.close_connection = True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own refusals (bad request line, long headers), as one plain line too."""
        self.close_connection = True
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            phrase = "error"
        self.fail(HttpFailure(code, message or phrase))

    def log_message(self, format: str, *args: Any) -> None:
        _log.info("%s %s", self.client_address[0], _one_line(format % args))


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` as (host, port); port 0 lets the system choose. Raises ValueError."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not (port.isascii() and port.isdigit()) or int(port) > 65535:
        raise ValueError(f"--listen: got {text!r}, want HOST:PORT such as 127.0.0.1:8080")
    return host.strip("[]"), int(port)


def check_seconds(option: str, value: float | None) -> None:
    """A ``--timeout`` or ``--stop-after`` (None: not given) must be a positive, finite number of seconds of at
    most :data:`MAX_OPTION_SECONDS`: NaN slips through ``<= 0`` and a huge wait overflows the timers. ValueError."""
    if value is not None and not 0 < value <= MAX_OPTION_SECONDS:
        raise ValueError(f"{option}: got {value}, want a positive number of seconds, at most {MAX_OPTION_SECONDS}")


@contextmanager
def running(server: BoundedServer) -> Iterator[BoundedServer]:
    """Serve ``server`` from a background thread for the ``with`` block, then stop and close it."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": _POLL_S}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5.0)


class _Stop(Exception):
    """A SIGTERM ends the serving loop as Ctrl-C does."""


def _raise_stop(signum: int, frame: FrameType | None) -> None:
    raise _Stop


def serve_until_stopped(server: BoundedServer, stop_after: float | None = None,
                        on_stop: Callable[[], None] | None = None) -> None:
    """Serve in this thread until SIGINT, SIGTERM or ``stop_after`` seconds; then close the server.

    ``on_stop`` runs after the last request is answered (a sequencer drains, a state is closed).
    """
    previous = signal.signal(signal.SIGTERM, _raise_stop)
    timer = threading.Timer(stop_after, server.shutdown) if stop_after is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        server.serve_forever(poll_interval=_POLL_S)
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        if timer is not None:
            timer.cancel()
        signal.signal(signal.SIGTERM, previous)
        server.server_close()
        if on_stop is not None:
            on_stop()
