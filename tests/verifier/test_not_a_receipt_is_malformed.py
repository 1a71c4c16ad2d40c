"""Input that is not a receipt is MALFORMED (exit 2); a receipt that fails a check is INVALID (exit 1).

``echo '{}' | aer1-verify -`` exited 1 although exit 2 is documented for input that is not
a receipt. The rule (spec/verifier.md): a document is a receipt when it is a JSON object
whose ``type`` is ``verifiable-workflow-receipt``. Held on every path: a file, standard
input, parsed data, a folder, the streaming reader, a proof, a bundle, a summary, --json.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aer1._receipt import WORKFLOW_TYPE
from aer1.verifier import verify_proof, verify_receipt
from aer1.verifier._cli import main as verify_main
from aer1.verifier._stream import verify_streaming

_GOOD = Path(__file__).parent.parent / "fixtures" / "adversarial" / "receipt_good.json"

_SCALARS = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(max_size=20)  # fmt: skip
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=10), inner, max_size=5), max_leaves=20)
#: Objects with receipt-looking members, but no receipt type: still not receipts.
_LOOKALIKE = st.fixed_dictionaries({}, optional={
    "type": st.text(max_size=30).filter(lambda t: t != WORKFLOW_TYPE) | st.integers() | st.none(),
    "steps": _JSON, "workflow_id": _JSON, "merkle_root": st.text(max_size=64), "version": st.just("1"),
    "signature": _JSON, "schema": st.just("aer1-verdict-v1"), "format": st.just("aer1-anchor-proof/1"),
})
_NOT_RECEIPTS = (_JSON | _LOOKALIKE).filter(lambda d: not (isinstance(d, dict) and d.get("type") == WORKFLOW_TYPE))


def _cli(*args: Any, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = verify_main([str(a) for a in args])
    out, _ = capsys.readouterr()
    return code, out


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(doc=_NOT_RECEIPTS)
def test_random_json_documents_that_are_not_receipts_always_exit_2(doc: Any, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    code, out = _cli(path, capsys=capsys)
    assert code == 2 and "MALFORMED" in out and "not a receipt" in out, (doc, out)
    code, out = _cli("--json", path, capsys=capsys)
    report = json.loads(out)
    assert (code, report["verdict"], report["exit_code"]) == (2, "MALFORMED", 2)
    assert report["checks"][0]["status"] == "FAIL" and report["basis"] is None
    assert verify_receipt(doc).verdict == "MALFORMED"  # parsed data: the same rule
    assert verify_streaming(str(path), evidence=None, trusted_key_ids=None, expected_root=None,
                            expected_head=None).verdict == "MALFORMED" or not isinstance(doc, dict)


@pytest.mark.parametrize("text", ["{}", "[]", "1", '"x"', "null", '{"type": "x"}', '{"steps": []}',
                                  '{"type": "aer1-keyring", "version": "1", "keys": []}'])
def test_standard_input_that_is_not_a_receipt_exits_2(text: str) -> None:
    """The trial's command, through the console script: one line on stderr, never exit 1."""
    run = subprocess.run([sys.executable, "-m", "aer1.verifier._cli", "-"], input=text.encode(),
                         capture_output=True, timeout=60, check=False)
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert b"not a receipt" in run.stdout and b"Traceback" not in run.stderr


def test_a_receipt_that_fails_is_still_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only the type decides: a receipt with every other member broken is a receipt that fails (exit 1)."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"type": WORKFLOW_TYPE}))
    code, out = _cli(path, capsys=capsys)
    assert code == 1 and "INVALID" in out
    receipt = json.loads(_GOOD.read_text())
    receipt["goal"] = "edited"
    path.write_text(json.dumps(receipt))
    assert _cli(path, capsys=capsys)[0] == 1


