"""Tiles (c2sp.org/tlog-tiles): the tree as files of hashes, the entries as bundles.

A hash tile at level L holds up to 256 consecutive hashes, each the root of a complete
subtree of ``256**L`` leaves; tile N at level L covers leaves ``[N * 256**(L+1), (N+1) *
256**(L+1))``. A full tile is 8,192 bytes and never changes; the rightmost tile of a level
is partial (``W`` = 1..255 hashes) and is superseded by a wider one, never edited. Paths:
``tile/<L>/<N>[.p/<W>]`` and ``tile/entries/<N>[.p/<W>]``, N in 3-digit groups, all but the
last prefixed with ``x`` (1234067 -> ``x001/x234/067``). An entry bundle is each entry as a
big-endian uint16 length then its bytes.

API:
    TILE_HEIGHT (8), TILE_WIDTH (256), TILE_BYTES (8192), MAX_ENTRY_BYTES (65535), MAX_BUNDLE_BYTES
    MAX_TILE_LEVEL (63)
    encode_index(n) -> str                        "x001/x234/067"
    tile_path(level, index, width=256) -> str     "tile/L/N[.p/W]"
    entries_path(index, width=256) -> str         "tile/entries/N[.p/W]"
    parse_tile_path(path) -> (level | None, index, width)   None for entries; LogMalformed if not canonical
    tile_width(level, index, size) -> int         width of that tile in a tree of ``size`` (0: none)
    tiles_for_size(size) -> list[(level, index, width)]     every hash tile of a tree of ``size``
    encode_bundle(entries) -> bytes / decode_bundle(data, count=None) -> list[bytes]
    grow_tiles(size, edge, leaf_hashes) -> (written, new_edge)
        appending: ``edge`` maps level -> the current partial tile's bytes; ``written`` lists
        (level, index, width, data) of each tile completed and each new partial tile
    edge_tiles_needed(size) -> list[(level, index, width)]   the partial tiles a tree's root rests on
    edge_root(size, edge) -> bytes                the root from those tiles alone (level -> bytes)
    TileReader = Callable[[level, index, width], bytes]
    TileHashReader(size, root, read_tile)         checks the right-edge tiles against ``root`` at
        once, and every full tile against the tile above it when first read
        .hash_at(level, n) -> bytes               a hash source for aer1._tlog._tree
        .tile(level, index) -> bytes              a verified tile
        .leaf_hashes(index) -> list[bytes]        the level-0 hashes of tile ``index``
        .edge -> dict[level, bytes]               the checked right-edge tiles
    check_bundle(data, leaf_hashes) -> list[bytes]   the entries, each checked against its leaf hash
    dir_tile_reader(root) -> TileReader           read tiles under a directory (a partial tile
        missing falls back to the prefix of the full one); dir_bundle_reader(root) likewise
    read_file_bounded(path, limit) -> bytes       a regular file, at most ``limit`` bytes
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from hashlib import sha256 as _sha256
from pathlib import Path

from .._infile import NotRegularFile, open_regular
from .._storage import is_url, join, read_bounded
from ..errors import LogInvalid, LogMalformed, StorageError
from ._note import check_length
from ._tree import HASH_SIZE, MAX_TREE_SIZE, NODE_PREFIX, leaf_hash, root_hash, root_of

__all__ = [
    "MAX_BUNDLE_BYTES",
    "MAX_ENTRY_BYTES",
    "MAX_TILE_LEVEL",
    "TILE_BYTES",
    "TILE_HEIGHT",
    "TILE_WIDTH",
    "TileHashReader",
    "TileReader",
    "at",
    "check_bundle",
    "decode_bundle",
    "dir_bundle_reader",
    "dir_tile_reader",
    "edge_root",
    "edge_tiles_needed",
    "encode_bundle",
    "encode_index",
    "entries_path",
    "grow_tiles",
    "parse_tile_path",
    "read_file_bounded",
    "tile_path",
    "tile_width",
    "tiles_for_size",
]

TILE_HEIGHT = 8
TILE_WIDTH = 1 << TILE_HEIGHT
TILE_BYTES = TILE_WIDTH * HASH_SIZE
MAX_TILE_LEVEL = 63
#: Longest entry a bundle can hold (its length is a uint16).
MAX_ENTRY_BYTES = 0xFFFF
#: Largest entry bundle read: 256 entries of the longest length.
MAX_BUNDLE_BYTES = TILE_WIDTH * (2 + MAX_ENTRY_BYTES)
#: Verified tiles a TileHashReader keeps (8 KiB each).
_CACHED_TILES = 4096

#: Reads one hash tile: (level, index, width) -> its bytes (``width`` hashes).
TileReader = Callable[[int, int, int], bytes]

_PATH = re.compile(r"tile/(entries|0|[1-9][0-9]?)/((?:x[0-9]{3}/)*[0-9]{3})(?:\.p/([1-9][0-9]{0,2}))?")


def encode_index(n: int) -> str:
    """A tile index in 3-digit path elements, all but the last prefixed with ``x``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise LogMalformed(f"tile index: got {n!r}, want a non-negative integer")
    groups = []
    while True:
        groups.append(f"{n % 1000:03d}")
        n //= 1000
        if not n:
            break
    groups.reverse()
    return "/".join([f"x{g}" for g in groups[:-1]] + [groups[-1]])


