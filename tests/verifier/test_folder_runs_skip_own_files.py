"""A folder run lists aer1's own files as "not a receipt, skipped", counted apart, never INVALID.

The trials: ``aer1 keygen`` leaves ``NAME.keyring.json`` beside the receipts and
``--attest`` writes ``summary.json``; a folder of valid receipts then exited 1. Files are
classified by what they are (their own format member, checked for its shape), not by name:
a receipt renamed ``x.keyring.json`` is verified, a receipt whose type was edited into a
keyring's is not skipped, and an unknown JSON document is MALFORMED. Text, --json, JUnit
and --attest all say the same.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from aer1._cli import main as aer1_main
from aer1._signing import generate_key_pair
from aer1.verifier._cli import main as verify_main

_FIXTURES = Path(__file__).parent.parent / "fixtures" / "adversarial"


def _cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    code = verify_main([str(a) for a in args])
    return code, capsys.readouterr().out


@pytest.fixture
def folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Two valid receipts, a keyring and key files from ``aer1 keygen``, a summary from ``--attest``."""
    archive = tmp_path / "archive"
    archive.mkdir()
    for name in ("a", "b"):
        shutil.copy(_FIXTURES / "receipt_good.json", archive / f"{name}.json")
        shutil.copy(_FIXTURES / "receipt_good.evidence.jsonl", archive / f"{name}.evidence.jsonl")
    assert aer1_main(["keygen", "-o", str(archive / "ops")]) == 0
    assert (archive / "ops.keyring.json").exists()
    key = tmp_path / "auditor.key"
    key.write_bytes(generate_key_pair()[0])
    assert verify_main([str(archive), "--attest", str(key), "-o", str(archive / "summary.json")]) == 0
    (archive / "report.json").write_text(json.dumps({"schema": "aer1-verdict-v1", "verdict": "VALID",
                                                     "exit_code": 0}))
    capsys.readouterr()
    return archive


def test_valid_receipts_beside_aer1_files_exit_0(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(capsys, folder)
    assert code == 0, out
    lines = out.splitlines()
    skipped = [line for line in lines if "not a receipt, skipped" in line]
    assert len(skipped) == 3, out
    assert any("ops.keyring.json: not a receipt, skipped: an aer1 keyring" in line for line in skipped)
    assert any("summary.json: not a receipt, skipped: a signed verification summary" in line for line in skipped)
    assert "INVALID" not in out and "MALFORMED" not in out
    assert lines[-1] == "2 valid, 0 invalid, 0 unreadable (of 2); 3 skipped (not receipts)"


def test_json_counts_them_apart(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(capsys, "--json", folder)
    doc = json.loads(out)
    assert code == 0 and doc["exit_code"] == 0 and doc["verdict"] == "VALID"
    assert doc["summary"] == {"VALID": 2, "INVALID": 0, "MALFORMED": 0}
    assert len(doc["results"]) == 2 and doc["breakdown"]["receipts"] == 2
    assert doc["breakdown"]["skipped"]["count"] == 3
    assert any(f.endswith("summary.json: a signed verification summary (aer1-verify --attest; check it with "
                          "--summary)") for f in doc["breakdown"]["skipped"]["files"])


def test_junit_and_attest_say_skipped(folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junit = tmp_path / "junit.xml"
    key = tmp_path / "k2.key"
    key.write_bytes(generate_key_pair()[0])
    summary = tmp_path / "s2.json"
    code, _ = _cli(capsys, folder, "--junit", junit, "--attest", key, "-o", summary)
    assert code == 0
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures"), suite.get("errors")) == ("5", "3", "0",
                                                                                                       "0")
    assert len(suite.findall("testcase/skipped")) == 3
    doc = json.loads(summary.read_text())
    assert doc["verdict"] == "VALID" and doc["summary"] == {"VALID": 2, "INVALID": 0, "MALFORMED": 0}
    assert sorted(e["verdict"] for e in doc["receipts"]) == ["SKIPPED", "SKIPPED", "SKIPPED", "VALID", "VALID"]
    assert all(e["skipped"] for e in doc["receipts"] if e["verdict"] == "SKIPPED")
    assert _cli(capsys, "--summary", summary)[0] == 0  # the skipped files are re-hashed too


def test_classified_by_content_not_by_name(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A receipt named like a keyring is verified; a keyring-typed edit of a receipt is not skipped."""
    shutil.copy(folder / "a.json", folder / "x.keyring.json")
    code, out = _cli(capsys, folder)
    assert code == 0 and "x.keyring.json: VALID" in out, out
    forged = json.loads((folder / "a.json").read_text())
    forged["type"] = "aer1-keyring"
    (folder / "b.json").write_text(json.dumps(forged))
    code, out = _cli(capsys, folder)
    assert code == 2 and "b.json: MALFORMED: parse: not a receipt" in out, out


def test_a_folder_of_nothing_but_aer1_files_verifies_nothing(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert aer1_main(["keygen", "-o", str(tmp_path / "ops")]) == 0
    capsys.readouterr()
    code, out = _cli(capsys, tmp_path)
    assert code == 2 and "no receipt was verified: every file was skipped" in out, out
    assert json.loads(_cli(capsys, "--json", tmp_path)[1])["exit_code"] == 2


def test_a_file_named_alone_is_verified_not_skipped(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _cli(capsys, folder / "ops.keyring.json")
    assert code == 2 and "MALFORMED" in out and "not a receipt: an aer1 keyring" in out, out


def test_transparency_log_files_beside_receipts_do_not_fail_the_run(folder: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Inclusion proofs (NAME.tlog-proof, text) and a log folder (checkpoint, tile/, log.vkey) are not receipts."""
    (folder / "a.tlog-proof").write_text("aer1 tlog proof\nindex 0\n")
    log = folder / "log"
    (log / "tile" / "0").mkdir(parents=True)
    (log / "checkpoint").write_text("example.com/log\n1\nAAAA\n")
    (log / "log.vkey").write_text("example.com/log+abcd+AAAA\n")
    (log / "tile" / "0" / "000").write_bytes(b"\x00" * 32)
    code, out = _cli(capsys, folder)
    assert code == 0 and "tlog-proof" not in out and "checkpoint" not in out, out
