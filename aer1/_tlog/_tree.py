"""The RFC 6962 / RFC 9162 Merkle tree of a transparency log (pure functions over hashes).

Not the AER-1 receipt root of ``aer1._merkle`` (Section 8.1 pairs an odd last node with
itself and has no domain bytes): here a leaf is SHA-256(0x00 || entry), a node
SHA-256(0x01 || left || right), and a tree of n leaves splits at the largest power of two
below n. The two rules never share code beyond hashlib.

A tree is read through a *hash source* ``hash_at(level, n)``: the hash of the complete
subtree of ``2**level`` leaves ``[n * 2**level, (n + 1) * 2**level)`` (the "stored hashes"
of Go's tlog). Every proof needs only such hashes; :class:`aer1._tlog._tiles.TileHashReader`
serves them from tiles, :func:`tree_levels` from a list of leaf hashes in memory.

API:
    HASH_SIZE, MAX_TREE_SIZE, MAX_PROOF_HASHES, EMPTY_ROOT
    HashAt                                  the hash-source type: (level, n) -> 32 bytes
    leaf_hash(entry) -> bytes               SHA-256(0x00 || entry)
    node_hash(left, right) -> bytes         SHA-256(0x01 || left || right)
    root_of(leaf_hashes) -> bytes           root of a list of leaf hashes (empty: EMPTY_ROOT)
    tree_levels(leaf_hashes) -> levels      levels[h][n] = complete subtree hash; hash_at = levels_source(levels)
    levels_source(levels) -> HashAt
    subtree_hash(lo, hi, hash_at) -> bytes  MTH(D[lo:hi]) for an RFC-aligned range
    root_hash(size, hash_at) -> bytes       root of the first ``size`` leaves
    inclusion_proof(index, size, hash_at) -> list[bytes]        RFC 9162 2.1.3.1
    verify_inclusion(leaf, index, size, proof, root) -> None    RFC 9162 2.1.3.2; raises LogInvalid
    root_from_inclusion(leaf, index, size, proof) -> bytes
    consistency_proof(old, new, hash_at) -> list[bytes]         RFC 9162 2.1.4.1
    verify_consistency(old, new, old_root, new_root, proof) -> None   RFC 9162 2.1.4.2; raises LogInvalid
Malformed arguments (a hash not 32 bytes, a negative size) raise LogMalformed; a proof
that does not prove raises LogInvalid with "got X, want Y".
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from ..errors import LogInvalid, LogMalformed

__all__ = [
    "EMPTY_ROOT",
    "HASH_SIZE",
    "LEAF_PREFIX",
    "MAX_PROOF_HASHES",
    "MAX_TREE_SIZE",
    "NODE_PREFIX",
    "HashAt",
    "consistency_proof",
    "inclusion_proof",
    "leaf_hash",
    "levels_source",
    "node_hash",
    "root_from_inclusion",
    "root_hash",
    "root_of",
    "subtree_hash",
    "tree_levels",
    "verify_consistency",
    "verify_inclusion",
]

HASH_SIZE = 32
#: Largest tree size accepted anywhere (a checkpoint's size is a signed 64-bit integer in every peer).
MAX_TREE_SIZE = 2**63 - 1
#: Most hashes an inclusion or consistency proof of a tree of MAX_TREE_SIZE leaves can need, plus one.
MAX_PROOF_HASHES = 64
#: The root of the empty tree: SHA-256 of no bytes.
EMPTY_ROOT = hashlib.sha256(b"").digest()

#: A hash source: the hash of the complete subtree at (level, n).
HashAt = Callable[[int, int], bytes]

_sha256 = hashlib.sha256


#: RFC 6962's domain separation: the byte before an entry (a leaf) and before two child hashes (a node).
LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"


def leaf_hash(entry: bytes) -> bytes:
    """The RFC 6962 leaf hash of one entry."""
    return _sha256(LEAF_PREFIX + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """The RFC 6962 interior node over two child hashes."""
    return _sha256(NODE_PREFIX + left + right).digest()


def _check_hash(h: bytes, what: str) -> None:
    if not isinstance(h, bytes) or len(h) != HASH_SIZE:
        got = len(h) if isinstance(h, bytes) else type(h).__name__
        raise LogMalformed(f"{what}: got {got} bytes, want {HASH_SIZE}")


def _check_size(size: int, what: str) -> None:
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_TREE_SIZE:
        raise LogMalformed(f"{what}: got {size!r}, want an integer in 0..{MAX_TREE_SIZE}")


def _split(n: int) -> int:
    """The largest power of two strictly below ``n`` (n >= 2)."""
    return 1 << ((n - 1).bit_length() - 1)


def tree_levels(leaf_hashes: Sequence[bytes]) -> list[list[bytes]]:
    """Every complete subtree hash: ``levels[h][n]`` covers leaves ``[n * 2**h, (n + 1) * 2**h)``."""
    for i, h in enumerate(leaf_hashes):
        _check_hash(h, f"leaf hash {i}")
    levels = [list(leaf_hashes)]
    while len(levels[-1]) > 1:
        below = levels[-1]
        levels.append([node_hash(below[j], below[j + 1]) for j in range(0, len(below) - 1, 2)])
    return levels


def levels_source(levels: Sequence[Sequence[bytes]]) -> HashAt:
    """A hash source over :func:`tree_levels`' output."""

    def hash_at(level: int, n: int) -> bytes:
        return levels[level][n]

    return hash_at