def _suffix(width: int) -> str:
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= TILE_WIDTH:
        raise LogMalformed(f"tile width: got {width!r}, want 1..{TILE_WIDTH}")
    return "" if width == TILE_WIDTH else f".p/{width}"


def tile_path(level: int, index: int, width: int = TILE_WIDTH) -> str:
    """The path of a hash tile, relative to the log's prefix."""
    if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= MAX_TILE_LEVEL:
        raise LogMalformed(f"tile level: got {level!r}, want 0..{MAX_TILE_LEVEL}")
    return f"tile/{level}/{encode_index(index)}{_suffix(width)}"


def entries_path(index: int, width: int = TILE_WIDTH) -> str:
    """The path of an entry bundle, relative to the log's prefix."""
    return f"tile/entries/{encode_index(index)}{_suffix(width)}"


def parse_tile_path(path: str) -> tuple[int | None, int, int]:
    """(level, index, width) of a canonical tile path; level None for an entry bundle."""
    m = _PATH.fullmatch(path) if isinstance(path, str) else None
    if m is None:
        raise LogMalformed(f"tile path {str(path)[:120]!r}: not tile/<L>/<N>[.p/<W>]")
    level = None if m[1] == "entries" else int(m[1])
    index = int(m[2].replace("x", "").replace("/", ""))
    width = int(m[3]) if m[3] else TILE_WIDTH
    canonical = entries_path(index, width) if level is None else tile_path(level, index, width)
    if canonical != path:
        raise LogMalformed(f"tile path {path[:120]!r}: not canonical, want {canonical!r}")
    return level, index, width


def tile_width(level: int, index: int, size: int) -> int:
    """How many hashes tile ``index`` at ``level`` holds in a tree of ``size`` leaves (0: it has none)."""
    count = size >> (TILE_HEIGHT * level)  # hashes at this tile level
    start = index * TILE_WIDTH
    return max(0, min(TILE_WIDTH, count - start))


