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


def merkle_root(leaves: Sequence[bytes]) -> bytes:
    """Root over leaf hashes, duplicating an odd last node at each level."""
    for i, leaf in enumerate(leaves):
        if len(leaf) != _HASH_LEN:
            raise ValueError(f"leaf {i}: got {len(leaf)} bytes, want {_HASH_LEN}")
    return root_of_leaves(list(leaves))


def root_of_leaves(level: list[bytes]) -> bytes:
    """:func:`merkle_root` of leaves known to be 32 bytes each (built here or sliced at 32); consumes ``level``."""
    if not level:
        return _sha256(b"").digest()
    sha = _sha256
    while len(level) > 1:
        if len(level) % 2:
            level.append(level[-1])
        level = [sha(left + right).digest() for left, right in zip(level[::2], level[1::2], strict=True)]
    return level[0]


def reduce_levels(level: list[bytes], levels: int) -> list[bytes]:
    """The nodes ``levels`` levels above 32-byte ``level`` (consumed), by the rule of :func:`root_of_leaves`.

    For a run of leaves that starts at a multiple of ``2**levels`` in a tree of more leaves
    than the run: a run whose length is a multiple of ``2**levels`` pairs only its own
    nodes, and the last run's odd last node is paired with itself exactly where the whole
    level's would be, so :func:`root_of_leaves` over the runs' nodes, in order, is the root.
    """
    sha = _sha256
    for _ in range(levels):
        if len(level) % 2:
            level.append(level[-1])
        level = [sha(left + right).digest() for left, right in zip(level[::2], level[1::2], strict=True)]
    return level


def merkle_root_hex(receipt_ids: Iterable[str], *, chunk: int = CHUNK_LEAVES) -> str:
    """Section 8.1 ``receipt-id-v0`` root over receipt ids, as lowercase hex.

    The ids are read once, ``chunk`` (a power of two) at a time: each full chunk is reduced
    to the root of its complete subtree and carried up like a binary counter, so memory
    stays at one chunk of leaves and one node per level whatever the number of ids.
    """
    if chunk < 1 or chunk & (chunk - 1):
        raise ValueError(f"chunk must be a power of two, got {chunk}")
    sha = _sha256
    ids = iter(receipt_ids)
    # peaks[j]: the root of a complete subtree of chunk * 2**j leaves still waiting for its right sibling
    peaks: list[bytes | None] = []
    full = 0
    while True:
        leaves = leaves_of_ids(islice(ids, chunk))
        if len(leaves) < chunk:
            break
        full += 1
        node = root_of_leaves(leaves)
        j = 0
        while j < len(peaks):
            waiting = peaks[j]
            if waiting is None:
                peaks[j] = node
                break
            node = sha(waiting + node).digest()
            peaks[j] = None
            j += 1
        else:
            peaks.append(node)
    if not full:
        return root_of_leaves(leaves).hex()
    return _fold_peaks(peaks, _lift(leaves, chunk), full * chunk + len(leaves), chunk).hex()


def _lift(leaves: list[bytes], chunk: int) -> bytes | None:
    """The node at a full chunk's height over the last, partial chunk, or None when it is empty.

    Below that height the full chunks before it hold an even number of nodes at every level,
    so the partial chunk's odd last node is paired with itself exactly as in the whole tree,
    up to and including a single node.
    """
    if not leaves:
        return None
    sha = _sha256
    level = leaves
    width = 1
    while width < chunk:
        if len(level) % 2:
            level.append(level[-1])
        level = [sha(left + right).digest() for left, right in zip(level[::2], level[1::2], strict=True)]
        width *= 2
    return level[0]


def _fold_peaks(peaks: list[bytes | None], node: bytes | None, size: int, chunk: int) -> bytes:
    """The root from the carried subtree roots (``peaks``) and the partial node above them.

    At each level from a chunk's height up, ``node`` is the level's last node when it covers
    fewer leaves than a complete subtree of that level: it pairs with a waiting peak on its
    left, or else with itself (an odd last node). With no partial node, a waiting peak that
    is the last of an odd number of nodes pairs with itself.
    """
    sha = _sha256
    j = 0
    width = chunk
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
        if len(level) % 2:
            level.append(level[-1])
        if not odd_last:  # an odd last node's sibling is itself: implied, not sent
            path.append(level[i ^ 1])
        level = [_sha256(level[j] + level[j + 1]).digest() for j in range(0, len(level), 2)]
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
