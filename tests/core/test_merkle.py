"""Section 8.1 Merkle roots (shared known-answer vectors) and inclusion proofs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aer1._merkle import (
    CHUNK_LEAVES,
    RootMismatchError,
    inclusion_proof,
    leaf_seq_output,
    merkle_root,
    merkle_root_hex,
    root_from_inclusion_proof,
    verify_inclusion,
)

VECTORS = json.loads((Path(__file__).parent.parent / "vectors" / "merkle-section-8-1.json").read_text())


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["name"])
def test_shared_merkle_vectors(vector: dict) -> None:
    if vector["merkle_version"] == "receipt-id-v0":
        root = merkle_root_hex([VECTORS["ids"][k] for k in vector["receipt_ids"]])
    else:
        root = merkle_root([leaf_seq_output(i + 1, h) for i, h in enumerate(vector["output_hashes"])]).hex()
    assert root == vector["root"]


def _leaves(n: int) -> list[bytes]:
    return [hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(n)]


@given(st.integers(1, 70), st.data())
def test_every_inclusion_proof_verifies(n: int, data: st.DataObject) -> None:
    leaves = _leaves(n)
    root = merkle_root(leaves)
    i = data.draw(st.integers(0, n - 1))
    path = inclusion_proof(leaves, i)
    assert root_from_inclusion_proof(leaves[i], i, n, path) == root
    verify_inclusion(leaves[i], i, n, path, root)


def test_wrong_leaf_index_or_path_is_caught() -> None:
    leaves = _leaves(7)
    root = merkle_root(leaves)
    path = inclusion_proof(leaves, 3)
    with pytest.raises(RootMismatchError) as info:
        verify_inclusion(leaves[4], 3, 7, path, root)
    assert info.value.expected == root and info.value.computed != root
    with pytest.raises(RootMismatchError):
        verify_inclusion(leaves[3], 2, 7, path, root)
    with pytest.raises(ValueError, match="audit path length"):
        root_from_inclusion_proof(leaves[3], 3, 7, [*path, path[0]])
    with pytest.raises(ValueError, match="too short"):
        root_from_inclusion_proof(leaves[3], 3, 7, path[:-1])


def test_preconditions_are_checked_before_hashing() -> None:
    leaves = _leaves(3)
    with pytest.raises(IndexError, match="out of range for tree size 3"):
        inclusion_proof(leaves, 3)
    with pytest.raises(ValueError, match="out of range"):
        root_from_inclusion_proof(leaves[0], 5, 3, [])
    with pytest.raises(ValueError, match="positive"):
        root_from_inclusion_proof(leaves[0], 0, 0, [])
    with pytest.raises(ValueError, match="got 3 bytes, want 32"):
        merkle_root([b"abc"])


def test_duplicate_last_rule_collides_without_the_duplicate_check() -> None:
    """Why verifiers must reject repeated receipt ids: A..E and A..E,E share a root."""
    ids = [VECTORS["ids"][k] for k in "ABCDE"]
    assert merkle_root_hex(ids) == merkle_root_hex([*ids, ids[-1]])


def _root_by_levels(ids: list[str]) -> str:
    """The root the plain way: every leaf in one list, reduced level by level."""
    return merkle_root([hashlib.sha256(r.encode()).digest() for r in ids]).hex()


@pytest.mark.parametrize("chunk", [1, 2, 4, 8])
def test_root_in_chunks_equals_the_root_by_levels_for_every_size(chunk: int) -> None:
    for n in range(0, 140):
        ids = [f"id-{i}" for i in range(n)]
        got = merkle_root_hex(iter(ids), chunk=chunk)  # read once, as a generator gives them
        assert got == _root_by_levels(ids), f"{n} ids in chunks of {chunk}: got {got}"


@pytest.mark.parametrize("n", [CHUNK_LEAVES - 1, CHUNK_LEAVES, CHUNK_LEAVES + 1, 2 * CHUNK_LEAVES,
                               3 * CHUNK_LEAVES + 7, 5 * CHUNK_LEAVES])
def test_root_in_chunks_at_the_default_chunk_boundaries(n: int) -> None:
    ids = [f"{i:032x}" for i in range(n)]
    assert merkle_root_hex(ids) == _root_by_levels(ids)


@pytest.mark.parametrize("chunk", [0, -4, 3, 6, 1000])
def test_chunk_that_is_not_a_power_of_two_is_refused(chunk: int) -> None:
    with pytest.raises(ValueError, match="power of two"):
        merkle_root_hex(["a"], chunk=chunk)
