"""Bundle verification: a parent receipt and its linked children, checked as one tree.

A bundle is a folder of receipts (each with its evidence beside it, when disclosed).
Every receipt is verified on its own; the root is ``receipt.json`` (as saved by the
collector), or else the one receipt no other links to;
each ``link`` step of a receipt in the tree is followed to the child with the step's
``target`` workflow_id and checked against it (spec/linked.md). A child that is not in
the bundle leaves its link "not followed": the tree still verifies, and the verdict
names the links it could not follow.

A disclosed child is a bundle without its parent: the child (and any of its own
descendants) with one ``*.proof.json``, an inclusion proof of the parent's link step
(``aer1 prove``). The proof is then the root: it must verify with its root pinned
(``expected_root``, or a ``receipt`` signed by a trusted key), its step must be a link
step, and the link must bind exactly the child in the bundle.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import stat
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._canonical import CanonicalizationError
from .._limits import BUNDLE_PARALLEL_MIN_BYTES, MAX_FILES
from .._link import BUNDLE_ROOT_NAME, LINK_KIND, LinkError, link_content, link_hash, link_status
from .._member_rules import is_uuid
from ..errors import UsageError
from ._assemble import links_note
from ._parse import MalformedInput, parse_strict, read_limited
from ._proof import verify_proof
from ._report import PASS, Report, same_bytes

__all__ = [
    "FOLLOWED",
    "LINK_FAILED",
    "MAX_LINK_DEPTH",
    "NOT_FOLLOWED",
    "PARALLEL_MIN_BYTES",
    "BundleError",
    "BundleReport",
    "LinkResult",
    "RootPins",
    "check_bundle",
    "links_note",
]

FOLLOWED = "followed"
NOT_FOLLOWED = "not followed"
LINK_FAILED = "FAIL"
#: Receipt bytes in a bundle from which its receipts are verified in parallel processes
#: (below it, starting the processes costs more than they save).
PARALLEL_MIN_BYTES = BUNDLE_PARALLEL_MIN_BYTES
#: Deepest chain of links followed from the root (the report nests one level per link).
MAX_LINK_DEPTH = 64
_RECEIPT_SUFFIX = ".json"
_PROOF_SUFFIX = ".proof.json"


class BundleError(UsageError):
    """The bundle folder cannot be read at all (a usage error: exit code 2)."""


@dataclass
class LinkResult:
    """One link step of a receipt in the tree, and what following it found."""

    parent: str
    seq: int
    target: str | None
    result: str
    detail: str
    child: Node | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form (the child's subtree nested)."""
        return {"seq": self.seq, "target": self.target, "result": self.result, "detail": self.detail,
                "child": None if self.child is None else self.child.to_dict()}


