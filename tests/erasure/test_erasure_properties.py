"""Properties of commitments and erasure: fresh salts, every change detected, no record hides an edit."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aer1 import Collector
from aer1._canonical import exact_bytes
from aer1._commit import COMMIT_TAG, commit_content, commitment, commitments_in, marker_for, new_salt
from aer1._erasure import erasure_record
from aer1._signing import load_private_key
from aer1.verifier import verify_receipt

from .conftest import Key, write_key

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
PATHS = st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=3).map(
    lambda parts: "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts))
_KEYS: list[Key] = []


def _key() -> Key:
    if not _KEYS:
        _KEYS.append(write_key(Path(tempfile.mkdtemp(prefix="aer1-erasure-keys-")), "k"))
    return _KEYS[0]


@given(value=JSON)
def test_two_commitments_to_the_same_value_differ(value: Any) -> None:
    content = exact_bytes({"field": value})
    marked = marker_for(["field"])
    assert marked is not None
    a, da = commit_content(content, marked)
    b, db = commit_content(content, marked)
    assert a != b and da[0][0] != db[0][0]  # fresh salts: equal values are not linkable across commitments
    assert da[0][1:] == db[0][1:] == ["/field", value]


@given(value=JSON, other=JSON, path=PATHS, other_path=PATHS)
def test_a_changed_salt_path_or_value_changes_the_commitment(value: Any, other: Any, path: str,
                                                             other_path: str) -> None:
    salt = new_salt()
    want = commitment(salt, path, value)
    assert commitment(new_salt(), path, value) != want
    if other_path != path:
        assert commitment(salt, other_path, value) != want
    if exact_bytes(other) != exact_bytes(value):
        assert commitment(salt, path, other) != want


@given(value=JSON)
def test_commitments_are_found_where_they_were_made(value: Any) -> None:
    content = exact_bytes({"a": {"email": value, "keep": 1}, "b": [{"email": value}]})
    marked = marker_for(["**.email"])
    assert marked is not None
    out, disclosures = commit_content(content, marked)
    found = commitments_in(json.loads(out))
    assert sorted(found) == sorted(d[1] for d in disclosures) == ["/a/email", "/b/0/email"]
    for salt, where, v in disclosures:
        assert found[where] == commitment(salt, where, v)
    assert json.loads(out)["a"]["keep"] == 1 and COMMIT_TAG.encode() in out


def _receipt(folder: Path, value: Any) -> Path:
    c = Collector("g", signing_key=str(_key().private), personal=["arguments.email", "arguments.name"])
    c.record("lookup", {"arguments": {"email": value, "name": "Alice"}})
    return Path(c.save(str(folder / "r.json")))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=JSON, edited=JSON, erase_email=st.booleans(), erase_name=st.booleans(), stray=st.booleans())
def test_no_erasure_records_make_an_edited_value_valid(value: Any, edited: Any, erase_email: bool,
                                                       erase_name: bool, stray: bool) -> None:
    """An edited disclosure is INVALID whatever erasure records (valid, trusted, any subset) sit beside it."""
    if exact_bytes(edited) == exact_bytes(value):
        edited = [edited]
    with tempfile.TemporaryDirectory() as d:
        path = _receipt(Path(d), value)
        receipt = json.loads(path.read_bytes())
        evidence = [json.loads(x) for x in path.with_name("r.evidence.jsonl").read_bytes().splitlines()]
        found = commitments_in(evidence[1]["content"])
        key = load_private_key(_key().private)
        records = [erasure_record(receipt, 1, p, found[p], "request", key, "2026-01-01T00:00:00.000000Z")
                   for p, wanted in (("/arguments/email", erase_email), ("/arguments/name", erase_name)) if wanted]
        if stray:  # a record for the edited field itself, signed by the trusted key
            records.append(erasure_record(receipt, 1, "/arguments/email", found["/arguments/email"], "again", key,
                                          "2026-01-02T00:00:00.000000Z"))
        path.with_name("r.erasures.jsonl").write_bytes(b"".join(exact_bytes(r) + b"\n" for r in records))
        disclosures = path.with_name("r.disclosures.jsonl")
        lines = [json.loads(x) for x in disclosures.read_bytes().splitlines()]
        for line in lines[1:]:
            if line["disclosure"][1] == "/arguments/email":
                line["disclosure"][2] = edited
        disclosures.write_bytes(b"".join(exact_bytes(x) + b"\n" for x in lines))
        report = verify_receipt(str(path), trusted_key_ids=[_key().key_id])
        assert report.verdict == "INVALID", report.to_text()
        assert "does not match its commitment" in report.failures[0].reason
