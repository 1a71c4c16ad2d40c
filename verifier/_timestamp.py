"""Check 9, ``timestamp``: the receipt's RFC 3161 tokens, against TSA roots the auditor trusts.

A token passes when it is granted, its signer chains (through intermediates given with the
roots) to a trusted root, its imprint is the receipt's digest (:mod:`aer1._imprint`), its
nonce is the one the receipt recorded, and its policy is the one demanded (if any). A
token that is not about this receipt fails the check; one about it whose TSA is not
trusted is only not counted, so long as another token verifies. The check reports each
verified TSA's time; the latest is the receipt's independent time (the key check uses it).
Without trusted roots nothing about a token is claimed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._imprint import (
    ENTRY_ERROR_MEMBERS,
    ENTRY_TOKEN_MEMBERS,
    MAX_TIMESTAMPS,
    MAX_TOKEN_BYTES,
    MAX_TSA_ERROR_CHARS,
    MAX_TSA_NAME_CHARS,
    TIMESTAMPS_MEMBER,
    imprint_message,
)
from ._report import NO_TOKEN, CheckResult
from ._tsa_trust import TsaTrust, nonce_ok

if TYPE_CHECKING:  # X.509 and the RFC 3161 client load only when TSA roots are given (._tsa_verify)
    from cryptography import x509

__all__ = ["CERT_SUFFIXES", "MAX_TRUST_CERTS", "TsaTrust", "check_timestamp", "load_tsa_trust", "nonce_ok"]

#: Files of a ``--tsa-roots`` folder that are read (PEM certificates).
CERT_SUFFIXES = (".pem", ".crt")
#: Most certificates read from a ``--tsa-roots`` folder; each file at most this many bytes.
MAX_TRUST_CERTS = 256
_MAX_CERT_FILE_BYTES = 256 * 1024
def load_tsa_trust(folder: str, policy: str | None = None) -> TsaTrust:
    """Certificates in ``folder`` (``*.pem``, ``*.crt``): self-signed ones are roots, the rest intermediates.

    Raises ValueError naming the file when something cannot be read or no root is found.
    """
    from cryptography import x509

    from ._tsa_verify import self_signed

    if not os.path.isdir(folder):
        raise ValueError(f"--tsa-roots {folder}: not a directory")
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(CERT_SUFFIXES))
    except OSError as e:
        raise ValueError(f"--tsa-roots {folder}: {e.strerror or e}") from e
    roots: list[x509.Certificate] = []
    intermediates: list[x509.Certificate] = []
    for name in names:
        path = os.path.join(folder, name)
        try:
            if not os.path.isfile(path) or os.path.getsize(path) > _MAX_CERT_FILE_BYTES:
                raise ValueError(f"not a regular file of at most {_MAX_CERT_FILE_BYTES} bytes")
            with open(path, "rb") as f:
                certs = x509.load_pem_x509_certificates(f.read())
        except (OSError, ValueError) as e:
            raise ValueError(f"--tsa-roots {path}: {getattr(e, 'strerror', None) or e}") from e
        for cert in certs:
            (roots if self_signed(cert) else intermediates).append(cert)
        if len(roots) + len(intermediates) > MAX_TRUST_CERTS:
            raise ValueError(f"--tsa-roots {folder}: more than {MAX_TRUST_CERTS} certificates")
    if not roots:
        raise ValueError(f"--tsa-roots {folder}: no self-signed root certificate in *.pem or *.crt files")
    if policy is not None:
        try:
            x509.ObjectIdentifier(policy)
        except ValueError as e:
            raise ValueError(f"--tsa-policy: got {policy[:60]!r}, want a dotted OID") from e
    return TsaTrust(tuple(roots), tuple(intermediates), policy)


def _entries(member: Any, result: CheckResult) -> list[dict[str, str]] | None:
    """The entries, when the member is well-formed; else a failure and None."""
    if not isinstance(member, list) or not 1 <= len(member) <= MAX_TIMESTAMPS:
        result.fail(f"{TIMESTAMPS_MEMBER} is not an array of 1 to {MAX_TIMESTAMPS} entries")
        return None
    for i, e in enumerate(member):
        ok = isinstance(e, dict) and set(e) in (ENTRY_TOKEN_MEMBERS, ENTRY_ERROR_MEMBERS) and all(
            isinstance(v, str) for v in e.values())
        if ok and not 0 < len(e["tsa"]) <= MAX_TSA_NAME_CHARS:
            ok = False
        if ok and "error" in e:
            ok = len(e["error"]) <= MAX_TSA_ERROR_CHARS
        elif ok:
            ok = nonce_ok(e["nonce"])
            ok = ok and len(e["token"]) <= (MAX_TOKEN_BYTES + 2) // 3 * 4
        if not ok:
            result.fail(f"{TIMESTAMPS_MEMBER}[{i}] is malformed: want {{tsa, nonce, token}} or {{tsa, error}} "
                        "strings within limits")
            return None
    return member


def check_timestamp(wf: Mapping[str, Any], trust: TsaTrust | None, result: CheckResult) -> None:
    """Check 9: every token verifies against ``trust``; facts: each TSA's time, the latest as ``time``."""
    if TIMESTAMPS_MEMBER not in wf:
        result.skip(NO_TOKEN)
        return
    entries = _entries(wf[TIMESTAMPS_MEMBER], result)
    if entries is None:
        return
    tokens = [e for e in entries if "token" in e]
    missing = [f"{e['tsa']}: {e['error']}" for e in entries if "error" in e]
    if missing:
        result.facts["missing"] = missing
    if not tokens:
        result.skip("no timestamp token: the TSA gave none at finalize (" + "; ".join(missing)[:300] + ")")
        return
    if trust is None:
        result.skip(f"{len(tokens)} token(s) present, not verified: give --tsa-roots DIR")
        return
    from ._tsa_verify import Untrusted, VerificationError, verify_one

    message = imprint_message(wf)
    verified: list[dict[str, Any]] = []
    untrusted: list[str] = []
    for i, entry in enumerate(entries):
        if "token" not in entry:
            continue
        where = f"{TIMESTAMPS_MEMBER}[{i}] from {entry['tsa'][:200]}"
        try:
            verified.append(verify_one(entry, message, trust))
        except Untrusted as e:
            untrusted.append(f"{where}: {e}")
        except VerificationError as e:
            result.fail(f"{where}: {e}")
    if result.failures:
        return
    if not verified:
        result.fail("no token verifies up to a trusted TSA root: " + "; ".join(untrusted)[:1000])
        return
    result.facts["untrusted"] = untrusted
    result.facts["tokens"] = verified
    result.facts["signers"] = sorted({v["signer"] for v in verified})
    latest = max(verified, key=lambda v: v["time"])
    result.facts["time"], result.facts["accuracy_s"] = latest["time"], latest["accuracy_s"]
    times = ", ".join(f"{v['time']} by {v['signer']}" for v in verified)
    result.passed(f"{len(verified)} token(s) verified against trusted TSA roots: TSA time {times}"
                  + (f"; {len(untrusted)} not verified (not counted): " + "; ".join(untrusted)[:500]
                     if untrusted else ""))
