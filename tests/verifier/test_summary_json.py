"""New user: ``aer1-verify --summary FILE`` with --json, and with options it does not use.

The README says ``--json`` follows spec/verdict-schema.json; the output of checking a
signed summary had no ``schema`` member and no shape in the schema. It now carries
``schema`` and is the schema's ``summary_check``, VALID, INVALID or unreadable. And it
took any other option (``--expected-root``, ``--keyring``, ``--jobs``, a PATH) and ignored it,
still saying VALID; each is now refused by name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aer1 import generate_key_pair

from ..cli_runs import Run
from ..policy.conftest import verdict_schema

__all__ = ["verdict_schema"]


@pytest.fixture
def signed_summary(tmp_path: Path, receipt: Path, run_cli: Run, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``summary.json`` over the one receipt, signed by ``auditor.key`` (its public key ``auditor.pub``)."""
    monkeypatch.chdir(tmp_path)
    private, public = generate_key_pair()
    (tmp_path / "auditor.key").write_bytes(private)
    (tmp_path / "auditor.pub").write_bytes(public)
    code, _, err = run_cli("--attest", "auditor.key", "-o", "summary.json", receipt.name)
    assert code == 0, f"got exit {code} ({err.strip()}), want the summary written"
    return tmp_path / "summary.json"


def _checked(run_cli: Run, schema: Any, summary: Path) -> dict[str, Any]:
    code, out, _ = run_cli("--json", "--summary", summary.name, "--key", "auditor.pub")
    value = json.loads(out)
    errors = [e.message for e in schema.iter_errors(value)]
    assert errors == [], f"got {errors}, want the output to follow spec/verdict-schema.json"
    assert value["exit_code"] == code, f"got exit {code}, want {value['exit_code']}"
    return dict(value)


def test_summary_json_valid(signed_summary: Path, run_cli: Run, verdict_schema: Any) -> None:
    value = _checked(run_cli, verdict_schema, signed_summary)
    assert (value["schema"], value["kind"], value["verdict"]) == ("aer1-verdict-v1", "summary", "VALID"), \
        f"got {value['schema'], value['kind'], value['verdict']}"


def test_summary_json_invalid_when_a_receipt_changed(signed_summary: Path, receipt: Path, run_cli: Run,
                                                     verdict_schema: Any) -> None:
    receipt.write_bytes(receipt.read_bytes() + b"\n")
    value = _checked(run_cli, verdict_schema, signed_summary)
    assert value["verdict"] == "INVALID", f"got {value['verdict']}, want INVALID for a changed receipt"


def test_summary_json_unreadable(signed_summary: Path, run_cli: Run, verdict_schema: Any) -> None:
    signed_summary.write_text("{not json")
    value = _checked(run_cli, verdict_schema, signed_summary)
    assert value["verdict"] == "MALFORMED" and value["exit_code"] == 2, f"got {value['verdict']}"


@pytest.mark.parametrize("extra", [
    ["--expected-root", "ab" * 32], ["--expected-head", "ab" * 32], ["--keyring", "auditor.pub"],
    ["--tsa-roots", "."], ["--evidence", "x.jsonl"], ["--receipt", "receipt.json"], ["--jobs", "2"],
    ["--verbose"], ["--only-failures"], ["receipt.json"],
])
def test_summary_refuses_what_it_would_not_check(signed_summary: Path, run_cli: Run, extra: list[str]) -> None:
    """``--summary`` checked none of these yet said VALID: a pinned root or a keyring went unchecked, unsaid."""
    code, out, err = run_cli("--summary", signed_summary.name, "--key", "auditor.pub", *extra)
    assert code == 2, f"got exit {code} ({out.strip().splitlines()[-1:]}), want 2 for {extra}"
    named = extra[0] if extra[0].startswith("--") else "PATH"
    assert "goes alone" in err and f"got {named}" in err, f"got {err.strip()}, want {named} named"


def test_summary_refusal_stays_json(signed_summary: Path, run_cli: Run, verdict_schema: Any) -> None:
    code, out, _ = run_cli("--json", "--summary", signed_summary.name, "--key", "auditor.pub", "--jobs", "2")
    value = json.loads(out)
    assert code == 2 and not list(verdict_schema.iter_errors(value)) and "--jobs" in value["error"], f"got {value}"
