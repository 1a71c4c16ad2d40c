"""The one step checker: checks 2 to 5 fed one step at a time, by both verifier paths.

The in-memory path feeds the steps of a parsed receipt; the streaming path feeds each
step as it is parsed and then drops it. Either way a step leaves behind only its 32-byte
Merkle leaf (and the chain's running digest), so both paths give the same failures,
worded once, cut off at the same :data:`MAX_MEMBER_FAILURES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._canonical import CanonicalizationError
from .._chain import genesis_digest, step_digest_hex, uuid8_from_hex
from .._member_rules import is_hex64
from .._merkle import MerkleAccumulator, leaf_receipt_id, leaf_seq_output
from .._receipt import CLOSE_KIND, MERKLE_VERSION, STEP_STATUSES
from ._checks import check_chain_end, check_step, check_workflow_members
from ._fast import Passed
from ._report import FAIL, CheckResult

__all__ = ["MAX_MEMBER_FAILURES", "NOT_PROFILE_NOTE", "StepChecker", "check_members"]

#: The members check reports at most this many failures (one more settles it): the verdict cannot change.
MAX_MEMBER_FAILURES = 20
#: The note of a receipt that does not claim our profile.
NOT_PROFILE_NOTE = (
    "not an aer1-chain-v1 receipt: only the AER-1 base checks apply; step contents, agents "
    "and order are not bound beyond receipt ids and the Merkle root"
)
_LEAF = 32
_KEY_BYTES = 8


class StepChecker:
    """Checks 2 (step members), 3 (sequence), 4 (Merkle leaves) and 5 (chain links) over a stream of steps.

    :meth:`feed` takes the steps in array order; the ``*_result`` methods then fill in the
    check results. After the first malformed step only the members check goes on (the
    other checks are skipped when members fail), and once :attr:`settled` is true the
    caller may stop feeding.
    """

    def __init__(self, profile: bool) -> None:
        self.profile = profile
        self.n = 0
        self.last: Any = None
        # members: failures of the step checks, grouped by step
        self.step_members = CheckResult(2, "members")
        self.member_groups: list[tuple[int, int]] = []
        self.member_failures = 0
        self.broken = False  # a step failed its members check: the later checks will not run
        # sequence
        self.order_fail: tuple[str, int, int, Any] | None = None
        self.dup_fail: tuple[str, int, str] | None = None
        self.seen: dict[int, int] = {}
        self.seen_full: dict[bytes, int] = {}
        # merkle
        self.leaves = bytearray()
        self.output_leaves = bytearray()
        self.output_bad: int | None = None
        # chain
        self.first_prev: Any = None
        self.prev = ""
        self.chain_fail: tuple[str, int, Any, Any] | None = None
        self.close_at: int | None = None
        self.statuses = dict.fromkeys(STEP_STATUSES, 0)  # of the steps before the close step
        # the quick path's results (``_fast``): the root, and how many link steps
        self.root: bytes | None = None
        self.links: int | None = None

    @classmethod
    def from_passed(cls, passed: Passed, last: Any) -> StepChecker:
        """The state the reference leaves after feeding the steps the quick path passed (a profile receipt)."""
        checker = cls(True)
        checker.n, checker.last = passed.n, last
        checker.first_prev, checker.prev = passed.first_prev, passed.last_digest
        checker.close_at = passed.n - 1 if passed.closed else None
        checker.root, checker.links = passed.root, passed.links
        checker.statuses = dict(zip(STEP_STATUSES, passed.statuses, strict=True))
        return checker

    @property
    def settled(self) -> bool:
        """More step member failures than the check reports: reading on cannot change the verdict."""
        return self.member_failures > MAX_MEMBER_FAILURES

    # -------------------------------------------------------------- feeding

    def feed(self, step: Any) -> bool:
        """Check one step (the next in array order); True when its members are well-formed."""
        i = self.n
        self.n += 1
        self.last = step
        before = self.member_failures
        if not check_step(step, i, self.profile, self.step_members):
            self.member_failures = len(self.step_members.failures)
            self.member_groups.append((before, self.member_failures))
            self.broken = True
            return False
        if self.broken:
            return True
        seq, rid = step["seq"], step["receipt_id"]
        if self.profile and step.get("kind") != CLOSE_KIND and step.get("status") in self.statuses:
            self.statuses[step["status"]] += 1
        if self.order_fail is None and seq != i + 1:
            self.order_fail = (f"seq out of order: array position {i + 1} carries seq {seq!r}", i + 1, i + 1, seq)
        leaf = leaf_receipt_id(rid)
        self._duplicate(leaf, rid, i)
        self.leaves += leaf
        if not self.profile:
            oh = step.get("output_hash")
            if is_hex64(oh):
                self.output_leaves += leaf_seq_output(seq, oh)
            elif self.output_bad is None:
                self.output_bad = i + 1
        elif self.chain_fail is None:
            self._chain(step, i)
        return True

    def _duplicate(self, leaf: bytes, rid: str, i: int) -> None:
        if self.dup_fail is not None:
            return
        key = int.from_bytes(leaf[:_KEY_BYTES], "big")
        first = self.seen.get(key)
        if first is None:
            self.seen[key] = i + 1
            return
        if self.leaves[(first - 1) * _LEAF:first * _LEAF] != leaf:  # two ids share 64 bits: compare in full
            first = self.seen_full.setdefault(leaf, i + 1)
            if first == i + 1:
                return
        self.dup_fail = (f"receipt_id repeats the one of step {first}", i + 1, rid)

    def _chain(self, step: dict[str, Any], i: int) -> None:
        seq = i + 1
        if self.close_at is not None:
            self.chain_fail = ("a close step before the last step", self.close_at + 1, None, None)
            return
        if i == 0:
            self.first_prev = step["prev_digest"]  # compared with workflow_id's genesis at the end
        elif step["prev_digest"] != self.prev:
            self.chain_fail = (f"prev_digest does not link to the digest of step {i}", seq, self.prev,
                               step["prev_digest"])
            return
        try:
            digest_hex = step_digest_hex(step, flat=True)
        except CanonicalizationError as e:
            self.chain_fail = (f"step cannot be canonicalized: {e}", seq, None, None)
            return
        rid = uuid8_from_hex(digest_hex)
        if step["receipt_id"] != rid:
            self.chain_fail = ("receipt_id is not derived from the step's digest (a member was changed)", seq, rid,
                               step["receipt_id"])
            return
        self.prev = digest_hex
        if step["kind"] == CLOSE_KIND:
            self.close_at = i

    # -------------------------------------------------------------- results

    def members_result(self, result: CheckResult) -> bool:
        """Check 2, after the workflow members were checked into ``result``: the step failures."""
        if self.n == 0:
            result.fail("steps is not a non-empty array")
        failures = self.step_members.failures
        for start, end in self.member_groups:
            for f in failures[start:end]:
                result.fail(f.message, seq=f.seq, expected=f.expected, actual=f.actual)
            if len(result.failures) > MAX_MEMBER_FAILURES:
                break
        result.passed(f"{self.n} steps; Table 2 and Table 3 members well-formed"
                      + ("; profile members well-formed" if self.profile else ""))
        return result.status != FAIL

    def sequence_result(self, result: CheckResult) -> None:
        """Check 3: seq is 1..n in array order; no receipt_id appears twice."""
        if self.order_fail is not None:
            message, seq, expected, actual = self.order_fail
            result.fail(message, seq=seq, expected=expected, actual=actual)
        if self.dup_fail is not None:
            message, seq, rid = self.dup_fail
            result.fail(message, seq=seq, actual=rid)
        result.passed(f"seq 1..{self.n} in order; receipt ids unique")
        self.seen, self.seen_full = {}, {}

    def merkle_result(self, wf: Mapping[str, Any], result: CheckResult) -> None:
        """Check 4: merkle_root recomputed under merkle_version (absent means receipt-id-v0)."""
        version = wf.get("merkle_version", MERKLE_VERSION)
        if version == MERKLE_VERSION and self.root is not None:
            root = self.root.hex()
        else:
            if version == MERKLE_VERSION:
                raw = self.leaves
            elif self.output_bad is not None:
                result.fail("output_hash (needed by seq-output-v1) is not 64 lowercase hex", seq=self.output_bad)
                return
            else:
                raw = self.output_leaves
            tree = MerkleAccumulator()
            tree.add(bytes(raw[k:k + _LEAF]) for k in range(0, len(raw), _LEAF))
            root = tree.root().hex()
        self.leaves = bytearray()
        if root != wf["merkle_root"]:
            result.fail(f"merkle_root does not match the {version} root of the steps",
                        expected=root, actual=wf["merkle_root"])
            return
        result.passed(f"{version} root over {self.n} steps matches")

    def chain_result(self, wf: Mapping[str, Any], result: CheckResult) -> None:
        """Check 5: prev_digest links, derived receipt ids, chain_head, and the close step."""
        assert self.last is not None
        genesis = genesis_digest(wf["workflow_id"])
        if self.first_prev != genesis:
            result.fail("prev_digest does not link to the genesis digest of workflow_id", seq=1, expected=genesis,
                        actual=self.first_prev)
            return
        if self.chain_fail is not None:
            message, seq, expected, actual = self.chain_fail
            result.fail(message, seq=seq, expected=expected, actual=actual)
            return
        check_chain_end(wf, self.prev, self.last, self.n, result, self.statuses)


def check_members(wf: Any, profile: bool, result: CheckResult, passed: Passed | None = None) -> StepChecker | None:
    """Check 2 over a parsed receipt; the fed checker when the members are well-formed, else None.

    ``passed``: the quick path's verdict on the steps (``_fast``), when it passed them all.
    """
    if not isinstance(wf, dict):
        result.fail(f"the receipt is a JSON {type(wf).__name__}, not an object")
        return None
    check_workflow_members(wf, profile, result)
    steps = wf.get("steps")
    if not isinstance(steps, list) or not steps:
        result.fail("steps is not a non-empty array")
        return None
    if passed is not None and profile:
        checker = StepChecker.from_passed(passed, steps[-1])
        return checker if checker.members_result(result) else None
    checker = StepChecker(profile)
    for step in steps:
        checker.feed(step)
        if checker.settled:
            break
    return checker if checker.members_result(result) else None