def subtree_hash(lo: int, hi: int, hash_at: HashAt) -> bytes:
    """MTH(D[lo:hi]) where ``lo`` is a multiple of the largest power of two below ``hi - lo``.

    (Every range an RFC 9162 proof or root needs is of that form.) The range splits into
    complete subtrees from the left, folded from the right.
    """
    if not 0 <= lo < hi:
        raise LogMalformed(f"subtree [{lo}, {hi}): want 0 <= lo < hi")
    pieces: list[bytes] = []
    while lo < hi:
        width = hi - lo
        level = width.bit_length() - 1  # the largest complete subtree that fits
        if lo & ((1 << level) - 1):
            raise LogMalformed(f"subtree [{lo}, {hi}) is not aligned: {lo} is not a multiple of {1 << level}")
        pieces.append(hash_at(level, lo >> level))
        lo += 1 << level
    node = pieces[-1]
    for left in reversed(pieces[:-1]):
        node = node_hash(left, node)
    return node


def root_hash(size: int, hash_at: HashAt) -> bytes:
    """The root of the first ``size`` leaves (EMPTY_ROOT for none)."""
    _check_size(size, "tree size")
    return EMPTY_ROOT if size == 0 else subtree_hash(0, size, hash_at)


def root_of(leaf_hashes: Sequence[bytes]) -> bytes:
    """The root of a list of leaf hashes, in one pass with one pending node per level."""
    stack: list[tuple[int, bytes]] = []  # (level, hash) of complete subtrees, levels strictly decreasing
    for i, h in enumerate(leaf_hashes):
        _check_hash(h, f"leaf hash {i}")
        node, level = h, 0
        while stack and stack[-1][0] == level:
            node = node_hash(stack.pop()[1], node)
            level += 1
        stack.append((level, node))
    if not stack:
        return EMPTY_ROOT
    node = stack[-1][1]
    for _, left in reversed(stack[:-1]):
        node = node_hash(left, node)
    return node


def inclusion_proof(index: int, size: int, hash_at: HashAt) -> list[bytes]:
    """PATH(index, D[0:size]) of RFC 9162 2.1.3.1, from the leaf's sibling up."""
    _check_size(size, "tree size")
    if not 0 <= index < size:
        raise LogMalformed(f"leaf index: got {index}, want 0..{size - 1}")
    path: list[bytes] = []
    lo, hi, m = 0, size, index
    while hi - lo > 1:
        k = _split(hi - lo)
        if m < k:
            path.append(subtree_hash(lo + k, hi, hash_at))
            hi = lo + k
        else:
            path.append(subtree_hash(lo, lo + k, hash_at))
            lo, m = lo + k, m - k
    path.reverse()
    return path


def root_from_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes:
    """The root that ``proof`` leads to from ``leaf`` at ``index`` (RFC 9162 2.1.3.2)."""
    _check_hash(leaf, "leaf hash")
    _check_size(size, "tree size")
    for i, h in enumerate(proof):
        _check_hash(h, f"proof hash {i}")
    if not 0 <= index < size:
        raise LogInvalid(f"leaf index: got {index}, want below the tree size {size}")
    lefts, rest = _left_siblings(index, size - 1, len(proof))
    if len(lefts) < len(proof):
        raise LogInvalid(f"inclusion proof: got {len(proof)} hashes, more than the {_path_len(index, size)} wanted")
    if rest != 0:
        raise LogInvalid(f"inclusion proof: got {len(proof)} hashes, want {_path_len(index, size)}")
    r = leaf
    for p, left in zip(proof, lefts, strict=True):
        r = node_hash(p, r) if left else node_hash(r, p)
    return r


