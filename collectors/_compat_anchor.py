"""aer1-autogen 0.1.15's chain-head anchoring calls, with RFC 3161 as the backend.

An anchor proof commits a receipt's chain head (its ``merkle_root``, with ``chain_head``
and the workflow members the close step binds) to something the producer cannot rewrite
later. The peer publishes the root to Nostr relays and OpenTimestamps calendars; here the
default (and only working) backend is ``rfc3161``: the same RFC 3161 tokens a collector
asks for at finalize (spec/timestamp.md), over the same imprint, so a proof is checked
offline against the auditor's TSA roots. ``nostr`` and ``opentimestamps`` are refused
with :class:`AnchorError` saying why (spec/compat.md). :func:`bip340_verify` is the
BIP-340 Schnorr check the peer exports, implemented from the BIP.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from rfc3161_client import VerificationError as TokenError

from aer1._imprint import DEFAULT_TSA_TIMEOUT_S, MAX_TIMESTAMPS, imprint_message
from aer1._timefmt import format_ns, now_ns
from aer1._timestamp import TSA, normalize_tsas, request_timestamps
from aer1.errors import Aer1Error
from aer1.verifier import PASS, TsaTrust, verify_receipt
from aer1.verifier._tsa_verify import Untrusted, verify_one

from ._compat_verdicts import VERDICT_FAIL, VERDICT_PASS, VERDICT_UNAVAILABLE

__all__ = [
    "NO_TSA_TRUST",
    "PROOF_FORMAT",
    "AnchorError",
    "NostrBackend",
    "OTSBackend",
    "RFC3161Backend",
    "anchor_chain_head",
    "anchor_verdict",
    "bip340_verify",
    "proof_from_json",
    "proof_to_json",
    "verify_anchor",
]

#: The proof's ``format`` (the peer's, so stored proofs keep their shape).
PROOF_FORMAT = "aer1-anchor-proof/1"
RFC3161 = "rfc3161"
#: Longest anchor proof text proof_from_json reads (tokens are at most 64 KiB each).
MAX_PROOF_CHARS = 1024 * 1024


class AnchorError(Aer1Error):
    """Anchoring failed on every backend, or a backend is refused."""


_NOSTR_REFUSED = (
    "the nostr anchor backend is refused: its proof is a relay's say-so that an event exists, "
    "which an auditor cannot check offline, and publishing needs network access and a secp256k1 "
    "key this package does not manage; use backends=('rfc3161',) with a TSA (spec/compat.md)"
)
_OTS_REFUSED = (
    "the opentimestamps anchor backend is refused: a calendar's pending attestation proves nothing "
    "until it is upgraded against the Bitcoin chain, which needs network access or a full node, so an "
    "auditor cannot check it offline; "
    "use backends=('rfc3161',) with a TSA (spec/compat.md)"
)


class NostrBackend:
    """Refused (see spec/compat.md): constructing one raises :class:`AnchorError` naming why."""

    name = "nostr"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AnchorError(_NOSTR_REFUSED)


class OTSBackend:
    """Refused (see spec/compat.md): constructing one raises :class:`AnchorError` naming why."""

    name = "opentimestamps"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise AnchorError(_OTS_REFUSED)


class RFC3161Backend:
    """Anchors by RFC 3161 tokens from ``tsa`` (a URL, a callable DER -> DER, or a list of them)."""

    name = RFC3161

    def __init__(self, tsa: TSA | Sequence[TSA] | None = None, timeout: float = DEFAULT_TSA_TIMEOUT_S) -> None:
        tsas = normalize_tsas(tsa)
        if not tsas:
            raise AnchorError("the rfc3161 anchor backend needs a TSA: backend_kwargs={'rfc3161': {'tsa': URL}}")
        if len(tsas) > MAX_TIMESTAMPS:
            raise AnchorError(f"the rfc3161 anchor backend takes at most {MAX_TIMESTAMPS} TSAs, got {len(tsas)}")
        self.tsas, self.timeout = tsas, timeout

    def anchor(self, workflow: Mapping[str, Any]) -> dict[str, Any]:
        """Tokens over the receipt's imprint; raises when no TSA gave one."""
        entries = request_timestamps(workflow, self.tsas, self.timeout, warn=False)
        if not any("token" in e for e in entries):
            raise AnchorError("no TSA gave a token: " + "; ".join(f"{e['tsa']}: {e['error']}" for e in entries))
        return {"timestamps": entries}


