"""Trial: proof variants: what binds a proof's workflow_id, and a verdict that never claims more."""

from __future__ import annotations

import json
from pathlib import Path

from aer1 import Collector
from aer1._proof import build_step_proof
from aer1._receipt import close_content
from aer1.verifier import verify_proof

ADVERSARIAL = Path(__file__).parent.parent / "fixtures" / "adversarial" / "proofs"
OTHER_WORKFLOW = "00000000-0000-4000-8000-000000000000"


def _receipt() -> dict:
    c = Collector(goal="trial proofs")
    for i in range(4):
        c.record("message", {"content": f"m{i}"}, agent="alice")
    return c.finalize()


def _workflow_basis(proof: dict, root: str) -> tuple[str, str]:
    report = verify_proof(proof, expected_root=root)
    return report.verdict, report.basis()["workflow_id"]


def test_relabeled_middle_step_proof_does_not_claim_its_workflow() -> None:
    """A middle step's proof relabeled with another workflow id verified VALID naming that workflow."""
    proof = json.loads((ADVERSARIAL / "proof_workflow_id_relabeled.proof.json").read_text())
    report = verify_proof(proof, expected_root=proof["merkle_root"])
    got = (report.verdict, report.basis()["workflow_id"])
    assert got == ("VALID", "not bound"), f"got {got}, want VALID with the workflow id not bound"
    assert "workflow id not bound" in report.to_text().splitlines()[-1]


def test_what_binds_a_proofs_workflow_id() -> None:
    r = _receipt()
    n, root = len(r["steps"]), r["merkle_root"]
    cases = {
        "step 1 (genesis link)": (build_step_proof(r, 1), ("VALID", "bound")),
        "middle step": (build_step_proof(r, 3), ("VALID", "not bound")),
        "close step with content": (build_step_proof(r, n, close_content(r, n)), ("VALID", "bound")),
        "close step without content": (build_step_proof(r, n), ("VALID", "not bound")),
    }
    for name, (proof, want) in cases.items():
        got = _workflow_basis(proof, root)
        assert got == want, f"{name}: got {got}, want {want}"
    relabeled = build_step_proof(r, 1)
    relabeled["workflow_id"] = OTHER_WORKFLOW
    assert _workflow_basis(relabeled, root)[0] == "INVALID"


def test_close_content_of_another_workflow_fails_content() -> None:
    proof = json.loads((ADVERSARIAL / "proof_close_content_of_another_workflow.proof.json").read_text())
    report = verify_proof(proof, expected_root=proof["merkle_root"])
    first = report.failures[0].check if report.failures else None
    assert (report.verdict, first) == ("INVALID", "content"), f"got {(report.verdict, first)}, want INVALID content"