def _left_siblings(fn: int, sn: int, count: int) -> tuple[list[bool], int]:
    """Whether each of ``count`` proof hashes, on the walk up from node ``fn`` of a tree whose last
    node is ``sn``, is a left sibling (RFC 9162 2.1.3.2 and 2.1.4.2); and ``sn`` at the end.

    The walk stops at the root: fewer answers than ``count`` mean too many hashes, an ``sn``
    other than 0 too few.
    """
    lefts: list[bool] = []
    for _ in range(count):
        if sn == 0:
            break
        left = bool(fn & 1) or fn == sn
        if left:
            while not fn & 1 and fn:
                fn >>= 1
                sn >>= 1
        lefts.append(left)
        fn >>= 1
        sn >>= 1
    return lefts, sn


def _path_len(index: int, size: int) -> int:
    """The length of PATH(index, D[0:size])."""
    n, lo, hi = 0, 0, size
    while hi - lo > 1:
        k = _split(hi - lo)
        if index - lo < k:
            hi = lo + k
        else:
            lo += k
        n += 1
    return n


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes) -> None:
    """Raise LogInvalid unless ``proof`` shows ``leaf`` at ``index`` in the tree of ``size`` with ``root``."""
    _check_hash(root, "root hash")
    got = root_from_inclusion(leaf, index, size, proof)
    if got != root:
        raise LogInvalid(f"inclusion proof of leaf {index} in tree {size}: got root {got.hex()}, want {root.hex()}")


def consistency_proof(old: int, new: int, hash_at: HashAt) -> list[bytes]:
    """PROOF(old, D[0:new]) of RFC 9162 2.1.4.1 (empty when ``old`` is 0 or equals ``new``)."""
    _check_size(old, "old tree size")
    _check_size(new, "new tree size")
    if old > new:
        raise LogMalformed(f"consistency proof: old size {old} is larger than new size {new}")
    if old == 0 or old == new:
        return []
    path: list[bytes] = []
    lo, hi, m, complete = 0, new, old, True
    while m != hi - lo:
        k = _split(hi - lo)
        if m <= k:
            path.append(subtree_hash(lo + k, hi, hash_at))
            hi = lo + k
        else:
            path.append(subtree_hash(lo, lo + k, hash_at))
            lo, m, complete = lo + k, m - k, False
    if not complete:
        path.append(subtree_hash(lo, hi, hash_at))
    path.reverse()
    return path


def verify_consistency(old: int, new: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]) -> None:
    """Raise LogInvalid unless ``proof`` shows the tree (new, new_root) extends (old, old_root).

    RFC 9162 2.1.4.2; a tree extends itself (empty proof, equal roots) and every tree extends
    the empty one (empty proof).
    """
    _check_size(old, "old tree size")
    _check_size(new, "new tree size")
    _check_hash(old_root, "old root hash")
    _check_hash(new_root, "new root hash")
    for i, h in enumerate(proof):
        _check_hash(h, f"proof hash {i}")
    if old > new:
        raise LogInvalid(f"tree size: got {new}, want at least the earlier {old} (the log shrank)")
    if old == 0 or old == new:
        if proof:
            raise LogInvalid(f"consistency proof {old} -> {new}: got {len(proof)} hashes, want 0")
        if old == new and old_root != new_root:
            raise LogInvalid(f"root of tree {new}: got {new_root.hex()}, want {old_root.hex()} (a fork)")
        if old == 0 and old_root != EMPTY_ROOT:
            raise LogInvalid(f"root of the empty tree: got {old_root.hex()}, want {EMPTY_ROOT.hex()}")
        return
    if not proof:
        raise LogInvalid(f"consistency proof {old} -> {new}: got no hashes")
    path = list(proof)
    if old & (old - 1) == 0:  # an exact power of two: the old root is the first node
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    lefts, rest = _left_siblings(fn, sn, len(path) - 1)
    if len(lefts) < len(path) - 1:
        raise LogInvalid(f"consistency proof {old} -> {new}: got {len(proof)} hashes, too many")
    if rest != 0:
        raise LogInvalid(f"consistency proof {old} -> {new}: got {len(proof)} hashes, too few")
    fr = sr = path[0]
    for c, left in zip(path[1:], lefts, strict=True):
        if left:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
        else:
            sr = node_hash(sr, c)
    if fr != old_root:
        raise LogInvalid(f"consistency proof {old} -> {new}: old root got {fr.hex()}, want {old_root.hex()}")
    if sr != new_root:
        raise LogInvalid(f"consistency proof {old} -> {new}: new root got {sr.hex()}, want {new_root.hex()}")
