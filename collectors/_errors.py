"""How every collector describes a failure: one status rule, one error shape, one counter.

Shared by the AgentChat, autogen-core and legacy collectors (and the core of the AutoGen
collector), so that the same exception reads the same in every receipt:

* :func:`failure_status`: ``cancelled`` for a cancellation (``asyncio.CancelledError``,
  ``concurrent.futures.CancelledError``, an abandoned generator, a keyboard interrupt),
  else ``error``;
* :func:`error_info`: ``{"type", "module", "message"}``, the message bounded to
  :data:`MAX_ERROR_MESSAGE_CHARS` (it may quote untrusted text);
* :func:`count_failure`: log an observation that failed and count it in the collector's
  ``recording_failures`` under the collector's own lock (the receipt says ``incomplete``);
* :func:`outcome`: one body for a hook's sync and async twins: the call runs in a block,
  and what it returned, or the exception it raised, is handed to the recorder.

Imports no agent framework.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from aer1._steps_vocab import CANCELLATIONS, MAX_ERROR_MESSAGE_CHARS, error_info, failure_status
from aer1._steps_vocab import exception_message as _bounded_text  # the one bounding rule

if TYPE_CHECKING:
    from aer1._collector import Collector

__all__ = ["CANCELLATIONS", "MAX_ERROR_MESSAGE_CHARS", "count_failure", "error_info", "failure_status", "outcome"]

log = logging.getLogger("aer1")


def count_failure(collector: Collector, what: str, exc: BaseException) -> None:
    """Log that observing ``what`` failed and count it in ``collector.recording_failures``.

    Goes through :meth:`Collector.count_recording_failure`, which counts under the
    collector's lock, so concurrent hooks never lose a count. Never raises.
    """
    try:
        collector.count_recording_failure(what, exc)
    except Exception as e:  # not a Collector: nothing to count into
        log.warning(
            "aer1: could not observe %s: %s: %s (not counted: %s)", what, type(exc).__name__, _bounded_text(exc), e
        )


@contextlib.contextmanager
def outcome(record: Callable[[Any, BaseException | None], None]) -> Iterator[list[Any]]:
    """A call observed in the block, which appends what the call returned.

    Then ``record(returned, None)``; when the block raises, ``record(None, exc)`` and the
    exception propagates unchanged (a cancellation too).
    """
    returned: list[Any] = []
    try:
        yield returned
    except BaseException as exc:
        record(None, exc)
        raise
    record(returned[0], None)
