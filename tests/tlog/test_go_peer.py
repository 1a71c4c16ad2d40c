"""Our logs, notes and proofs checked by Go's golang.org/x/mod/sumdb (note, tlog) and crypto/ed25519.

The peer (tests/tlog/gopeer/main.go) is built against Debian's golang-golang-x-mod-dev with
GO111MODULE=off; it reads our tiles through an adapter that drops x/mod's tile height from
the path. A missing Go toolchain fails these tests, never skips them.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aer1._tlog import (
    CosignatureSigner,
    Ed25519Signer,
    TlogProof,
    format_tlog_proof,
    inclusion_proof,
    leaf_hash,
    levels_source,
    open_note,
    parse_note,
    root_of,
    sign_note,
    tree_levels,
)

from .helpers import build_go_peer, run_peer, write_checkpoint, write_tiles

LOG = Ed25519Signer("log.example/peer", Ed25519PrivateKey.from_private_bytes(b"\x11" * 32))
WITNESS = CosignatureSigner("witness.example/w", Ed25519PrivateKey.from_private_bytes(b"\x22" * 32))


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_go_peer(tmp_path_factory.mktemp("gopeer"))


def _entries(n: int) -> list[bytes]:
    return [f"entry {i}\n".encode() for i in range(n)]


def test_go_checks_signature_tree_inclusion_and_consistency(peer: Path, tmp_path: Path) -> None:
    entries = _entries(70_000)
    write_tiles(tmp_path, entries, [1, 299, 65_236, 4_464])
    write_checkpoint(tmp_path, "log.example/peer", entries, LOG, WITNESS)
    old_root = base64.b64encode(root_of([leaf_hash(e) for e in entries[:300]])).decode()
    got = run_peer(peer, "log", str(tmp_path), LOG.verifier().vkey, "300", old_root, "0,255,256,65535,65536,69999")
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == ["ok signature tree 70000", "ok inclusion 0,255,256,65535,65536,69999",
                                       "ok consistency 300 70000"]


def test_go_rejects_a_tampered_checkpoint_and_a_forked_history(peer: Path, tmp_path: Path) -> None:
    entries = _entries(1000)
    write_tiles(tmp_path, entries, [1000])
    note = write_checkpoint(tmp_path, "log.example/peer", entries, LOG)
    (tmp_path / "checkpoint").write_bytes(note.replace(b"\n1000\n", b"\n999\n"))
    got = run_peer(peer, "log", str(tmp_path), LOG.verifier().vkey, "0", "", "")
    assert got.returncode == 1 and "note.Open" in got.stderr
    (tmp_path / "checkpoint").write_bytes(note)
    other = base64.b64encode(root_of([leaf_hash(e) for e in [*_entries(500)[:-1], b"forked\n"]])).decode()
    got = run_peer(peer, "log", str(tmp_path), LOG.verifier().vkey, "500", other, "")
    assert got.returncode == 1 and "CheckTree" in got.stderr


def test_go_rejects_tampered_tiles(peer: Path, tmp_path: Path) -> None:
    entries = _entries(600)
    write_tiles(tmp_path, entries, [600])
    write_checkpoint(tmp_path, "log.example/peer", entries, LOG)
    tile = tmp_path / "tile/0/001"
    data = bytearray(tile.read_bytes())
    data[5] ^= 1
    tile.write_bytes(bytes(data))
    got = run_peer(peer, "log", str(tmp_path), LOG.verifier().vkey, "0", "", "300")
    assert got.returncode == 1, got.stdout


def test_go_checks_a_cosigned_tlog_proof(peer: Path, tmp_path: Path) -> None:
    entries = _entries(777)
    hashes = [leaf_hash(e) for e in entries]
    from aer1._tlog import Checkpoint
    note = sign_note(Checkpoint("log.example/peer", 777, root_of(hashes)).text(), [LOG, WITNESS])
    proof = TlogProof(500, tuple(inclusion_proof(500, 777, levels_source(tree_levels(hashes)))), note)
    (tmp_path / "r.tlog-proof").write_bytes(format_tlog_proof(proof))
    (tmp_path / "entry").write_bytes(entries[500])
    got = run_peer(peer, "proof", str(tmp_path / "r.tlog-proof"), str(tmp_path / "entry"), LOG.verifier().vkey,
                   WITNESS.verifier().vkey)
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0] == "ok proof 500 777" and got.stdout.splitlines()[1].startswith("ok cosignature")
    (tmp_path / "entry").write_bytes(entries[501])
    assert run_peer(peer, "proof", str(tmp_path / "r.tlog-proof"), str(tmp_path / "entry"),
                    LOG.verifier().vkey).returncode == 1


def test_a_note_signed_by_go_opens_here(peer: Path, tmp_path: Path) -> None:
    (tmp_path / "text").write_bytes(b"log.example/peer\n3\n" + base64.b64encode(b"\x00" * 32) + b"\n")
    got = run_peer(peer, "sign", str(tmp_path / "text"), LOG.signer_key)
    assert got.returncode == 0, got.stderr
    note, good = open_note(got.stdout, [LOG.verifier()])
    assert len(good) == 1 and note == parse_note(sign_note(note.text, [LOG]))