@dataclass
class Node:
    """One receipt of the bundle: its own report, and its link steps once followed."""

    source: str
    report: Report
    workflow_id: str | None = None
    status: str | None = None
    closed_by: str | None = None
    link_steps: list[tuple[Any, Any, Any, Any]] = field(default_factory=list)  # seq, target, hash, status
    content: dict[str, Any] | None = None  # the link content a parent's link must carry
    links: list[LinkResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: this receipt and the links it holds."""
        return {"source": self.source, "workflow_id": self.workflow_id, "verdict": self.report.verdict,
                "status": self.status, "closed_by": self.closed_by, "steps": self.report.steps,
                "links": [link.to_dict() for link in self.links]}


@dataclass
class BundleReport:
    """The verdict on a bundle: every receipt's report, the tree from the root, what failed."""

    source: str
    nodes: list[Node]
    root: Node | None = None
    failures: list[str] = field(default_factory=list)
    links: list[LinkResult] = field(default_factory=list)
    #: Files of the folder that are not receipts (or cannot be read): the bundle is then MALFORMED.
    unreadable: int = 0
    #: aer1's own files in the folder that are not receipts (a keyring, a summary): "PATH: what", not verified.
    skipped: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        """True when the root and every followed child verify and every followed link matches."""
        return self.root is not None and not self.failures

    @property
    def verdict(self) -> str:
        """VALID, INVALID, or MALFORMED when a file of the folder is not a receipt (or no receipt is there)."""
        if self.unreadable or not self.nodes:
            return "MALFORMED"
        return "VALID" if self.valid else "INVALID"

    @property
    def exit_code(self) -> int:
        """0 valid, 1 invalid, 2 malformed."""
        return {"VALID": 0, "INVALID": 1}.get(self.verdict, 2)

    def count(self, result: str) -> int:
        """How many links ended with ``result``."""
        return sum(link.result == result for link in self.links)

    def basis_text(self) -> str:
        """What a VALID verdict rests on: the root's basis and how many links were followed."""
        assert self.root is not None
        missing = [link for link in self.links if link.result == NOT_FOLLOWED]
        followed = [link.child for link in self.links if link.result == FOLLOWED and link.child is not None]
        evidence = sum(child.report.basis()["evidence"] == "checked" for child in followed)
        parts = [f"bundle of {len(self.nodes)} receipts", f"root: {self.root.report.basis_text()}",
                 f"{len(self.links)} links, {self.count(FOLLOWED)} followed",
                 f"children's evidence checked for {evidence} of {len(followed)}"]
        if missing:
            parts.append(f"{len(missing)} NOT FOLLOWED: " + ", ".join(
                f"step {link.seq} of {link.parent} -> {link.target}" for link in missing))
        return "; ".join(parts)

    def to_text(self) -> str:
        """The tree, a line per receipt and per link, then the failures and the verdict."""
        lines = [f"bundle {self.source}: {self.verdict}"]

        def node_line(node: Node, depth: int) -> None:
            pad = "  " * depth
            state = node.report.verdict
            if node.report.failures:
                state += f": {node.report.failures[0].reason}"
                left = len(node.report.failures) - 1
                if left:
                    state += f" (and {left} more failure{'s' if left > 1 else ''}: --json lists every one)"
            extra = f", status {node.status}" if node.status else ""
            extra += f", closed by {node.closed_by}" if node.closed_by else ""
            lines.append(f"{pad}{os.path.basename(node.source)} (workflow {node.workflow_id}{extra}): {state}")
            for link in node.links:
                lines.append(f"{pad}  step {link.seq} link -> {link.target}: {link.result}: {link.detail}")
                if link.child is not None:
                    node_line(link.child, depth + 2)

        if self.root is not None:
            node_line(self.root, 1)
        for failure in self.failures:
            lines.append(f"  failure: {failure}")
        for skipped in self.skipped:
            lines.append(f"  not a receipt, skipped: {skipped}")
        if self.valid:
            lines.append(f"verdict: VALID ({self.basis_text()})")
        else:
            lines.append(f"verdict: {self.verdict}: {self.failures[0] if self.failures else 'no root receipt'}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (what ``aer1-verify --bundle --json`` prints)."""
        return {
            "source": self.source,
            "kind": "bundle",
            "verdict": self.verdict,
            "valid": self.valid,
            "exit_code": self.exit_code,
            "root": None if self.root is None else self.root.source,
            "root_kind": None if self.root is None else self.root.report.kind,
            "root_report": self.root.report.to_dict() if self.root and self.root.report.kind == "proof" else None,
            "tree": None if self.root is None else self.root.to_dict(),
            "links": {"total": len(self.links), "followed": self.count(FOLLOWED),
                      "not_followed": self.count(NOT_FOLLOWED), "failed": self.count(LINK_FAILED),
                      "not_followed_links": [{"parent": link.parent, "seq": link.seq, "target": link.target}
                                             for link in self.links if link.result == NOT_FOLLOWED]},
            "failures": list(self.failures),
            "skipped": list(self.skipped),
            "receipts": [n.report.to_dict() for n in self.nodes],
            "basis": self.basis_text() if self.valid else None,
        }


def _bundle_files(folder: str) -> tuple[list[str], list[str]]:
    """The receipt files directly in ``folder`` (``*.json``, proofs excluded) and the proofs, sorted."""
    try:
        names = sorted(os.listdir(folder))
    except OSError as e:
        raise BundleError(f"{folder}: {e.strerror or e}") from e
    files = [os.path.join(folder, n) for n in names if n.endswith(_RECEIPT_SUFFIX) and not n.endswith(_PROOF_SUFFIX)]
    proofs = [os.path.join(folder, n) for n in names if n.endswith(_PROOF_SUFFIX)]
    if not files:
        raise BundleError(f"{folder}: no *.json receipts in this bundle folder")
    if len(files) > MAX_FILES:
        raise BundleError(f"{folder}: more than {MAX_FILES} receipts in the bundle")
    return files, proofs


def _proof_root(path: str, expected_root: str | None, receipt: str | os.PathLike[str] | None,
                trusted_key_ids: Iterable[str] | None) -> tuple[Node, str | None]:
    """The root of a disclosed child: the proof of its parent's link step; why it cannot root the tree."""
    report = verify_proof(path, expected_root=expected_root, receipt=receipt, trusted_key_ids=trusted_key_ids)
    node = Node(path, report)
    if report.malformed:
        return node, f"the link proof {path} is unreadable: {report.checks[0].detail}"
    if report.check("members").status != PASS:
        return node, f"the link proof {path} does not verify: {report.failures[0].reason}"
    try:
        doc = parse_strict(read_limited(path), what=path)  # parsed and checked by verify_proof just now
    except (MalformedInput, OSError) as e:  # replaced since: nothing verified is read
        return node, f"the link proof {path} could not be read again: {e}"
    step = doc.get("step") if isinstance(doc, dict) else None
    if not isinstance(step, dict):
        return node, f"the link proof {path} changed while it was verified"
    node.workflow_id = doc["workflow_id"]
    if step.get("kind") != LINK_KIND:
        return node, f"the proof {path} is of a {step.get('kind')!r} step (seq {step.get('seq')}), not a link step"
    node.link_steps.append((step.get("seq"), step.get("target"), step.get("receipt_hash"), step.get("status")))
    if not report.valid:
        return node, f"the link proof {path} does not verify: {report.failures[0].reason}"
    return node, None


def _read_links(node: Node) -> str | None:
    """Fill the node's workflow members and link steps from its file; returns why it could not."""
    try:
        data = read_limited(node.source)
        if "sha256" in node.report.checks[0].facts and not same_bytes(data, node.report):  # not when streamed
            return f"{node.source}: the receipt changed while it was verified"
        wf = parse_strict(data, what=node.source)
    except (MalformedInput, OSError) as e:
        return f"{node.source}: links could not be read: {e}"
    if not isinstance(wf, dict) or not isinstance(wf.get("steps"), list):
        return f"{node.source}: not a receipt object with steps"
    node.workflow_id = wf.get("workflow_id") if isinstance(wf.get("workflow_id"), str) else None
    node.status = wf.get("status") if isinstance(wf.get("status"), str) else None
    node.closed_by = wf.get("closed_by") if isinstance(wf.get("closed_by"), str) else None
    for step in wf["steps"]:
        if isinstance(step, dict) and step.get("kind") == LINK_KIND:
            node.link_steps.append((step.get("seq"), step.get("target"), step.get("receipt_hash"),
                                    step.get("status")))
    if node.report.valid:
        try:
            node.content = link_content(wf)
        except LinkError:
            node.content = None  # a receipt outside the profile: no link can match it
    return None


def _examine(path: str) -> tuple[Node, str | None]:
    """Verify one receipt file and read its link steps (in a pool process for large bundles)."""
    from ._driver import verify_on_paths as check_receipt

    node = Node(path, check_receipt(path))
    return node, None if node.report.malformed else _read_links(node)


def _examine_all(files: list[str], jobs: int | None) -> list[tuple[Node, str | None]]:
    """Every file examined, in order: side by side in ``jobs`` processes when the bundle is large."""
    workers = min(jobs if jobs is not None else (os.cpu_count() or 1), len(files))
    if workers > 1:
        total = 0
        for path in files:
            with contextlib.suppress(OSError):
                total += os.stat(path).st_size
        if total >= PARALLEL_MIN_BYTES:
            try:
                with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                    return list(pool.map(_examine, files))
            except (OSError, BrokenProcessPool):
                pass  # no processes to be had here: verify in this one
    return [_examine(path) for path in files]


def _follow(bundle: BundleReport, node: Node, by_id: dict[str, Node], reached: set[str]) -> None:
    """Follow every link step of ``node`` (depth first, each child at most once)."""
    stack: list[tuple[Node, int]] = [(node, 0)]
    while stack:
        current, depth = stack.pop()
        pending: list[tuple[Node, int]] = []
        for seq, target, rhash, status in current.link_steps:
            parent = current.workflow_id or current.source
            if not is_uuid(target):
                link = LinkResult(parent, seq, None, LINK_FAILED, "the link step names no child workflow_id (target)")
            elif target not in by_id:
                link = LinkResult(parent, seq, target, NOT_FOLLOWED, "the child is not in the bundle")
            elif depth + 1 > MAX_LINK_DEPTH:
                link = LinkResult(parent, seq, target, LINK_FAILED,
                                  f"the tree is deeper than {MAX_LINK_DEPTH} links: not followed further")
            else:
                link = _check_link(parent, seq, target, rhash, status, by_id[target], reached)
                if link.result == FOLLOWED and link.child is not None:
                    pending.append((link.child, depth + 1))
            current.links.append(link)
            bundle.links.append(link)
            if link.result == LINK_FAILED:
                bundle.failures.append(f"step {seq} of {parent}: link -> {link.target}: {link.detail}")
        stack.extend(reversed(pending))


def _check_link(parent: str, seq: int, target: str, rhash: Any, status: Any, child: Node,
                reached: set[str]) -> LinkResult:
    """Check one link step against the child receipt with its target workflow_id."""
    if target in reached:
        return LinkResult(parent, seq, target, LINK_FAILED, f"{child.source} is linked more than once in the tree")
    reached.add(target)
    if not child.report.valid:
        first = child.report.failures[0].reason if child.report.failures else child.report.verdict
        return LinkResult(parent, seq, target, LINK_FAILED, f"the child {child.source} does not verify: {first}",
                          child)
    if child.content is None:
        return LinkResult(parent, seq, target, LINK_FAILED, f"the child {child.source} is not an aer1-chain-v1 "
                          "receipt: a link cannot bind it", child)
    try:
        want = link_hash(child.content)
    except CanonicalizationError as e:
        return LinkResult(parent, seq, target, LINK_FAILED, f"the child's link content cannot be hashed: {e}", child)
    if rhash != want:
        return LinkResult(parent, seq, target, LINK_FAILED,
                          f"the child {child.source} does not match its link (ids, merkle_root, chain_head, step "
                          f"count, status or key differ): got receipt_hash {rhash}, want {want}", child)
    if status != link_status(child.status):
        return LinkResult(parent, seq, target, LINK_FAILED,
                          f"link step status got {status!r}, want {link_status(child.status)!r} for a child with "
                          f"status {child.status!r}", child)
    closed = f", closed by {child.closed_by}" if child.closed_by else ""
    return LinkResult(parent, seq, target, FOLLOWED,
                      f"the child matches its link (status {child.status}{closed}, {child.report.steps} steps)", child)


class RootPins(Protocol):
    """What an auditor pins a bundle's root with (a :class:`~aer1.verifier.Trust` is one)."""

    @property
    def trusted_key_ids(self) -> frozenset[str] | None: ...
    @property
    def expected_root(self) -> str | None: ...
    @property
    def expected_head(self) -> str | None: ...
    @property
    def receipt(self) -> str | None: ...


def check_bundle(folder: str | os.PathLike[str], pins: RootPins, jobs: int | None) -> BundleReport:
    """Verify every receipt in ``folder``, find the root, follow and check every link.

    ``jobs``: processes that verify receipts side by side (default: one per core); a bundle
    smaller than :data:`PARALLEL_MIN_BYTES` is verified in this process.

    ``pins`` apply to the root: each followed child is bound to it by its link (workflow
    and receipt ids, Merkle root, chain head, step count, status and signer key id). A
    folder holding a ``*.proof.json`` is a disclosed child: the proof of its parent's link
    step is the root, pinned by ``expected_root`` or by ``receipt`` (a parent receipt
    signed by a key of ``trusted_key_ids``), as for any proof.
    """
    from ._driver import verify_on_paths as check_receipt

    trusted_key_ids, expected_root = pins.trusted_key_ids, pins.expected_root
    expected_head, receipt = pins.expected_head, pins.receipt
    source = os.fspath(folder)
    try:
        mode = os.stat(source).st_mode
    except OSError as e:
        raise BundleError(f"{source}: {e.strerror or e}") from e
    if not stat.S_ISDIR(mode):
        raise BundleError(f"{source}: not a folder (a bundle is a folder of receipts)")
    files, proofs = _bundle_files(source)
    if proofs:
        if len(proofs) > 1:
            raise BundleError(f"{source}: {len(proofs)} proofs; a disclosed child comes with exactly one, the proof "
                              "of its parent's link step")
        if expected_head is not None:
            raise BundleError("--expected-head cannot apply to a disclosed child (its root is a proof, which has no "
                              "chain_head)")
        if trusted_key_ids is not None and receipt is None:
            raise BundleError("--key/--trusted-keys apply to a disclosed child's link proof only with --receipt "
                              "(a proof carries no signature)")
    elif receipt is not None:
        raise BundleError("--receipt pins the root of a link proof: the bundle holds no *.proof.json")
    examined = _examine_all(files, jobs)
    own = [(node, node.report.checks[0].facts.get("own_file")) for node, _ in examined]
    examined = [e for e, (_, what) in zip(examined, own, strict=True) if what is None]
    nodes = [node for node, _ in examined]
    bundle = BundleReport(source, nodes, skipped=[f"{node.source}: {what}" for node, what in own if what])
    by_id: dict[str, Node] = {}
    for node, why in examined:
        if node.report.malformed:
            bundle.unreadable += 1  # input that is not a receipt: MALFORMED, never a receipt that failed
            bundle.failures.append(f"{node.source}: unreadable: {node.report.checks[0].detail}")
            continue
        if why is not None:
            bundle.failures.append(why)
            continue
        if node.workflow_id is None:
            bundle.failures.append(f"{node.source}: no workflow_id")
        elif node.workflow_id in by_id:
            bundle.failures.append(f"{node.source} and {by_id[node.workflow_id].source} share workflow_id "
                                   f"{node.workflow_id}")
        else:
            by_id[node.workflow_id] = node
    if proofs:
        return _disclosed(bundle, proofs[0], by_id, expected_root, receipt, trusted_key_ids)
    named = [n for n in by_id.values() if os.path.basename(n.source) == BUNDLE_ROOT_NAME]
    if named:
        roots = named
    else:
        targets = {t for n in by_id.values() for _, t, _, _ in n.link_steps if isinstance(t, str)}
        roots = [n for wid, n in by_id.items() if wid not in targets]
    if len(roots) != 1:
        names = ", ".join(n.source for n in roots) or "none (every receipt is linked from another)"
        bundle.failures.insert(0, f"no {BUNDLE_ROOT_NAME}, and not exactly one receipt linked from no other; "
                               f"found {len(roots)}: {names}")
        return bundle
    root = roots[0]
    if trusted_key_ids is not None or expected_root is not None or expected_head is not None:
        root.report = check_receipt(root.source, trusted_key_ids=trusted_key_ids, expected_root=expected_root,
                                     expected_head=expected_head)
    bundle.root = root
    if not root.report.valid:
        bundle.failures.insert(0, f"the root {root.source} does not verify: {root.report.failures[0].reason}")
    assert root.workflow_id is not None
    reached = {root.workflow_id}
    _follow(bundle, root, by_id, reached)
    _unreached(bundle, by_id, reached, "the root's tree")
    return bundle


def _disclosed(bundle: BundleReport, proof: str, by_id: dict[str, Node], expected_root: str | None,
               receipt: str | os.PathLike[str] | None, trusted_key_ids: Iterable[str] | None) -> BundleReport:
    """A disclosed child: the proof of the parent's link step roots the tree; the child must be here."""
    root, why = _proof_root(proof, expected_root, receipt, trusted_key_ids)
    bundle.root = root
    if why is not None:
        bundle.failures.insert(0, why)
    reached = {root.workflow_id} if root.workflow_id is not None else set()
    _follow(bundle, root, by_id, reached)
    for link in root.links:
        if link.result == NOT_FOLLOWED:
            bundle.failures.append(f"the child {link.target} that the link proof binds is not in the bundle")
    _unreached(bundle, by_id, reached, "the proof's tree")
    return bundle


def _unreached(bundle: BundleReport, by_id: dict[str, Node], reached: set[str], tree: str) -> None:
    """Fail every receipt of the bundle that the tree did not reach (a stray or swapped-in one)."""
    for node in by_id.values():
        if node.workflow_id not in reached:
            bundle.failures.append(f"{node.source} (workflow {node.workflow_id}) is not linked from {tree}")
