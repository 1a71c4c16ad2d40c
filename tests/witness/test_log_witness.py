"""``aer1 log witness`` against real witness processes: cosignatures gathered onto a real log's checkpoint.

The log is made and grown by the log writer (``aer1 log init`` / ``LogDir.append``), the
witnesses are ``aer1 witness serve`` processes on 127.0.0.1. A split view (two forks of
one log, one key) gets a cosignature for one fork only, so a verifier that requires that
witness accepts one fork's proofs and refuses the other's; so does Go's verifier.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from aer1._httpserve import BoundedHandler, BoundedServer, running
from aer1._logdir import LogDir, init_log
from aer1._signing import load_private_key
from aer1._tlog import (
    CosignatureSigner,
    CosignatureVerifier,
    LogInvalid,
    Signature,
    TlogProof,
    format_tlog_proof,
    inclusion_proof,
    open_checkpoint,
    parse_note,
    parse_tlog_proof,
    verify_tlog_proof,
)
from aer1._tlog._entry import opened_entry
from aer1._witness import Witness
from aer1._witness_state import WitnessState

from ..tlog.helpers import build_go_peer, run_peer
from .conftest import AER1, server_process

KEY = Path(__file__).parent.parent / "fixtures" / "keys" / "trusted.key"
ORIGIN = "example.test/witnessed-log"


def entry(n: int, tag: int = 0) -> bytes:
    return opened_entry(str(uuid.UUID(int=n, version=4)), str(uuid.UUID(int=tag * 10**6 + n + 1, version=4)),
                        "2026-12-02T08:00:00.000000Z").encode()


def witness_key(tmp_path: Path, name: str) -> tuple[Path, CosignatureVerifier]:
    subprocess.run([AER1, "keygen", "-o", str(tmp_path / name)], check=True, capture_output=True, timeout=60)
    key = tmp_path / f"{name}.key"
    return key, CosignatureSigner(f"witness.test/{name}", load_private_key(str(key))).verifier()


def serve_witness(key: Path, name: str, state: Path, log_dir: Path):  # type: ignore[no-untyped-def]
    return server_process(["witness", "serve", "--key", str(key), "--name", f"witness.test/{name}",
                           "--state", str(state), "--log", f"{ORIGIN}={log_dir / 'log.vkey'}"])


def gather(log_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AER1, "log", "witness", str(log_dir), *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    init_log(tmp_path / "log", ORIGIN, str(KEY))
    LogDir(tmp_path / "log").append([entry(i) for i in range(5)])
    return tmp_path / "log"


def cosigners(log_dir: Path, *witnesses: CosignatureVerifier) -> list[str]:
    _, _, _, cosigs = open_checkpoint((log_dir / "checkpoint").read_bytes(), [LogDir(log_dir).verifier],
                                       list(witnesses))
    return [v.name for v, _ in cosigs]


def proof_of(log_dir: Path, index: int) -> bytes:
    log = LogDir(log_dir)
    cp, note = log.checkpoint()
    path = inclusion_proof(index, cp.size, log.hash_reader(cp).hash_at)
    return format_tlog_proof(TlogProof(index, tuple(path), note))


def test_cosignatures_are_gathered_then_advanced_with_a_proof(tmp_path: Path, log_dir: Path) -> None:
    key, w = witness_key(tmp_path, "w1")
    with serve_witness(key, "w1", tmp_path / "s1", log_dir) as server:
        result = gather(log_dir, "--witness", server.url, "--witness-key", w.vkey)
        assert result.returncode == 0, result.stderr
        assert f"cosigned: {server.url} ({w.name}+{w.key_id:08x})" in result.stdout
        assert cosigners(log_dir, w) == [w.name]
        LogDir(log_dir).append([entry(i) for i in range(5, 300)])  # the witness holds 5: 409, then a proof
        result = gather(log_dir, "--witness", server.url, "--witness-key", w.vkey)
        assert result.returncode == 0, result.stderr
        assert cosigners(log_dir, w) == [w.name]
        result = gather(log_dir, "--witness", server.url, "--witness-key", w.vkey)  # again: replaced, not added
        assert result.returncode == 0, result.stderr
    note = parse_note((log_dir / "checkpoint").read_bytes())
    assert [s.name for s in note.signatures] == [ORIGIN, w.name]
    verify_tlog_proof(parse_tlog_proof(proof_of(log_dir, 299)), entry(299), [LogDir(log_dir).verifier], [w], 1)


def test_one_witness_down_the_other_still_cosigns(tmp_path: Path, log_dir: Path) -> None:
    key, w = witness_key(tmp_path, "w2")
    with serve_witness(key, "w2", tmp_path / "s2", log_dir) as server:
        result = gather(log_dir, "--witness", "http://127.0.0.1:9", "--witness", server.url, "--timeout", "5")
    assert result.returncode == 1
    assert "failed: http://127.0.0.1:9" in result.stderr and "not verified" in result.stdout
    assert cosigners(log_dir, w) == [w.name]


def test_split_view_one_fork_cosigned_the_other_refused(tmp_path: Path, log_dir: Path) -> None:
    """Fork A and fork B share 5 entries, then differ. The witness sees A first: B is never cosigned, and a
    verifier requiring the witness accepts A's proof and refuses B's (Go's verifier too)."""
    fork_b = tmp_path / "fork-b"
    shutil.copytree(log_dir, fork_b)
    LogDir(log_dir).append([entry(i, tag=1) for i in range(5, 12)])
    LogDir(fork_b).append([entry(i, tag=2) for i in range(5, 20)])
    key, w = witness_key(tmp_path, "w3")
    with serve_witness(key, "w3", tmp_path / "s3", log_dir) as server:
        assert gather(log_dir, "--witness", server.url, "--witness-key", w.vkey).returncode == 0
        result = gather(fork_b, "--witness", server.url, "--witness-key", w.vkey)
        assert result.returncode == 1
        assert "refused with 422" in result.stderr  # B's proof from the witness's 12 is not A's history
    assert cosigners(fork_b, w) == []
    log_key = LogDir(log_dir).verifier
    verify_tlog_proof(parse_tlog_proof(proof_of(log_dir, 7)), entry(7, tag=1), [log_key], [w], 1)
    with pytest.raises(LogInvalid, match="cosignatures"):
        verify_tlog_proof(parse_tlog_proof(proof_of(fork_b, 7)), entry(7, tag=2), [log_key], [w], 1)

    peer = build_go_peer(tmp_path / "gopeer")
    for name, fork, e, ok in (("a", log_dir, entry(7, tag=1), True), ("b", fork_b, entry(7, tag=2), False)):
        (tmp_path / f"{name}.proof").write_bytes(proof_of(fork, 7))
        (tmp_path / f"{name}.entry").write_bytes(e)
        result = run_peer(peer, "proof", str(tmp_path / f"{name}.proof"), str(tmp_path / f"{name}.entry"),
                          log_key.vkey, w.vkey)
        assert (result.returncode == 0) == ok, result.stdout + result.stderr
        assert ("ok cosignature" in result.stdout) == ok


def test_a_witness_ahead_of_a_rolled_back_log_is_reported(tmp_path: Path, log_dir: Path) -> None:
    before = tmp_path / "before"
    shutil.copytree(log_dir, before)
    LogDir(log_dir).append([entry(i) for i in range(5, 10)])
    key, w = witness_key(tmp_path, "w4")
    with serve_witness(key, "w4", tmp_path / "s4", log_dir) as server:
        assert gather(log_dir, "--witness", server.url).returncode == 0
        shutil.rmtree(log_dir)
        shutil.copytree(before, log_dir)  # the operator rolls the log back to size 5
        result = gather(log_dir, "--witness", server.url, "--witness-key", w.vkey)
    assert result.returncode == 1 and "holds size 10, larger than this checkpoint's 5" in result.stderr
    assert cosigners(log_dir, w) == []


def _emulated_witness(answer: bytes) -> type[BoundedHandler]:
    class Hostile(BoundedHandler):
        methods = ("POST",)

        def post(self, path: str) -> None:
            self.read_body(1 << 20)
            self.reply(200, answer, "text/plain; charset=utf-8")

    return Hostile


def test_a_forged_cosignature_by_a_trusted_key_is_never_written(tmp_path: Path, log_dir: Path) -> None:
    """A hostile witness answers with a line in a trusted witness's name and key ID but a bad signature:
    written onto the checkpoint it would make the whole note invalid for verifiers trusting that key."""
    _, w = witness_key(tmp_path, "w5")
    forged = Signature(w.name, w.key_id, bytes(72)).line().encode()
    before = (log_dir / "checkpoint").read_bytes()
    for answer in (forged, b"not a signature line\n", b"\n\n", b""):
        with running(BoundedServer(("127.0.0.1", 0), _emulated_witness(answer))) as server:
            result = gather(log_dir, "--witness", server.url, "--witness-key", w.vkey)
        assert result.returncode == 1, answer
        assert (log_dir / "checkpoint").read_bytes() == before


def test_cosignatures_for_a_checkpoint_the_log_moved_past_are_not_written(tmp_path: Path, log_dir: Path) -> None:
    """The log appends while the witness answers: that round's cosignature is for an old checkpoint and is
    dropped; the next round cosigns the new one."""
    signer = CosignatureSigner("witness.test/w6", load_private_key(str(KEY)))
    real = Witness(signer, {ORIGIN: [LogDir(log_dir).verifier]}, WitnessState(tmp_path / "s6"))
    calls: list[int] = []

    class Racing(BoundedHandler):
        methods = ("POST",)

        def post(self, path: str) -> None:
            body = self.read_body(1 << 20)
            answer = real.add_checkpoint(body)
            calls.append(answer.status)
            if len(calls) == 1:
                LogDir(log_dir).append([entry(99)])  # the log moves on under the gathering
            self.reply(answer.status, answer.body, answer.content_type)

    with running(BoundedServer(("127.0.0.1", 0), Racing)) as server:
        result = gather(log_dir, "--witness", server.url, "--witness-key", signer.verifier().vkey)
    assert result.returncode == 0, result.stderr
    assert calls[0] == 200 and calls[-1] == 200 and len(calls) >= 2
    cp, _ = LogDir(log_dir).checkpoint()
    assert cp.size == 6 and cosigners(log_dir, signer.verifier()) == [signer.name]


def test_usage_errors_are_one_line(tmp_path: Path, log_dir: Path) -> None:
    for args in (["--witness", "ftp://x"], ["--witness", "http://127.0.0.1:9", "--witness-key", "nonsense"],
                 ["--witness", "http://127.0.0.1:9", "--timeout", "0"]):
        result = gather(log_dir, *args)
        assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    result = gather(tmp_path / "nowhere", "--witness", "http://127.0.0.1:9")
    assert result.returncode == 2 and "Traceback" not in result.stderr


@pytest.mark.parametrize("seconds", ["nan", "inf", "1e300", "0"])
@pytest.mark.parametrize("command", [
    ["log", "witness", "{log}", "--witness", "http://127.0.0.1:9", "--timeout"],
    ["log", "serve", "{log}", "--listen", "127.0.0.1:0", "--stop-after"],
    ["log", "serve", "{log}", "--listen", "127.0.0.1:0", "--stop-after", "1", "--timeout"],
    ["witness", "serve", "--key", str(KEY), "--name", "witness.test/w", "--log", "{vkey}", "--state", "{state}",
     "--listen", "127.0.0.1:0", "--stop-after"],
])
def test_a_wait_that_is_not_a_finite_positive_number_of_seconds_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: list[str], seconds: str
) -> None:
    """Trial: `--timeout nan` or `1e309` made `aer1 log witness` say "internal error: ValueError /
    OverflowError", `--stop-after 1e300` made `aer1 log serve` and `aer1 witness serve` print a thread's
    traceback and serve on, and `--stop-after nan` made `aer1 witness serve` stop at once with exit 0."""
    from aer1._cli import main

    log = tmp_path / "log"
    init_log(log, ORIGIN, str(KEY))
    args = [a.format(log=log, vkey=log / "log.vkey", state=tmp_path / "state") for a in command] + [seconds]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "want a positive number of seconds" in err and "internal error" not in err, err
