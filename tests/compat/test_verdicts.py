"""verify_receipt_verdicts: our numbered checks under the peer's six dimensions, never claiming more."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from aer1._receipt import evidence_path_for
from aer1._signing import generate_key_pair
from aer1.collectors import (
    VERDICT_FAIL,
    VERDICT_NOT_CHECKED,
    VERDICT_PASS,
    all_verdicts_pass,
    verdicts_summary,
    verify_receipt_verdicts,
)

from .conftest import recorded_run

DIMENSIONS = ("byte_integrity", "schema_validity", "issuer_authenticity", "evidence_linkage",
              "anchor_verification", "chain_integrity")  # fmt: skip


def _verdicts(result: dict[str, dict[str, Any]]) -> dict[str, str]:
    return {dim: v["verdict"] for dim, v in result.items()}


@pytest.fixture(scope="module")
def keys() -> tuple[bytes, bytes]:
    """A signing key pair (private PEM, public PEM)."""
    return generate_key_pair()


@pytest.fixture
def signed_run(tmp_path: Path, keys: tuple[bytes, bytes]) -> tuple[dict[str, Any], Path]:
    """A signed receipt saved with its evidence: (receipt, evidence path)."""
    c = recorded_run(signing_key=keys[0])
    receipt = c.finalize(final_answer="done")
    path = Path(c.save(tmp_path / "run.json", workflow=receipt))
    return receipt, Path(evidence_path_for(str(path)))


def test_plain_call_checks_what_needs_no_input(signed_run: tuple[dict[str, Any], Path]) -> None:
    """Without key or evidence, those two are not_checked, as on the peer; the rest pass."""
    result = verify_receipt_verdicts(signed_run[0])
    assert list(result) == list(DIMENSIONS)
    assert _verdicts(result) == {
        "byte_integrity": VERDICT_PASS, "schema_validity": VERDICT_PASS, "issuer_authenticity": VERDICT_NOT_CHECKED,
        "evidence_linkage": VERDICT_NOT_CHECKED, "anchor_verification": VERDICT_NOT_CHECKED,
        "chain_integrity": VERDICT_PASS,
    }  # fmt: skip
    assert "no trusted key given" in result["issuer_authenticity"]["detail"]
    assert all_verdicts_pass(result) and not all_verdicts_pass(result, require_anchor=True)
    assert verdicts_summary(result).split() == [f"{d}={v['verdict']}" for d, v in result.items()]


def test_key_and_evidence_are_checked_when_given(signed_run: tuple[dict[str, Any], Path],
                                                 keys: tuple[bytes, bytes]) -> None:  # fmt: skip
    """Stronger than the peer: issuer_authenticity and evidence_linkage pass on real checks."""
    receipt, evidence = signed_run
    result = verify_receipt_verdicts(receipt, key=keys[1], evidence=evidence)
    assert result["issuer_authenticity"]["verdict"] == VERDICT_PASS, result["issuer_authenticity"]
    assert result["evidence_linkage"]["verdict"] == VERDICT_PASS, result["evidence_linkage"]


@pytest.mark.unverified_receipts
def test_an_untrusted_signer_fails_issuer_authenticity(signed_run: tuple[dict[str, Any], Path]) -> None:
    """A receipt signed by another key than the one trusted fails, with the reason."""
    other_public = generate_key_pair()[1]
    result = verify_receipt_verdicts(signed_run[0], key=other_public)
    assert result["issuer_authenticity"]["verdict"] == VERDICT_FAIL
    assert "signature" in result["issuer_authenticity"]["detail"]


@pytest.mark.unverified_receipts
def test_unsigned_receipt_fails_when_a_key_is_demanded(tmp_path: Path, keys: tuple[bytes, bytes]) -> None:
    receipt = recorded_run().finalize(final_answer="done")
    assert verify_receipt_verdicts(receipt, key=keys[1])["issuer_authenticity"]["verdict"] == VERDICT_FAIL


def test_edited_evidence_fails_evidence_linkage(signed_run: tuple[dict[str, Any], Path]) -> None:
    receipt, evidence = signed_run
    lines = evidence.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[1])
    record["content"] = {"forged": True}
    lines[1] = json.dumps(record)
    evidence.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = verify_receipt_verdicts(receipt, evidence=evidence)
    assert result["evidence_linkage"]["verdict"] == VERDICT_FAIL, result["evidence_linkage"]
    assert result["byte_integrity"]["verdict"] == VERDICT_PASS  # the receipt itself is untouched


@pytest.mark.parametrize(
    ("edit", "failing"),
    [
        (lambda r: r.__setitem__("merkle_root", "0" * 64), {"byte_integrity"}),
        (lambda r: r["steps"][1].__setitem__("seq", 99), {"chain_integrity"}),
        (lambda r: r["steps"][1].__setitem__("agent", "mallory"), {"chain_integrity"}),
        (lambda r: r.__setitem__("goal", "another goal"), {"chain_integrity"}),
        (lambda r: r["steps"][0].__setitem__("tool", ""), {"schema_validity"}),
    ],
    ids=["root", "seq", "step-member", "workflow-member", "empty-tool"],
)
@pytest.mark.unverified_receipts
def test_each_edit_fails_its_dimension(edit: Any, failing: set[str]) -> None:
    """An edit fails the dimension whose check catches it (the chain catches what the peer misses)."""
    receipt = copy.deepcopy(recorded_run().finalize(final_answer="done"))
    edit(receipt)
    result = verify_receipt_verdicts(receipt)
    got = {dim for dim, v in result.items() if v["verdict"] == VERDICT_FAIL}
    assert got == failing, f"got failing {sorted(got)}, want {sorted(failing)}: {verdicts_summary(result)}"
    assert not all_verdicts_pass(result)
    if "schema_validity" in failing:  # nothing else was recomputed: not claimed either way
        assert result["byte_integrity"]["verdict"] == VERDICT_NOT_CHECKED


@pytest.mark.parametrize("bad", [None, "run.json", 7, ["steps"]])
def test_a_non_object_fails_schema_and_claims_nothing_else(bad: Any) -> None:
    result = verify_receipt_verdicts(bad)
    assert _verdicts(result) == {dim: VERDICT_FAIL if dim == "schema_validity" else VERDICT_NOT_CHECKED
                                 for dim in DIMENSIONS}  # fmt: skip
    assert result["schema_validity"]["detail"] == "workflow is not a JSON object"
    assert not all_verdicts_pass(result)


def test_a_foreign_receipt_has_no_chain_and_says_so(peer_module: Any) -> None:
    """A peer receipt: chain_integrity passes on its sequence alone, and the detail says there is no chain."""
    c = peer_module.AER1AutoGenCollector(goal="peer run")
    c._add_step("message", {"content": "hi"}, agent="alice")
    result = verify_receipt_verdicts(c.finalize(final_answer="hi"))
    assert _verdicts(result)["chain_integrity"] == VERDICT_PASS
    assert "no hash chain" in result["chain_integrity"]["detail"]
    assert result["byte_integrity"]["verdict"] == VERDICT_PASS
