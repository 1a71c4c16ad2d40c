"""aer1: hash-chained, signed AER-1 workflow receipts for multi-agent runs.

The public surface, importable from ``aer1`` itself:

* recording: :class:`Collector` (collectors for AutoGen live in ``aer1.collectors``), its
  redaction (:func:`default_redactor`, :func:`credential_redactor`, :func:`is_secret_key`;
  :data:`Redactor` is the type of ``Collector(redact=...)``: a value in, what is recorded out),
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
from ._version import __version__ as __version__
from .errors import Aer1Error, CouldNotVerifyError, MalformedInputError, UsageError, VerificationError

if TYPE_CHECKING:
    from ._canonical import CanonicalizationError, canonical_bytes, check_exact, exact_bytes, restore
    from ._chain import PROFILE
    from ._collector import Collector, CollectorClosedError
    from ._journal import Journal, JournalError
    from ._keyring import KeyEntry, KeyringError, parse_keyring
    from ._link import LinkError, link_content, link_hash
    from ._proof import build_step_proof
    from ._receipt import DEFAULT_VERIFY_URL, KINDS
    from ._recover import RecoveryError, RecoveryResult, recover_journal
    from ._redact import Redactor, credential_redactor, default_redactor, is_secret_key
    from ._signing import (
        KeyFileError,
        SignatureInvalid,
        generate_key_pair,
        key_id,
        load_private_key,
        load_public_key,
        sign_receipt,
    )
    from ._timeline import format_timeline
    from .verifier import CheckResult, Failure, Report, verify_bundle, verify_proof, verify_receipt

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


#: Where each lazily loaded public name lives.
_HOMES = {
    "CanonicalizationError": "._canonical",
    "canonical_bytes": "._canonical",
    "check_exact": "._canonical",
    "exact_bytes": "._canonical",
    "restore": "._canonical",
    "PROFILE": "._chain",
    "Collector": "._collector",
    "CollectorClosedError": "._collector",
    "DEFAULT_VERIFY_URL": "._receipt",
    "KINDS": "._receipt",
    "Journal": "._journal",
    "JournalError": "._journal",
    "KeyEntry": "._keyring",
    "KeyringError": "._keyring",
    "parse_keyring": "._keyring",
    "LinkError": "._link",
    "link_content": "._link",
    "link_hash": "._link",
    "build_step_proof": "._proof",
    "RecoveryError": "._recover",
    "RecoveryResult": "._recover",
    "recover_journal": "._recover",
    "Redactor": "._redact",
    "credential_redactor": "._redact",
    "default_redactor": "._redact",
    "is_secret_key": "._redact",
    "KeyFileError": "._signing",
    "SignatureInvalid": "._signing",
    "generate_key_pair": "._signing",
    "key_id": "._signing",
    "load_private_key": "._signing",
    "load_public_key": "._signing",
    "sign_receipt": "._signing",
    "format_timeline": "._timeline",
    "CheckResult": ".verifier",
    "Failure": ".verifier",
    "Report": ".verifier",
    "verify_proof": ".verifier",
    "verify_receipt": ".verifier",
    "verify_bundle": ".verifier",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__, globals())
