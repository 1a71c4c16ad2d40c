"""The Merkle root built in chunks or from runs reduced apart equals the plain root, at every boundary.

Sizes around each power of two and each chunk or run boundary, where an odd node is
duplicated: a tampered seam or a lost last node would give another root.
"""

from __future__ import annotations

import pytest

from aer1._merkle import leaf_receipt_id, merkle_root, merkle_root_hex, reduce_levels, root_of_leaves

IDS = [f"{i:08x}-0000-8000-8000-000000000000" for i in range(70)]
SIZES = range(1, 70)


@pytest.mark.parametrize("chunk", [1, 2, 4, 8, 16])
def test_chunked_root_equals_plain_root(chunk: int) -> None:
    for n in SIZES:
        want = merkle_root([leaf_receipt_id(i) for i in IDS[:n]]).hex()
        got = merkle_root_hex(IDS[:n], chunk=chunk)
        assert got == want, f"n={n} chunk={chunk}: got {got}, want {want}"


@pytest.mark.parametrize("levels", [0, 1, 2, 3, 4])
def test_runs_reduced_apart_equal_plain_root(levels: int) -> None:
    run = 1 << levels
    for n in SIZES[run:]:  # runs are only made for a tree of more leaves than one run
        leaves = [leaf_receipt_id(i) for i in IDS[:n]]
        nodes = [node for lo in range(0, n, run) for node in reduce_levels(leaves[lo:lo + run], levels)]
        got, want = root_of_leaves(nodes), merkle_root(leaves)
        assert got == want, f"n={n} levels={levels}: got {got.hex()}, want {want.hex()}"
