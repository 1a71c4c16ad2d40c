"""The committed adversarial fixtures fail exactly the check they are named for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aer1.signing import key_id, load_public_key
from aer1.verifier import verify_receipt
from tests.fixtures.generate_adversarial import generate

FIXTURES = Path(__file__).parent.parent / "fixtures"
ADVERSARIAL = FIXTURES / "adversarial"
MANIFEST = json.loads((ADVERSARIAL / "manifest.json").read_text())


def _check(directory: Path, name: str, expected: dict) -> None:
    trusted = None
    if "keys" in expected["options"]:
        trusted = [key_id(load_public_key(FIXTURES / "keys" / k)) for k in expected["options"]["keys"]]
    report = verify_receipt(directory / f"{name}.json", trusted_key_ids=trusted)
    assert report.verdict == expected["verdict"], (name, [f.reason for f in report.failures])
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