_BACKENDS: dict[str, Any] = {RFC3161: RFC3161Backend, NostrBackend.name: NostrBackend, OTSBackend.name: OTSBackend}


def _resolve(backends: Any, backend_kwargs: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, Any]]:
    """``backends``: names, or a mapping of name -> backend instance."""
    if isinstance(backends, Mapping):
        return [(str(name), backend) for name, backend in backends.items()]
    if isinstance(backends, str):
        backends = (backends,)
    resolved = []
    for name in backends:
        cls = _BACKENDS.get(name)
        if cls is None:
            raise ValueError(f"unknown anchor backend {name!r}; known: {sorted(_BACKENDS)}")
        resolved.append((name, cls(**dict(backend_kwargs.get(name, {})))))
    return resolved


def _checked_root(workflow: Any, doing: str = "refusing to anchor") -> str:
    """The receipt's merkle_root once our verifier passed the whole receipt; else AnchorError.

    The whole receipt, not its root alone: the root binds only the step ids, so a step edited
    after anchoring keeps it; the chain (check 5) binds every member of every step, and the
    tokens cover ``chain_head``. A receipt without the chain binds nothing an anchor could hold.
    """
    if not isinstance(workflow, Mapping):
        raise AnchorError("workflow is not a JSON object")
    report = verify_receipt(workflow)
    if not report.valid:
        shown = [f.reason for f in report.failures[:3]]
        more = f"; and {len(report.failures) - 3} more" if len(report.failures) > 3 else ""
        raise AnchorError(f"{doing} a receipt that does not verify: {'; '.join(shown)}{more}")
    if report.check("chain").status != PASS:
        raise AnchorError(f"{doing} a receipt without a checked hash chain: its steps' contents are not bound "
                          f"({report.check('chain').detail})")
    return str(workflow["merkle_root"])


