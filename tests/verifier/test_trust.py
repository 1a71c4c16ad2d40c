"""One trust object for the library: built once, it verifies receipts, proofs, bundles and summaries alike.

The functions that took trust one argument at a time keep doing so, with the same reports;
``verify_receipt(..., policy=)`` applies a policy as ``aer1-verify --policy`` does; the
command and the object agree on every verdict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aer1 import build_step_proof, key_id, load_public_key
from aer1.errors import MalformedInputError, UsageError
from aer1.verifier import Policy, Trust, verify_bundle, verify_proof, verify_receipt
from aer1.verifier._cli import main as verify_main
from aer1.verifier._policy import FORMAT

from ..helpers import KEYS, make_collector

TRUSTED = key_id(load_public_key(KEYS / "trusted.pub"))
ATTACKER = key_id(load_public_key(KEYS / "attacker.pub"))


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A receipt signed by the trusted key, saved with its evidence beside it."""
    c = make_collector(signing_key=KEYS / "trusted.key")
    receipt = c.finalize(final_answer="ok TERMINATE")
    path = Path(c.save(tmp_path / "run.json", workflow=receipt))
    return path, receipt


def _statuses(report: Any) -> list[tuple[str, str]]:
    return [(c.name, c.status) for c in report.checks]


def test_the_old_keyword_arguments_and_a_trust_give_the_same_report(saved: tuple[Path, dict[str, Any]]) -> None:
    path, receipt = saved
    old = verify_receipt(path, trusted_key_ids=[TRUSTED], expected_root=receipt["merkle_root"])
    new = verify_receipt(path, trust=Trust(trusted_key_ids=[TRUSTED], expected_root=receipt["merkle_root"]))
    assert old.valid and new.valid
    assert old.to_dict() == new.to_dict()
    assert Trust(trusted_key_ids=[TRUSTED]).verify_receipt(path).to_dict() == verify_receipt(
        path, trusted_key_ids=[TRUSTED]).to_dict()


def test_a_trust_and_separate_arguments_together_are_refused(saved: tuple[Path, dict[str, Any]]) -> None:
    path, _ = saved
    with pytest.raises(UsageError, match="not both"):
        verify_receipt(path, trusted_key_ids=[TRUSTED], trust=Trust())
    with pytest.raises(UsageError, match="not both"):
        verify_proof({}, expected_root="0" * 64, trust=Trust())
    with pytest.raises(UsageError, match="one string"):
        Trust(trusted_key_ids=TRUSTED)  # type: ignore[arg-type]


def test_verify_receipt_takes_a_policy(saved: tuple[Path, dict[str, Any]]) -> None:
    path, receipt = saved
    held = verify_receipt(path, trusted_key_ids=[TRUSTED], policy=Policy(require=frozenset({"signature"})))
    assert held.checks[-1].name == "policy" and held.checks[-1].status == "PASS" and held.valid
    broken = verify_receipt(path, trusted_key_ids=[ATTACKER], policy=Policy(require=frozenset({"signature"})))
    assert broken.checks[-1].name == "policy" and broken.checks[-1].status == "FAIL" and not broken.valid
    pinned = verify_receipt(receipt, policy=Policy(root_pinned=True))  # a parsed receipt: nothing pins its root
    assert pinned.checks[-1].status == "FAIL"
    assert "require.root_pinned" in pinned.checks[-1].detail
    without = verify_receipt(path, trusted_key_ids=[TRUSTED])
    assert [c.name for c in without.checks] == [c.name for c in held.checks[:-1]]


def test_a_policy_file_gives_the_same_verdict_as_the_command(saved: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = saved
    policy = tmp_path / "policy.toml"
    policy.write_text(f'format = "{FORMAT}"\n[require]\nsignature = true\nevidence = true\nsigners = ["{ATTACKER}"]\n')
    report = verify_receipt(path, policy=policy)
    assert not report.valid and "require.signers" in report.checks[-1].detail
    code = verify_main([str(path), "--policy", str(policy), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == report.exit_code == 1
    assert [(c["name"], c["status"]) for c in doc["checks"]] == _statuses(
        Trust.load(policy=policy).verify_receipt(path))


def test_load_combines_the_files_as_the_command_does(saved: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    path, _ = saved
    trust = Trust.load(keys=[KEYS / "trusted.pub"], require=["signature,chain"])
    assert trust.trusted_key_ids == frozenset({TRUSTED})
    assert trust.policy is not None and trust.policy.require == frozenset({"signature", "chain"})
    assert trust.verify_receipt(path).valid
    assert not Trust.load(keys=[KEYS / "attacker.pub"], require=["signature"]).verify_receipt(path).valid
    with pytest.raises(UsageError, match="no key is trusted"):
        Trust.load(require=["signature"])
    with pytest.raises(UsageError, match="goes with --tsa-roots"):
        Trust.load(tsa_policy="1.2.3")
    with pytest.raises(MalformedInputError):
        Trust.load(tsa_roots=tmp_path / "no-such-folder")
    ring = tmp_path / "keyring.json"
    ring.write_text("not a keyring")
    with pytest.raises(MalformedInputError):
        Trust.load(keyring=ring)


def test_one_trust_verifies_a_proof_a_bundle_and_a_summary(saved: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path, receipt = saved
    proof = build_step_proof(receipt, 2)
    trust = Trust(trusted_key_ids=[TRUSTED], receipt=str(path))
    assert trust.verify_proof(proof).valid
    assert verify_proof(proof, receipt=path, trusted_key_ids=[TRUSTED]).to_dict() == trust.verify_proof(
        proof).to_dict()
    assert not Trust(expected_root="0" * 64).verify_proof(proof).valid
    folder = tmp_path / "bundle"
    folder.mkdir()
    c = make_collector(signing_key=KEYS / "trusted.key")
    c.save_bundle(folder, c.finalize(final_answer="ok TERMINATE"))
    bundle = Trust(trusted_key_ids=[TRUSTED]).verify_bundle(folder)
    assert bundle.valid
    assert verify_bundle(folder, trusted_key_ids=[TRUSTED]).to_dict() == bundle.to_dict()
    assert not Trust(trusted_key_ids=[ATTACKER]).verify_bundle(folder).valid
    summary = tmp_path / "summary.json"
    assert verify_main([str(path), "--key", str(KEYS / "trusted.pub"), "--attest", str(KEYS / "trusted.key"),
                        "-o", str(summary)]) == 0
    capsys.readouterr()
    result = Trust(trusted_key_ids=[TRUSTED]).verify_summary(summary)
    assert (result.verdict, result.exit_code) == ("VALID", 0)
    assert verify_main(["--summary", str(summary), "--key", str(KEYS / "trusted.pub")]) == 0
    assert Trust(trusted_key_ids=[ATTACKER]).verify_summary(summary).exit_code != 0


def test_what_an_input_cannot_use_is_refused_never_ignored(saved: tuple[Path, dict[str, Any]],
                                                          tmp_path: Path) -> None:
    path, receipt = saved
    proof = build_step_proof(receipt, 2)
    with pytest.raises(UsageError, match="expected_head cannot apply to a proof"):
        Trust(expected_head=receipt["chain_head"]).verify_proof(proof)
    with pytest.raises(UsageError, match="policy cannot apply to a bundle"):
        Trust(policy=Policy(require=frozenset({"chain"}))).verify_bundle(tmp_path)
    with pytest.raises(UsageError, match="expected_root cannot apply to a summary"):
        Trust(expected_root="0" * 64).verify_summary(path)
    with pytest.raises(UsageError, match="not loaded"):
        Trust(policy=Policy(keyring=str(tmp_path / "ring.json")))
