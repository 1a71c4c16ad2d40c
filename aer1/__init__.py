"""aer1: hash-chained, signed AER-1 workflow receipts for multi-agent runs.

The public surface, importable from ``aer1`` itself:

* recording: :class:`Collector` (collectors for AutoGen live in ``aer1.collectors``), its
  redaction (:func:`default_redactor`, :func:`credential_redactor`, :func:`is_secret_key`),
  its crash-safe :class:`Journal` and :func:`recover_journal`;
* verifying: :func:`verify_receipt`, :func:`verify_proof` and :func:`verify_bundle`, each
  giving a :class:`Report`; :func:`build_step_proof` discloses one step;
* canonical JSON: :func:`canonical_bytes`, :func:`exact_bytes`, :func:`check_exact`, :func:`restore`;
* linking: :func:`link_content` and :func:`link_hash`;
* keys: :func:`generate_key_pair`, :func:`load_private_key`, :func:`load_public_key`, :func:`key_id`,
  :func:`sign_receipt`, and an auditor's keyring (:func:`parse_keyring`, :class:`KeyEntry`);
* showing: :func:`format_timeline`;
* errors: :class:`Aer1Error` and its kinds (see :mod:`aer1.errors`).

Every other module under ``aer1`` has a leading underscore: internal, free to change.

Names are loaded on first use, so ``import aer1.verifier`` loads the format layer only
(no collector, journal, evidence sink or redaction) and ``import aer1`` needs no agent
framework.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports
from .errors import Aer1Error, CouldNotVerifyError, MalformedInputError, UsageError, VerificationError

if TYPE_CHECKING:
    from .canonical import CanonicalizationError, canonical_bytes, check_exact, exact_bytes, restore
    from .chain import PROFILE
    from .collector import Collector, CollectorClosedError
    from .journal import Journal, JournalError
    from .keyring import KeyEntry, KeyringError, parse_keyring
    from .link import LinkError, link_content, link_hash
    from .proof import build_step_proof
    from .receipt import DEFAULT_VERIFY_URL, KINDS
    from .recover import RecoveryError, RecoveryResult, recover_journal
    from .redact import Redactor, credential_redactor, default_redactor, is_secret_key
    from .signing import (
        KeyFileError,
        SignatureInvalid,
        generate_key_pair,
        key_id,
        load_private_key,
        load_public_key,
        sign_receipt,
    )
    from .timeline import format_timeline
    from .verifier import CheckResult, Failure, Report, verify_proof, verify_receipt
    from .verifier._bundle import verify_bundle

__all__ = [
    "DEFAULT_VERIFY_URL",
    "KINDS",
    "PROFILE",
    "Aer1Error",
    "CanonicalizationError",
    "CheckResult",
    "Collector",
    "CollectorClosedError",
    "CouldNotVerifyError",
    "Failure",
    "Journal",
    "JournalError",
    "KeyEntry",
    "KeyFileError",
    "KeyringError",
    "LinkError",
    "MalformedInputError",
    "RecoveryError",
    "RecoveryResult",
    "Redactor",
    "Report",
    "SignatureInvalid",
    "UsageError",
    "VerificationError",
    "build_step_proof",
    "canonical_bytes",
    "check_exact",
    "credential_redactor",
    "default_redactor",
    "exact_bytes",
    "format_timeline",
    "generate_key_pair",
    "is_secret_key",
    "key_id",
    "link_content",
    "link_hash",
    "load_private_key",
    "load_public_key",
    "parse_keyring",
    "recover_journal",
    "restore",
    "sign_receipt",
    "verify_bundle",
    "verify_proof",
    "verify_receipt",
]

__version__ = "0.1.0"

#: Where each lazily loaded public name lives.
_HOMES = {
    "CanonicalizationError": ".canonical",
    "canonical_bytes": ".canonical",
    "check_exact": ".canonical",
    "exact_bytes": ".canonical",
    "restore": ".canonical",
    "PROFILE": ".chain",
    "Collector": ".collector",
    "CollectorClosedError": ".collector",
    "DEFAULT_VERIFY_URL": ".receipt",
    "KINDS": ".receipt",
    "Journal": ".journal",
    "JournalError": ".journal",
    "KeyEntry": ".keyring",
    "KeyringError": ".keyring",
    "parse_keyring": ".keyring",
    "LinkError": ".link",
    "link_content": ".link",
    "link_hash": ".link",
    "build_step_proof": ".proof",
    "RecoveryError": ".recover",
    "RecoveryResult": ".recover",
    "recover_journal": ".recover",
    "Redactor": ".redact",
    "credential_redactor": ".redact",
    "default_redactor": ".redact",
    "is_secret_key": ".redact",
    "KeyFileError": ".signing",
    "SignatureInvalid": ".signing",
    "generate_key_pair": ".signing",
    "key_id": ".signing",
    "load_private_key": ".signing",
    "load_public_key": ".signing",
    "sign_receipt": ".signing",
    "format_timeline": ".timeline",
    "CheckResult": ".verifier",
    "Failure": ".verifier",
    "Report": ".verifier",
    "verify_proof": ".verifier",
    "verify_receipt": ".verifier",
    "verify_bundle": ".verifier._bundle",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__, globals())
