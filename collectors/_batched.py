"""Steps of wrapped AgentChat turns chained in batches, off the turn that produced them.

Chaining a step (canonical bytes, two SHA-256, the evidence line) inside an AutoGen
turn runs with the interpreter's caches full of AutoGen's own work, and costs about three
times what the same work costs in a loop. :class:`BatchedCollector` lets the AgentChat
hooks hand it a step instead (:meth:`BatchedCollector.defer`): the step's values are
fixed at once (times included) and it is chained with the next batch. Nothing can see
the difference, because every way of reading or extending the chain chains the waiting
steps first, under one lock, in the order they were handed over:

* :meth:`record` (so ``safe_record``, ``link`` and every other hook) chains them before
  its own step;
* :meth:`finalize` and :attr:`step_count` chain them first;
* at :data:`DEFER_BATCH` waiting steps the batch is chained at once.

So steps, their order and their bytes are those of recording each at once; a step that
cannot be recorded is logged and counted (``recording_failures``) when its batch is
chained, never later than ``finalize()``. Steps wait only where waiting changes no
promise: never with a journal (a step is on disk when ``record()`` returns, see
``spec/journal.md``) and never with a custom redactor (user code runs when the step is
recorded, as documented); those collectors record each step at once.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from aer1 import Collector
from aer1._redact import default_redactor
from aer1._trace import current_context, run_in_context, watched

__all__ = ["DEFER_BATCH", "BatchedCollector"]

#: Most steps waiting to be chained: bounds the content held and the work of one batch.
DEFER_BATCH = 64


class BatchedCollector(Collector):
    """A :class:`aer1.Collector` taking steps of hooks to chain in batches (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._batch_lock = threading.RLock()
        # (tool, content, record keywords, OpenTelemetry context or None) of steps handed over and
        # not chained yet, in order: each is chained in the context it was handed over in (its span).
        self._batch: list[tuple[str, Any, dict[str, Any], Any]] = []
        # Collector internals read once: a journal, a custom redactor, or finalize() begun turn batching off.
        self._batching = self.journal is None and self._redact in (None, default_redactor)

    def defer(
        self, tool: str, content: Any, *, started_at: float | None = None, ended_at: float | None = None,
        **kwargs: Any,
    ) -> None:
        """``safe_record(tool, content, ...)`` now or with the next batch; never raises.

        ``content`` must not change afterwards (the hooks build it for the step).
        ``ended_at`` (and ``started_at``) default to now, read here, as ``record`` would.
        """
        now = time.time()
        if started_at is None:
            started_at = now
        if ended_at is None:
            ended_at = now
            if type(started_at) is float and now < started_at:  # the wall clock stepped back: clamp as record() does
                ended_at = started_at
        with self._batch_lock:
            if not self._batching or watched(self):  # a bound span processor names steps on spans still open
                self._record_now(tool, content, started_at, ended_at, kwargs)
                return
            batch = self._batch
            batch.append((tool, content, {"started_at": started_at, "ended_at": ended_at, **kwargs},
                          current_context()))
            if len(batch) >= DEFER_BATCH:
                self._chain_batch()

    def _record_now(self, tool: str, content: Any, started_at: Any, ended_at: Any, kwargs: dict[str, Any]) -> None:
        """``safe_record`` of one step now, the waiting steps first (the caller holds the batch lock).

        Every step while a span processor is bound goes this way: as the last of a batch chained
        at once, in this context, so it takes :meth:`_chain_batch`'s path (``Collector.record``
        itself unless a subclass has its own ``record`` or ``safe_record``).
        """
        self._batch.append((tool, content, {"started_at": started_at, "ended_at": ended_at, **kwargs}, None))
        self._chain_batch()

    def _chain_batch(self) -> None:
        """Chain the waiting steps, in order (the caller holds the batch lock)."""
        batch, self._batch = self._batch, []
        cls = type(self)
        if cls.record is BatchedCollector.record and cls.safe_record is Collector.safe_record:
            # What safe_record does, without its two calls a step: the batch is empty, so
            # BatchedCollector.record would only pass the step on to Collector.record.
            record = Collector.record
            for tool, content, kwargs, ctx in batch:
                try:
                    if ctx is None:
                        record(self, tool, content, **kwargs)
                    else:
                        run_in_context(ctx, record, self, tool, content, **kwargs)
                except Exception as e:
                    self._record_failed(tool, e)
            return
        safe_record = super().safe_record  # a subclass's own record or safe_record sees every step
        for tool, content, kwargs, ctx in batch:
            run_in_context(ctx, safe_record, tool, content, **kwargs)

    def flush_steps(self) -> None:
        """Chain every step waiting in the batch now."""
        if self._batch:
            with self._batch_lock:
                self._chain_batch()

    def record(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """:meth:`aer1.Collector.record`, after the waiting steps."""
        with self._batch_lock:
            if self._batch:
                self._chain_batch()
            return super().record(*args, **kwargs)

    @property
    def step_count(self) -> int:
        """Steps recorded so far, the waiting ones chained first."""
        self.flush_steps()
        return super().step_count

    def status_counts(self) -> dict[str, int]:
        """Steps recorded so far by status, the waiting ones chained first."""
        self.flush_steps()
        return super().status_counts()

    def finalize(self, final_answer: Any = None, *, status: str | None = None) -> dict[str, Any]:
        """:meth:`aer1.Collector.finalize`, after the waiting steps; later steps are recorded at once."""
        with self._batch_lock:
            self._batching = False
            self._chain_batch()
        return super().finalize(final_answer, status=status)
