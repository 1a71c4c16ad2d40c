"""Forged, replayed and cross-receipt erasure records; records for fields never committed; extra disclosures.

Each fixture is named after its defect. A record that does not count leaves the field
withheld (never erased); a disclosure that does not match fails the evidence check.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector
from aer1._canonical import exact_bytes
from aer1._erasure import erasure_record
from aer1._signing import load_private_key

from .conftest import Key, erase, fields, run_aer1, verify


def _receipt(folder: Path, key: Key, name: str = "r") -> Path:
    c = Collector("support case", signing_key=str(key.private), personal=["arguments.email", "customer.*"])
    c.record("lookup", {"arguments": {"email": "alice@example.com", "limit": 3}})
    c.record("crm", {"customer": {"name": "Alice", "iban": "DE02120300000000202051"}})
    return Path(c.save(str(folder / f"{name}.json")))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _write_lines(path: Path, docs: list[dict[str, Any]]) -> None:
    path.write_bytes(b"".join(exact_bytes(d) + b"\n" for d in docs))


def _without(disclosures: Path, path: str) -> None:
    """Drop the disclosure of ``path`` (as a withholding party would)."""
    _write_lines(disclosures, [d for d in _lines(disclosures) if d.get("disclosure", ["", ""])[1] != path])


def _beside(receipt: Path, what: str) -> Path:
    return receipt.with_name(f"{receipt.stem}.{what}.jsonl")


def _withheld(receipt: Path, key: Key) -> list[tuple[int, str]]:
    report = verify(receipt, key)
    assert report.verdict == "VALID", report.to_text()
    return [(w["seq"], w["path"]) for w in fields(report)["withheld"]]


def test_record_by_untrusted_key_counts_for_nothing(tmp_path: Path, key: Key, other_key: Key) -> None:
    path = _receipt(tmp_path, key)
    erase(path, other_key, "--step", "1", "--path", "/arguments/email")
    assert _withheld(path, key) == [(1, "/arguments/email")]
    assert "not trusted" in " ".join(verify(path, key).notes)
    # Trusted, the same record counts.
    report = verify(path, key, other_key)
    assert [e["key_id"] for e in fields(report)["erased"]] == [other_key.key_id]


def test_forged_record_edited_after_signing(tmp_path: Path, key: Key) -> None:
    path = _receipt(tmp_path, key)
    erase(path, key, "--step", "1", "--path", "arguments.email")
    records = _beside(path, "erasures")
    docs = _lines(records)
    docs[0]["reason"] = "a reason nobody signed"
    _write_lines(records, docs)
    assert _withheld(path, key) == [(1, "/arguments/email")]


def test_cross_receipt_record_replayed(tmp_path: Path, key: Key) -> None:
    """A valid record of receipt A, copied beside receipt B (same key), counts for nothing there."""
    a, b = _receipt(tmp_path, key, "a"), _receipt(tmp_path, key, "b")
    erase(a, key, "--step", "1", "--path", "arguments.email")
    _without(_beside(b, "disclosures"), "/arguments/email")
    _beside(b, "erasures").write_bytes(_beside(a, "erasures").read_bytes())
    assert _withheld(b, key) == [(1, "/arguments/email")]
    assert "another receipt" in " ".join(verify(b, key).notes)


def test_record_replayed_onto_another_field(tmp_path: Path, key: Key) -> None:
    """A record for one field, its path rewritten to another and re-signed by a trusted key: wrong commitment."""
    path = _receipt(tmp_path, key)
    erase(path, key, "--step", "2", "--path", "/customer/name")
    doc = _lines(_beside(path, "erasures"))[0]
    _without(_beside(path, "disclosures"), "/customer/iban")
    receipt = json.loads(path.read_bytes())
    forged = erasure_record(receipt, 2, "/customer/iban", doc["commitment"], "moved", load_private_key(key.private),
                            doc["erased_at"])
    with _beside(path, "erasures").open("ab") as f:
        f.write(exact_bytes(forged) + b"\n")
    assert _withheld(path, key) == [(2, "/customer/iban")]
    assert "another commitment" in " ".join(verify(path, key).notes)


def test_record_for_a_field_never_committed(tmp_path: Path, key: Key) -> None:
    path = _receipt(tmp_path, key)
    receipt = json.loads(path.read_bytes())
    record = erasure_record(receipt, 1, "/arguments/limit", "0" * 64, "not personal", load_private_key(key.private),
                            "2026-01-01T00:00:00.000000Z")
    _beside(path, "erasures").write_bytes(exact_bytes(record) + b"\n")
    report = verify(path, key)
    assert report.verdict == "VALID" and fields(report)["erased"] == [] and fields(report)["withheld"] == []
    code, _, err = run_aer1("erase", path, "--step", "1", "--path", "arguments.limit", "--reason", "x",
                            "--key", key.private)
    assert code == 2 and "no disclosure" in err


def test_extra_disclosure_fails(tmp_path: Path, key: Key) -> None:
    path = _receipt(tmp_path, key)
    disclosures = _beside(path, "disclosures")
    docs = _lines(disclosures)
    docs.append({"seq": 1, "disclosure": ["A" * 22, "/arguments/limit", 3]})
    _write_lines(disclosures, docs)
    report = verify(path, key)
    assert report.verdict == "INVALID"
    assert "never committed" in report.failures[0].reason


def test_duplicate_disclosure_fails(tmp_path: Path, key: Key) -> None:
    path = _receipt(tmp_path, key)
    disclosures = _beside(path, "disclosures")
    docs = _lines(disclosures)
    _write_lines(disclosures, [*docs, docs[1]])
    assert "twice" in verify(path, key).failures[0].reason


@pytest.mark.parametrize("where", [0, 1, 2])
def test_changed_disclosure_fails_even_with_an_erasure_record(tmp_path: Path, key: Key, where: int) -> None:
    """A disclosure present is always checked: an erasure record for it never hides an edited value."""
    path = _receipt(tmp_path, key)
    disclosures = _beside(path, "disclosures")
    docs = _lines(disclosures)
    original = [list(d["disclosure"]) for d in docs[1:]]
    erase(path, key, "--step", "1", "--path", "arguments.email")
    kept = _lines(disclosures)
    edited = {"seq": 1, "disclosure": list(original[0])}
    edited["disclosure"][where] = {0: "B" * 22, 1: "/arguments/email2", 2: "mallory@example.com"}[where]
    _write_lines(disclosures, [*kept, edited])
    report = verify(path, key)
    assert report.verdict == "INVALID", report.to_text()
    assert report.failures[0].check == "evidence"


def test_disclosures_of_another_workflow_fail(tmp_path: Path, key: Key) -> None:
    a, b = _receipt(tmp_path, key, "a"), _receipt(tmp_path, key, "b")
    _beside(b, "disclosures").write_bytes(_beside(a, "disclosures").read_bytes())
    report = verify(b, key)
    assert report.verdict == "INVALID" and "another workflow" in report.failures[0].reason


def test_short_salt_is_refused(tmp_path: Path, key: Key) -> None:
    path = _receipt(tmp_path, key)
    disclosures = _beside(path, "disclosures")
    docs = _lines(disclosures)
    docs[1]["disclosure"][0] = "c2hvcnQ"
    _write_lines(disclosures, docs)
    assert "128 bits" in verify(path, key).failures[0].reason


def test_erase_refuses_evidence_that_does_not_match(tmp_path: Path, key: Key) -> None:
    """Nothing is signed for a disclosure the evidence does not commit (a swapped disclosures file)."""
    path = _receipt(tmp_path, key)
    disclosures = _beside(path, "disclosures")
    docs = _lines(disclosures)
    docs[1]["disclosure"][0] = "Z" * 22
    _write_lines(disclosures, docs)
    code, _, err = run_aer1("erase", path, "--value", "alice@example.com", "--reason", "x", "--key", key.private)
    assert code == 2 and "does not commit" in err and "Traceback" not in err
    assert not _beside(path, "erasures").exists()


@pytest.mark.parametrize("argv", [
    ["--step", "1"],
    ["--value", ""],
    ["--value", "x", "--step", "1", "--path", "a"],
    ["--step", "1", "--path", "a..b"],
])
def test_bad_erase_arguments_are_one_line(tmp_path: Path, key: Key, argv: list[str]) -> None:
    path = _receipt(tmp_path, key)
    code, _, err = run_aer1("erase", path, *argv, "--reason", "x", "--key", key.private)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err


def test_erase_with_a_bad_key_file_is_one_line(tmp_path: Path, key: Key) -> None:
    path = _receipt(tmp_path, key)
    bad = tmp_path / "bad.key"
    bad.write_text("not a key")
    code, out, _ = run_aer1("erase", path, "--value", "alice@example.com", "--reason", "x", "--key", bad, "--json")
    assert code == 2 and json.loads(out)["exit_code"] == 2
