"""The tlog-witness protocol, status by status, against a real witness HTTP server on 127.0.0.1.

Each answer is checked as a client sees it: the status, the content type, and for a 200
a cosignature line that the tlog-cosignature rules verify over the submitted checkpoint
(type 0x04 key ID, a non-zero timestamp close to now) and that leaves the note valid.
"""

from __future__ import annotations

import base64
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aer1._httpserve import BoundedServer, running
from aer1._tlog._checkpoint import Checkpoint, open_checkpoint
from aer1._tlog._cosig import CosignatureSigner, cosignature_timestamp
from aer1._tlog._note import Ed25519Signer, parse_note, sign_note
from aer1._tlog._tree import EMPTY_ROOT
from aer1._witness import MAX_ADD_CHECKPOINT_BYTES, Witness, format_add_checkpoint
from aer1._witness_server import witness_handler
from aer1._witness_state import WitnessState, origin_hash

from .conftest import ORIGIN, MemoryLog, entries, get, post


@pytest.fixture
def log(log_signer: Ed25519Signer) -> MemoryLog:
    return MemoryLog(log_signer).add(*entries("a", 9))


@pytest.fixture
def witness(tmp_path: Path, log_signer: Ed25519Signer, cosigner: CosignatureSigner) -> Witness:
    return Witness(cosigner, {ORIGIN: [log_signer.verifier()]}, WitnessState(tmp_path / "state"))


@pytest.fixture
def url(witness: Witness) -> Iterator[str]:
    with running(BoundedServer(("127.0.0.1", 0), witness_handler(witness), timeout=5.0)) as server:
        yield server.url


def add(url: str, old: int, proof: list[bytes], note: bytes) -> tuple[int, str, bytes]:
    return post(url, "/add-checkpoint", format_add_checkpoint(old, proof, note))


def cosigned(note: bytes, answer: bytes, log: MemoryLog, cosigner: CosignatureSigner) -> int:
    """The cosignature's timestamp, after checking the note with it appended verifies under both keys."""
    assert answer.startswith("\u2014 ".encode()) and answer.endswith(b"\n") and answer.count(b"\n") == 1
    _, _, log_sigs, cosigs = open_checkpoint(note + answer, [log.signer.verifier()], [cosigner.verifier()])
    assert len(log_sigs) == 1 and len(cosigs) == 1
    return cosignature_timestamp(cosigs[0][1].sig)


def test_first_checkpoint_is_cosigned_with_a_timestamp(url: str, log: MemoryLog, cosigner: CosignatureSigner) -> None:
    note = log.checkpoint(5)
    status, ctype, body = add(url, 0, [], note)
    assert status == 200, body
    assert ctype.startswith("text/plain")
    stamp = cosigned(note, body, log, cosigner)
    assert abs(stamp - time.time()) < 60


def test_a_consistent_extension_is_cosigned(url: str, log: MemoryLog, cosigner: CosignatureSigner) -> None:
    assert add(url, 0, [], log.checkpoint(5))[0] == 200
    note = log.checkpoint(9)
    status, _, body = add(url, 5, log.proof(5, 9), note)
    assert status == 200, body
    cosigned(note, body, log, cosigner)


def test_the_same_checkpoint_again_is_cosigned(url: str, log: MemoryLog, cosigner: CosignatureSigner) -> None:
    note = log.checkpoint(5)
    assert add(url, 0, [], note)[0] == 200
    status, _, body = add(url, 5, [], note)
    assert status == 200, body


def test_wrong_old_size_is_409_with_the_witness_size(url: str, log: MemoryLog) -> None:
    assert add(url, 0, [], log.checkpoint(5))[0] == 200
    for old in (0, 3):
        status, ctype, body = add(url, old, log.proof(old, 9), log.checkpoint(9))
        assert (status, ctype, body) == (409, "text/x.tlog.size", b"5\n")


def test_unknown_origin_is_404(url: str, log_signer: Ed25519Signer) -> None:
    other = MemoryLog(Ed25519Signer("other.test/log", log_signer._private), "other.test/log").add(b"x")
    status, _, _ = add(url, 0, [], other.checkpoint())
    assert status == 404


def test_known_key_bad_signature_is_403(url: str, log: MemoryLog) -> None:
    note = bytearray(log.checkpoint(5))
    note[-10] = ord("A") if note[-10] != ord("A") else ord("B")  # inside the log's signature
    status, _, body = add(url, 0, [], bytes(note))
    assert status == 403, body


def test_no_trusted_signature_is_403(url: str, log: MemoryLog) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    impostor = MemoryLog(Ed25519Signer(ORIGIN, Ed25519PrivateKey.generate())).add(*log.entries)
    status, _, _ = add(url, 0, [], impostor.checkpoint(5))
    assert status == 403


def test_unknown_key_signature_is_ignored(url: str, log: MemoryLog, cosigner: CosignatureSigner) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    text = Checkpoint(ORIGIN, 5, log.root(5)).text()
    stranger = Ed25519Signer("stranger.test/k", Ed25519PrivateKey.generate())
    note = sign_note(text, [stranger, log.signer])
    status, _, body = add(url, 0, [], note)
    assert status == 200, body
    cosigned(note, body, log, cosigner)


def test_bad_consistency_proof_is_422(url: str, log: MemoryLog) -> None:
    assert add(url, 0, [], log.checkpoint(5))[0] == 200
    proof = log.proof(5, 9)
    proof[0] = bytes(32)
    assert add(url, 5, proof, log.checkpoint(9))[0] == 422
    assert add(url, 5, [], log.checkpoint(9))[0] == 422  # no proof at all


