"""Check 10, ``key``: was the signing key valid when it signed, by the auditor's keyring?

"When" is the independent time of a verified timestamp (check 9), never the receipt's own
clock. A key valid at that time passes, even if it was rotated out or revoked since; a
time outside the key's window or at or after its revocation fails. Without a verified
token the key's validity at signing cannot be established: the check says so (NOT
CHECKED), except for a revoked key, which fails, since nothing shows it signed before.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping

from ..keyring import KeyEntry, KeyringError, parse_keyring, parse_time
from ._parse import MalformedInput, parse_strict, read_limited
from ._report import PASS, CheckResult

__all__ = ["MAX_KEYRING_BYTES", "check_key", "load_keyring"]

#: Largest keyring file read.
MAX_KEYRING_BYTES = 8 * 1024 * 1024


def load_keyring(path: str) -> dict[str, KeyEntry]:
    """The keyring at ``path``, by key id; raises ValueError naming the file and the problem."""
    try:
        return parse_keyring(parse_strict(read_limited(path, MAX_KEYRING_BYTES, what="a keyring file"), what=path))
    except (MalformedInput, KeyringError) as e:
        raise ValueError(f"keyring {path}: {e}") from e
    except OSError as e:
        raise ValueError(f"keyring {path}: {e.strerror or e}") from e


def check_key(keyring: Mapping[str, KeyEntry] | None, c_sig: CheckResult, c_time: CheckResult,
              result: CheckResult) -> None:
    """Check 10: the signing key's validity at the independent time; facts: ``established``."""
    if keyring is None:
        result.skip("no --keyring given")
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
    if isinstance(when, str):
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
    if entry.revoked_at is not None:
        result.fail(f"key {kid} is revoked ({entry.revocation_reason}) and no verified timestamp shows it "
                    "signed before the revocation")
        return
    result.skip(f"key {kid} is in the keyring, but its validity at signing could not be established: "
                "no verified timestamp (independent time)")
