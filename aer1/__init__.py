"""aer1: hash-chained, signed AER-1 workflow receipts for multi-agent runs.

The public surface, importable from ``aer1`` itself:

* recording: :class:`Collector` (collectors for AutoGen live in ``aer1.collectors``);
* verifying: :func:`verify_receipt` and :func:`verify_proof`, each giving a :class:`Report`;
* keys: :func:`generate_key_pair`, :func:`load_private_key`, :func:`load_public_key`, :func:`key_id`;
* showing: :func:`format_timeline`;
* errors: :class:`Aer1Error` and its kinds (see :mod:`aer1.errors`).

Names are loaded on first use, so ``import aer1.verifier`` loads the format layer only
(no collector, journal, evidence sink or redaction) and ``import aer1`` needs no agent
framework.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports
from .errors import Aer1Error, CouldNotVerifyError, MalformedInputError, UsageError, VerificationError

if TYPE_CHECKING:
    from .chain import PROFILE
    from .collector import Collector, CollectorClosedError
    from .receipt import DEFAULT_VERIFY_URL, KINDS
    from .signing import KeyFileError, SignatureInvalid, generate_key_pair, key_id, load_private_key, load_public_key
    from .timeline import format_timeline
    from .verifier import CheckResult, Failure, Report, verify_proof, verify_receipt

__all__ = [
    "DEFAULT_VERIFY_URL",
    "KINDS",
    "PROFILE",
    "Aer1Error",
    "CheckResult",
    "Collector",
    "CollectorClosedError",
    "CouldNotVerifyError",
    "Failure",
    "KeyFileError",
    "MalformedInputError",
    "Report",
    "SignatureInvalid",
    "UsageError",
    "VerificationError",
    "format_timeline",
    "generate_key_pair",
    "key_id",
    "load_private_key",
    "load_public_key",
    "verify_proof",
    "verify_receipt",
]

__version__ = "0.1.0"

#: Where each lazily loaded public name lives.
_HOMES = {
    "PROFILE": ".chain",
    "Collector": ".collector",
    "CollectorClosedError": ".collector",
    "DEFAULT_VERIFY_URL": ".receipt",
    "KINDS": ".receipt",
    "KeyFileError": ".signing",
    "SignatureInvalid": ".signing",
    "generate_key_pair": ".signing",
    "key_id": ".signing",
    "load_private_key": ".signing",
    "load_public_key": ".signing",
    "format_timeline": ".timeline",
    "CheckResult": ".verifier",
    "Failure": ".verifier",
    "Report": ".verifier",
    "verify_proof": ".verifier",
    "verify_receipt": ".verifier",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__, globals())
