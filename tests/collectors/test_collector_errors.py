"""The one description of failures every collector uses (``aer1.collectors._errors``)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading

import pytest

from aer1 import Collector
from aer1.collectors._errors import MAX_ERROR_MESSAGE_CHARS, count_failure, error_info, failure_status


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (asyncio.CancelledError(), "cancelled"),
        (concurrent.futures.CancelledError(), "cancelled"),
        (GeneratorExit(), "cancelled"),
        (KeyboardInterrupt(), "cancelled"),
        (ValueError("x"), "error"),
        (TimeoutError(), "error"),
    ],
)
def test_failure_status(exc: BaseException, status: str) -> None:
    assert failure_status(exc) == status


def test_error_info_shape_and_bounds() -> None:
    assert error_info(ValueError("bad")) == {"type": "ValueError", "module": "builtins", "message": "bad"}
    long = error_info(ValueError("y" * (MAX_ERROR_MESSAGE_CHARS + 10)))
    assert long["message"] == "y" * MAX_ERROR_MESSAGE_CHARS + "... [10 more characters]"
    assert error_info(Unprintable())["message"] == "<message unavailable: RuntimeError>"
    assert error_info(Unprintable())["type"] == "Unprintable"


def test_count_failure_counts_under_the_lock_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    collector = Collector(goal="failures")
    with caplog.at_level(logging.WARNING, logger="aer1"):
        threads = [threading.Thread(target=lambda: [count_failure(collector, "x", ValueError("v"))
                                                    for _ in range(200)]) for _ in range(4)]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert collector.recording_failures == 800
    assert "aer1: could not observe x: ValueError: v" in caplog.text
    receipt = collector.finalize()
    assert receipt["status"] == "incomplete" and receipt["recording_failures"] == 800
    count_failure(object(), "nothing to count into", ValueError("v"))  # never raises
