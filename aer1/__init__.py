"""aer1: hash-chained, signed AER-1 workflow receipts for multi-agent runs.

``import aer1`` needs no agent framework: collectors for AutoGen live in
``aer1.collectors`` and import their framework only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .chain import PROFILE
from .collector import Collector, CollectorClosedError
from .receipt import DEFAULT_VERIFY_URL, KINDS

if TYPE_CHECKING:
    from .verifier import Report

__all__ = [
    "DEFAULT_VERIFY_URL",
    "KINDS",
    "PROFILE",
    "Collector",
    "CollectorClosedError",
    "verify_receipt",
]

__version__ = "0.1.0"


def verify_receipt(receipt: Any, **options: Any) -> Report:
    """Verify a receipt (a dict, or a path to a receipt file); see :mod:`aer1.verifier`."""
    from .verifier import verify_receipt as _verify

    return _verify(receipt, **options)
