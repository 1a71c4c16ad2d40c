"""One object for what an auditor trusts and requires; it verifies receipts, proofs, bundles and summaries alike.

A :class:`Trust` is built once, either from objects already at hand (``Trust(...)``) or from
the files an auditor keeps (:meth:`Trust.load`: key files, a keyring file, a folder of TSA
roots, a policy file and its ``[trust]``), and is then asked to verify: ``aer1-verify`` is a
layer of options over it. What a kind of input cannot use is refused, never ignored
(spec/verifier.md, "Trust as a library").
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import MalformedInputError, UsageError
from ._report import PASS, CheckResult, Report

if TYPE_CHECKING:
    from .._keyring import KeyEntry
    from ._bundle import BundleReport
    from ._policy import Policy
    from ._tlog import LogTrust
    from ._tsa_trust import TsaTrust

__all__ = ["Examined", "SummaryResult", "Trust", "verify_bundle", "verify_proof"]

#: Receipt inputs: a parsed dict, a path to a receipt file, or its bytes.
ReceiptInput = Mapping[str, Any] | str | os.PathLike[str] | bytes


@dataclass
class Examined:
    """A receipt's report, with what a run of many files keeps besides it."""

    report: Report
    #: The receipt parsed (None when it was streamed and not read again, or could not be read).
    workflow: dict[str, Any] | None = None
    #: The names of the policy rules violated (empty without a policy).
    rules: list[str] = field(default_factory=list)
    #: The evidence file checked, resolved (the given one, or the one beside a receipt file), or None.
    evidence: str | None = None
    #: The receipt's log entry (spec/log.md) when a log is checked; else why not.
    log_entry: bytes | None = None
    log_why: str = ""
    #: Without an entry (its chain check did not pass), the receipt's ``b"<workflow_id>/<receipt_id>"`` when
    #: they could be read: a completeness run names it not matching the entry the log lists for those ids.
    log_ids: bytes | None = None


@dataclass(frozen=True)
class SummaryResult:
    """A signed verification summary re-checked: its checks, what it summarized, and its verdict."""

    source: str
    checks: list[CheckResult]
    facts: dict[str, Any]
    verdict: str
    exit_code: int


