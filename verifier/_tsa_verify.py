"""Check 9's token verification: one RFC 3161 token against the TSA roots the auditor trusts.

Kept apart from :mod:`._timestamp` because it needs cryptography's X.509 and the RFC 3161
client, which take longer to load than a plain verification takes: they are loaded only
when TSA roots are given.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from rfc3161_client import (
    PKIStatus,
    TimeStampResponse,
    VerificationError,
    VerifierBuilder,
    decode_timestamp_response,
)

from .._keyring import format_time
from ..errors import Aer1Error
from ._tsa_trust import TsaTrust, nonce_ok

__all__ = ["Untrusted", "VerificationError", "self_signed", "verify_one"]

#: Imprint hash algorithms accepted (OID -> hashlib name), as RFC 3161 TSAs commonly offer.
_HASHES = {"2.16.840.1.101.3.4.2.1": "sha256", "2.16.840.1.101.3.4.2.2": "sha384", "2.16.840.1.101.3.4.2.3": "sha512"}
#: Accuracy assumed for a token that states none, in seconds.
_UNKNOWN_ACCURACY_S = 1.0


def self_signed(cert: x509.Certificate) -> bool:
    if cert.issuer != cert.subject:
        return False
    try:
        cert.verify_directly_issued_by(cert)
    except (InvalidSignature, UnsupportedAlgorithm, ValueError, TypeError):  # not its own issuer: not a root
        return False
    return True


def _token(entry: Mapping[str, str]) -> bytes:
    try:
        der = base64.b64decode(entry["token"], validate=True)
    except (binascii.Error, ValueError) as e:
        raise VerificationError("token is not base64") from e
    if base64.b64encode(der).decode("ascii") != entry["token"]:
        raise VerificationError("token is not canonical base64")
    return der


class Untrusted(VerificationError, Aer1Error):
    """The token is about this receipt, but its signature does not verify up to a trusted TSA root.

    Internal to check 9 (the check counts such a token out, never raises it to a caller).
    """


def _check_content(response: TimeStampResponse, entry: Mapping[str, str], message: bytes, trust: TsaTrust) -> None:
    """Granted, the recorded nonce, the demanded policy, this receipt's imprint: else VerificationError."""
    if response.status != PKIStatus.GRANTED:
        raise VerificationError("not granted")
    info = response.tst_info
    if not nonce_ok(entry["nonce"]):
        raise VerificationError("nonce is not 1 to 40 ASCII decimal digits")
    if info.nonce != int(entry["nonce"]):
        raise VerificationError("nonce differs from the one the receipt recorded")
    if trust.policy is not None and info.policy.dotted_string != trust.policy:
        raise VerificationError(f"policy {info.policy.dotted_string} differs from the one demanded (--tsa-policy)")
    algorithm = _HASHES.get(info.message_imprint.hash_algorithm.dotted_string)
    if algorithm is None:
        raise VerificationError(f"imprint hash {info.message_imprint.hash_algorithm.dotted_string} is not supported")
    if info.message_imprint.message != hashlib.new(algorithm, message).digest():
        raise VerificationError("imprint is not this receipt's digest (token over other content)")


def verify_one(entry: Mapping[str, str], message: bytes, trust: TsaTrust) -> dict[str, Any]:
    """Facts of one verified token; raises Untrusted, or VerificationError for a token not about this receipt."""
    try:
        response = decode_timestamp_response(_token(entry))
        _check_content(response, entry, message, trust)
    except VerificationError:
        raise
    except Exception as e:  # a hostile token is a failure whatever the decoder raises, never a traceback
        raise VerificationError(f"not a time-stamp response: {e}") from e
    # A fresh builder for each token: a reused one keeps certificates added for earlier ones.
    builder = VerifierBuilder(roots=list(trust.roots), intermediates=list(trust.intermediates),
                              nonce=int(entry["nonce"]))
    if trust.policy is not None:
        builder = builder.policy_id(x509.ObjectIdentifier(trust.policy))
    try:
        builder.build().verify_message(response, message)
    except Exception as e:  # hostile certificates inside the token: never a traceback
        raise Untrusted(f"does not chain to a trusted TSA root or its signature is invalid: {e}") from e
    info = response.tst_info
    signer = next(iter(response.signed_data.signer_infos), None)
    return {
        "tsa": entry["tsa"],
        "time": format_time(info.gen_time),
        "accuracy_s": _accuracy_s(info),
        "serial": str(info.serial_number),
        "policy": info.policy.dotted_string,
        "signer": signer.issuer.rfc4514_string() + f" #{signer.serial_number}" if signer else "",
    }


def _accuracy_s(info: Any) -> float:
    """The token's accuracy in seconds (RFC 3161: absent means unknown; taken as one second)."""
    acc = info.accuracy
    if acc is None:
        return _UNKNOWN_ACCURACY_S
    return float(acc.seconds or 0) + (acc.millis or 0) / 1e3 + (acc.micros or 0) / 1e6
