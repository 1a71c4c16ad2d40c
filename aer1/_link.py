"""Linked receipts: the content of a ``link`` step, which binds a child receipt to its parent.

A nested run or a worker process keeps its own chain and its own receipt; the parent
records one ``link`` step per child. The step's ``target`` is the child's workflow_id and
its content is :func:`link_content` of the child: the members that identify the child's
whole chain (ids, Merkle root, chain head, step count, status, signer key id). The content
is a function of the child alone, so a verifier holding the child recomputes it and
compares its hash with the link step's ``receipt_hash``; no evidence file is needed.
See spec/linked.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._chain import PROFILE
from ._content_hash import content_hash
from .errors import MalformedInputError

__all__ = [
    "BUNDLE_ROOT_NAME",
    "LINK_FORMAT",
    "LINK_KIND",
    "LinkError",
    "link_content",
    "link_hash",
    "link_status",
]

#: The ``kind`` (and ``tool``) of a link step.
LINK_KIND = "link"
#: The ``link`` member of a link step's content: names this content layout and its version.
LINK_FORMAT = "aer1-link-v1"
#: The parent's file name in a saved bundle; each child is saved as ``<workflow_id>.json``.
BUNDLE_ROOT_NAME = "receipt.json"
#: Child workflow members copied into the link content when present (besides step_count, key_id).
_BOUND = ("workflow_id", "receipt_id", "merkle_root", "chain_head", "status", "closed_by")


class LinkError(MalformedInputError):
    """A receipt that cannot be linked (not a finished aer1-chain-v1 receipt)."""


def link_content(child: Mapping[str, Any]) -> dict[str, Any]:
    """The content of the link step that binds ``child`` (a finished aer1-chain-v1 receipt).

    Raises :class:`LinkError` when ``child`` lacks the members a link commits to.
    """
    if child.get("profile") != PROFILE:
        raise LinkError(f"only {PROFILE} receipts can be linked, got profile {child.get('profile')!r}")
    steps = child.get("steps")
    if not isinstance(steps, list) or not steps:
        raise LinkError("the child receipt has no steps")
    content: dict[str, Any] = {"link": LINK_FORMAT}
    for name in _BOUND:
        if name in child:
            value = child[name]
            if type(value) is not str or not value:
                raise LinkError(f"the child's {name} is not a non-empty string, got {value!r}")
            content[name] = value
    missing = [n for n in _BOUND[:5] if n not in content]
    if missing:
        raise LinkError(f"the child receipt lacks {', '.join(missing)}")
    content["step_count"] = len(steps)
    signature = child.get("signature")
    if signature is not None:
        kid = signature.get("key_id") if isinstance(signature, Mapping) else None
        if type(kid) is not str or not kid:
            raise LinkError("the child's signature has no key_id")
        content["key_id"] = kid
    return content


def link_hash(content: Mapping[str, Any]) -> str:
    """The ``receipt_hash`` of a link step with this content: hex(SHA-256(JCS(content)))."""
    return content_hash(dict(content))


def link_status(child_status: Any) -> str:
    """The link step's status: ``ok`` for a child whose status is ok, else ``error``.

    A child that failed or was cut short (``incomplete``, e.g. recovered from a journal
    after its process was killed) makes its link step, and so its parent, say so.
    """
    return "ok" if child_status == "ok" else "error"
