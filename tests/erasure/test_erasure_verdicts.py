"""Verdicts, policies, the report and ``aer1 show`` over committed, erased and withheld fields; the spec vector."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from aer1 import Collector
from aer1._vocabulary import VOCABULARY

from .conftest import Key, erase, run_aer1

SPEC = Path(__file__).resolve().parents[2] / "spec"
POLICY = """format = "aer1-policy-v1"
[require]
evidence = {evidence}
[[rule]]
name = "small-refunds"
form = "argument"
tool = "refund"
argument = "amount"
max = 100
[[rule]]
name = "known-customer"
form = "argument"
tool = "refund"
argument = "email"
pattern = ".+@example[.]com"
"""


def _receipt(folder: Path, key: Key) -> Path:
    c = Collector("refunds", signing_key=str(key.private), personal=["arguments.email", "result"])
    c.record("refund", {"vocabulary": VOCABULARY, "name": "refund",
                        "arguments": {"email": "alice@example.com", "amount": 40}, "result": "ok, refunded"})
    return Path(c.save(str(folder / "r.json")))


def _policy(folder: Path, evidence: str) -> Path:
    path = folder / f"policy-{evidence.strip(chr(34))}.toml"
    path.write_text(POLICY.format(evidence=evidence))
    return path


def _verify(*args: str | Path) -> tuple[int, dict[str, Any]]:
    code, out, _ = run_aer1("verify", *[str(a) for a in args], "--json")
    doc: dict[str, Any] = json.loads(out)
    return code, doc


def _schema() -> jsonschema.Draft202012Validator:
    schema = json.loads((SPEC / "verdict-schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _violations(doc: dict[str, Any]) -> dict[str, str]:
    policy = next(c for c in doc["checks"] if c["name"] == "policy")
    return {f["message"].split(":")[0].removeprefix("rule "): f["message"] for f in policy["failures"]}


@pytest.mark.parametrize("level", ["true", '"allow-erased"', '"complete"'])
def test_policies_over_disclosed_erased_and_withheld_fields(tmp_path: Path, key: Key, level: str) -> None:
    path, policy, validator = _receipt(tmp_path, key), _policy(tmp_path, level), _schema()
    code, doc = _verify(path, "--key", key.public, "--policy", policy)
    assert code == 0 and doc["verdict"] == "VALID", doc["failures"]
    assert doc["fields"] == {"committed": 2, "disclosed": 2, "erased": [], "withheld": []}
    assert not list(validator.iter_errors(doc))
    erase(path, key, "--step", "1", "--path", "arguments.email", reason="request 9")
    code, doc = _verify(path, "--key", key.public, "--policy", policy)
    assert not list(validator.iter_errors(doc))
    violations = _violations(doc)
    # The rule over the erased argument says so; the one over a disclosed argument holds.
    assert "small-refunds" not in violations
    assert "erased (by key" in violations["known-customer"] and "request 9" in violations["known-customer"]
    assert "cannot be evaluated" in violations["known-customer"]
    assert ("require.evidence" in violations) == (level == '"complete"')
    assert doc["basis"]["evidence"] == "checked" and "1 erased" in doc["basis"]["fields"]
    # Withheld: no record by a trusted key (the records file gone).
    path.with_name("r.erasures.jsonl").unlink()
    code, doc = _verify(path, "--key", key.public, "--policy", policy)
    assert code == 1 and not list(validator.iter_errors(doc))
    violations = _violations(doc)
    assert "withheld" in violations["require.evidence"] and "withheld" in violations["known-customer"]
    assert doc["basis"]["evidence"] == "partly checked"
    assert doc["fields"]["withheld"] == [{"seq": 1, "path": "/arguments/email"}]


def test_a_policy_level_of_another_name_is_refused(tmp_path: Path, key: Key) -> None:
    code, out, _ = run_aer1("verify", str(_receipt(tmp_path, key)), "--policy", str(_policy(tmp_path, '"most"')))
    assert code == 2 and "[require] evidence" in out + _


def test_report_and_show_never_show_the_commitment(tmp_path: Path, key: Key) -> None:
    path = _receipt(tmp_path, key)
    erase(path, key, "--step", "1", "--path", "arguments.email", reason="request 9")
    page = tmp_path / "page.html"
    code, _, err = run_aer1("report", path, "-o", page, "--key", key.public)
    assert code == 0, err
    html = page.read_text()
    assert "$aer1:commit" not in html and "alice@example.com" not in html
    assert "erased (by key" in html and "ok, refunded" in html
    code, out, _ = run_aer1("show", path, "--key", key.public)
    assert code == 0 and "$aer1:commit" not in out, out
    code, out, _ = run_aer1("show", path, "--key", key.public, "--json")
    assert code == 0 and "$aer1:commit" not in out and "erased" in out


def test_spec_vector(tmp_path: Path) -> None:
    """The vector in spec/erasure.md, recomputed from its definition (not through aer1's own functions)."""
    v = json.loads((SPEC / "vectors" / "erasure-vector.json").read_text())
    assert base64.urlsafe_b64decode(v["salt"] + "==") == bytes(range(16))
    preimage = json.dumps([v["salt"], v["path"], v["value"]], separators=(",", ":"), ensure_ascii=False)
    assert preimage == v["commitment_preimage"]
    assert hashlib.sha256(preimage.encode()).hexdigest() == v["commitment"]
    after = json.loads(json.dumps(v["content"]))
    after["arguments"]["email"] = {"$aer1:commit": v["commitment"]}
    jcs = json.dumps(after, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    assert jcs == v["committed_content_jcs"]
    assert hashlib.sha256(jcs.encode()).hexdigest() == v["receipt_hash"]
    assert v["disclosure_line"] == json.dumps({"disclosure": [v["salt"], v["path"], v["value"]], "seq": 1},
                                              separators=(",", ":")) + "\n"
    record = json.loads(v["erasure_record_jcs"])
    sig = record.pop("signature")
    body = json.dumps(record, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode()
    payload = b"application/vnd.aer1.erasure-record+json"
    signed = b"aer1-sig-v1" + struct.pack(">Q", len(payload)) + payload + struct.pack(">Q", len(body)) + body
    assert hashlib.sha256(signed).hexdigest() == v["erasure_signing_input_sha256"]
    Ed25519PublicKey.from_public_bytes(base64.b64decode(sig["public_key"])).verify(base64.b64decode(sig["value"]),
                                                                                   signed)
    text = (SPEC / "erasure.md").read_text()
    for member in ("commitment", "receipt_hash", "salt", "commitment_preimage", "committed_content_jcs"):
        assert v[member] in text, f"spec/erasure.md does not show the vector's {member}"
    # The commitment aer1 makes for the same salt, path and value is the vector's.
    from aer1._commit import commitment

    assert commitment(v["salt"], v["path"], v["value"]) == v["commitment"]
    assert "erasure.md" in (SPEC / "README.md").read_text()
