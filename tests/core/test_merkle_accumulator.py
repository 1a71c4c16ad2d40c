"""One Merkle accumulator serves every path: its root is the reference root for every size and every split.

The reference here is written apart from the product's: the tree of Section 8.1 built
from the leaves recursively (an odd last node at any level paired with itself). The
accumulator is given the leaves in batches of any size (the in-memory and streamed
paths), or the nodes of runs reduced apart some levels up (the cut and forked paths).
"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aer1._merkle import CHUNK_LEAVES, MerkleAccumulator, merkle_root, merkle_root_hex, reduce_levels

_POWERS = [1 << k for k in range(1, 11)]
#: 0 to 3, and each power of two up to 1024 and one either side of it.
SIZES = sorted({0, 1, 2, 3, *(p + d for p in _POWERS for d in (-1, 0, 1)), 3 * CHUNK_LEAVES + 7})


def _leaves(n: int) -> list[bytes]:
    return [hashlib.sha256(b"leaf %d" % i).digest() for i in range(n)]


def _reference(nodes: list[bytes]) -> bytes:
    """The Section 8.1 root, by halving the tree: the left part is the largest power of two below n."""
    if not nodes:
        return hashlib.sha256(b"").digest()

    def node(lo: int, width: int) -> bytes:
        if width == 1:
            return nodes[lo]
        half = width // 2
        left = node(lo, half)
        # the right half exists as far as leaves do; a subtree with no leaf is its left sibling (the duplicate)
        right = node(lo + half, half) if lo + half < len(nodes) else left
        return hashlib.sha256(left + right).digest()

    width = 1
    while width < len(nodes):
        width *= 2
    return node(0, width)


@pytest.mark.parametrize("n", SIZES)
def test_the_accumulator_in_one_batch_is_the_reference(n: int) -> None:
    leaves = _leaves(n)
    acc = MerkleAccumulator()
    acc.add(leaves)
    assert acc.size == n
    assert acc.root() == _reference(leaves) == merkle_root(leaves)
    assert acc.root() == _reference(leaves)  # reading the root leaves the accumulator as it was


@pytest.mark.parametrize("chunk", [1, 2, 4, 16, CHUNK_LEAVES])
def test_the_accumulator_in_batches_of_every_size_is_the_reference(chunk: int) -> None:
    for n in SIZES:
        leaves = _leaves(n)
        for batch in (1, 3, chunk, chunk + 1, 100):
            acc = MerkleAccumulator(chunk)
            for lo in range(0, n, batch):
                acc.add(leaves[lo:lo + batch])
            assert acc.root() == _reference(leaves), f"n={n} chunk={chunk} batch={batch}"


@settings(max_examples=200)
@given(st.integers(0, 600), st.lists(st.integers(1, 80), min_size=1, max_size=8), st.sampled_from([1, 2, 8, 64]))
def test_the_accumulator_takes_any_split(n: int, cuts: list[int], chunk: int) -> None:
    """Streamed: the batches are whatever sizes the reader gives, the last one short."""
    leaves = _leaves(n)
    acc = MerkleAccumulator(chunk)
    lo, k = 0, 0
    while lo < n:
        acc.add(leaves[lo:lo + cuts[k % len(cuts)]])
        lo += cuts[k % len(cuts)]
        k += 1
    assert acc.root() == _reference(leaves)


@pytest.mark.parametrize("levels", [1, 2, 3, 5])
def test_runs_reduced_apart_then_accumulated_are_the_reference(levels: int) -> None:
    """Cut and forked: runs of 2**levels leaves (the last one short) reduced apart, their nodes accumulated."""
    run = 1 << levels
    for n in (s for s in SIZES if s > run):  # runs are only made for a tree of more leaves than one run
        leaves = _leaves(n)
        acc = MerkleAccumulator()
        for lo in range(0, n, run):
            acc.add(reduce_levels(leaves[lo:lo + run], levels))
        assert acc.root() == _reference(leaves), f"n={n} levels={levels}"


@pytest.mark.parametrize("n", SIZES)
def test_the_root_over_ids_is_the_reference(n: int) -> None:
    ids = [f"{i:08x}-0000-8000-8000-000000000000" for i in range(n)]
    want = _reference([hashlib.sha256(i.encode()).digest() for i in ids]).hex()
    assert merkle_root_hex(iter(ids)) == merkle_root_hex(ids, chunk=2) == want


@pytest.mark.parametrize("chunk", [0, 3, 6])
def test_a_chunk_that_is_not_a_power_of_two_is_refused(chunk: int) -> None:
    with pytest.raises(ValueError, match="power of two"):
        MerkleAccumulator(chunk)
