"""The committed adversarial fixtures fail exactly the check they are named for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aer1._recover import recover_journal
from aer1._signing import key_id, load_public_key
from aer1.verifier import Report, verify_proof, verify_receipt
from tests.fixtures.generate_adversarial import generate

FIXTURES = Path(__file__).parent.parent / "fixtures"
ADVERSARIAL = FIXTURES / "adversarial"
MANIFEST = json.loads((ADVERSARIAL / "manifest.json").read_text())


def _report(directory: Path, name: str, expected: dict) -> Report:
    options = expected["options"]
    trusted = None
    if "keys" in options:
        trusted = [key_id(load_public_key(FIXTURES / "keys" / k)) for k in options["keys"]]
    kind = expected.get("kind", "receipt")
    path = directory / (f"{name}.proof.json" if kind == "proof" else f"{name}.json")
    # the attacks keep the original root, so the fixture's own root is the one an auditor pinned
    root = json.loads(path.read_text())["merkle_root"] if "expected_root" in options else None
    if kind == "proof":
        return verify_proof(path, expected_root=root)
    if kind == "journal":
        out = directory / f"{name}.recovered.json"
        try:
            recover_journal(directory / f"{name}.journal", out, signing_key=FIXTURES / "keys" / "trusted.key")
            return verify_receipt(out, trusted_key_ids=trusted)
        finally:
            out.unlink(missing_ok=True)
            out.with_name(out.name.replace(".json", ".evidence.jsonl")).unlink(missing_ok=True)
    return verify_receipt(path, trusted_key_ids=trusted, expected_root=root)


def _check(directory: Path, name: str, expected: dict) -> None:
    report = _report(directory, name, expected)
    assert report.verdict == expected["verdict"], (name, [f.reason for f in report.failures])
    if "closed_by" in expected:
        assert report.basis()["closed_by"] == expected["closed_by"], name
        assert "CLOSED BY RECOVERY" in report.to_text().splitlines()[-1], name
    first = report.failures[0].check if report.failures else None
    assert first == expected["check"], (name, [f.reason for f in report.failures])


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_committed_fixture(name: str) -> None:
    _check(ADVERSARIAL, name, MANIFEST[name])


def test_generator_reproduces_the_same_defects(tmp_path: Path) -> None:
    manifest = generate(tmp_path / "adv")
    assert manifest == MANIFEST
    for name, expected in manifest.items():
        _check(tmp_path / "adv", name, expected)
