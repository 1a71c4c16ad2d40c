"""What check 9 trusts (:class:`TsaTrust`) and the form of a recorded nonce.

Kept apart from the check (:mod:`._timestamp`) and the token verification
(:mod:`._tsa_verify`) so that both name them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # X.509 loads only when TSA roots are given
    from cryptography import x509

__all__ = ["TsaTrust", "nonce_ok"]

#: Longest nonce recorded (decimal digits of an unsigned 64-bit value, with room).
_MAX_NONCE_DIGITS = 40


def nonce_ok(text: Any) -> bool:
    """A recorded nonce: 1 to 40 ASCII decimal digits (``int()`` would also take other scripts' digits)."""
    return type(text) is str and 0 < len(text) <= _MAX_NONCE_DIGITS and text.isascii() and text.isdigit()


@dataclass(frozen=True)
class TsaTrust:
    """What the auditor trusts: root certificates, intermediates to reach them, a policy demanded."""

    roots: tuple[x509.Certificate, ...]
    intermediates: tuple[x509.Certificate, ...] = ()
    policy: str | None = None
