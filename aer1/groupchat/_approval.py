"""Approval gate for tools that need confirmation.

A port decides (approve, deny, or "pending" for a deferred decision). An approval by
the gate's own port yields a one-use :class:`ApprovalToken` bound to the run, the call
id, the tool and the exact arguments the tool receives (their RFC 8785 bytes, which
determine the values and their JSON types one-to-one; see :func:`arguments_digest`).
Tokens are HMAC-SHA256 tags under a secret that exists only inside one run's
:class:`TokenAuthority`; the authority also remembers which tokens were spent, so a
token is good for exactly one call.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import secrets
import struct
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, runtime_checkable

from aer1._content_hash import content_hash
from aer1.errors import VerificationError

Outcome = Literal["approved", "denied", "pending"]
APPROVED: Final = "approved"
DENIED: Final = "denied"
PENDING: Final = "pending"

APPROVAL_ID_PREFIX = "apr_"
APPROVAL_ID_BYTES = 12
GRANT_ID_PREFIX = "grt_"
GRANT_ID_BYTES = 16
RUN_SECRET_BYTES = 32
MAC_DOMAIN = b"aer1-groupchat-approval-v1\x00"
PENDING_PREFIX = "approval required: "
#: Requests a :class:`DeferredApproval` keeps waiting at once, and decisions it keeps for
#: retries. Past it, new requests are denied (fail closed) and the oldest kept decision is
#: dropped (its retry asks again), so an unattended port cannot grow without bound.
MAX_DEFERRED_APPROVALS = 1024


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the RFC 8785 bytes of ``arguments``, which must be exact JSON data.

    Nothing is normalized: a value with no exact JSON form (a lone surrogate, a non-finite
    or an unsafe number, a non-JSON type) raises ``CanonicalizationError`` rather than
    sharing another value's digest.
    """
    return content_hash(dict(arguments))


def new_approval_id() -> str:
    """A fresh, unguessable approval request id (``apr_`` + hex)."""
    return APPROVAL_ID_PREFIX + secrets.token_hex(APPROVAL_ID_BYTES)


@dataclass(frozen=True)
class ToolApprovalRequest:
    """What a port is asked to decide: one tool call with its validated arguments.

    ``arguments`` is the port's own deep copy (editing it changes nothing but is seen as
    an edit); ``digest`` is fixed when the request is made, so it always names what was
    asked about.
    """

    run_id: str
    call_id: str
    tool: str
    arguments: Mapping[str, Any]
    approval_id: str = field(default_factory=new_approval_id)
    digest: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "digest", arguments_digest(self.arguments))


@dataclass(frozen=True)
class ApprovalDecision:
    """A port's answer. ``arguments`` is set when a reviewer edited them (never applied)."""

    outcome: Outcome
    reason: str | None = None
    arguments: Mapping[str, Any] | None = None

    @classmethod
    def approve(cls, reason: str | None = None) -> ApprovalDecision:
        """An approval of the call exactly as requested."""
        return cls(APPROVED, reason)

    @classmethod
    def deny(cls, reason: str | None = None) -> ApprovalDecision:
        """A denial: the tool does not run and the model sees an error."""
        return cls(DENIED, reason)

    @classmethod
    def pending(cls, reason: str | None = None) -> ApprovalDecision:
        """No decision yet: the tool does not run and the model is told to wait."""
        return cls(PENDING, reason)


@runtime_checkable
class ApprovalPort(Protocol):
    """Decides approval requests; ``name`` is recorded with every decision."""

    name: str

    async def request(self, request: ToolApprovalRequest) -> ApprovalDecision:
        """Decide one request."""
        ...


Reviewer = Callable[[ToolApprovalRequest], "bool | ApprovalDecision | Awaitable[bool | ApprovalDecision]"]


class CallbackApproval:
    """A port that asks a callback (sync or async) returning a bool or a decision."""

    name = "callback"

    def __init__(self, reviewer: Reviewer) -> None:
        self._reviewer = reviewer

    async def request(self, request: ToolApprovalRequest) -> ApprovalDecision:
        """Ask the reviewer; True approves, False denies."""
        answer = self._reviewer(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, ApprovalDecision):
            return answer
        if isinstance(answer, bool):
            return ApprovalDecision.approve() if answer else ApprovalDecision.deny("denied by reviewer")
        raise TypeError(f"an approval reviewer must return a bool or an ApprovalDecision, got {answer!r}")


