"""The log server and the witness over HTTP on 127.0.0.1, against appending to the log directly.

* entries/s through ``POST /add`` with concurrent clients (each answer a checked proof
  request: the server builds every entry's tlog-proof), and entries/s of ``LogDir.append``
  itself in the batch sizes the server's sequencer formed, in the same run; their ratio
  is the cost of the HTTP front (request parsing, the queue, one proof per entry);
* add-checkpoint requests/s a witness answers (each: a note signature check, a consistency
  proof check, a cosignature, a durable state write).
"""

from __future__ import annotations

import http.client
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from _table import make_row

from aer1._httpserve import BoundedServer, running
from aer1._log_server import Sequencer, batch_appender, log_handler
from aer1._logdir import LogDir, init_log
from aer1._signing import generate_key_pair, load_private_key
from aer1._tlog import Checkpoint, CosignatureSigner, Ed25519Signer, consistency_proof, sign_note
from aer1._tlog._entry import opened_entry
from aer1._witness import Witness, format_add_checkpoint
from aer1._witness_server import witness_handler
from aer1._witness_state import WitnessState

ORIGIN = "bench.example/log"
CLIENTS = 16
ENTRIES = {False: 4000, True: 1000}
CHECKPOINTS = {False: 400, True: 100}


def _entry(n: int) -> bytes:
    return opened_entry(str(uuid.UUID(int=n, version=4)), str(uuid.UUID(int=n + 1, version=4)),
                        "2026-12-02T08:00:00.000000Z").encode()


def _post(conn: http.client.HTTPConnection, path: str, body: bytes, kind: str) -> int:
    conn.request("POST", path, body=body, headers={"Content-Type": kind})
    r = conn.getresponse()
    r.read()
    return r.status


def _served(directory: Path, n: int) -> tuple[float, list[int]]:
    """(entries/s through POST /add, the batch sizes the sequencer formed)."""
    log = LogDir(directory)
    sizes: list[int] = []
    append = batch_appender(log)

    def counting(entries: Any) -> list[bytes]:
        sizes.append(len(entries))
        return append(entries)

    sequencer = Sequencer(counting, queue_size=CLIENTS * 2).start()
    server = BoundedServer(("127.0.0.1", 0), log_handler(log, sequencer))
    per_client = n // CLIENTS

    def client(k: int) -> None:
        host, port = server.server_address[:2]
        conn = http.client.HTTPConnection(str(host), int(port), timeout=60)
        for i in range(per_client):
            assert _post(conn, "/add", _entry(k * per_client + i), "application/octet-stream") == 200
        conn.close()

    with running(server):
        threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
    sequencer.stop()
    return per_client * CLIENTS / elapsed, sizes


def _direct(directory: Path, sizes: list[int]) -> float:
    """entries/s of LogDir.append in the same batch sizes (a fresh log)."""
    log = LogDir(directory)
    total = sum(sizes)
    t0 = time.perf_counter()
    start = 0
    for size in sizes:
        log.append([_entry(10**7 + start + i) for i in range(size)])
        start += size
    return total / (time.perf_counter() - t0)


def _witness_rate(directory: Path, n: int) -> float:
    from aer1._tlog import leaf_hash, levels_source, root_hash, tree_levels

    log_signer = Ed25519Signer(ORIGIN, load_private_key(generate_key_pair()[0]))
    witness = Witness(CosignatureSigner("bench.example/w", load_private_key(generate_key_pair()[0])),
                      {ORIGIN: [log_signer.verifier()]}, WitnessState(directory))
    source = levels_source(tree_levels([leaf_hash(_entry(i)) for i in range(n + 1)]))
    bodies = []
    for size in range(1, n + 1):
        note = sign_note(Checkpoint(ORIGIN, size, root_hash(size, source)).text(), [log_signer])
        old = size - 1
        bodies.append(format_add_checkpoint(old, consistency_proof(old, size, source) if old else [], note))
    server = BoundedServer(("127.0.0.1", 0), witness_handler(witness))
    with running(server):
        host, port = server.server_address[:2]
        conn = http.client.HTTPConnection(str(host), int(port), timeout=60)
        t0 = time.perf_counter()
        for body in bodies:
            assert _post(conn, "/add-checkpoint", body, "text/plain") == 200
        elapsed = time.perf_counter() - t0
        conn.close()
    return n / elapsed


def run(quick: bool = False) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as d:
        key = Path(d) / "log.key"
        key.write_bytes(generate_key_pair()[0])
        init_log(Path(d) / "served", ORIGIN, str(key))
        init_log(Path(d) / "direct", ORIGIN, str(key))
        served, sizes = _served(Path(d) / "served", ENTRIES[quick])
        direct = _direct(Path(d) / "direct", sizes)
        mean = sum(sizes) / len(sizes)
        rows.append(make_row(f"log serve: POST /add, {CLIENTS} clients, proof per answer (mean batch {mean:.1f})",
                             served, None, "entries/s"))
        rows.append(make_row("LogDir.append itself, the same batches", direct, None, "entries/s"))
        rows.append(make_row("log serve over HTTP / direct append (rate ratio)", served / direct, None, "×"))
        rows.append(make_row("witness: add-checkpoint with a consistency proof, durable state",
                             _witness_rate(Path(d) / "witness", CHECKPOINTS[quick]), None, "requests/s"))
    return rows


if __name__ == "__main__":
    from _table import run_standalone

    sys.exit(run_standalone(run, __doc__))
