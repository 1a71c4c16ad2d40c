"""A signed summary names every input it rests on, and its re-check exits 0 only for a VALID run.

Two defects of the trials, one class each:

* a summary made with ``--evidence FILE`` recorded the evidence digest but not the file,
  and ``--summary`` looked beside the receipt, so an honest summary was judged INVALID;
  the same held for every other input (keyring, TSA roots, policy file, ``--receipt``);
* ``--summary`` exited 0 for a summary of an INVALID archive: a CI gate on the exit code
  passed it. Exit 0 needs the signature and the verdict it records (check 5, ``verdict``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from aer1._canonical import exact_bytes
from aer1._signing import generate_key_pair, load_private_key, pae
from aer1.verifier._attest import SUMMARY_PAYLOAD_TYPE
from aer1.verifier._cli import main as verify_main

_FIXTURES = Path(__file__).parent.parent / "fixtures" / "adversarial"


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    code = verify_main([str(a) for a in args])
    return code, capsys.readouterr().out


@pytest.fixture
def key(tmp_path: Path) -> tuple[Path, Path]:
    private, public = generate_key_pair()
    (tmp_path / "auditor.key").write_bytes(private)
    (tmp_path / "auditor.pub").write_bytes(public)
    return tmp_path / "auditor.key", tmp_path / "auditor.pub"


@pytest.fixture
def receipt_elsewhere(tmp_path: Path) -> tuple[Path, Path]:
    """A receipt whose evidence file is not beside it: it is named with --evidence."""
    (tmp_path / "receipts").mkdir()
    (tmp_path / "kept").mkdir()
    receipt = tmp_path / "receipts" / "r.json"
    evidence = tmp_path / "kept" / "contents.jsonl"
    shutil.copy(_FIXTURES / "receipt_good.json", receipt)
    shutil.copy(_FIXTURES / "receipt_good.evidence.jsonl", evidence)
    return receipt, evidence


def _resign(summary: Path, doc: dict[str, Any], private: Path) -> None:
    body = {k: v for k, v in doc.items() if k != "signature"}
    import base64

    sig = load_private_key(private.read_bytes()).sign(pae(SUMMARY_PAYLOAD_TYPE, exact_bytes(body)))
    doc["signature"]["value"] = base64.b64encode(sig).decode()
    summary.write_text(json.dumps(doc))


def test_a_summary_made_with_evidence_file_rechecks_with_that_file(
        receipt_elsewhere: tuple[Path, Path], key: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    receipt, evidence = receipt_elsewhere
    summary = tmp_path / "summary.json"
    code, _ = _cli(capsys, receipt, "--evidence", evidence, "--attest", key[0], "-o", summary)
    assert code == 0
    entry = json.loads(summary.read_text())["receipts"][0]
    assert entry["evidence"] == str(evidence) and entry["evidence_sha256"]
    code, out = _cli(capsys, "--summary", summary, "--key", key[1])
    assert code == 0 and out.splitlines()[-1].startswith("verdict: VALID"), out
    evidence.write_text(evidence.read_text().replace("}", " }", 1))
    code, out = _cli(capsys, "--summary", summary, "--key", key[1])
    assert code == 1 and f"evidence {evidence} changed" in out, out


def test_every_input_file_is_named_and_rehashed(receipt_elsewhere: tuple[Path, Path], key: tuple[Path, Path],
                                                tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    receipt, evidence = receipt_elsewhere
    policy = tmp_path / "p.toml"
    policy.write_text('format = "aer1-policy-v1"\nname = "p"\n[require]\nchain = true\n')
    summary = tmp_path / "summary.json"
    code, _ = _cli(capsys, receipt, "--evidence", evidence, "--policy", policy, "--attest", key[0], "-o", summary)
    assert code == 0
    options = json.loads(summary.read_text())["options"]
    assert options["policy_file"]["path"] == str(policy)
    assert {"keyring", "tsa_roots", "receipt", "tsa_policy", "trusted_key_ids"} <= set(options)
    code, out = _cli(capsys, "--summary", summary)
    assert code == 0 and f"inputs: --policy {policy}, 1 evidence file (" in out, out
    facts = json.loads(_cli(capsys, "--summary", summary, "--json")[1])["summarized"]
    assert {"option": "--evidence", "path": str(evidence), "receipt": str(receipt)} in facts["inputs"]
    policy.write_text(policy.read_text() + "# edited\n")
    code, out = _cli(capsys, "--summary", summary, "--json")
    doc = json.loads(out)
    assert code == 1 and doc["checks"][3]["status"] == "FAIL"
    assert any(f"the --policy input {policy} changed" in f["message"] for f in doc["checks"][3]["failures"])


def test_a_summary_that_does_not_name_its_evidence_file_says_it_cannot_recheck(
        receipt_elsewhere: tuple[Path, Path], key: tuple[Path, Path], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A summary of the old form (evidence digest, no file): not guessed beside the receipt, said."""
    receipt, evidence = receipt_elsewhere
    summary = tmp_path / "summary.json"
    assert _cli(capsys, receipt, "--evidence", evidence, "--attest", key[0], "-o", summary)[0] == 0
    doc = json.loads(summary.read_text())
    del doc["receipts"][0]["evidence"]
    _resign(summary, doc, key[0])
    code, out = _cli(capsys, "--summary", summary)
    assert code == 1 and "not which evidence file: it cannot be re-checked" in out, out


def test_a_summary_of_an_invalid_archive_never_exits_0(key: tuple[Path, Path], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    archive = tmp_path / "archive"
    archive.mkdir()
    shutil.copy(_FIXTURES / "receipt_good.json", archive / "good.json")
    shutil.copy(_FIXTURES / "receipt_goal_edited.json", archive / "bad.json")
    summary = tmp_path / "summary.json"
    assert _cli(capsys, archive, "--attest", key[0], "-o", summary)[0] == 1
    code, out = _cli(capsys, "--summary", summary, "--key", key[1])
    assert code == 1, out
    assert "3 signature    PASS" in out and "5 verdict      FAIL" in out, out
    assert "the run it summarizes was INVALID (1 valid, 1 invalid, 0 malformed)" in out.splitlines()[-1], out
    code, out = _cli(capsys, "--summary", summary, "--key", key[1], "--json")
    doc = json.loads(out)
    assert (code, doc["verdict"], doc["exit_code"]) == (1, "INVALID", 1)
    assert [c["name"] for c in doc["checks"]] == ["parse", "members", "signature", "receipts", "verdict"]
    assert doc["summarized"]["verdict"] == "INVALID"


def test_exit_0_needs_the_signature_and_a_valid_run(key: tuple[Path, Path], tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    archive = tmp_path / "archive"
    archive.mkdir()
    shutil.copy(_FIXTURES / "receipt_good.json", archive / "good.json")
    summary = tmp_path / "summary.json"
    assert _cli(capsys, archive, "--attest", key[0], "-o", summary)[0] == 0
    assert _cli(capsys, "--summary", summary, "--key", key[1])[0] == 0
    doc = json.loads(summary.read_text())
    doc["verdict"] = "INVALID"  # an honest signer's record of a failed run: the signature holds, the run did not
    _resign(summary, doc, key[0])
    assert _cli(capsys, "--summary", summary, "--key", key[1])[0] == 1
    doc["verdict"] = "VALID"
    summary.write_text(json.dumps(doc))  # the verdict edited back without a new signature
    code, out = _cli(capsys, "--summary", summary, "--key", key[1])
    assert code == 1 and "3 signature    FAIL" in out, out