def test_streamed_input_that_is_not_a_receipt_is_malformed(tmp_path: Path) -> None:
    """The streaming reader (files of 32 MiB or more) holds the same rule, whatever the steps."""
    receipt = json.loads(_GOOD.read_text())
    for doc in ({k: v for k, v in receipt.items() if k != "type"}, {**receipt, "type": "aer1-keyring"}):
        path = tmp_path / "big.json"
        path.write_text(json.dumps(doc))
        report = verify_streaming(str(path), evidence=None, trusted_key_ids=None, expected_root=None,
                                  expected_head=None)
        assert report.verdict == "MALFORMED" and "not a receipt" in report.checks[0].detail
    assert verify_receipt({k: v for k, v in receipt.items() if k != "type"}).exit_code == 2


def test_a_proof_path_refuses_what_is_not_a_proof(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.proof.json"
    for doc in ({}, json.loads(_GOOD.read_text()), [1]):
        path.write_text(json.dumps(doc))
        assert verify_proof(str(path)).verdict == "MALFORMED"
        code, out = _cli("--proof", "--expected-root", "0" * 64, path, capsys=capsys)
        assert code == 2 and "not an inclusion proof" in out, out


def test_a_folder_names_an_unknown_document_malformed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown JSON document in a folder is not a receipt and not one of aer1's files: it is MALFORMED."""
    (tmp_path / "good.json").write_bytes(_GOOD.read_bytes())
    (tmp_path / "package.json").write_text('{"name": "x", "version": "1.0.0"}')
    code, out = _cli(tmp_path, capsys=capsys)
    assert code == 2 and "package.json: MALFORMED: parse: not a receipt" in out, out
    code, out = _cli("--json", tmp_path, capsys=capsys)
    doc = json.loads(out)
    assert doc["exit_code"] == 2 and doc["summary"] == {"VALID": 1, "INVALID": 0, "MALFORMED": 1}


def test_a_summary_path_refuses_what_is_not_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.json"
    for text in ("{}", _GOOD.read_text(), "[]"):
        path.write_text(text)
        code, out = _cli("--summary", path, "--json", capsys=capsys)
        assert code == 2 and json.loads(out)["verdict"] == "MALFORMED", out


def test_a_bundle_of_no_receipt_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.json").write_text("{}")
    code, out = _cli("--bundle", tmp_path, capsys=capsys)
    assert code == 2, out


def test_a_cut_file_that_is_not_a_receipt_is_malformed(tmp_path: Path) -> None:
    """The cut path (a saved receipt of 1 MiB or more, jobs > 1) holds the rule too."""
    from aer1 import Collector

    c = Collector(goal="large")
    for i in range(3000):
        c.record("tool", {"padding": "y" * 300, "i": i}, agent="a")
    path = tmp_path / "r.json"
    c.save(path)
    data = path.read_bytes()
    assert len(data) >= 1024 * 1024 and verify_receipt(str(path), jobs=2).verdict == "VALID"
    header = b'  "type": "verifiable-workflow-receipt",\n'
    for edited in (data.replace(header, b'  "type": "aer1-keyring",\n', 1), data.replace(header, b"", 1)):
        assert edited != data
        path.write_bytes(edited)
        report = verify_receipt(str(path), jobs=2)
        assert report.verdict == "MALFORMED" and "not a receipt" in report.checks[0].detail


def test_a_bundle_skips_aer1_files_and_refuses_unknown_ones(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Like a folder run: a keyring beside the bundle's receipts is skipped; an unknown document is MALFORMED."""
    from aer1._cli import main as aer1_main

    (tmp_path / "receipt.json").write_bytes(_GOOD.read_bytes())
    (tmp_path / "receipt.evidence.jsonl").write_bytes(_GOOD.with_name("receipt_good.evidence.jsonl").read_bytes())
    assert _cli("--bundle", tmp_path, capsys=capsys)[0] == 0
    assert aer1_main(["keygen", "-o", str(tmp_path / "ops")]) == 0
    capsys.readouterr()
    code, out = _cli("--bundle", tmp_path, capsys=capsys)
    assert code == 0 and "not a receipt, skipped:" in out and "ops.keyring.json" in out, out
    (tmp_path / "other.json").write_text('{"name": "x"}')
    code, out = _cli("--bundle", tmp_path, "--json", capsys=capsys)
    assert code == 2 and json.loads(out)["verdict"] == "MALFORMED", out
