"""Slow and lying clients of the HTTP servers (``aer1 log serve``, ``aer1 witness serve``): each connection is
bounded in time, whatever the client sends and however slowly."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from aer1._httpserve import BoundedHandler, BoundedServer, running

TIMEOUT = 0.5


class _Echo(BoundedHandler):
    methods = ("GET", "POST")

    def get(self, path: str) -> None:
        self.reply(200, b"ok\n", "text/plain")

    def post(self, path: str) -> None:
        self.reply(200, b"%d\n" % len(self.read_body(1024)), "text/plain")


def _drip(url: str, first: bytes, drip: bytes, seconds: float) -> tuple[float, bytes]:
    """Send ``first``, then ``drip`` every TIMEOUT / 2 seconds for ``seconds``; (when the server closed, what
    it answered), or (-1, answer) when it was still open at the end."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    start = time.monotonic()
    answer = b""
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(first)
        while time.monotonic() - start < seconds:
            time.sleep(TIMEOUT / 2)
            try:
                s.sendall(drip)
            except OSError:
                return time.monotonic() - start, answer
            s.settimeout(0.01)
            try:
                got = s.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return time.monotonic() - start, answer
            finally:
                s.settimeout(5)
            if not got:
                return time.monotonic() - start, answer
            answer += got
    return -1.0, answer


def test_headers_sent_slowly_are_cut_off(tmp_path: Path) -> None:
    """Trial: a client that sent one header line every half timeout held its connection (and its slot among
    the server's 64) for as long as it liked: only each read was bounded, not the request's headers."""
    with running(BoundedServer(("127.0.0.1", 0), _Echo, timeout=TIMEOUT)) as server:
        closed, _ = _drip(server.url, b"GET /checkpoint HTTP/1.1\r\n", b"X-Slow: 1\r\n", 12 * TIMEOUT)
        assert 0 < closed < 8 * TIMEOUT, closed
        closed, _ = _drip(server.url, b"G", b"E", 12 * TIMEOUT)  # the request line itself, a byte at a time
        assert 0 < closed < 8 * TIMEOUT, closed


def test_a_body_sent_slowly_is_408(tmp_path: Path) -> None:
    """A body a byte at a time is answered 408 within its deadline (never held open)."""
    with running(BoundedServer(("127.0.0.1", 0), _Echo, timeout=TIMEOUT)) as server:
        closed, answer = _drip(server.url, b"POST /x HTTP/1.1\r\nContent-Length: 1000\r\n\r\n", b"a", 20 * TIMEOUT)
        assert 0 < closed < 8 * TIMEOUT and b" 408 " in answer, (closed, answer)


def test_a_content_length_above_the_body_is_cut_off(tmp_path: Path) -> None:
    """A Content-Length that promises more than is sent: the connection is closed after the read timeout."""
    with running(BoundedServer(("127.0.0.1", 0), _Echo, timeout=TIMEOUT)) as server:
        host, port = server.url.removeprefix("http://").rstrip("/").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as s:
            start = time.monotonic()
            s.sendall(b"POST /x HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc")
            while s.recv(4096):
                pass
            assert time.monotonic() - start < 8 * TIMEOUT


def test_two_different_content_lengths_are_refused(tmp_path: Path) -> None:
    """Trial: `Content-Length: 1` then `Content-Length: 99999999` was read as a body of 1 byte (the first
    header won); which length frames the body is ambiguous, so the request is refused 400."""
    with running(BoundedServer(("127.0.0.1", 0), _Echo, timeout=TIMEOUT)) as server:
        host, port = server.url.removeprefix("http://").rstrip("/").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(b"POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 99999999\r\n\r\na")
            answer = b""
            while got := s.recv(4096):
                answer += got
        assert answer.startswith(b"HTTP/1.1 400 ") and b"several different values" in answer, answer
        with socket.create_connection((host, int(port)), timeout=10) as s:  # the same value twice is one length
            s.sendall(b"POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\nConnection: close\r\n\r\na")
            answer = b""
            while got := s.recv(4096):
                answer += got
        assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"\r\n\r\n1\n"), answer
