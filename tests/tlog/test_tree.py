"""The RFC 6962 / 9162 tree: known answers, proofs against every size, and proofs that must fail."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aer1._tlog import (
    EMPTY_ROOT,
    LogInvalid,
    LogMalformed,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    levels_source,
    root_hash,
    root_of,
    tree_levels,
    verify_consistency,
    verify_inclusion,
)

#: The RFC 6962 test leaves (certificate-transparency's reference vectors) and the roots of their prefixes.
LEAVES = [bytes.fromhex(h) for h in ("", "00", "10", "2021", "3031", "40414243", "5051525354555657",
                                     "606162636465666768696a6b6c6d6e6f")]
ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
HASHES = [leaf_hash(e) for e in LEAVES]


def _hashes(n: int) -> list[bytes]:
    return [leaf_hash(i.to_bytes(4, "big")) for i in range(n)]


def test_the_empty_tree_is_the_hash_of_nothing() -> None:
    assert root_of([]) == EMPTY_ROOT
    assert EMPTY_ROOT.hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


@pytest.mark.parametrize("n", range(1, 9))
def test_rfc6962_reference_roots(n: int) -> None:
    assert root_of(HASHES[:n]).hex() == ROOTS[n - 1]
    assert root_hash(n, levels_source(tree_levels(HASHES))).hex() == ROOTS[n - 1]


def test_every_inclusion_and_consistency_proof_up_to_130_leaves() -> None:
    hashes = _hashes(130)
    src = levels_source(tree_levels(hashes))
    roots = [root_of(hashes[:n]) for n in range(131)]
    for n in range(1, 131):
        for i in range(n):
            verify_inclusion(hashes[i], i, n, inclusion_proof(i, n, src), roots[n])
        for m in range(n + 1):
            verify_consistency(m, n, roots[m], roots[n], consistency_proof(m, n, src))


@given(st.integers(1, 3000), st.data())
def test_proofs_of_random_sizes(n: int, data: st.DataObject) -> None:
    hashes = _hashes(n)
    src = levels_source(tree_levels(hashes))
    i = data.draw(st.integers(0, n - 1))
    m = data.draw(st.integers(0, n))
    root = root_of(hashes)
    verify_inclusion(hashes[i], i, n, inclusion_proof(i, n, src), root)
    verify_consistency(m, n, root_of(hashes[:m]), root, consistency_proof(m, n, src))


def test_an_inclusion_proof_for_another_leaf_fails() -> None:
    hashes = _hashes(11)
    src = levels_source(tree_levels(hashes))
    root = root_of(hashes)
    proof = inclusion_proof(3, 11, src)
    with pytest.raises(LogInvalid, match="got root"):
        verify_inclusion(hashes[4], 3, 11, proof, root)
    with pytest.raises(LogInvalid):
        verify_inclusion(hashes[3], 2, 11, proof, root)
    with pytest.raises(LogInvalid, match="hashes, want"):
        verify_inclusion(hashes[3], 3, 11, proof[:-1], root)
    with pytest.raises(LogInvalid, match="more than"):
        verify_inclusion(hashes[3], 3, 11, [*proof, proof[0]], root)
    with pytest.raises(LogInvalid, match="below the tree size"):
        verify_inclusion(hashes[3], 11, 11, proof, root)


def test_every_flipped_bit_in_a_proof_fails() -> None:
    hashes = _hashes(37)
    src = levels_source(tree_levels(hashes))
    root = root_of(hashes)
    proof = consistency_proof(13, 37, src)
    old = root_of(hashes[:13])
    for k in range(len(proof)):
        bad = list(proof)
        bad[k] = bytes([bad[k][0] ^ 1]) + bad[k][1:]
        with pytest.raises(LogInvalid):
            verify_consistency(13, 37, old, root, bad)


def test_a_rolled_back_or_forked_tree_is_not_consistent() -> None:
    hashes = _hashes(20)
    src = levels_source(tree_levels(hashes))
    with pytest.raises(LogInvalid, match="shrank"):
        verify_consistency(20, 19, root_of(hashes), root_of(hashes[:19]), [])
    forked = [*hashes[:10], leaf_hash(b"other"), *hashes[11:]]
    with pytest.raises(LogInvalid, match="new root"):
        verify_consistency(8, 20, root_of(hashes[:8]), root_of(forked), consistency_proof(8, 20, src))
    with pytest.raises(LogInvalid, match="a fork"):
        verify_consistency(20, 20, root_of(hashes), root_of(forked), [])
    with pytest.raises(LogInvalid, match="got no hashes"):
        verify_consistency(8, 20, root_of(hashes[:8]), root_of(hashes), [])


def test_malformed_arguments_are_kept_apart_from_failed_proofs() -> None:
    with pytest.raises(LogMalformed, match="got 31 bytes, want 32"):
        verify_inclusion(b"x" * 31, 0, 1, [], EMPTY_ROOT)
    with pytest.raises(LogMalformed, match="tree size"):
        verify_consistency(-1, 3, EMPTY_ROOT, EMPTY_ROOT, [])
    with pytest.raises(LogMalformed, match="leaf index"):
        inclusion_proof(5, 5, levels_source(tree_levels(_hashes(5))))
    assert not issubclass(LogInvalid, ValueError)
    assert issubclass(LogMalformed, ValueError)
