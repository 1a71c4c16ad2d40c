"""``aer1 witness serve`` as a real process: killed and restarted mid-run, and shown a split view.

The witness runs as its own process on 127.0.0.1 and stops by itself after a bounded
time; a SIGKILL is a crash (no clean-up runs). What it acknowledged before the crash is
what it holds after it, and the fork it never saw extend its history gets no cosignature.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

from aer1._signing import load_private_key
from aer1._tlog._checkpoint import open_checkpoint
from aer1._tlog._cosig import CosignatureSigner
from aer1._tlog._note import Ed25519Signer
from aer1._witness import format_add_checkpoint
from aer1._witness_state import origin_hash

from .conftest import ORIGIN, MemoryLog, entries, get, post, server_process

KEY = Path(__file__).parent.parent / "fixtures" / "keys" / "trusted.key"
NAME = "witness.test/process"


def witness_args(state: Path, log: MemoryLog) -> list[str]:
    return ["witness", "serve", "--key", str(KEY), "--name", NAME, "--state", str(state),
            "--log", f"{ORIGIN}={log.signer.verifier().vkey}"]


def cosigner_verifier():  # type: ignore[no-untyped-def]
    return CosignatureSigner(NAME, load_private_key(str(KEY))).verifier()


def add(url: str, old: int, log: MemoryLog, size: int) -> tuple[int, bytes]:
    status, _, body = post(url, "/add-checkpoint", format_add_checkpoint(old, log.proof(old, size),
                                                                          log.checkpoint(size)))
    return status, body


def witness_size(url: str, log: MemoryLog) -> int:
    """The size the witness holds for the log, read from its monitoring endpoint (0 when it has none)."""
    status, _, body = get(url, f"/{origin_hash(ORIGIN)}/checkpoint")
    if status == 404:
        return 0
    assert status == 200
    cp, _, _, cosigs = open_checkpoint(body, [log.signer.verifier()], [cosigner_verifier()])
    assert len(cosigs) == 1
    return cp.size


def test_banner_names_the_witness_key(tmp_path: Path, log_signer: Ed25519Signer) -> None:
    log = MemoryLog(log_signer).add(b"e")
    with server_process(witness_args(tmp_path / "state", log)) as server:
        assert server.banner[0] == f"witness {NAME} vkey {cosigner_verifier().vkey}"
        assert server.url.startswith("http://127.0.0.1:")


def test_a_killed_witness_keeps_what_it_acknowledged(tmp_path: Path, log_signer: Ed25519Signer) -> None:
    """SIGKILL while a client is submitting: after a restart the witness holds the last size it
    acknowledged, or the one in flight (persisted before the answer was sent), never less."""
    log = MemoryLog(log_signer).add(*entries("e", 400))
    state = tmp_path / "state"
    rng = random.Random(28)
    acked = [0]
    refused: list[tuple[int, bytes]] = []

    def submit(url: str) -> None:
        for size in range(acked[0] + 1, 400):
            try:
                status, body = add(url, acked[0], log, size)
            except OSError:
                return  # the witness died under this request
            if status != 200:
                refused.append((status, body))
                return
            acked[0] = size

    for _ in range(3):  # three crashes, each at a random point of a run
        with server_process(witness_args(state, log)) as server:
            held = witness_size(server.url, log)
            assert held in (acked[0], acked[0] + 1), (held, acked[0])
            acked[0] = held
            client = threading.Thread(target=submit, args=(server.url,))
            client.start()
            time.sleep(rng.uniform(0.05, 0.4))
            server.kill()
            client.join(timeout=30)
            assert not client.is_alive() and refused == []
    with server_process(witness_args(state, log)) as server:
        held = witness_size(server.url, log)
        assert held in (acked[0], acked[0] + 1)
        assert add(server.url, 0, log, 400) == (409, b"%d\n" % held)
        status, body = add(server.url, held, log, 400)
        assert status == 200, body
        open_checkpoint(log.checkpoint(400) + body, [log.signer.verifier()], [cosigner_verifier()])


def test_a_witness_refuses_the_other_fork_of_a_split_view(tmp_path: Path, log_signer: Ed25519Signer) -> None:
    """Two forks of one log (same origin, same key): the witness cosigns the one it saw first, never the other."""
    shared = entries("shared", 4)
    fork_a = MemoryLog(log_signer).add(*shared, *entries("a", 4))
    fork_b = MemoryLog(log_signer).add(*shared, *entries("b", 8))
    with server_process(witness_args(tmp_path / "state", fork_a)) as server:
        assert add(server.url, 0, fork_a, 4)[0] == 200
        assert add(server.url, 4, fork_a, 8)[0] == 200
        assert add(server.url, 0, fork_b, 8) == (409, b"8\n")
        assert add(server.url, 8, fork_b, 8)[0] == 422  # same size, other root
        assert add(server.url, 8, fork_b, 12)[0] == 422  # B's own proof from its 8 does not start at A's 8
        # B's history agrees with A's up to 4, so a proof from 4 is valid in B; the witness is past 4.
        assert add(server.url, 4, fork_b, 12) == (409, b"8\n")
        # A verifier that wants this witness's cosignature accepts fork A's checkpoint and not fork B's.
        status, body = add(server.url, 8, fork_a, 8)
        assert status == 200
        _, _, _, cosigs = open_checkpoint(fork_a.checkpoint(8) + body, [log_signer.verifier()], [cosigner_verifier()])
        assert len(cosigs) == 1
        _, _, _, cosigs = open_checkpoint(fork_b.checkpoint(12), [log_signer.verifier()], [cosigner_verifier()])
        assert cosigs == []


def test_a_log_key_not_named_its_origin_is_refused_at_start(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           log_signer: Ed25519Signer) -> None:
    """Trial: `--log other.example/log=VKEY` with a key named example.test/aer1-log was taken, so a checkpoint
    of one origin counted as signed by the key of another; it is refused at start, in one line."""
    from aer1._cli import main

    code = main(["witness", "serve", "--key", str(KEY), "--name", NAME, "--state", str(tmp_path / "w"),
                 "--log", f"other.example/log={log_signer.verifier().vkey}", "--stop-after", "0.1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "not the origin" in err, err
    assert not (tmp_path / "w").exists() or not any((tmp_path / "w").iterdir())
