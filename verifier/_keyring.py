"""Check 10, ``key``: was the signing key valid when it signed, by the auditor's keyring?

"When" is the independent time of a verified timestamp (check 9), never the receipt's own
clock, and it dates the key's use only through the receipt's ``key_proof`` (a signature by
the key that the tokens cover): a token alone dates the content, which anyone could have
had stamped before stealing a key. A key valid at that time passes, even if it was
rotated out or revoked since; a time outside the key's window or at or after its
revocation fails. Without a verified token and a key proof, the key's validity at signing
cannot be established: the check says so (NOT CHECKED), except for a revoked key, which
fails, since nothing shows it signed before.
"""

from __future__ import annotations

import base64
import datetime as _dt
from collections.abc import Mapping
from typing import Any

from .._canonical import CanonicalizationError
from .._imprint import KEY_PROOF_MEMBER, key_proof_input
from .._keyring import KeyEntry, KeyringError, parse_keyring, parse_time
from ._parse import MalformedInput, parse_strict, read_limited
from ._report import NO_KEYRING, PASS, CheckResult

__all__ = ["MAX_KEYRING_BYTES", "check_key", "load_keyring"]

#: Largest keyring file read.
MAX_KEYRING_BYTES = 8 * 1024 * 1024
_SIG_LEN = 64


def load_keyring(path: str) -> dict[str, KeyEntry]:
    """The keyring at ``path``, by key id; raises ValueError naming the file and the problem."""
    try:
        return parse_keyring(parse_strict(read_limited(path, MAX_KEYRING_BYTES, what="a keyring file"), what=path))
    except (MalformedInput, KeyringError) as e:
        raise ValueError(f"keyring {path}: {e}") from e
    except OSError as e:
        raise ValueError(f"keyring {path}: {e.strerror or e}") from e


def _key_proof_fault(wf: Mapping[str, Any], entry: KeyEntry) -> str | None:
    """Why the receipt's key proof does not show ``entry``'s key signed its members, or None when it does."""
    proof = wf[KEY_PROOF_MEMBER]
    if not isinstance(proof, dict) or set(proof) != {"key_id", "value"} or proof["key_id"] != entry.key_id:
        return f"{KEY_PROOF_MEMBER} is not {{key_id, value}} for key {entry.key_id}"
    from cryptography.exceptions import InvalidSignature  # loaded only for a dated key proof
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    value = proof["value"]
    try:
        raw = base64.b64decode(value, validate=True) if isinstance(value, str) else b""
    except ValueError:
        raw = b""
    if len(raw) != _SIG_LEN or base64.b64encode(raw).decode("ascii") != value:
        return f"{KEY_PROOF_MEMBER} value is not canonical base64 of a {_SIG_LEN}-byte signature"
    try:
        Ed25519PublicKey.from_public_bytes(entry.public_key).verify(raw, key_proof_input(wf))
    except (InvalidSignature, CanonicalizationError):
        return f"{KEY_PROOF_MEMBER} does not verify under key {entry.key_id}"
    return None


def check_key(wf: Mapping[str, Any], keyring: Mapping[str, KeyEntry] | None, c_sig: CheckResult,
              c_time: CheckResult, result: CheckResult) -> None:
    """Check 10: the signing key's validity at the independent time; facts: ``established``."""
    if keyring is None:
        result.skip(NO_KEYRING)
        return
    kid = c_sig.facts.get("key_id")
    if c_sig.status != PASS or not isinstance(kid, str):
        result.skip("no valid signature to check the key of")
        return
    entry = keyring.get(kid)
    if entry is None:
        result.fail("the signing key is not in the keyring", actual=kid)
        return
    when = c_time.facts.get("time") if c_time.status == PASS else None
    dated = isinstance(when, str) and KEY_PROOF_MEMBER in wf
    if dated:
        fault = _key_proof_fault(wf, entry)
        if fault is not None:
            result.fail(fault)
            return
    if dated and isinstance(when, str):
        t = parse_time(when, "TSA time")
        slack = _dt.timedelta(seconds=float(c_time.facts.get("accuracy_s") or 0))
        why = entry.invalid_at(t + slack)
        if why is not None:
            result.fail(f"key {kid} signed at TSA time {when}, {why}")
            return
        result.facts["established"] = True
        result.passed(f"key {kid} was valid at TSA time {when}"
                      + (" (revoked since)" if entry.revoked_at is not None else ""))
        return
    result.facts["established"] = False
    why = ("the verified tokens date the content, not the key's use (no key_proof)" if isinstance(when, str)
           else "no verified timestamp (independent time)")
    if entry.revoked_at is not None:
        result.fail(f"key {kid} is revoked ({entry.revocation_reason}) and nothing shows it signed before the "
                    f"revocation: {why}")
        return
    result.skip(f"key {kid} is in the keyring, but its validity at signing could not be established: {why}")
