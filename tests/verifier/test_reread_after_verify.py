"""Trial: the policy and the bundle verifier read a receipt file a second time; a file swapped in between
(same workflow_id and step count) was evaluated instead of the receipt that was verified."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from aer1 import Collector
from aer1.verifier import verify_receipt
from aer1.verifier._bundle import Node, _read_links
from aer1.verifier._policy import Policy, apply_policy


@pytest.fixture
def verified_and_swapped(tmp_path: Path) -> tuple[Path, Path]:
    """A receipt in which mallory acted, and the same receipt with mallory renamed (what is swapped in)."""
    c = Collector(goal="pay")
    c.record("pay", {"arguments": {"amount": 5}}, agent="mallory", kind="tool_call", call_id="c1")
    verified = tmp_path / "receipt.json"
    c.save(verified, workflow=c.finalize("done"))
    wf = json.loads(verified.read_text())
    wf["steps"][0]["agent"] = "alice"
    swapped = tmp_path / "swapped.json"
    swapped.write_text(json.dumps(wf))
    return verified, swapped


@pytest.mark.unverified_receipts
def test_policy_refuses_a_receipt_that_changed_after_it_was_verified(
        verified_and_swapped: tuple[Path, Path]) -> None:
    verified, swapped = verified_and_swapped
    report = verify_receipt(str(verified))
    assert report.valid
    violated = apply_policy(report, Policy(name="p", digest="0" * 64, agents=("alice",)), str(swapped), None)
    assert violated == ["allow.agents"], report.check("policy").detail
    assert "changed while it was verified" in report.check("policy").detail


@pytest.mark.unverified_receipts
def test_bundle_refuses_a_receipt_that_changed_after_it_was_verified(
        verified_and_swapped: tuple[Path, Path]) -> None:
    verified, swapped = verified_and_swapped
    node = Node(str(swapped), verify_receipt(str(verified)))
    assert "changed while it was verified" in (_read_links(node) or ""), node.content
    assert node.content is None


def test_signed_summary_names_the_digest_of_the_bytes_verified(verified_and_swapped: tuple[Path, Path]) -> None:
    from aer1.verifier._archive import ArchiveOptions, verify_file

    verified, _ = verified_and_swapped
    outcome = verify_file((str(verified), False, None), ArchiveOptions(digests=True))
    assert outcome.report.valid
    want = hashlib.sha256(verified.read_bytes()).hexdigest()
    assert outcome.sha256 == outcome.report.checks[0].facts["sha256"] == want