def anchor_chain_head(
    workflow: Mapping[str, Any],
    backends: Any = (RFC3161,),
    backend_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Anchor the receipt's chain head; returns the proof. Raises AnchorError if every backend failed."""
    root = _checked_root(workflow)
    entries: list[dict[str, Any]] = []
    errors: list[str] = []
    for name, backend in _resolve(backends, backend_kwargs or {}):
        now = format_ns(now_ns())
        try:
            entries.append({"backend": name, "status": "confirmed", "proof": backend.anchor(workflow),
                            "anchored_at": now})  # fmt: skip
        except Exception as e:  # listed in the proof and in the error, never dropped
            errors.append(f"{name}: {e}")
            entries.append({"backend": name, "status": "failed", "error": str(e), "anchored_at": now})
    if not any(e["status"] == "confirmed" for e in entries):
        raise AnchorError("all anchor backends failed: " + "; ".join(errors))
    return {"format": PROOF_FORMAT, "receipt_id": workflow.get("receipt_id"), "merkle_root": root,
            "mode": "immediate", "anchored_at": format_ns(now_ns()), "backends": entries}  # fmt: skip


def _check_rfc3161(proof: Any, message: bytes, trust: TsaTrust | None) -> tuple[list[str], int]:
    """Failures of one rfc3161 entry's tokens, and how many chain to a trusted root."""
    entries = proof.get("timestamps") if isinstance(proof, Mapping) else None
    if not isinstance(entries, list) or not entries or len(entries) > MAX_TIMESTAMPS:
        return [f"rfc3161: want 1 to {MAX_TIMESTAMPS} timestamp entries, got {type(entries).__name__}"], 0
    failures: list[str] = []
    trusted = 0
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or "token" not in entry:
            continue  # a TSA that gave no token: nothing to check
        if not all(isinstance(entry.get(k), str) for k in ("tsa", "nonce", "token")):
            failures.append(f"rfc3161 entry {i}: want string tsa, nonce and token")
            continue
        try:
            verify_one(entry, message, trust if trust is not None else TsaTrust(roots=()))
            trusted += 1
        except Untrusted as e:
            if trust is not None:
                failures.append(f"rfc3161 entry {i}: {e}")
        except (TokenError, ValueError) as e:  # Untrusted is a TokenError too: caught above
            failures.append(f"rfc3161 entry {i}: {e}")
    return failures, trusted


class _Outcome:
    """What checking a proof found: failures, tokens from trusted TSAs, backends no one can check offline."""

    def __init__(self, failures: list[str], trusted: int = 0, rfc3161: int = 0,
                 unchecked: list[str] | None = None) -> None:  # fmt: skip
        self.failures, self.trusted, self.rfc3161 = failures, trusted, rfc3161
        self.unchecked = unchecked or []


def _verify(proof: Any, workflow: Any, tsa_trust: TsaTrust | None) -> _Outcome:
    if not isinstance(proof, Mapping):
        return _Outcome(["anchor proof is not a JSON object"])
    if not isinstance(workflow, Mapping):
        return _Outcome(["workflow is not a JSON object"])
    failures: list[str] = []
    if proof.get("format") != PROOF_FORMAT:
        failures.append(f"unknown anchor proof format {proof.get('format')!r}, want {PROOF_FORMAT!r}")
    if proof.get("receipt_id") != workflow.get("receipt_id"):
        failures.append("anchor proof receipt_id does not match the receipt")
    if "anchor_proof" in workflow:  # the peer's embedded form: the receipt anchored is the one without it
        workflow = {k: v for k, v in workflow.items() if k != "anchor_proof"}
    try:
        root = _checked_root(workflow, "the anchor does not hold for")
    except AnchorError as e:
        return _Outcome([*failures, str(e)])
    if proof.get("merkle_root") != root:
        return _Outcome([*failures, "anchored merkle_root is not the receipt's (a dropped or changed step changes "
                                    "the root)"])  # fmt: skip
    backends = proof.get("backends")
    confirmed = [e for e in backends if isinstance(e, Mapping) and e.get("status") == "confirmed"] \
        if isinstance(backends, list) else []  # fmt: skip
    if not confirmed:
        return _Outcome([*failures, "anchor proof has no confirmed backend"])
    outcome = _Outcome(failures)
    message = imprint_message(workflow)
    for entry in confirmed:
        if entry.get("backend") != RFC3161:
            outcome.unchecked.append(f"backend {str(entry.get('backend'))[:100]!r} cannot be checked offline "
                                     "(spec/compat.md)")  # fmt: skip
            continue
        more, ok = _check_rfc3161(entry.get("proof"), message, tsa_trust)
        outcome.failures += more
        outcome.trusted += ok
        outcome.rfc3161 += 1
    return outcome


#: The reason ``verify_anchor`` gives without ``tsa_trust``: the anchor is not shown to hold.
NO_TSA_TRUST = ("not checked: who issued the tokens (any TSA can sign a token over this receipt): "
                "give tsa_trust, the TSA roots you trust")


def verify_anchor(proof: Any, workflow: Any, tsa_trust: TsaTrust | None = None) -> list[str]:
    """Reasons the anchor proof does not hold for the receipt, [] only when it holds.

    It holds when the receipt verifies (every check our verifier runs on it, the hash chain
    included, not only its Merkle root), every token is granted, carries its nonce and is
    over this receipt's imprint, and at least one chains to a TSA root in ``tsa_trust``.
    Without ``tsa_trust`` it never holds: the list then says what was not checked
    (:data:`NO_TSA_TRUST`). A proof resting only on backends no one can check offline (the
    peer's Nostr and OpenTimestamps entries) does not hold either: each is a reason.
    """
    return _failures(_verify(proof, workflow, tsa_trust), tsa_trust)


def _failures(outcome: _Outcome, tsa_trust: TsaTrust | None) -> list[str]:
    failures = list(outcome.failures)
    if not failures and not outcome.rfc3161:
        failures += outcome.unchecked
    if not failures and tsa_trust is None:
        failures.append(NO_TSA_TRUST)
    if not failures and not outcome.trusted:
        failures.append("no token chains to a trusted TSA root")
    return failures


def anchor_verdict(proof: Any, workflow: Any, tsa_trust: TsaTrust | None) -> dict[str, Any]:
    """The ``anchor_verification`` verdict: pass only when a token chains to a trusted TSA root.

    ``unavailable`` when nothing failed but nothing could be established either: no TSA
    roots given, or only backends that cannot be checked offline.
    """
    outcome = _verify(proof, workflow, tsa_trust)
    failures = [f for f in _failures(outcome, tsa_trust) if f != NO_TSA_TRUST] \
        if outcome.rfc3161 or outcome.failures else []  # fmt: skip
    if failures:
        return {"verdict": VERDICT_FAIL, "detail": "; ".join(failures[:3]), "failures": failures}
    unchecked = ("; not checked: " + "; ".join(outcome.unchecked)) if outcome.unchecked else ""
    if not outcome.rfc3161:
        return {"verdict": VERDICT_UNAVAILABLE, "detail": "; ".join(outcome.unchecked)}
    if tsa_trust is None:
        return {"verdict": VERDICT_UNAVAILABLE,
                "detail": "the tokens are over this receipt's chain head, but who issued them is not checked: "
                          "give tsa_trust (the TSA roots you trust)" + unchecked}  # fmt: skip
    return {"verdict": VERDICT_PASS,
            "detail": "root recomputed from the steps; every token is over this receipt and one chains to a "
                      "trusted TSA root" + unchecked}  # fmt: skip


def proof_to_json(proof: Mapping[str, Any]) -> str:
    """The proof as JSON text."""
    return json.dumps(proof, indent=2, ensure_ascii=False)


def proof_from_json(text: str) -> dict[str, Any]:
    """A proof from JSON text (bounded in size; must be an object)."""
    if not isinstance(text, (str, bytes)) or len(text) > MAX_PROOF_CHARS:
        raise AnchorError(f"anchor proof: want JSON text of at most {MAX_PROOF_CHARS} characters")
    try:
        proof = json.loads(text)
    except ValueError as e:
        raise AnchorError(f"anchor proof is not JSON: {e}") from e
    if not isinstance(proof, dict):
        raise AnchorError(f"anchor proof: want a JSON object, got {type(proof).__name__}")
    return proof


# ------------------------------------------------------------------ BIP-340 (Schnorr)

_P = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F
_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_G = (0x79BE667EF9DCBBAC55A06295CE870B07029BFCDB2DCE28D959F2815B16F81798,
      0x483ADA7726A3C4655DA4FBFC0E1108A8FD17B448A68554199C47D08FFB10D4B8)  # fmt: skip
_Point = tuple[int, int] | None


def _tagged_hash(tag: str, data: bytes) -> bytes:
    tag_hash = hashlib.sha256(tag.encode()).digest()
    return hashlib.sha256(tag_hash + tag_hash + data).digest()


def _add(p: _Point, q: _Point) -> _Point:
    if p is None:
        return q
    if q is None:
        return p
    if p[0] == q[0] and p[1] != q[1]:
        return None
    if p == q:
        slope = 3 * p[0] * p[0] * pow(2 * p[1], -1, _P) % _P
    else:
        slope = (q[1] - p[1]) * pow(q[0] - p[0], -1, _P) % _P
    x = (slope * slope - p[0] - q[0]) % _P
    return x, (slope * (p[0] - x) - p[1]) % _P


def _mul(p: _Point, n: int) -> _Point:
    result: _Point = None
    while n:
        if n & 1:
            result = _add(result, p)
        p = _add(p, p)
        n >>= 1
    return result


def _lift_x(x: int) -> _Point:
    if x >= _P:
        return None
    y_sq = (pow(x, 3, _P) + 7) % _P
    y = pow(y_sq, (_P + 1) // 4, _P)
    if y * y % _P != y_sq:
        return None
    return x, y if y % 2 == 0 else _P - y


def bip340_verify(pubkey: bytes, msg: bytes, sig: bytes) -> bool:
    """BIP-340 Schnorr signature check: 32-byte x-only key, any message, 64-byte signature."""
    if not all(isinstance(v, bytes) for v in (pubkey, msg, sig)) or len(pubkey) != 32 or len(sig) != 64:
        return False
    point = _lift_x(int.from_bytes(pubkey, "big"))
    r, s = int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big")
    if point is None or r >= _P or s >= _N:
        return False
    e = int.from_bytes(_tagged_hash("BIP0340/challenge", sig[:32] + pubkey + msg), "big") % _N
    rp = _add(_mul(_G, s), _mul(point, _N - e))
    return rp is not None and rp[1] % 2 == 0 and rp[0] == r