def test_proof_with_old_size_zero_is_422(url: str, log: MemoryLog) -> None:
    assert add(url, 0, [bytes(32)], log.checkpoint(5))[0] == 422


def test_same_size_other_root_is_422(url: str, log: MemoryLog, log_signer: Ed25519Signer) -> None:
    assert add(url, 0, [], log.checkpoint(5))[0] == 200
    fork = MemoryLog(log_signer).add(*entries("b", 5))
    assert add(url, 5, [], fork.checkpoint(5))[0] == 422


def test_empty_tree_must_have_the_empty_root(url: str, log: MemoryLog) -> None:
    wrong = sign_note(Checkpoint(ORIGIN, 0, bytes(32)).text(), [log.signer])
    assert add(url, 0, [], wrong)[0] == 422
    right = sign_note(Checkpoint(ORIGIN, 0, EMPTY_ROOT).text(), [log.signer])
    assert add(url, 0, [], right)[0] == 200


@pytest.mark.parametrize("body", [
    b"",
    b"old 5",
    b"new 0\n\n",
    b"old 05\n\n",
    b"old -1\n\n",
    b"old 99999999999999999999\n\n",
    b"old 0\nnot base64!\n\n",
    b"old 0\n" + base64.b64encode(bytes(31)) + b"\n\n",
    b"old 0\n" + (base64.b64encode(bytes(32)) + b"\n") * 64 + b"\n",
    b"old 0\n\nnot a note\n",
    b"old 0\n\nexample.test/aer1-log\n5\n\n\xe2\x80\x94 k AAAA\n",
])
def test_malformed_body_is_400(url: str, body: bytes) -> None:
    status, ctype, text = post(url, "/add-checkpoint", body)
    assert status == 400, text
    assert ctype.startswith("text/plain") and text.count(b"\n") == 1


def test_old_size_above_the_checkpoint_is_400(url: str, log: MemoryLog) -> None:
    assert add(url, 7, [], log.checkpoint(5))[0] == 400


def test_oversized_body_is_413_unread(url: str) -> None:
    status, _, _ = post(url, "/add-checkpoint", b"x", headers={"Content-Length": str(MAX_ADD_CHECKPOINT_BYTES + 1)})
    assert status == 413


def test_body_without_length_is_411(url: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"POST /add-checkpoint HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 411")


def test_other_paths_and_methods(url: str) -> None:
    assert get(url, "/add-checkpoint")[0] == 405
    assert get(url, "/nothing")[0] == 404
    assert post(url, "/other", b"old 0\n\n")[0] == 404
    assert get(url, f"/{origin_hash(ORIGIN)}/checkpoint")[0] == 404  # nothing cosigned yet


def test_garbage_request_line_gets_one_plain_line(url: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(b"\x16\x03\x01 garbage\r\n\r\n")
        answer = s.recv(1000)
    assert answer.startswith(b"HTTP/1.1 400") or answer.startswith(b"HTTP/1.0 400")
    assert b"Traceback" not in answer


def test_monitoring_endpoint_serves_the_cosigned_checkpoint(url: str, log: MemoryLog,
                                                            cosigner: CosignatureSigner) -> None:
    assert add(url, 0, [], log.checkpoint(5))[0] == 200
    status, headers, body = get(url, f"/{origin_hash(ORIGIN)}/checkpoint")
    assert status == 200 and headers["content-type"].startswith("text/plain")
    cp, _, _, cosigs = open_checkpoint(body, [log.signer.verifier()], [cosigner.verifier()])
    assert (cp.size, len(cosigs)) == (5, 1)


def test_concurrent_requests_from_one_size_advance_once(url: str, log: MemoryLog) -> None:
    """Many clients all claiming size 5: exactly one advances the witness; the rest see 409 with its size."""
    log.add(*entries("c", 20))
    assert add(url, 0, [], log.checkpoint(5))[0] == 200
    results: list[tuple[int, bytes]] = []
    lock = threading.Lock()

    def submit(size: int) -> None:
        status, _, body = add(url, 5, log.proof(5, size), log.checkpoint(size))
        with lock:
            results.append((status, body))

    threads = [threading.Thread(target=submit, args=(size,)) for size in range(10, 26)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(results) == len(threads)
    assert sorted(s for s, _ in results) == [200] + [409] * (len(threads) - 1)
    sizes = {b for s, b in results if s == 409}
    assert len(sizes) == 1  # every loser sees the one winner's size
    status, _, _ = add(url, int(sizes.pop()), [], log.checkpoint(25))
    assert status in (200, 422)  # 200 when the winner was size 25 itself, else a proof was needed


def test_state_is_kept_across_witness_instances(tmp_path: Path, log: MemoryLog, cosigner: CosignatureSigner) -> None:
    state = tmp_path / "state"
    first = Witness(cosigner, {ORIGIN: [log.signer.verifier()]}, WitnessState(state))
    assert first.add_checkpoint(format_add_checkpoint(0, [], log.checkpoint(5))).status == 200
    second = Witness(cosigner, {ORIGIN: [log.signer.verifier()]}, WitnessState(state))
    assert second.last_size(ORIGIN) == 5
    answer = second.add_checkpoint(format_add_checkpoint(0, [], log.checkpoint(9)))
    assert (answer.status, answer.body) == (409, b"5\n")
    stored = parse_note((state / f"{origin_hash(ORIGIN)}.checkpoint").read_bytes())
    assert [s.name for s in stored.signatures] == [ORIGIN, cosigner.name]
