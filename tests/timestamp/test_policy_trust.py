"""A policy's ``[trust]`` names the keyring and TSA roots checks 9 and 10 use, as the options do."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from pathlib import Path

from aer1._keyring import format_time

from .conftest import Cli, checks_of, save_run
from .tsa import LocalTSA


def _policy(folder: Path, trust: str) -> Path:
    path = folder / "policy.toml"
    path.write_text(f'format = "aer1-policy-v1"\nname = "trusting"\n[require]\ntimestamp = true\n[trust]\n{trust}')
    return path


def test_the_policy_trust_table_runs_the_timestamp_and_key_checks(
    tmp_path: Path, tsa: LocalTSA, tsa_roots: Path, aer1: Cli, verify: Cli
) -> None:
    assert aer1("keygen", "-o", tmp_path / "signer")[0] == 0
    path, _ = save_run(tmp_path, signing_key=str(tmp_path / "signer.key"), timestamp=tsa.url)
    # keyring relative to the policy file; TSA roots as an absolute path
    policy = _policy(tmp_path, f'keyring = "signer.keyring.json"\ntsa_roots = "{tsa_roots}"\n')
    code, out, err = verify(path, "--policy", policy, "--json")
    checks = checks_of(out)
    assert code == 0, (out, err)
    assert checks["timestamp"]["status"] == "PASS" and checks["key"]["status"] == "PASS", checks
    # revoked since the token: still valid at the TSA's time, through the policy's keyring
    later = format_time(_dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=5))  # past the TSA's 1 s accuracy
    assert aer1("key", "revoke", tmp_path / "signer.keyring.json", tmp_path / "signer.pub",
                "--reason", "rotated", "--at", later)[0] == 0
    code, out, _ = verify(path, "--policy", policy, "--json")
    assert code == 0 and checks_of(out)["key"]["status"] == "PASS"


def test_without_the_trust_table_the_required_timestamp_fails_closed(
    tmp_path: Path, tsa: LocalTSA, verify: Cli
) -> None:
    path, _ = save_run(tmp_path, timestamp=tsa.url)
    policy = tmp_path / "bare.toml"
    policy.write_text('format = "aer1-policy-v1"\n[require]\ntimestamp = true\n')
    code, out, _ = verify(path, "--policy", policy, "--json")
    assert code == 1 and json.loads(out)["verdict"] == "INVALID"


def test_an_option_that_disagrees_with_the_policy_trust_is_refused(
    tmp_path: Path, tsa_roots: Path, aer1: Cli, verify: Cli
) -> None:
    assert aer1("keygen", "-o", tmp_path / "a")[0] == 0
    assert aer1("keygen", "-o", tmp_path / "b")[0] == 0
    path, _ = save_run(tmp_path, signing_key=str(tmp_path / "a.key"))
    policy = _policy(tmp_path, 'keyring = "a.keyring.json"\n')
    code, out, err = verify(path, "--policy", policy, "--keyring", tmp_path / "b.keyring.json")
    assert code == 2 and "disagree" in err and len(err.strip().splitlines()) == 1, (out, err)
    code, out, _ = verify(path, "--policy", policy, "--keyring", tmp_path / "a.keyring.json", "--json")
    assert code in (0, 1) and json.loads(out)["verdict"] in ("VALID", "INVALID")


def test_an_unknown_trust_member_is_a_usage_error(tmp_path: Path, verify: Cli) -> None:
    path, _ = save_run(tmp_path)
    policy = _policy(tmp_path, 'roots = "x"\n')
    code, out, _ = verify(path, "--policy", policy, "--json")
    assert code == 2 and "[trust]" in out, out


def test_a_signed_summary_records_the_trusted_keyring_and_tsa_certificates(
    tmp_path: Path, tsa: LocalTSA, tsa_roots: Path, aer1: Cli, verify: Cli
) -> None:
    assert aer1("keygen", "-o", tmp_path / "signer")[0] == 0
    assert aer1("keygen", "-o", tmp_path / "auditor")[0] == 0
    path, _ = save_run(tmp_path, signing_key=str(tmp_path / "signer.key"), timestamp=tsa.url)
    policy = _policy(tmp_path, f'keyring = "signer.keyring.json"\ntsa_roots = "{tsa_roots}"\n')
    summary = tmp_path / "summary.json"
    code, out, err = verify(path, "--policy", policy, "--attest", tmp_path / "auditor.key", "-o", summary)
    assert code == 0, (out, err)
    text = summary.read_text()
    ring = hashlib.sha256((tmp_path / "signer.keyring.json").read_bytes()).hexdigest()
    roots = {hashlib.sha256(p.read_bytes()).hexdigest() for p in tsa_roots.iterdir()}
    assert ring in text and all(digest in text for digest in roots), text
