"""The witness's cosignatures checked by an independent verifier: Go's x/mod sumdb note and tlog
(Debian's golang-golang-x-mod-dev) with crypto/ed25519 for the type-0x04 cosignature.

A checkpoint cosigned by a real witness server goes into an offline proof; the Go peer
(tests/tlog/gopeer) opens the note with the log key, checks the inclusion, and verifies
the cosignature's bytes under the witness's vkey as printed by ``aer1 witness vkey``.
A missing Go toolchain fails these tests, never skips them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aer1._httpserve import BoundedServer, running
from aer1._signing import load_private_key
from aer1._tlog import (
    CosignatureSigner,
    Ed25519Signer,
    Signature,
    TlogProof,
    format_tlog_proof,
    inclusion_proof,
    parse_note,
)
from aer1._tlog._tree import leaf_hash, levels_source, tree_levels
from aer1._witness import Witness, format_add_checkpoint
from aer1._witness_server import witness_handler
from aer1._witness_state import WitnessState

from ..tlog.helpers import build_go_peer, run_peer
from .conftest import AER1, ORIGIN, MemoryLog, entries, post

KEY = Path(__file__).parent.parent / "fixtures" / "keys" / "trusted.key"
NAME = "witness.test/go"


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_go_peer(tmp_path_factory.mktemp("gopeer"))


def _proof(tmp_path: Path, log: MemoryLog, note: bytes, index: int) -> tuple[Path, Path]:
    source = levels_source(tree_levels([leaf_hash(e) for e in log.entries]))
    proof = tmp_path / "entry.tlog-proof"
    proof.write_bytes(format_tlog_proof(TlogProof(index, tuple(inclusion_proof(index, len(log.entries), source)),
                                                  note)))
    entry = tmp_path / "entry"
    entry.write_bytes(log.entries[index])
    return proof, entry


def test_go_verifies_the_witness_cosignature(peer: Path, tmp_path: Path, log_signer: Ed25519Signer) -> None:
    vkey = subprocess.run([AER1, "witness", "vkey", "--key", str(KEY), "--name", NAME], capture_output=True,
                          text=True, check=True, timeout=60).stdout.strip()
    signer = CosignatureSigner(NAME, load_private_key(str(KEY)))
    witness = Witness(signer, {ORIGIN: [log_signer.verifier()]}, WitnessState(tmp_path / "state"))
    log = MemoryLog(log_signer).add(*entries("go", 300))
    with running(BoundedServer(("127.0.0.1", 0), witness_handler(witness))) as server:
        assert post(server.url, "/add-checkpoint", format_add_checkpoint(0, [], log.checkpoint(100)))[0] == 200
        status, _, cosig = post(server.url, "/add-checkpoint",
                                format_add_checkpoint(100, log.proof(100, 300), log.checkpoint(300)))
    assert status == 200
    proof, entry = _proof(tmp_path, log, log.checkpoint(300) + cosig, 257)
    result = run_peer(peer, "proof", str(proof), str(entry), log_signer.verifier().vkey, vkey)
    assert result.returncode == 0, result.stderr
    assert f"ok cosignature {NAME} " in result.stdout

    line = parse_note(log.checkpoint(300) + cosig).signatures[-1]
    forged = Signature(line.name, line.key_id, line.sig[:-1] + bytes([line.sig[-1] ^ 1]))  # one bit of Ed25519's
    proof, entry = _proof(tmp_path, log, log.checkpoint(300) + forged.line().encode(), 257)
    result = run_peer(peer, "proof", str(proof), str(entry), log_signer.verifier().vkey, vkey)
    assert result.returncode != 0 and "does not verify" in result.stdout + result.stderr
