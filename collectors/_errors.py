"""How every collector describes a failure: one status rule, one error shape, one counter.

Shared by the AgentChat, autogen-core and legacy collectors (and the core of the AutoGen
collector), so that the same exception reads the same in every receipt:

* :func:`failure_status`: ``cancelled`` for a cancellation (``asyncio.CancelledError``,
  ``concurrent.futures.CancelledError``, an abandoned generator, a keyboard interrupt),
  else ``error``;
* :func:`error_info`: ``{"type", "module", "message"}``, the message bounded to
  :data:`MAX_ERROR_MESSAGE_CHARS` (it may quote untrusted text);
* :func:`count_failure`: log an observation that failed and count it in the collector's
  ``recording_failures`` under the collector's own lock (the receipt says ``incomplete``).

Imports no agent framework.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from typing import Any

__all__ = ["CANCELLATIONS", "MAX_ERROR_MESSAGE_CHARS", "count_failure", "error_info", "failure_status"]

log = logging.getLogger("aer1")

#: Exceptions that end work without it failing: recorded with status ``cancelled``.
CANCELLATIONS: tuple[type[BaseException], ...] = (
    asyncio.CancelledError,
    concurrent.futures.CancelledError,
    GeneratorExit,
    KeyboardInterrupt,
)
#: Longest exception message kept in a step (the rest is cut, and the cut is said).
MAX_ERROR_MESSAGE_CHARS = 4000


def failure_status(exc: BaseException) -> str:
    """``cancelled`` for a cancellation (see :data:`CANCELLATIONS`), else ``error``."""
    return "cancelled" if isinstance(exc, CANCELLATIONS) else "error"


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception as e:  # an exception whose __str__ raises: say so instead
        text = f"<message unavailable: {type(e).__name__}>"
    if len(text) > MAX_ERROR_MESSAGE_CHARS:
        cut = len(text) - MAX_ERROR_MESSAGE_CHARS
        text = f"{text[:MAX_ERROR_MESSAGE_CHARS]}... [{cut} more characters]"
    return text


def error_info(exc: BaseException) -> dict[str, str]:
    """Type (qualified name), module and bounded message of ``exc``, as steps record them."""
    cls = type(exc)
    return {"type": cls.__qualname__, "module": cls.__module__, "message": _message(exc)}


def count_failure(collector: Any, what: str, exc: BaseException) -> None:
    """Log that observing ``what`` failed and count it in ``collector.recording_failures``.

    The count is taken under the collector's lock, as ``Collector.safe_record`` takes it,
    so concurrent hooks never lose a count. Never raises.
    """
    log.warning("aer1: could not observe %s: %s: %s", what, type(exc).__name__, _message(exc))
    lock = getattr(collector, "_lock", None)
    try:
        if lock is None:
            collector.recording_failures += 1
        else:
            with lock:
                collector.recording_failures += 1
    except Exception as e:  # not a Collector: nothing to count into
        log.debug("aer1: recording failure not counted: %s", e)