def tiles_for_size(size: int) -> list[tuple[int, int, int]]:
    """Every hash tile of a tree of ``size`` leaves, as (level, index, width), level by level."""
    out: list[tuple[int, int, int]] = []
    level = 0
    while (count := size >> (TILE_HEIGHT * level)) > 0:
        out.extend((level, i, TILE_WIDTH) for i in range(count // TILE_WIDTH))
        if count % TILE_WIDTH:
            out.append((level, count // TILE_WIDTH, count % TILE_WIDTH))
        level += 1
    return out


def encode_bundle(entries: Sequence[bytes]) -> bytes:
    """Entries as an entry bundle: each a big-endian uint16 length then its bytes."""
    if len(entries) > TILE_WIDTH:
        raise LogMalformed(f"entry bundle: got {len(entries)} entries, want at most {TILE_WIDTH}")
    parts = []
    for i, e in enumerate(entries):
        if len(e) > MAX_ENTRY_BYTES:
            raise LogMalformed(f"entry {i}: got {len(e)} bytes, want at most {MAX_ENTRY_BYTES}")
        parts.append(len(e).to_bytes(2, "big") + e)
    return b"".join(parts)


def decode_bundle(data: bytes, count: int | None = None) -> list[bytes]:
    """The entries of a bundle; ``count``: how many it must hold."""
    check_length(data, MAX_BUNDLE_BYTES, "entry bundle")
    entries: list[bytes] = []
    pos = 0
    while pos < len(data):
        if len(entries) == TILE_WIDTH:
            raise LogMalformed(f"entry bundle: more than {TILE_WIDTH} entries")
        if pos + 2 > len(data):
            raise LogMalformed(f"entry bundle: a length prefix cut off at byte {pos}")
        n = int.from_bytes(data[pos : pos + 2], "big")
        if pos + 2 + n > len(data):
            raise LogMalformed(f"entry bundle: entry {len(entries)} of {n} bytes cut off at byte {len(data)}")
        entries.append(data[pos + 2 : pos + 2 + n])
        pos += 2 + n
    if count is not None and len(entries) != count:
        raise LogMalformed(f"entry bundle: got {len(entries)} entries, want {count}")
    return entries


def _hashes(data: bytes) -> list[bytes]:
    return [data[i : i + HASH_SIZE] for i in range(0, len(data), HASH_SIZE)]


def _root(data: bytes) -> bytes:
    """``root_of`` the hashes in ``data``, level by level when they are a power of two (a full tile, a subtree).

    Then the tree is perfect: each level's nodes hash adjacent pairs, which lie side by side
    in the level below's bytes. Otherwise (or no hash at all) ``root_of`` itself."""
    n = len(data) // HASH_SIZE
    if n == 0 or n & (n - 1) or len(data) != n * HASH_SIZE:
        return root_of(_hashes(data))
    pair = 2 * HASH_SIZE
    while len(data) > HASH_SIZE:
        data = b"".join([_sha256(NODE_PREFIX + data[i : i + pair]).digest() for i in range(0, len(data), pair)])
    return data


def grow_tiles(size: int, edge: Mapping[int, bytes], leaf_hashes: Sequence[bytes]
               ) -> tuple[list[tuple[int, int, int, bytes]], dict[int, bytes]]:
    """The tiles to write when ``leaf_hashes`` are appended to a tree of ``size`` leaves.

    ``edge`` maps each level to the bytes of its current partial tile (missing or empty when
    the level has none). Returns the tiles to write, (level, index, width, data), each full
    tile completed and the new partial tile of every level that changed, and the new edge.
    A tile completed here is the only time that full tile is written.
    """
    if size + len(leaf_hashes) > MAX_TREE_SIZE:
        raise LogMalformed(f"tree size: {size} + {len(leaf_hashes)} is more than {MAX_TREE_SIZE}")
    new_edge = {lvl: bytes(t) for lvl, t in edge.items() if t}
    written: list[tuple[int, int, int, bytes]] = []
    level, count, fresh = 0, size, list(leaf_hashes)
    while fresh:
        have = new_edge.get(level, b"")
        if len(have) != (count % TILE_WIDTH) * HASH_SIZE:
            raise LogMalformed(f"level {level} partial tile: got {len(have)} bytes, want "
                               f"{(count % TILE_WIDTH) * HASH_SIZE} for {count} hashes")
        buf = have + b"".join(fresh)
        first = count // TILE_WIDTH
        up = []
        full = len(buf) // TILE_BYTES
        for k in range(full):
            data = buf[k * TILE_BYTES : (k + 1) * TILE_BYTES]
            written.append((level, first + k, TILE_WIDTH, data))
            up.append(_root(data))
        rest = buf[full * TILE_BYTES :]
        if rest:
            written.append((level, first + full, len(rest) // HASH_SIZE, rest))
            new_edge[level] = rest
        else:
            new_edge.pop(level, None)
        level, count, fresh = level + 1, count >> TILE_HEIGHT, up
    return written, new_edge


def edge_tiles_needed(size: int) -> list[tuple[int, int, int]]:
    """The right-edge (partial) tiles of a tree of ``size``: (level, index, width), lowest level first."""
    out = []
    level = 0
    while (count := size >> (TILE_HEIGHT * level)) > 0:
        if count % TILE_WIDTH:
            out.append((level, count // TILE_WIDTH, count % TILE_WIDTH))
        level += 1
    return out


def edge_root(size: int, edge: Mapping[int, bytes]) -> bytes:
    """The root of a tree of ``size`` leaves from its right-edge tiles alone (level -> tile bytes).

    The root splits into complete subtrees, one per set bit of ``size``; those of heights
    8L to 8L+7 are made of the hashes of level L's partial tile, so nothing else is needed.
    """
    def at(height: int, n: int) -> bytes:
        level, r = divmod(height, TILE_HEIGHT)
        tile = edge.get(level)
        if tile is None:
            raise LogMalformed(f"tree {size}: no partial tile at level {level}")
        start = ((n << r) % TILE_WIDTH) * HASH_SIZE
        part = tile[start : start + (HASH_SIZE << r)]
        if len(part) != HASH_SIZE << r:
            raise LogMalformed(f"tree {size}: the partial tile at level {level} is too short")
        return _root(part)

    return root_hash(size, at)


class TileHashReader:
    """A hash source over the tiles of one tree, each tile checked before its hashes are used.

    The right-edge (partial) tiles are read at once and must give ``root``; a full tile is
    checked when first read: its root must equal its hash in the tile one level up (itself
    checked the same way), so every hash served is bound to the checkpoint's root.
    """

    def __init__(self, size: int, root: bytes, read_tile: TileReader) -> None:
        if not 0 <= size <= MAX_TREE_SIZE:
            raise LogMalformed(f"tree size: got {size}, want 0..{MAX_TREE_SIZE}")
        self.size = size
        self._read = read_tile
        self._cache: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self._edge = {level: self._load(level, index, width) for level, index, width in edge_tiles_needed(size)}
        got = edge_root(size, self._edge)
        if got != root:
            raise LogInvalid(f"tiles of tree {size}: got root {got.hex()}, want {root.hex()}")

    def _load(self, level: int, index: int, width: int) -> bytes:
        data = self._read(level, index, width)
        if len(data) != width * HASH_SIZE:
            raise LogMalformed(f"{tile_path(level, index, width)}: got {len(data)} bytes, want {width * HASH_SIZE}")
        return bytes(data)

    def tile(self, level: int, index: int) -> bytes:
        """Tile ``index`` at ``level`` (its width as in this tree), checked."""
        width = tile_width(level, index, self.size)
        if width == 0:
            raise LogMalformed(f"tile {level}/{index}: not in a tree of {self.size} leaves")
        if width < TILE_WIDTH:
            return self._edge[level]
        key = (level, index)
        data = self._cache.get(key)
        if data is not None:
            self._cache.move_to_end(key)
            return data
        data = self._load(level, index, TILE_WIDTH)
        above = self.tile(level + 1, index // TILE_WIDTH)
        want = above[(index % TILE_WIDTH) * HASH_SIZE : (index % TILE_WIDTH + 1) * HASH_SIZE]
        got = _root(data)
        if got != want:
            raise LogInvalid(f"{tile_path(level, index)}: got root {got.hex()}, want {want.hex()} from the tile above")
        self._cache[key] = data
        if len(self._cache) > _CACHED_TILES:
            self._cache.popitem(last=False)
        return data

    def hash_at(self, height: int, n: int) -> bytes:
        """The hash of the complete subtree of ``2**height`` leaves numbered ``n``."""
        if height < 0 or n < 0 or (n + 1) << height > self.size:
            raise LogMalformed(f"subtree {height}/{n}: not complete in a tree of {self.size} leaves")
        level, r = divmod(height, TILE_HEIGHT)
        first = n << r
        tile = self.tile(level, first // TILE_WIDTH)
        start = (first % TILE_WIDTH) * HASH_SIZE
        if r == 0:
            return tile[start : start + HASH_SIZE]
        return _root(tile[start : start + (HASH_SIZE << r)])

    @property
    def edge(self) -> dict[int, bytes]:
        """The right-edge tiles (level -> bytes), checked: what :func:`grow_tiles` extends."""
        return dict(self._edge)

    def leaf_hashes(self, index: int) -> list[bytes]:
        """The leaf hashes of level-0 tile ``index``, checked."""
        return _hashes(self.tile(0, index))


def check_bundle(data: bytes, leaf_hashes: Sequence[bytes]) -> list[bytes]:
    """The entries of a bundle whose leaf hashes must be ``leaf_hashes``, in order."""
    entries = decode_bundle(data, len(leaf_hashes))
    for i, (e, want) in enumerate(zip(entries, leaf_hashes, strict=True)):
        got = leaf_hash(e)
        if got != want:
            raise LogInvalid(f"entry {i} of the bundle: got leaf hash {got.hex()}, want {want.hex()} from the tile")
    return entries


def at(root: str | os.PathLike[str], name: str) -> str | Path:
    """The file ``name`` (``tile/0/000``...) under a log's ``root``: a folder, or a storage URL."""
    if is_url(root):
        return join(str(root), name)
    return Path(root) / name


def read_file_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """A regular file's (or storage object's) bytes, at most ``limit`` of them (FileNotFoundError when missing)."""
    if is_url(path):
        try:
            return read_bounded(str(path), limit)
        except StorageError as e:
            raise LogMalformed(f"{path}: cannot read: {e}") from e
    try:
        with open_regular(path) as f:
            data = f.read(limit + 1)
    except NotRegularFile as e:
        raise LogMalformed(f"{path}: {e.kind}, not a regular file") from e
    except FileNotFoundError:
        raise
    except OSError as e:
        raise LogMalformed(f"{path}: cannot read: {e.strerror or e}") from e
    if len(data) > limit:
        raise LogMalformed(f"{path}: got more than {limit} bytes")
    return data


def dir_tile_reader(root: str | os.PathLike[str]) -> TileReader:
    """A TileReader over the files under ``root`` (a partial tile gone: the full tile's prefix)."""
    def read_tile(level: int, index: int, width: int) -> bytes:
        try:
            return read_file_bounded(at(root, tile_path(level, index, width)), width * HASH_SIZE)
        except FileNotFoundError:
            if width == TILE_WIDTH:
                raise LogMalformed(f"{tile_path(level, index)}: missing") from None
        try:
            full = read_file_bounded(at(root, tile_path(level, index)), TILE_BYTES)
        except FileNotFoundError:
            raise LogMalformed(f"{tile_path(level, index, width)}: missing (and no full tile)") from None
        return full[: width * HASH_SIZE]

    return read_tile


def dir_bundle_reader(root: str | os.PathLike[str]) -> Callable[[int, int], bytes]:
    """Reads entry bundle (index, width) under ``root``; a partial one gone: the full one's first ``width``."""
    def read_bundle(index: int, width: int) -> bytes:
        try:
            return read_file_bounded(at(root, entries_path(index, width)), MAX_BUNDLE_BYTES)
        except FileNotFoundError:
            if width == TILE_WIDTH:
                raise LogMalformed(f"{entries_path(index)}: missing") from None
        try:
            full = read_file_bounded(at(root, entries_path(index)), MAX_BUNDLE_BYTES)
        except FileNotFoundError:
            raise LogMalformed(f"{entries_path(index, width)}: missing (and no full bundle)") from None
        return encode_bundle(decode_bundle(full)[:width])

    return read_bundle
