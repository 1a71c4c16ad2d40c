"""The log server's sequencer: a bounded queue, batches, and an answer (or a stated error) in bounded time.

The appender here holds a real RFC 6962 tree in memory and can be held shut by a gate,
so a full queue, an entry that waited too long and an append that outlived the answer
time are each reached on purpose.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import pytest

from aer1._httpserve import HttpFailure
from aer1._log_server import Sequencer
from aer1._tlog._tree import leaf_hash, root_of


class GatedTree:
    """Appends to an in-memory tree once ``gate`` is open; ``calls`` records each batch."""

    def __init__(self) -> None:
        self.leaves: list[bytes] = []
        self.gate = threading.Event()
        self.gate.set()
        self.calls: list[int] = []
        self.fail: Exception | None = None
        self.entered = threading.Event()

    def __call__(self, entries: Sequence[bytes]) -> list[tuple[int, int]]:
        self.entered.set()
        assert self.gate.wait(30)
        if self.fail is not None:
            raise self.fail
        first = len(self.leaves)
        self.leaves.extend(leaf_hash(e) for e in entries)
        self.calls.append(len(entries))
        return [(i, len(self.leaves)) for i in range(first, len(self.leaves))]


@pytest.fixture
def tree() -> GatedTree:
    return GatedTree()


@pytest.fixture
def sequencer(tree: GatedTree) -> Iterator[Sequencer[tuple[int, int]]]:
    s = Sequencer(tree, queue_size=4, batch_max=8, batch_wait=0.02).start()
    yield s
    tree.gate.set()
    s.stop()


def test_concurrent_entries_get_distinct_indexes_in_few_batches(sequencer: Sequencer[tuple[int, int]],
                                                                tree: GatedTree) -> None:
    got: dict[bytes, int] = {}
    lock = threading.Lock()

    def one(entry: bytes) -> None:
        index, size = sequencer.submit(entry, timeout=20)
        assert index < size
        with lock:
            got[entry] = index

    threads = [threading.Thread(target=one, args=(b"e%d" % i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(got.values()) == [0, 1, 2, 3]
    for entry, index in got.items():
        assert tree.leaves[index] == leaf_hash(entry)
    assert sum(tree.calls) == 4 and sequencer.batches == len(tree.calls)
    assert root_of(tree.leaves)  # the tree is whole


def test_a_full_queue_is_503_with_retry_after(sequencer: Sequencer[tuple[int, int]], tree: GatedTree) -> None:
    tree.gate.clear()
    first = threading.Thread(target=lambda: sequencer.submit(b"held", timeout=20))
    first.start()
    assert tree.entered.wait(10)  # the sequencer holds "held"; the queue itself is empty again
    waiting = [threading.Thread(target=lambda i=i: sequencer.submit(b"q%d" % i, timeout=20)) for i in range(4)]
    for t in waiting:
        t.start()
    for _ in range(200):
        if sequencer._queue.full():
            break
        threading.Event().wait(0.01)
    with pytest.raises(HttpFailure) as e:
        sequencer.submit(b"one too many", timeout=1)
    assert e.value.status == 503 and ("Retry-After", "1") in e.value.headers
    tree.gate.set()
    for t in [first, *waiting]:
        t.join(timeout=30)
    assert len(tree.leaves) == 5  # the refused entry was never appended


def test_an_entry_never_taken_is_503_and_never_appended(sequencer: Sequencer[tuple[int, int]], tree: GatedTree) -> None:
    tree.gate.clear()
    held = threading.Thread(target=lambda: sequencer.submit(b"held", timeout=20))
    held.start()
    assert tree.entered.wait(10)
    with pytest.raises(HttpFailure) as e:
        sequencer.submit(b"late", timeout=0.2)
    assert e.value.status == 503 and "not logged" in e.value.message
    tree.gate.set()
    held.join(timeout=30)
    sequencer.submit(b"after", timeout=20)
    assert leaf_hash(b"late") not in tree.leaves


def test_an_entry_being_appended_at_the_deadline_is_504(sequencer: Sequencer[tuple[int, int]], tree: GatedTree) -> None:
    tree.gate.clear()
    with pytest.raises(HttpFailure) as e:
        sequencer.submit(b"slow", timeout=0.5)
    assert e.value.status == 504 and "may be in the log" in e.value.message
    tree.gate.set()


def test_a_writer_failure_is_every_waiter_s_answer(sequencer: Sequencer[tuple[int, int]], tree: GatedTree) -> None:
    tree.fail = OSError(28, "No space left on device")
    with pytest.raises(HttpFailure) as e:
        sequencer.submit(b"x", timeout=20)
    assert e.value.status == 503 and "No space left" in e.value.message
    tree.fail = None
    assert sequencer.submit(b"y", timeout=20) == (0, 1)  # the sequencer survived it