@dataclass(frozen=True, eq=False)
class Trust:
    """What the auditor trusts (keys, a keyring, TSA roots, log keys) and requires (pinned values, a policy).

    ``trusted_key_ids``: key ids whose signatures are authentic (a receipt signed by another
    fails); ``keyring``: key windows and revocations for check 10; ``tsa_trust``: TSA roots
    for check 9; ``expected_root`` / ``expected_head``: values kept elsewhere (check 8);
    ``receipt``: a receipt file signed by a trusted key that pins a proof's root;
    ``policy``: what every receipt must hold (its check ``policy``); ``log``: the log
    check's keys. Every member is optional; none given checks what a receipt proves alone.
    """

    trusted_key_ids: frozenset[str] | None = None
    keyring: Mapping[str, KeyEntry] | None = None
    tsa_trust: TsaTrust | None = None
    expected_root: str | None = None
    expected_head: str | None = None
    receipt: str | None = None
    policy: Policy | None = None
    log: LogTrust | None = None
    #: The files :meth:`load` read (``keyring``, ``tsa_roots``, ``tsa_policy``: given, or named by
    #: the policy's ``[trust]``), so that a record of a verdict can name what it rested on.
    files: Mapping[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.trusted_key_ids is not None and not isinstance(self.trusted_key_ids, frozenset):
            if isinstance(self.trusted_key_ids, str):
                raise UsageError("trusted_key_ids: want an iterable of key ids, got one string")
            object.__setattr__(self, "trusted_key_ids", frozenset(self.trusted_key_ids))
        if self.receipt is not None:
            object.__setattr__(self, "receipt", os.fspath(self.receipt))
        p = self.policy
        if p is not None and ((p.keyring is not None and self.keyring is None)
                              or (p.tsa_roots is not None and self.tsa_trust is None)):
            raise UsageError(f"the policy {p.name!r} names [trust] files that are not loaded: build the trust with "
                             "Trust.load(policy=...)")

    @classmethod
    def load(
        cls,
        *,
        keys: Iterable[str | os.PathLike[str]] = (),
        key_ids: Iterable[str] | None = None,
        keyring: str | os.PathLike[str] | None = None,
        tsa_roots: str | os.PathLike[str] | None = None,
        tsa_policy: str | None = None,
        policy: Policy | str | os.PathLike[str] | None = None,
        require: Iterable[str] = (),
        expected_root: str | None = None,
        expected_head: str | None = None,
        receipt: str | os.PathLike[str] | None = None,
        log: LogTrust | None = None,
    ) -> Trust:
        """A trust from the auditor's files, combined as ``aer1-verify`` combines its options.

        ``keys``: public key files (PEM or 64-char hex) and ``key_ids``: key ids, all trusted;
        ``keyring``: a keyring file (spec/keys.md), whose keys are trusted too, within their
        windows; ``tsa_roots``: a folder of TSA certificates (with ``tsa_policy``, the OID
        every token must carry); ``policy``: a policy file (spec/policy.md) or a parsed one,
        whose ``[trust]`` fills the keyring and TSA files not given (two different ones are
        refused); ``require``: the ``--require`` shorthands (``"chain,signature"``). A
        policy's ``signers`` are the trusted keys when no key is given. Raises
        :class:`~aer1.errors.UsageError` for a combination that cannot hold,
        :class:`~aer1.errors.MalformedInputError` for a file that cannot be used.
        """
        require = list(require)
        if isinstance(policy, (str, os.PathLike)):  # the policy module loads only when a policy is given
            from ._policy import load_policy

            parsed: Policy | None = load_policy(os.fspath(policy))
        else:
            parsed = policy
        files: dict[str, str | None] = {"keyring": None if keyring is None else os.fspath(keyring),
                                        "tsa_roots": None if tsa_roots is None else os.fspath(tsa_roots),
                                        "tsa_policy": tsa_policy}
        if parsed is not None:
            for option, attr in (("--keyring", "keyring"), ("--tsa-roots", "tsa_roots"),
                                 ("--tsa-policy", "tsa_policy")):
                named, given = getattr(parsed, attr), files[attr]
                if named is None:
                    continue
                if given is None:
                    files[attr] = named
                elif (given != named if attr == "tsa_policy" else os.path.realpath(given) != os.path.realpath(named)):
                    raise UsageError(f"{option} {given} and the policy's [trust] {attr} {named} disagree: "
                                     "give one of them")
        if files["tsa_policy"] is not None and files["tsa_roots"] is None:
            raise UsageError("--tsa-policy goes with --tsa-roots")
        from ._time_cli import load_time_options

        try:
            timing = load_time_options(files["tsa_roots"], files["tsa_policy"], files["keyring"])
        except ValueError as e:
            raise MalformedInputError(str(e)) from e
        trusted = None if key_ids is None else set(key_ids)
        keys = list(keys)
        if keys:
            from .._signing import key_id, load_public_key

            trusted = (trusted or set()) | {key_id(load_public_key(k)) for k in keys}
        if timing["keyring"] is not None:
            trusted = (trusted or set()) | set(timing["keyring"])
        if require:
            from ._policy import Policy, parse_require

            names = frozenset().union(*(parse_require(r) for r in require))
            if names:
                parsed = (parsed or Policy()).with_requirements(names)
        if parsed is not None:
            if parsed.signers is not None and trusted is None:
                trusted = set(parsed.signers)
            if "signature" in parsed.require and trusted is None:
                raise UsageError("signature is required, but no key is trusted: give --key, --trusted-keys or "
                                 "a policy's [require] signers")
        return cls(None if trusted is None else frozenset(trusted), timing["keyring"], timing["tsa_trust"],
                   expected_root, expected_head, None if receipt is None else os.fspath(receipt), parsed, log, files)

    # ------------------------------------------------------------------ receipts

    def verify_receipt(self, receipt: ReceiptInput, *, evidence: str | os.PathLike[str] | None = None,
                       jobs: int = 1) -> Report:
        """Checks 1 to 10 of ``receipt``, then the log check and the policy when this trust has them.

        ``evidence`` and ``jobs`` are :func:`aer1.verifier.verify_receipt`'s. A storage URL
        (``s3://bucket/key.json``) is verified from a private copy of its bytes and the files beside it.
        """
        from .._storage import is_url

        if isinstance(receipt, str) and is_url(receipt):
            if evidence is not None and is_url(os.fspath(evidence)):
                raise UsageError("evidence: give a local file (the evidence beside a receipt in storage is found "
                                 "by itself)")
            from ._staged import verify_object

            return verify_object(receipt, lambda local: self.examine(local, evidence=evidence, jobs=jobs).report)
        return self.examine(receipt, evidence=evidence, jobs=jobs).report

    def examine(self, receipt: ReceiptInput, *, evidence: str | os.PathLike[str] | None = None,
                jobs: int = 1, log_walked: bool = False) -> Examined:
        """:meth:`verify_receipt`, keeping what a run of many files needs besides the report.

        ``log_walked``: a completeness run answers each receipt's log check from the walked log,
        so only the entry is computed here (the check still runs when a policy needs it).
        """
        from ._driver import verify_kept

        path = os.fspath(receipt) if isinstance(receipt, (str, os.PathLike)) else None
        if self.log is not None and path is None:
            raise UsageError("the log check reads NAME.tlog-proof beside a receipt file: give the receipt's path")
        report, parsed = verify_kept(receipt, evidence=evidence, trusted_key_ids=self.trusted_key_ids,
                                     expected_root=self.expected_root, expected_head=self.expected_head,
                                     tsa_trust=self.tsa_trust, keyring=self.keyring, jobs=jobs)
        out = Examined(report)
        if path is not None:
            from ._evidence import evidence_for

            found = evidence_for(path, None if evidence is None else os.fspath(evidence))
            out.evidence = None if found is None else os.fspath(found)
        else:
            out.evidence = None if evidence is None else os.fspath(evidence)
        chain = report.check("chain")
        bound = not report.malformed and chain.status == PASS
        if isinstance(receipt, Mapping):
            out.workflow = dict(receipt) if bound else None
        elif bound and isinstance(receipt, bytes) and self.policy is not None and self.policy.needs_workflow:
            from ._parse import parse_strict

            out.workflow = parse_strict(receipt, what="the receipt")
        elif bound and path is not None and ("status" not in chain.facts or self.log is not None or (
                self.policy is not None and self.policy.needs_workflow)):
            if isinstance(parsed, dict):  # the receipt as the checks parsed it: not parsed again
                out.workflow = parsed
            else:  # streamed or cut: parsed once more (or not at all, when too large to hold)
                from ._policy import load_workflow

                out.workflow, _ = load_workflow(path, report)
        if self.log is not None and path is not None:
            from ._tlog import check_receipt_log, receipt_entry, receipt_ids

            out.log_entry, out.log_why = receipt_entry(out.workflow) if bound else (
                None, "its chain check did not pass")
            if not bound:
                out.log_ids = receipt_ids(parsed)
            if not log_walked or self.policy is not None:
                check_receipt_log(report, path, self.log, out.log_entry, out.log_why)
        if self.policy is not None:
            from ._policy import apply_policy

            out.rules = apply_policy(report, self.policy, path, out.evidence, workflow=out.workflow)
        return out

    # ------------------------------------------------------------------ proofs, bundles, summaries

    def _refuse(self, what: str, members: Iterable[tuple[str, Any]], why: str) -> None:
        given = [name for name, value in members if value is not None]
        if given:
            raise UsageError(f"{', '.join(given)} cannot apply to {what} ({why}): build a trust without "
                             + ("it" if len(given) == 1 else "them"))

    def verify_proof(self, proof: ReceiptInput) -> Report:
        """A one-step proof (spec/verifier.md, "Proofs"), its root pinned by ``expected_root`` or ``receipt``.

        The policy applies (what needs a chain, evidence or steps fails: a proof has none);
        the log check does not (it is a receipt's). A keyring, TSA roots or an expected head
        are refused: a proof carries no token, signature or chain head.
        """
        return self.examine_proof(proof).report

    def examine_proof(self, proof: ReceiptInput) -> Examined:
        """:meth:`verify_proof`, keeping the names of the policy rules violated."""
        from ._proof import verify_proof as check_proof

        self._refuse("a proof", (("expected_head", self.expected_head), ("keyring", self.keyring),
                                 ("tsa_trust", self.tsa_trust)), "a proof carries no token, signature or chain_head")
        out = Examined(check_proof(proof, expected_root=self.expected_root, receipt=self.receipt,
                                   trusted_key_ids=self.trusted_key_ids))
        if self.policy is not None:
            from ._policy import apply_policy

            out.rules = apply_policy(out.report, self.policy, None, None)
        return out

    def verify_bundle(self, folder: str | os.PathLike[str], *, jobs: int | None = None) -> BundleReport:
        """A bundle folder: every receipt, its root found, every link followed (checks 1 to 8 of each).

        The trusted keys and pinned values apply to the root (``receipt`` to a disclosed
        child's link proof); a policy, keyring, TSA roots or log keys are refused.
        """
        from ._bundle import check_bundle

        self._refuse("a bundle", (("policy", self.policy), ("keyring", self.keyring), ("tsa_trust", self.tsa_trust),
                                  ("log", self.log)), "it verifies each receipt with checks 1 to 8")
        return check_bundle(folder, self, jobs)

    def verify_summary(self, summary: str | os.PathLike[str]) -> SummaryResult:
        """A signed verification summary (``aer1-verify --attest``): its form, signature and the files it names.

        Its signature is trusted when ``trusted_key_ids`` names its key; the rest is refused.
        """
        from ._attest import check_summary, summary_verdict

        self._refuse("a summary", (("expected_root", self.expected_root), ("expected_head", self.expected_head),
                                   ("receipt", self.receipt), ("policy", self.policy), ("keyring", self.keyring),
                                   ("tsa_trust", self.tsa_trust), ("log", self.log)),
                     "it re-checks its own signature and files")
        source = os.fspath(summary)
        checks, facts = check_summary(source, None if self.trusted_key_ids is None else set(self.trusted_key_ids))
        verdict, code = summary_verdict(checks)
        return SummaryResult(source, checks, facts, verdict, code)


def given_trust(trust: Trust | None, **members: Any) -> Trust:
    """``trust``, or one built from the separate keyword arguments the functions took before it; not both."""
    given = {name: value for name, value in members.items() if value is not None}
    if trust is None:
        if isinstance(given.get("policy"), (str, os.PathLike)):  # a policy file (its [trust] files: Trust.load)
            from ._policy import load_policy

            given["policy"] = load_policy(os.fspath(given["policy"]))
        return Trust(**given)
    if given:
        raise UsageError(f"give trust= or {', '.join(sorted(given))}, not both (the trust holds them)")
    return trust


def verify_proof(
    proof: ReceiptInput,
    *,
    expected_root: str | None = None,
    receipt: str | os.PathLike[str] | None = None,
    trusted_key_ids: Iterable[str] | None = None,
    trust: Trust | None = None,
) -> Report:
    """Check a proof: a parsed dict, a path or its bytes (the checks: spec/verifier.md, "Proofs").

    ``receipt`` (a path) with ``trusted_key_ids`` can pin its root, as ``expected_root`` can;
    or give them all as ``trust`` (:meth:`Trust.verify_proof`).
    """
    return given_trust(trust, expected_root=expected_root, receipt=receipt,
                       trusted_key_ids=trusted_key_ids).verify_proof(proof)


def verify_bundle(
    folder: str | os.PathLike[str],
    *,
    trusted_key_ids: Iterable[str] | None = None,
    expected_root: str | None = None,
    expected_head: str | None = None,
    jobs: int | None = None,
    receipt: str | os.PathLike[str] | None = None,
    trust: Trust | None = None,
) -> BundleReport:
    """Verify every receipt in ``folder``, find the root, follow and check every link.

    The arguments are those of :meth:`Trust.verify_bundle`, given one by one or as ``trust``;
    ``jobs``: processes that verify receipts side by side (default: one per core).
    """
    return given_trust(trust, trusted_key_ids=trusted_key_ids, expected_root=expected_root,
                       expected_head=expected_head, receipt=receipt).verify_bundle(folder, jobs=jobs)