class DeferredApproval:
    """A port that never decides on the spot: it answers "pending" and keeps the request.

    Someone decides later with :meth:`resolve`; a retry of the same tool with the
    same arguments in the same run then gets that decision (once). At most ``limit``
    requests wait at once: past that, a new request is denied (and recorded as such)
    until some are resolved or :meth:`forget_run` drops a finished run's requests.
    """

    name = "deferred"

    def __init__(self, limit: int = MAX_DEFERRED_APPROVALS) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive int, got {limit!r}")
        self.limit = limit
        self.pending: dict[str, ToolApprovalRequest] = {}
        self._resolved: dict[tuple[str, str, str], ApprovalDecision] = {}

    async def request(self, request: ToolApprovalRequest) -> ApprovalDecision:
        """Return a decision made earlier for this call's twin, else "pending" (or a denial when full)."""
        key = (request.run_id, request.tool, request.digest)
        decided = self._resolved.pop(key, None)
        if decided is not None:
            return decided
        if len(self.pending) >= self.limit:
            return ApprovalDecision.deny(
                f"too many approvals waiting: {len(self.pending)}, limit {self.limit}; resolve some first"
            )
        self.pending[request.approval_id] = request
        return ApprovalDecision.pending(f"waiting for a decision on {request.approval_id}")

    def resolve(self, approval_id: str, approved: bool, reason: str | None = None) -> None:
        """Decide a pending request; raises KeyError for an unknown id."""
        request = self.pending.pop(approval_id)
        decision = ApprovalDecision.approve(reason) if approved else ApprovalDecision.deny(reason or "denied")
        key = (request.run_id, request.tool, request.digest)
        self._resolved.pop(key, None)
        while len(self._resolved) >= self.limit:
            # dropping a kept decision fails closed: the retry is asked again
            del self._resolved[next(iter(self._resolved))]
        self._resolved[key] = decision

    def forget_run(self, run_id: str) -> int:
        """Drop the waiting requests and kept decisions of one run; returns how many were dropped."""
        waiting = [a for a, r in self.pending.items() if r.run_id == run_id]
        for approval_id in waiting:
            del self.pending[approval_id]
        kept = [k for k in self._resolved if k[0] == run_id]
        for key in kept:
            del self._resolved[key]
        return len(waiting) + len(kept)


@dataclass(frozen=True)
class ApprovalToken:
    """A one-use permission to run one call; only a :class:`TokenAuthority` makes valid ones."""

    grant_id: str
    run_id: str
    call_id: str
    tool: str
    arguments_digest: str
    mac: str = field(repr=False)


def _mac_message(*fields: str) -> bytes:
    parts = [MAC_DOMAIN]
    for value in fields:
        data = value.encode("utf-8")
        parts.append(struct.pack(">I", len(data)))
        parts.append(data)
    return b"".join(parts)


class TokenRefused(VerificationError):
    """A token does not authorize this call; the message says why."""


class TokenAuthority:
    """Issues and redeems approval tokens for one run.

    Its secret is drawn fresh per run and never leaves this object, so a token from
    another run, or one built by hand, fails the HMAC check. Spent grants are
    remembered, so a token (or a replay of its call) works once.
    """

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._secret = secrets.token_bytes(RUN_SECRET_BYTES)
        self._spent: set[str] = set()
        self._gated_calls: set[str] = set()

    def _tag(self, grant_id: str, run_id: str, call_id: str, tool: str, digest: str) -> str:
        message = _mac_message(grant_id, run_id, call_id, tool, digest)
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def first_gate(self, call_id: str) -> bool:
        """True the first time a call id reaches the gate in this run (False for a replay)."""
        if call_id in self._gated_calls:
            return False
        self._gated_calls.add(call_id)
        return True

    def issue(self, call_id: str, tool: str, arguments: Mapping[str, Any]) -> ApprovalToken:
        """A token for exactly this call of this run."""
        grant_id = GRANT_ID_PREFIX + secrets.token_hex(GRANT_ID_BYTES)
        digest = arguments_digest(arguments)
        mac = self._tag(grant_id, self.run_id, call_id, tool, digest)
        return ApprovalToken(grant_id, self.run_id, call_id, tool, digest, mac)

    def redeem(self, token: Any, *, call_id: str, tool: str, arguments: Mapping[str, Any]) -> ApprovalToken:
        """Spend ``token`` on this call, or raise :class:`TokenRefused` saying why."""
        if not isinstance(token, ApprovalToken):
            raise TokenRefused("no approval token")
        expected = self._tag(token.grant_id, token.run_id, token.call_id, token.tool, token.arguments_digest)
        if not hmac.compare_digest(expected, token.mac):
            raise TokenRefused("token is forged or belongs to another run")
        if token.run_id != self.run_id:
            raise TokenRefused("token belongs to another run")
        if token.call_id != call_id:
            raise TokenRefused(f"token is for call {token.call_id!r}, not {call_id!r}")
        if token.tool != tool:
            raise TokenRefused(f"token is for tool {token.tool!r}, not {tool!r}")
        if not hmac.compare_digest(token.arguments_digest, arguments_digest(arguments)):
            raise TokenRefused("arguments differ from the approved ones")
        if token.grant_id in self._spent:
            raise TokenRefused("token was already used")
        self._spent.add(token.grant_id)
        return token

    def discard(self, token: ApprovalToken | None) -> None:
        """Spend a token that will not be used (it must not outlive its call)."""
        if token is not None:
            self._spent.add(token.grant_id)
