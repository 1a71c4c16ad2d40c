"""Our logs read by PyPI's tlog-scales 0.0.3 (installed by ``make`` with --no-deps into tests/.peers).

tlog-scales reads C2SP tiles and checkpoints through its own tile paths, computes the tree
and its proofs from our tiles, and verifies Ed25519 notes and cosignatures. A missing peer
fails these tests, never skips them.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aer1._logdir import LogDir
from aer1._tlog import (
    CosignatureSigner,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    parse_note,
    parse_tlog_proof,
    sign_note,
    verify_consistency,
    verify_inclusion,
)
from aer1._tlog._entry import entry_for_receipt

from .helpers import make_log
from .test_log_faults import entry

PEERS = Path(__file__).parents[1] / ".peers"
WITNESS = CosignatureSigner("witness.example/scales", Ed25519PrivateKey.from_private_bytes(b"\x07" * 32))


@pytest.fixture(scope="module")
def scales() -> dict[str, ModuleType]:
    if not (PEERS / "tlog_scales").is_dir():
        raise AssertionError(f"tlog-scales is not installed in {PEERS} (run make tests/.peers/.installed)")
    import importlib
    import sys

    sys.path.insert(0, str(PEERS))
    try:
        names = ("backend", "reader", "signing", "tlog")
        return {name: importlib.import_module(f"tlog_scales.{name}") for name in names}
    finally:
        sys.path.remove(str(PEERS))


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Path], int, bytes]:
    log, vkey, _, paths = make_log(tmp_path_factory.mktemp("scales"), 3)
    d = LogDir(log)
    old = d.checkpoint()[0]
    d.append([entry("scales", 0, k) for k in range(66_000)])  # a level-2 partial tile
    cp = log / "checkpoint"
    note = parse_note(cp.read_bytes())
    cp.write_bytes(sign_note(note.text, [WITNESS], existing=note.signatures))
    return log, vkey, paths, old.size, old.root


def _reader(scales: dict[str, ModuleType], log: Path) -> Any:
    r = scales["reader"].TilesReader(scales["backend"].LocalBackend(log))
    return r, r.get_checkpoint()


def test_scales_verifies_the_checkpoint_and_the_cosignature(scales: dict[str, ModuleType], log: Any) -> None:
    path, vkey, _, _, _ = log
    _, cp = _reader(scales, path)
    keys = scales["signing"].VkeySet(scales["signing"].Vkey.from_string(vkey.read_text().strip()),
                                     scales["signing"].Vkey.from_string(WITNESS.verifier().vkey))
    valid = keys.verify(cp.signatures, cp)
    assert sorted(v.name for v, _ in valid) == ["example.com/test-log", "witness.example/scales"]
    bad = scales["signing"].Vkey.from_string(WITNESS.verifier().vkey)
    bad.pubkey = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    assert scales["signing"].VkeySet(bad).verify(cp.signatures, cp) == set()


def test_scales_recomputes_our_root_and_proofs(scales: dict[str, ModuleType], log: Any) -> None:
    path, _, _, old_size, old_root = log
    r, cp = _reader(scales, path)
    ours = LogDir(path)
    mine, _ = ours.checkpoint()
    assert cp.size == mine.size == 66_006 and r.calculate_root_hash() == cp.root_hash == mine.root
    hashes = ours.hash_reader()
    for i in (0, 255, 256, 65_535, 65_536, 66_005):
        theirs = r.get_inclusion_proof(i, cp.size)
        assert theirs.node_hashes == inclusion_proof(i, cp.size, hashes.hash_at)
        theirs.check(leaf_hash(r.get_entry(i)), cp.root_hash)
        verify_inclusion(leaf_hash(r.get_entry(i)), i, cp.size, theirs.node_hashes, cp.root_hash)
    theirs = r.get_consistency_proof(old_size, cp.size)
    assert theirs.node_hashes == consistency_proof(old_size, cp.size, hashes.hash_at)
    theirs.check(old_root, cp.root_hash)
    verify_consistency(old_size, cp.size, old_root, cp.root_hash, theirs.node_hashes)


def test_scales_checks_a_receipt_proof_we_wrote(scales: dict[str, ModuleType], log: Any) -> None:
    _, _, paths, _, _ = log
    proof = parse_tlog_proof(paths[2].with_suffix(".tlog-proof").read_bytes())
    e = entry_for_receipt(json.loads(paths[2].read_text())).encode()
    cp = scales["tlog"].Checkpoint.from_text(proof.checkpoint.decode())
    scales["tlog"].InclusionProof(proof.index, cp.size, list(proof.path)).check(leaf_hash(e), cp.root_hash)
    with pytest.raises(scales["tlog"].InclusionProofInvalid):
        scales["tlog"].InclusionProof(proof.index, cp.size, list(proof.path)).check(leaf_hash(e + b"x"), cp.root_hash)
