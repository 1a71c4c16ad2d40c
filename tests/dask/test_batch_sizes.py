"""The Dask run's task sizes: large while much is left, small at the end, every receipt once."""

from __future__ import annotations

import itertools

import pytest

from aer1.verifier._dask import DASK_BATCH, DASK_MAX_BATCH, batch_size


def _sizes(receipts: int, in_flight: int) -> list[int]:
    left, out = receipts, []
    while left > 0:
        size = min(batch_size(left, in_flight), left)
        out.append(size)
        left -= size
    return out


@pytest.mark.parametrize("receipts, in_flight", [(1, 8), (63, 8), (20_000, 8), (100_000, 64), (10**6, 640)])
def test_the_sizes_cover_every_receipt_once_and_shrink_to_the_end(receipts: int, in_flight: int) -> None:
    sizes = _sizes(receipts, in_flight)
    assert sum(sizes) == receipts
    assert all(s <= DASK_MAX_BATCH for s in sizes)
    assert all(a >= b for a, b in itertools.pairwise(sizes)), "a later task is larger"
    assert sizes[-1] <= DASK_BATCH  # the run ends on small tasks: no worker waits on a large last one


def test_a_long_run_sends_far_fewer_tasks_than_at_the_smallest_size() -> None:
    sizes = _sizes(20_000, 8)
    assert sizes[0] == DASK_MAX_BATCH and len(sizes) < 20_000 / DASK_BATCH / 3


def test_a_given_size_is_kept() -> None:
    assert batch_size(10**6, 8, 4) == 4 and batch_size(3, 8, 200) == 200
