"""Checkpoints, tiles, entry bundles and tlog-proofs: round trips, the specification's examples, tampering."""

from __future__ import annotations

import base64
import time
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aer1._tlog import (
    EMPTY_ROOT,
    TILE_BYTES,
    Checkpoint,
    CosignatureSigner,
    Ed25519Signer,
    LogInvalid,
    LogMalformed,
    Signature,
    TileHashReader,
    TlogProof,
    check_bundle,
    consistency_proof,
    decode_bundle,
    dir_bundle_reader,
    dir_tile_reader,
    encode_bundle,
    encode_index,
    entries_path,
    format_tlog_proof,
    grow_tiles,
    inclusion_proof,
    leaf_hash,
    open_checkpoint,
    parse_checkpoint,
    parse_tile_path,
    parse_tlog_proof,
    root_of,
    sign_note,
    tile_path,
    tiles_for_size,
    verify_consistency,
    verify_inclusion,
    verify_tlog_proof,
)

LOG = Ed25519Signer("log.example/a", Ed25519PrivateKey.from_private_bytes(b"\x01" * 32))
W1 = CosignatureSigner("w1.example", Ed25519PrivateKey.from_private_bytes(b"\x02" * 32))
W2 = CosignatureSigner("w2.example", Ed25519PrivateKey.from_private_bytes(b"\x03" * 32))


def test_the_specification_checkpoint_body_parses_and_formats_back() -> None:
    text = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
    cp = parse_checkpoint(text)
    assert (cp.origin, cp.size, cp.extensions) == ("example.com/behind-the-sofa", 20852163, ())
    assert cp.text() == text
    empty64 = base64.b64encode(EMPTY_ROOT).decode()
    assert Checkpoint("o", 0, EMPTY_ROOT, ("ext one",)).text() == f"o\n0\n{empty64}\next one\n"


@pytest.mark.parametrize("text, why", [
    ("o\n01\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n", "leading zeros"),
    ("o\n-1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n", "leading zeros"),
    ("o\n9223372036854775808\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n", "at most"),
    ("o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2=\n", "base64"),
    ("o\n1\nAAAA\n", "want 32"),
    ("o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=", "newline"),
    ("o\n1\n", "3 lines|got 2 lines"),
    ("\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n", "origin"),
    ("o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n", "empty line"),
])
def test_malformed_checkpoints(text: str, why: str) -> None:
    with pytest.raises(LogMalformed, match=why):
        parse_checkpoint(text)


def _signed(size: int, root: bytes, *witnesses: CosignatureSigner, origin: str = "log.example/a") -> bytes:
    return sign_note(Checkpoint(origin, size, root).text(), [LOG, *witnesses])


def test_a_signed_checkpoint_with_cosignatures_opens() -> None:
    cp, _, logs, cos = open_checkpoint(_signed(5, EMPTY_ROOT, W1, W2), [LOG.verifier()], [W1.verifier(), W2.verifier()],
                                       origin="log.example/a")
    assert cp.size == 5 and len(logs) == 1 and [v.name for v, _ in cos] == ["w1.example", "w2.example"]
    with pytest.raises(LogInvalid, match="origin"):
        open_checkpoint(_signed(5, EMPTY_ROOT), [LOG.verifier()], origin="log.example/b")
    with pytest.raises(LogInvalid, match="trusted key"):  # a witness is not the log
        open_checkpoint(sign_note(Checkpoint("log.example/a", 5, EMPTY_ROOT).text(), [W1]), [LOG.verifier()])


def test_tile_paths() -> None:
    assert encode_index(1234067) == "x001/x234/067"
    assert encode_index(5) == "005" and encode_index(1000) == "x001/000"
    assert tile_path(0, 1234067, 112) == "tile/0/x001/x234/067.p/112"
    assert entries_path(7) == "tile/entries/007"
    assert parse_tile_path("tile/2/x001/000.p/3") == (2, 1000, 3)
    assert parse_tile_path("tile/entries/000") == (None, 0, 256)
    for bad in ("tile/0/x000/005", "tile/00/005", "tile/0/5", "tile/0/005.p/0", "tile/0/005.p/256", "tile/64/000",
                "tile/0/005.p/012", "../tile/0/000", "tile/0/000/"):
        with pytest.raises(LogMalformed):
            parse_tile_path(bad)


