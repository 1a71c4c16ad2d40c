"""Shared pieces of the witness and log-server tests: in-memory logs, raw HTTP, real server processes.

An :class:`MemoryLog` is a tree of entries held in memory whose checkpoints are signed
with a real Ed25519 note key; two of them with one origin and one key are the two forks
of a split view. Servers run on 127.0.0.1 only, in a thread (:func:`aer1._httpserve.running`)
or as a real ``aer1`` process that stops by itself after a bounded time.
"""

from __future__ import annotations

import http.client
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aer1._tlog._checkpoint import Checkpoint
from aer1._tlog._cosig import CosignatureSigner
from aer1._tlog._note import Ed25519Signer, sign_note
from aer1._tlog._tree import HashAt, consistency_proof, leaf_hash, levels_source, root_hash, tree_levels

ORIGIN = "example.test/aer1-log"
#: Longest any test waits for a server process to say where it listens (seconds).
START_TIMEOUT_S = 20.0
#: Every server process a test starts stops by itself after this many seconds at most.
PROCESS_LIFETIME_S = 120
AER1 = str(Path(sys.executable).with_name("aer1"))


@dataclass
class MemoryLog:
    """A log held in memory: entries, their tree, and checkpoints signed by ``signer``."""

    signer: Ed25519Signer
    origin: str = ORIGIN
    entries: list[bytes] = field(default_factory=list)

    def add(self, *entries: bytes) -> MemoryLog:
        self.entries.extend(entries)
        return self

    def _source(self, size: int) -> HashAt:
        return levels_source(tree_levels([leaf_hash(e) for e in self.entries[:size]]))

    def root(self, size: int | None = None) -> bytes:
        n = len(self.entries) if size is None else size
        return root_hash(n, self._source(n))

    def checkpoint(self, size: int | None = None) -> bytes:
        """The signed checkpoint note at ``size`` (default: every entry)."""
        n = len(self.entries) if size is None else size
        return sign_note(Checkpoint(self.origin, n, self.root(n)).text(), [self.signer])

    def proof(self, old: int, new: int | None = None) -> list[bytes]:
        n = len(self.entries) if new is None else new
        return consistency_proof(old, n, self._source(n)) if 0 < old < n else []


def entries(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(count)]


@pytest.fixture
def log_signer() -> Ed25519Signer:
    return Ed25519Signer(ORIGIN, Ed25519PrivateKey.generate())


@pytest.fixture
def cosigner() -> CosignatureSigner:
    return CosignatureSigner("witness.test/w1", Ed25519PrivateKey.generate())


def post(url: str, path: str, body: bytes, headers: dict[str, str] | None = None,
         timeout: float = 10.0) -> tuple[int, str, bytes]:
    """One POST with the standard library's client: (status, content type, body)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("POST", path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type") or "", r.read()
    finally:
        conn.close()


def get(url: str, path: str, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


@dataclass
class ServerProcess:
    """A real ``aer1`` server process: its URL and the lines it printed before serving."""

    process: subprocess.Popen[bytes]
    url: str
    banner: list[str]

    def kill(self) -> None:
        """SIGKILL: no clean-up runs (a crash)."""
        self.process.kill()
        self.process.wait(timeout=10)


def _read_line(proc: subprocess.Popen[bytes], deadline: float) -> str:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buf = b""
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        ready = select.select([fd], [], [], min(left, 0.5))[0] if left > 0 else []
        chunk = os.read(fd, 1) if ready else b""
        if chunk:
            buf += chunk
        elif left <= 0 or ready:  # out of time, or end of output: the server is not starting
            proc.wait(timeout=10) if ready else proc.kill()
            err = proc.stderr.read().decode() if proc.stderr and proc.poll() is not None else ""
            raise AssertionError(f"server gave no line in time (exit {proc.poll()}): {err}")
    return buf.decode()


@contextmanager
def server_process(args: Sequence[str]) -> Iterator[ServerProcess]:
    """Start ``aer1 ARGS --listen 127.0.0.1:0 --stop-after LIFETIME`` and yield it once it listens."""
    cmd = [AER1, *args, "--listen", "127.0.0.1:0", "--stop-after", str(PROCESS_LIFETIME_S)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        banner: list[str] = []
        while True:
            line = _read_line(proc, deadline)
            banner.append(line.rstrip("\n"))
            if line.startswith("listening on "):
                break
        yield ServerProcess(proc, line.split()[-1], banner)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
