"""``aer1 log serve`` as a real process on 127.0.0.1: entries in, proofs out, files read-only, bounded.

Every 200 answer is an offline proof that the log's own verifier accepts for the entry
sent; every refusal is one plain line; the log on disk afterwards holds exactly the
entries that were answered 200, however many clients pushed at once and whatever
malformed, oversized or hostile requests came between them.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from aer1._log_client import LogServerError, append_entry
from aer1._logdir import LogDir, init_log
from aer1._tlog import TILE_BYTES, parse_tlog_proof, verify_tlog_proof
from aer1._tlog._entry import opened_entry, parse_entry

from ..helpers import make_receipt
from .conftest import get, post, server_process

KEY = Path(__file__).parent.parent / "fixtures" / "keys" / "trusted.key"
ORIGIN = "example.test/served-log"


def new_entry(n: int) -> bytes:
    return opened_entry(str(uuid.UUID(int=n, version=4)), str(uuid.UUID(int=10**9 + n, version=4)),
                        "2026-12-02T08:00:00.000000Z").encode()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    init_log(tmp_path / "log", ORIGIN, str(KEY))
    return tmp_path / "log"


def check_proof(log_dir: Path, body: bytes, entry: bytes) -> int:
    """The index of ``entry`` per the proof ``body``, after the log's key and the inclusion check it."""
    verified = verify_tlog_proof(parse_tlog_proof(body), entry, [LogDir(log_dir).verifier])
    return verified.index


