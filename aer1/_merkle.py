"""AER-1 Section 8.1 Merkle roots and inclusion proofs (pure functions over hashes).

Leaves: ``receipt-id-v0`` hashes the UTF-8 step ``receipt_id``; ``seq-output-v1``
hashes ``"<seq>:<output hash>"``. A node is SHA-256(left || right) over raw 32-byte
values; an odd last node at any level is paired with itself; no leaves gives
SHA-256 of the empty string.

An inclusion proof is the list of sibling hashes from leaf to root, skipping the
levels where the node is an odd last node (its sibling is itself and is implied by
the index and tree size).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from itertools import islice

from ._receipt import MERKLE_VERSIONS
from .errors import VerificationError

__all__ = [
    "CHUNK_LEAVES",
    "MERKLE_VERSIONS",
    "MerkleAccumulator",
    "RootMismatchError",
    "inclusion_proof",
    "leaf_receipt_id",
    "leaf_seq_output",
    "leaves_of_ids",
    "merkle_root",
    "merkle_root_hex",
    "reduce_levels",
    "root_from_inclusion_proof",
    "root_of_leaves",
    "verify_inclusion",
]

_HASH_LEN = 32
#: Leaves :func:`merkle_root_hex` hashes and reduces at a time (a power of two).
CHUNK_LEAVES = 256
_sha256 = hashlib.sha256
_HASH_DIGEST = type(_sha256()).digest


class RootMismatchError(VerificationError):
    """A recomputed root differs from the expected one."""

    def __init__(self, expected: bytes, computed: bytes) -> None:
        super().__init__(f"root mismatch: got {computed.hex()}, want {expected.hex()}")
        self.expected = expected
        self.computed = computed


def leaf_receipt_id(receipt_id: str) -> bytes:
    """Leaf hash under ``receipt-id-v0``."""
    return _sha256(receipt_id.encode("utf-8")).digest()


def leaves_of_ids(receipt_ids: Iterable[str]) -> list[bytes]:
    """:func:`leaf_receipt_id` of each id, in order: the batch form for many steps at once."""
    return list(map(_HASH_DIGEST, map(_sha256, map(str.encode, receipt_ids))))


def leaf_seq_output(seq: int, output_hash: str) -> bytes:
    """Leaf hash under ``seq-output-v1``."""
    return _sha256(f"{seq}:{output_hash}".encode()).digest()


def _pair(level: list[bytes]) -> list[bytes]:
    """The level above ``level`` (consumed): each pair hashed, an odd last node paired with itself.

    The one place the node rule is written; every root, run and proof here climbs by it.
    """
    if len(level) % 2:
        level.append(level[-1])
    sha = _sha256
    return [sha(left + right).digest() for left, right in zip(level[::2], level[1::2], strict=True)]


def merkle_root(leaves: Sequence[bytes]) -> bytes:
    """Root over leaf hashes, duplicating an odd last node at each level: the reference, level by level."""
    for i, leaf in enumerate(leaves):
        if len(leaf) != _HASH_LEN:
            raise ValueError(f"leaf {i}: got {len(leaf)} bytes, want {_HASH_LEN}")
    if not leaves:
        return _sha256(b"").digest()
    level = list(leaves)
    while len(level) > 1:
        level = _pair(level)
    return level[0]


def root_of_leaves(level: list[bytes]) -> bytes:
    """:func:`merkle_root` of nodes known to be 32 bytes each (built here or sliced at 32), by the accumulator."""
    acc = MerkleAccumulator()
    acc.add(level)
    return acc.root()


def reduce_levels(level: list[bytes], levels: int) -> list[bytes]:
    """The nodes ``levels`` levels above 32-byte ``level`` (consumed), by the rule of :func:`merkle_root`.

    For a run of leaves that starts at a multiple of ``2**levels`` in a tree of more leaves
    than the run: a run whose length is a multiple of ``2**levels`` pairs only its own
    nodes, and the last run's odd last node is paired with itself exactly where the whole
    level's would be, so a :class:`MerkleAccumulator` given the runs' nodes, in order, has
    the root.
    """
    for _ in range(levels):
        level = _pair(level)
    return level


class MerkleAccumulator:
    """The Section 8.1 root over the nodes of one level, given in order a batch at a time.

    The one accumulator of every path: the leaves of a receipt in memory, the ids read
    once (:func:`merkle_root_hex`), and the runs of steps checked apart (cut, streamed or
    forked: each run's nodes reduced the same number of levels, :func:`reduce_levels`).
    The nodes given are of one level of the tree, all but the last covering a complete
    subtree. Each full ``chunk`` (a power of two) is reduced to the root of its complete
    subtree and carried up like a binary counter, so memory stays at one chunk of nodes
    and one node per level however many are given.
    """

    __slots__ = ("_chunk", "_full", "_height", "_peaks", "_rest")

    def __init__(self, chunk: int = CHUNK_LEAVES) -> None:
        if chunk < 1 or chunk & (chunk - 1):
            raise ValueError(f"chunk must be a power of two, got {chunk}")
        self._chunk = chunk
        self._height = chunk.bit_length() - 1  # levels from a node given to a full chunk's root
        # _peaks[j]: the root of a complete subtree of chunk * 2**j nodes still waiting for its right sibling
        self._peaks: list[bytes | None] = []
        self._full = 0  # full chunks carried
        self._rest: list[bytes] = []  # the nodes of the chunk being filled

    @property
    def size(self) -> int:
        """Nodes given so far."""
        return self._full * self._chunk + len(self._rest)

    def add(self, nodes: Iterable[bytes]) -> None:
        """Take the next nodes, in order."""
        rest = self._rest
        rest.extend(nodes)
        chunk = self._chunk
        if len(rest) < chunk:
            return
        whole = len(rest) - len(rest) % chunk
        # every level below a chunk's height has an even length over whole chunks: reduced together, they are apart
        for node in reduce_levels(rest[:whole], self._height):
            self._carry(node)
        del rest[:whole]

    def _carry(self, node: bytes) -> None:
        self._full += 1
        peaks = self._peaks
        j = 0
        while j < len(peaks):
            waiting = peaks[j]
            if waiting is None:
                peaks[j] = node
                return
            node = _sha256(waiting + node).digest()
            peaks[j] = None
            j += 1
        peaks.append(node)

    def root(self) -> bytes:
        """The root of the nodes given (SHA-256 of the empty string for none); the accumulator stays as it was."""
        level = list(self._rest)
        if not self._full:
            if not level:
                return _sha256(b"").digest()
            while len(level) > 1:
                level = _pair(level)
            return level[0]
        # The chunks carried hold an even number of nodes at every level below a chunk's
        # height, so the partial chunk's odd last node pairs with itself there exactly as
        # in the whole tree, up to a single node.
        node = reduce_levels(level, self._height)[0] if level else None
        return self._fold(node)

    def _fold(self, node: bytes | None) -> bytes:
        """The root from the carried subtree roots and the partial chunk's node above them (or None).

        At each level from a chunk's height up, ``node`` is the level's last node when it covers
        fewer nodes than a complete subtree of that level: it pairs with a waiting peak on its
        left, or else with itself (an odd last node). With no partial node, a waiting peak that
        is the last of an odd number of nodes pairs with itself.
        """
        sha = _sha256
        peaks, size = self._peaks, self.size
        j = 0
        width = self._chunk
        while -(-size // width) > 1:  # more than one node at this level
            left = peaks[j] if j < len(peaks) else None
            if node is None:
                if left is not None:
                    node = sha(left + left).digest()
            else:
                node = sha((left if left is not None else node) + node).digest()
            j += 1
            width *= 2
        if node is not None:
            return node
        top = peaks[j]
        assert top is not None  # size is a power of two times chunk: one complete subtree
        return top


def merkle_root_hex(receipt_ids: Iterable[str], *, chunk: int = CHUNK_LEAVES) -> str:
    """Section 8.1 ``receipt-id-v0`` root over receipt ids, as lowercase hex.

    The ids are read once, ``chunk`` (a power of two) at a time, into a
    :class:`MerkleAccumulator`: memory stays at one chunk of leaves and one node per level.
    """
    acc = MerkleAccumulator(chunk)
    ids = iter(receipt_ids)
    while leaves := leaves_of_ids(islice(ids, chunk)):
        acc.add(leaves)
    return acc.root().hex()


def inclusion_proof(leaves: Sequence[bytes], index: int) -> list[bytes]:
    """Audit path for ``leaves[index]``: sibling hashes from the leaf level up."""
    size = len(leaves)
    if not 0 <= index < size:
        raise IndexError(f"leaf index {index} out of range for tree size {size}")
    path: list[bytes] = []
    level = list(leaves)
    i = index
    while len(level) > 1:
        odd_last = len(level) % 2 == 1 and i == len(level) - 1
        if not odd_last:  # an odd last node's sibling is itself: implied, not sent
            path.append(level[i ^ 1])
        level = _pair(level)
        i //= 2
    return path


def root_from_inclusion_proof(leaf: bytes, index: int, size: int, path: Sequence[bytes]) -> bytes:
    """Recompute the root from a leaf, its index, the tree size and its audit path."""
    if size <= 0:
        raise ValueError(f"tree size must be positive, got {size}")
    if not 0 <= index < size:
        raise ValueError(f"leaf index {index} out of range for tree size {size}")
    if len(leaf) != _HASH_LEN:
        raise ValueError(f"leaf: got {len(leaf)} bytes, want {_HASH_LEN}")
    node, i, width, used = leaf, index, size, 0
    while width > 1:
        if i % 2 == 1:
            if used >= len(path):
                raise ValueError(f"audit path too short: got {len(path)} hashes")
            node = _sha256(path[used] + node).digest()
            used += 1
        elif i == width - 1:  # odd last node: paired with itself
            node = _sha256(node + node).digest()
        else:
            if used >= len(path):
                raise ValueError(f"audit path too short: got {len(path)} hashes")
            node = _sha256(node + path[used]).digest()
            used += 1
        i //= 2
        width = (width + 1) // 2
    if used != len(path):
        raise ValueError(f"audit path length: got {len(path)} hashes, want {used}")
    return node


def verify_inclusion(leaf: bytes, index: int, size: int, path: Sequence[bytes], root: bytes) -> None:
    """Raise :class:`RootMismatchError` unless the path leads from ``leaf`` to ``root``."""
    computed = root_from_inclusion_proof(leaf, index, size, path)
    if computed != root:
        raise RootMismatchError(root, computed)
