"""Which path verifies a receipt, and the sizes each path reads and checks in: one value, passed down.

A receipt file is read in one of three ways (held parsed; our saved layout cut into runs of
step lines; any layout streamed) and its steps checked in this process or in forked
workers. The sizes that choose among them are limits in :mod:`aer1._limits`; a
:class:`Paths` holds them for one verification, so a test picks a path by passing one
(``Paths(stream_min_bytes=0)`` streams every file) instead of changing a module's constants.
Every path gives the same report; only how fast it comes differs.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._limits import BLOCK_LEVELS, PARALLEL_MIN_STEPS, SPLIT_MIN_BYTES, STREAM_MIN_BYTES

__all__ = ["DEFAULT_PATHS", "Paths"]

_MiB = 1024 * 1024


@dataclass(frozen=True)
class Paths:
    """The thresholds that pick a verification path, and the read and block sizes of each path."""

    #: A receipt file from this size on is streamed, not held parsed.
    stream_min_bytes: int = STREAM_MIN_BYTES
    #: With ``jobs`` > 1, a saved receipt file from this size on is cut into runs of step lines.
    split_min_bytes: int = SPLIT_MIN_BYTES
    #: With ``jobs`` > 1, a parsed receipt of this many steps or more has its steps checked in workers.
    parallel_min_steps: int = PARALLEL_MIN_STEPS
    #: Merkle levels each block of steps is reduced by: a block is whole subtrees of ``2**levels`` leaves.
    levels: int = BLOCK_LEVELS
    #: Steps per block of the streaming reader, a multiple of ``2**levels``; 0: ``2**levels``.
    stream_block_steps: int = 0
    #: Bytes the streaming reader reads at a time.
    stream_read_bytes: int = 4 * _MiB
    #: Bytes of the file each worker of the cut path reads (or slices) at a time.
    split_read_bytes: int = 1 * _MiB
    #: Bytes the cut path reads to find an evidence file's header line, or the next line break after a cut.
    header_bytes: int = 64 * 1024

    @property
    def block_steps(self) -> int:
        """Steps per block of the cut and the forked paths: ``2**levels``."""
        return 1 << self.levels

    def stream_block(self) -> int:
        """Steps per block of the streaming reader."""
        return self.stream_block_steps or self.block_steps


#: The sizes every verification uses unless a caller (a test) passes others.
DEFAULT_PATHS = Paths()