def log_entries(log_dir: Path) -> list[bytes]:
    """Every entry in the log as its checkpoint and tiles give them (the tree recomputed and checked)."""
    from aer1._tlog import check_bundle, dir_bundle_reader

    log = LogDir(log_dir)
    cp, _ = log.checkpoint()
    reader = log.hash_reader(cp)
    read = dir_bundle_reader(log_dir)
    out: list[bytes] = []
    for n in range((cp.size + 255) // 256):
        width = min(256, cp.size - 256 * n)
        out.extend(check_bundle(read(n, width), reader.leaf_hashes(n)[:width]))
    return out


def test_entries_and_receipts_in_proofs_out(log_dir: Path) -> None:
    receipt = make_receipt()
    with server_process(["log", "serve", str(log_dir)]) as server:
        status, ctype, body = post(server.url, "/add", new_entry(1), {"Content-Type": "application/octet-stream"})
        assert (status, ctype) == (200, "text/plain; charset=utf-8"), body
        assert check_proof(log_dir, body, new_entry(1)) == 0
        status, _, body = post(server.url, "/add", json.dumps(receipt).encode(), {"Content-Type": "application/json"})
        assert status == 200, body
        from aer1._tlog._entry import entry_for_receipt

        assert check_proof(log_dir, body, entry_for_receipt(receipt).encode()) == 1
    assert log_entries(log_dir)[0] == new_entry(1)


def test_a_posted_receipt_whose_hash_chain_does_not_verify_is_refused(log_dir: Path) -> None:
    """Trial: POST /add took a receipt whose goal was edited after the run (its chain broken) into the log,
    as `aer1 log append` did; both now refuse it: 400, one line naming the broken link, nothing logged."""
    receipt = make_receipt()
    receipt["goal"] += " (edited)"
    with server_process(["log", "serve", str(log_dir)]) as server:
        status, ctype, text = post(server.url, "/add", json.dumps(receipt).encode(),
                                   {"Content-Type": "application/json"})
        assert (status, ctype) == (400, "text/plain; charset=utf-8"), text
        assert b"hash chain does not verify" in text and text.count(b"\n") == 1, text
    assert log_entries(log_dir) == []


def test_files_are_served_read_only_with_their_content_types(log_dir: Path) -> None:
    LogDir(log_dir).append([new_entry(i) for i in range(300)])
    with server_process(["log", "serve", str(log_dir)]) as server:
        status, headers, body = get(server.url, "/checkpoint")
        assert status == 200 and headers["content-type"] == "text/plain; charset=utf-8"
        assert headers["cache-control"] == "no-cache" and body == (log_dir / "checkpoint").read_bytes()
        status, headers, body = get(server.url, "/tile/0/000")
        assert (status, headers["content-type"], len(body)) == (200, "application/octet-stream", TILE_BYTES)
        assert "immutable" in headers["cache-control"]
        status, headers, body = get(server.url, "/tile/0/001.p/44")
        assert status == 200 and len(body) == 44 * 32 and "immutable" not in headers["cache-control"]
        assert get(server.url, "/tile/entries/000")[0] == 200
        assert get(server.url, "/tile/entries/001.p/44")[0] == 200
        for hostile in ["/log-config.json", "/lock", "/log.vkey", "/tile/../log-config.json",
                        "/tile/0/..%2f..%2flog-config.json", "/tile/0/x000/001", "/tile/0/0", "/tile/0/001.p/0",
                        "/tile/0/001.p/256", "/tile/64/000", "/tile//0/000", "/checkpoint/", "/tile/entries/002",
                        "/%2e%2e/log-config.json", "/tile/0/000?x=../../lock"]:
            status, _, body = get(server.url, hostile)
            if hostile.startswith("/tile/0/000?"):
                assert status == 200 and len(body) == TILE_BYTES  # the query is ignored, never a path
                continue
            assert status == 404, hostile
            assert b"Traceback" not in body and body.count(b"\n") == 1


@pytest.mark.parametrize(("body", "headers", "want"), [
    (b"{not json", {"Content-Type": "application/json"}, 400),
    (b'{"a": 1}', {"Content-Type": "application/json"}, 400),
    (b"[1, 2]", {"Content-Type": "application/json"}, 400),
    (b"aer1-log-entry/v1\nopened\n", {"Content-Type": "application/octet-stream"}, 400),
    (b"\xff\xfe", {"Content-Type": "application/octet-stream"}, 400),
    (b"x", {"Content-Type": "text/plain"}, 415),
    (b"x", {}, 415),
    (b"x", {"Content-Type": "application/octet-stream", "Content-Length": "70000"}, 413),
    (b"x", {"Content-Type": "application/json", "Content-Length": str(64 * 1024 * 1024)}, 413),
    (b"x", {"Content-Type": "application/octet-stream", "Content-Length": "-5"}, 400),
])
def test_malformed_and_oversized_posts(log_dir: Path, body: bytes, headers: dict[str, str], want: int) -> None:
    with server_process(["log", "serve", str(log_dir)]) as server:
        status, ctype, text = post(server.url, "/add", body, headers)
        assert status == want, text
        assert ctype == "text/plain; charset=utf-8" and text.count(b"\n") == 1 and b"Traceback" not in text
        status, _, text = post(server.url, "/add", new_entry(7), {"Content-Type": "application/octet-stream"})
        assert status == 200  # still serving
    assert log_entries(log_dir) == [new_entry(7)]


def test_bounded_load_with_hostile_requests_between(log_dir: Path) -> None:
    """24 clients push 10 entries each into a queue of 4 while others send junk: every answer is a proof
    or a stated refusal, and the log holds exactly the entries answered 200."""
    results: list[tuple[bytes, int, bytes]] = []
    lock = threading.Lock()

    def client(k: int, url: str) -> None:
        for i in range(10):
            entry = new_entry(1000 * k + i)
            try:
                status, _, body = post(url, "/add", entry, {"Content-Type": "application/octet-stream"}, timeout=30)
            except OSError as e:
                status, body = -1, str(e).encode()
            with lock:
                results.append((entry, status, body))

    def hostile(url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        for junk in [b"GARBAGE\r\n\r\n", b"POST /add HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc",
                     b"POST /add HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n{{{",
                     b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n", b"\x00" * 100]:
            try:
                with socket.create_connection((host, int(port)), timeout=5) as s:
                    s.sendall(junk)
                    s.shutdown(socket.SHUT_WR)
                    answer = s.recv(4096)
                assert b"Traceback" not in answer
            except OSError:
                pass  # the server may drop a connection that cannot be a request

    with server_process(["log", "serve", str(log_dir), "--queue-size", "4", "--timeout", "20"]) as server:
        threads = [threading.Thread(target=client, args=(k, server.url)) for k in range(24)]
        threads += [threading.Thread(target=hostile, args=(server.url,)) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads)
        assert get(server.url, "/checkpoint")[0] == 200
    assert len(results) == 240
    statuses = {s for _, s, _ in results}
    assert statuses <= {200, 503}, [(s, b[:200]) for _, s, b in results if s not in (200, 503)][:3]
    accepted = {e: check_proof(log_dir, b, e) for e, s, b in results if s == 200}
    assert sorted(accepted.values()) == list(range(len(accepted)))
    assert sorted(log_entries(log_dir)) == sorted(accepted)  # nothing refused was logged, nothing lost


def test_the_client_appends_from_another_process(log_dir: Path) -> None:
    """A worker process uses the client; meanwhile `aer1 log append` of a receipt runs beside the server."""
    receipt_path = log_dir.parent / "r.json"
    receipt_path.write_text(json.dumps(make_receipt()))
    script = ("import sys\nfrom aer1._log_client import append_entry\nfrom aer1._tlog._entry import opened_entry\n"
              "import uuid\nfor i in range(20):\n"
              "    e = opened_entry(str(uuid.UUID(int=i, version=4)), str(uuid.UUID(int=99 + i, version=4)),"
              " '2026-12-02T08:00:00.000000Z').encode()\n"
              "    proof = append_entry(sys.argv[1], e, timeout=30)\n"
              "    print(proof.split(b'\\n')[1].decode())\n")
    with server_process(["log", "serve", str(log_dir)]) as server:
        worker = subprocess.Popen([sys.executable, "-c", script, server.url], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        local = subprocess.run([str(Path(sys.executable).with_name("aer1")), "log", "append", str(log_dir),
                                str(receipt_path)], capture_output=True, text=True, timeout=60)
        out, err = worker.communicate(timeout=60)
        assert worker.returncode == 0, err
        assert local.returncode == 0, local.stderr
    indexes = [int(line.split()[1]) for line in out.splitlines()]
    assert len(indexes) == 20 and len(set(indexes)) == 20
    entries = log_entries(log_dir)
    assert len(entries) == 21
    assert sum(parse_entry(e).kind == "closed" for e in entries) == 1


def test_the_client_refuses_a_wrong_answer_and_names_the_server(tmp_path: Path) -> None:
    with pytest.raises(LogServerError, match="want http"):
        append_entry("ftp://127.0.0.1:1", new_entry(1))
    with pytest.raises(LogServerError):
        append_entry("http://127.0.0.1:1", new_entry(1), timeout=2)


def test_a_full_queue_is_answered_503_over_http(log_dir: Path) -> None:
    """The writer held shut: one entry in hand, two queued, the next is 503 with Retry-After and never logged."""
    from aer1._httpserve import BoundedServer, running
    from aer1._log_server import Sequencer, batch_appender, log_handler

    gate, entered = threading.Event(), threading.Event()
    append = batch_appender(LogDir(log_dir))

    def gated(entries: list[bytes]) -> list[bytes]:
        entered.set()
        assert gate.wait(30)
        return append(entries)

    sequencer = Sequencer(gated, queue_size=2, batch_max=1, batch_wait=0).start()
    server = BoundedServer(("127.0.0.1", 0), log_handler(LogDir(log_dir), sequencer, 20.0))
    answers: list[int] = []
    with running(server):
        def send(n: int) -> None:
            answers.append(post(server.url, "/add", new_entry(n), {"Content-Type": "application/octet-stream"})[0])

        threads = [threading.Thread(target=send, args=(0,))]
        threads[0].start()
        assert entered.wait(10)
        threads += [threading.Thread(target=send, args=(n,)) for n in (1, 2)]
        for t in threads[1:]:
            t.start()
        for _ in range(500):
            if sequencer._queue.full():
                break
            threading.Event().wait(0.01)
        host, port = server.url.removeprefix("http://").split(":")
        import http.client

        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request("POST", "/add", body=new_entry(3), headers={"Content-Type": "application/octet-stream"})
        r = conn.getresponse()
        assert (r.status, r.getheader("Retry-After")) == (503, "1")
        conn.close()
        gate.set()
        for t in threads:
            t.join(timeout=30)
    sequencer.stop()
    assert sorted(answers) == [200, 200, 200]
    assert sorted(log_entries(log_dir)) == sorted(new_entry(n) for n in (0, 1, 2))