def test_the_specification_tile_count_for_70000_leaves() -> None:
    tiles = tiles_for_size(70_000)
    assert sum(1 for lv, _, w in tiles if lv == 0 and w == 256) == 273
    assert [(lv, w) for lv, _, w in tiles if w < 256] == [(0, 112), (1, 17), (2, 1)]
    assert sum(1 for lv, _, w in tiles if lv == 1 and w == 256) == 1
    assert [(lv, w) for lv, _, w in tiles_for_size(256)] == [(0, 256), (1, 1)]


def test_bundles_round_trip_and_refuse_cut_input() -> None:
    entries = [b"", b"a", b"x" * 65535]
    data = encode_bundle(entries)
    assert data[:2] == b"\x00\x00" and decode_bundle(data, 3) == entries
    with pytest.raises(LogMalformed, match="cut off"):
        decode_bundle(data[:-1])
    with pytest.raises(LogMalformed, match="want 2"):
        decode_bundle(data, 2)
    with pytest.raises(LogMalformed, match="at most 65535"):
        encode_bundle([b"x" * 65536])


def _write(root: Path, leaves: list[bytes], chunks: list[int]) -> None:
    size, edge = 0, {}
    for chunk in chunks:
        written, edge = grow_tiles(size, edge, [leaf_hash(e) for e in leaves[size:size + chunk]])
        for level, index, width, data in written:
            p = root / tile_path(level, index, width)
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        for t in range(size // 256, (size + chunk + 255) // 256):
            part = leaves[t * 256:min((t + 1) * 256, size + chunk)]
            p = root / entries_path(t, len(part))
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(encode_bundle(part))
        size += chunk


def test_tiles_grown_in_batches_give_the_tree_and_its_proofs(tmp_path: Path) -> None:
    leaves = [i.to_bytes(3, "big") for i in range(70_000)]
    hashes = [leaf_hash(e) for e in leaves]
    _write(tmp_path, leaves, [1, 300, 65_235, 4_464])
    reader = TileHashReader(70_000, root_of(hashes), dir_tile_reader(tmp_path))
    root = root_of(hashes)
    for i in (0, 255, 256, 65_535, 65_536, 69_999):
        verify_inclusion(hashes[i], i, 70_000, inclusion_proof(i, 70_000, reader.hash_at), root)
    old = TileHashReader(301, root_of(hashes[:301]), dir_tile_reader(tmp_path))  # its partial tile is still there
    verify_consistency(301, 70_000, root_of(hashes[:301]), root, consistency_proof(301, 70_000, reader.hash_at))
    assert old.leaf_hashes(1)[:45] == hashes[256:301]
    assert check_bundle(dir_bundle_reader(tmp_path)(273, 112), reader.leaf_hashes(273)) == leaves[273 * 256:]
    assert check_bundle(dir_bundle_reader(tmp_path)(1, 45), old.leaf_hashes(1)) == leaves[256:301]


def test_tampered_tiles_and_bundles_are_caught(tmp_path: Path) -> None:
    leaves = [i.to_bytes(3, "big") for i in range(600)]
    hashes = [leaf_hash(e) for e in leaves]
    _write(tmp_path, leaves, [600])
    root = root_of(hashes)
    full = tmp_path / tile_path(0, 1)
    good = full.read_bytes()
    full.write_bytes(good[:100] + bytes([good[100] ^ 1]) + good[101:])
    reader = TileHashReader(600, root, dir_tile_reader(tmp_path))  # the edge tiles are fine
    with pytest.raises(LogInvalid, match="from the tile above"):
        reader.hash_at(0, 300)
    full.write_bytes(good[:-1])
    with pytest.raises(LogMalformed, match=f"want {TILE_BYTES}"):
        TileHashReader(600, root, dir_tile_reader(tmp_path)).tile(0, 1)
    full.write_bytes(good)
    edge = tmp_path / tile_path(0, 2, 88)
    edge.write_bytes(edge.read_bytes()[::-1])
    with pytest.raises(LogInvalid, match="got root"):
        TileHashReader(600, root, dir_tile_reader(tmp_path))
    bundle = dir_bundle_reader(tmp_path)(0, 256)
    reader = TileHashReader(512, root_of(hashes[:512]), dir_tile_reader(tmp_path))
    with pytest.raises(LogInvalid, match="leaf hash"):
        check_bundle(bundle.replace(b"\x00\x03\x00\x00\x07", b"\x00\x03\x00\x00\x08"), reader.leaf_hashes(0))


def _proof_for(n: int, index: int, *witnesses: CosignatureSigner) -> tuple[bytes, bytes]:
    leaves = [f"entry {i}".encode() for i in range(n)]
    hashes = [leaf_hash(e) for e in leaves]
    from aer1._tlog import levels_source, tree_levels
    path = inclusion_proof(index, n, levels_source(tree_levels(hashes)))
    proof = TlogProof(index, tuple(path), _signed(n, root_of(hashes), *witnesses))
    return format_tlog_proof(proof), leaves[index]


def test_a_tlog_proof_verifies_offline_with_a_witness_quorum() -> None:
    data, entry = _proof_for(1000, 617, W1, W2)
    assert data.startswith(b"c2sp.org/tlog-proof@v1\nindex 617\n")
    proof = parse_tlog_proof(data)
    got = verify_tlog_proof(proof, entry, [LOG.verifier()], [W1.verifier(), W2.verifier()], min_witnesses=2)
    assert got.index == 617 and got.checkpoint.size == 1000
    assert [n for n, _ in got.cosigners] == ["w1.example", "w2.example"]
    with pytest.raises(LogInvalid, match="want at least 3"):
        verify_tlog_proof(proof, entry, [LOG.verifier()], [W1.verifier(), W2.verifier()], min_witnesses=3)
    with pytest.raises(LogInvalid, match="got root"):
        verify_tlog_proof(proof, b"entry 618", [LOG.verifier()])
    one, e0 = _proof_for(1, 0)
    assert verify_tlog_proof(parse_tlog_proof(one), e0, [LOG.verifier()]).index == 0


def test_tampered_proofs() -> None:
    data, entry = _proof_for(100, 42, W1)
    lines = data.split(b"\n")
    swapped = b"\n".join([lines[0], b"index 43", *lines[2:]])
    with pytest.raises(LogInvalid):
        verify_tlog_proof(parse_tlog_proof(swapped), entry, [LOG.verifier()])
    short = b"\n".join([lines[0], lines[1], *lines[3:]])
    with pytest.raises(LogInvalid):
        verify_tlog_proof(parse_tlog_proof(short), entry, [LOG.verifier()])
    resized = data.replace(b"\n100\n", b"\n101\n")
    with pytest.raises(LogInvalid, match="does not verify"):
        verify_tlog_proof(parse_tlog_proof(resized), entry, [LOG.verifier()])
    for bad, why in ((data.replace(b"c2sp.org/tlog-proof@v1", b"c2sp.org/tlog-proof@v2"), "first line"),
                     (data.replace(b"index 42", b"index 042"), "leading zeros"),
                     (data.replace(b"\n\n", b"\n"), "empty line"),
                     (b"\n".join([lines[0], lines[1], b"AAAA", *lines[2:]]), "want 32")):
        with pytest.raises(LogMalformed, match=why):
            parse_tlog_proof(bad)


class _AheadWitness(CosignatureSigner):
    """A witness whose clock runs ``ahead`` seconds fast."""

    def __init__(self, ahead: int) -> None:
        super().__init__("w1.example", Ed25519PrivateKey.from_private_bytes(b"\x02" * 32))
        self.ahead = ahead

    def sign(self, text: bytes) -> Signature:
        return self.sign_at(text, int(time.time()) + self.ahead)


def test_a_cosignature_dated_in_the_future_is_refused() -> None:
    """A trusted witness's cosignature dated a day ahead cannot have been made yet: the checkpoint fails."""
    with pytest.raises(LogInvalid, match=r"cosignature by w1\.example: got timestamp \d+, want at most"):
        open_checkpoint(_signed(5, EMPTY_ROOT, _AheadWitness(86_400)), [LOG.verifier()], [W1.verifier()])
    # A clock a little fast is drift, not forgery; an untrusted witness's time is not read at all.
    _, _, _, cos = open_checkpoint(_signed(5, EMPTY_ROOT, _AheadWitness(60)), [LOG.verifier()], [W1.verifier()])
    assert [v.name for v, _ in cos] == ["w1.example"]
    _, _, _, cos = open_checkpoint(_signed(5, EMPTY_ROOT, _AheadWitness(86_400)), [LOG.verifier()], [W2.verifier()])
    assert cos == []
