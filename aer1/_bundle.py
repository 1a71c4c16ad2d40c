"""Linking child receipts into a parent collector, and saving the parent with its children.

A child arrives as a finished receipt (a dict, or its JSON bytes as sent by another
process or machine), optionally with its evidence file's bytes, or as a finalized
:class:`~aer1.Collector` of the same process. :func:`link_child` checks the child,
records the parent's ``link`` step (spec/linked.md) and keeps the child so that
:func:`save_bundle` writes the whole tree into one folder for ``aer1-verify --bundle``.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ._layout import receipt_json
from ._link import BUNDLE_ROOT_NAME, LINK_KIND, LinkError, link_content, link_status
from ._receipt import evidence_path_for, is_uuid

__all__ = ["BUNDLE_ROOT_NAME", "LinkedChild", "child_file_name", "evidence_bytes", "link_child", "save_bundle"]

_LINKING = threading.Lock()


@dataclass
class LinkedChild:
    """A child receipt linked into a parent, with its evidence and its own linked children."""

    receipt: dict[str, Any]
    evidence: bytes | None
    seq: int
    children: list[LinkedChild] = field(default_factory=list)


@runtime_checkable
class Linking(Protocol):
    """What linking asks of a collector (:class:`aer1.Collector`): its receipt, its saved files, its children.

    Named here rather than imported, so that the collector imports linking and never the reverse.
    """

    linked_children: dict[str, LinkedChild]
    linked_tree_ids: set[str]

    def receipt(self) -> dict[str, Any]:
        """The finalized receipt (finalizing it when it is not yet)."""

    def save(self, path: str | os.PathLike[str], workflow: Mapping[str, Any] | None = None) -> str:
        """Write the receipt and its evidence beside it; the receipt path."""

    def record(self, tool: str, content: Any, *, agent: str | None = None, kind: str | None = None,
               status: str = "ok", started_at: Any = None, ended_at: Any = None,
               target: str | None = None) -> dict[str, Any]:
        """Record one step; its header."""


def child_file_name(workflow_id: str) -> str:
    """``<workflow_id>.json``: the name a child receipt is saved under in a bundle."""
    return f"{workflow_id}.json"


def evidence_bytes(collector: Linking, receipt: Mapping[str, Any]) -> bytes | None:
    """The evidence file of ``collector``'s finalized ``receipt``, as bytes (None without evidence).

    For sending a receipt to another process or machine with its evidence: nothing is
    assumed about a shared disk.
    """
    with tempfile.TemporaryDirectory(prefix="aer1-link-") as folder:
        path = collector.save(os.path.join(folder, "child.json"), workflow=receipt)
        evidence_file = evidence_path_for(path)
        if not os.path.exists(evidence_file):
            return None
        with open(evidence_file, "rb") as f:
            return f.read()


def _parse_child(child: Any) -> tuple[dict[str, Any], bytes | None, list[LinkedChild]]:
    """(receipt, evidence bytes or None, grandchildren) from what was given as ``child``."""
    if isinstance(child, Linking):
        receipt = child.receipt()
        return receipt, evidence_bytes(child, receipt), list(child.linked_children.values())
    if isinstance(child, (bytes, bytearray, memoryview)):
        from .verifier._parse import MalformedInput, parse_strict

        try:
            parsed = parse_strict(bytes(child), what="the child receipt")
        except MalformedInput as e:
            raise LinkError(str(e)) from e
        if not isinstance(parsed, dict):
            raise LinkError(f"the child receipt is a JSON {type(parsed).__name__}, not an object")
        return parsed, None, []
    if isinstance(child, Mapping):
        return dict(child), None, []
    raise TypeError(f"child must be a receipt (dict or JSON bytes) or a Collector, got {type(child).__name__}")


def _check_child(receipt: dict[str, Any], evidence: bytes | None) -> None:
    """Refuse a child that does not verify (with its evidence, when given)."""
    from .verifier import verify_receipt

    if evidence is None:
        report = verify_receipt(receipt)
    else:
        with tempfile.TemporaryDirectory(prefix="aer1-link-") as folder:
            path = os.path.join(folder, "child.evidence.jsonl")
            with open(path, "wb") as f:
                f.write(evidence)
            report = verify_receipt(receipt, evidence=path)
    if not report.valid:
        raise LinkError(f"the child receipt does not verify: {report.failures[0].reason}")


def link_child(
    parent: Linking,
    child: Any,
    *,
    agent: str | None = None,
    evidence: bytes | None = None,
    started_at: Any = None,
    ended_at: Any = None,
    verify: bool = True,
    children: list[LinkedChild] | None = None,
) -> dict[str, Any]:
    """Record a link step in ``parent`` binding ``child``; returns the step's header.

    ``child``: a finished receipt (dict or JSON bytes) or a Collector (finalized here).
    ``evidence``: the child's evidence file as bytes, kept for the bundle. With ``verify``
    (the default) a child that does not verify is refused with :class:`LinkError`.
    ``children``: the child's own linked children, for a child given as its finalized
    receipt (a Collector given as ``child`` brings its own).
    """
    receipt, own_evidence, grandchildren = _parse_child(child)
    if children is not None:
        grandchildren = [*grandchildren, *children]
    if evidence is None:
        evidence = own_evidence
    content = link_content(receipt)  # raises LinkError before any check reads a malformed child
    if not is_uuid(content["workflow_id"]):
        raise LinkError(f"the child's workflow_id is not a lowercase UUID, got {content['workflow_id']!r}")
    if verify:
        _check_child(receipt, evidence)
    with _LINKING:  # one link step per child, even when two threads link the same child
        if content["workflow_id"] in parent.linked_children:
            raise LinkError(f"workflow {content['workflow_id']} is already linked into this receipt")
        # A receipt reached twice in a bundle fails its verification: refuse it here instead.
        brought = _tree_ids([receipt, *(c.receipt for c in _flatten(grandchildren))])
        clash = sorted(parent.linked_tree_ids & brought)
        if clash:
            raise LinkError(f"workflow {clash[0]} is already in this receipt's tree of links: a bundle "
                            "may hold each receipt once")
        header = parent.record(LINK_KIND, content, kind=LINK_KIND, agent=agent,
                               status=link_status(receipt["status"]), target=content["workflow_id"],
                               started_at=started_at, ended_at=ended_at)
        parent.linked_children[content["workflow_id"]] = LinkedChild(receipt, evidence, header["seq"], grandchildren)
        parent.linked_tree_ids |= brought
    return header


def _tree_ids(receipts: list[Mapping[str, Any]]) -> set[str]:
    """The workflow ids of ``receipts`` and of every child their link steps bind."""
    ids: set[str] = set()
    for r in receipts:
        ids.add(r["workflow_id"])
        steps = r.get("steps")
        if isinstance(steps, list):
            ids.update(step["target"] for step in steps
                       if (isinstance(step, dict) or isinstance(step, Mapping))  # dict first: the common case
                       and step.get("kind") == LINK_KIND and isinstance(step.get("target"), str))
    return ids


def _flatten(children: list[LinkedChild]) -> list[LinkedChild]:
    out: list[LinkedChild] = []
    stack = list(reversed(children))
    while stack:
        c = stack.pop()
        out.append(c)
        stack.extend(reversed(c.children))
    return out


def _write_file(path: str, data: bytes) -> None:
    """Write ``path`` whole or not at all (a private temporary file beside it, then a rename)."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".aer1-bundle-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def save_bundle(parent: Linking, folder: str | os.PathLike[str],
                workflow: Mapping[str, Any] | None = None) -> list[str]:
    """Write the parent (``receipt.json``) and every linked descendant into ``folder``.

    Each receipt's evidence, when known, goes beside it. Returns the receipt paths written,
    the parent first.
    """
    target = os.fspath(folder)
    os.makedirs(target, exist_ok=True)
    children = _flatten(list(parent.linked_children.values()))
    names = {BUNDLE_ROOT_NAME, *(child_file_name(c.receipt["workflow_id"]) for c in children)}
    stale = sorted(n for n in os.listdir(target) if n.endswith(".json") and n not in names)
    if stale:  # the verifier would find receipts that are not in this tree
        raise FileExistsError(f"{target} already holds other receipts ({', '.join(stale[:3])}): "
                              "save a bundle into an empty folder")
    paths = [parent.save(os.path.join(target, BUNDLE_ROOT_NAME), workflow=workflow)]
    for c in children:
        path = os.path.join(target, child_file_name(c.receipt["workflow_id"]))
        _write_file(path, receipt_json(c.receipt))
        if c.evidence is not None:
            _write_file(evidence_path_for(path), c.evidence)
        paths.append(path)
    return paths
