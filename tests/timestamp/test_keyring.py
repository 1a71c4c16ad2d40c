"""Keyrings and the ``key`` check: a key's validity at the TSA's time, never at the receipt's own clock."""

from __future__ import annotations

import datetime as _dt
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from aer1._imprint import KEY_PROOF_MEMBER, TIMESTAMPS_MEMBER
from aer1._keyring import KEYRING_TYPE, format_time, parse_keyring, parse_time
from aer1._signing import load_private_key, sign_receipt
from aer1._timestamp import make_key_proof, request_timestamps
from aer1.verifier import verify_receipt
from aer1.verifier._keyring import load_keyring
from aer1.verifier._timestamp import load_tsa_trust

from .conftest import Cli, checks_of, save_run
from .tsa import LocalTSA, make_pki

KEYS = Path(__file__).resolve().parents[1] / "fixtures" / "keys"


def _keygen(aer1: Cli, folder: Path, name: str = "signer", *extra: str | Path) -> Path:
    """``aer1 keygen -o folder/name``; returns the prefix."""
    prefix = folder / name
    code, _, err = aer1("keygen", "-o", prefix, *extra)
    assert code == 0, err
    return prefix


def _ago(seconds: float) -> str:
    return format_time(_dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(seconds=seconds))


def _key_check(verify: Cli, path: Path, *options: str | Path) -> tuple[int, dict[str, Any], str]:
    code, out, _ = verify(path, *options, "--json")
    checks = checks_of(out)
    return code, checks["key"], json.loads(out)["verdict"]


def test_keygen_writes_the_keyring_entry_beside_the_key_pair(tmp_path: Path, aer1: Cli) -> None:
    prefix = _keygen(aer1, tmp_path)
    keyring = Path(f"{prefix}.keyring.json")
    doc = json.loads(keyring.read_text())
    assert doc["type"] == KEYRING_TYPE and len(doc["keys"]) == 1
    (entry,) = parse_keyring(doc).values()
    assert entry.revoked_at is None and entry.valid_until is None
    assert stat.S_IMODE(os.stat(keyring).st_mode) == 0o644
    code, _, err = aer1("keygen", "-o", prefix)
    assert code == 2 and "exists" in err
    shared = tmp_path / "team.keyring.json"
    _keygen(aer1, tmp_path, "a", "--keyring", shared)
    _keygen(aer1, tmp_path, "b", "--keyring", shared, "--valid-until", "2999-01-01T00:00:00Z")
    entries = list(parse_keyring(json.loads(shared.read_text())).values())
    assert len(entries) == 2 and entries[1].valid_until is not None


def test_key_valid_at_token_time_but_revoked_since_is_valid(tmp_path: Path, tsa: LocalTSA, tsa_roots: Path,
                                                              aer1: Cli, verify: Cli) -> None:
    prefix = _keygen(aer1, tmp_path)
    keyring = f"{prefix}.keyring.json"
    path, _ = save_run(tmp_path, signing_key=f"{prefix}.key", timestamp=tsa.url)
    code, out, err = aer1("key", "revoke", keyring, f"{prefix}.pub", "--reason", "compromised",
                          "--at", _ago(-5))  # revoked after the token (the TSA's accuracy is 1 s)
    assert code == 0 and "revoked" in out, err
    code, key, verdict = _key_check(verify, path, "--keyring", keyring, "--tsa-roots", tsa_roots)
    assert code == 0 and verdict == "VALID" and key["status"] == "PASS" and "revoked since" in key["detail"], key
    code, text, _ = verify(path, "--keyring", keyring, "--tsa-roots", tsa_roots)
    assert "key valid at TSA time (keyring)" in text, text


def test_rotated_out_key_still_valid_for_what_it_signed_in_its_window(tmp_path: Path, tsa: LocalTSA,
                                                                       tsa_roots: Path, aer1: Cli,
                                                                       verify: Cli) -> None:
    prefix = _keygen(aer1, tmp_path)
    keyring = f"{prefix}.keyring.json"
    old, _ = save_run(tmp_path, "old", signing_key=f"{prefix}.key", timestamp=tsa.url)
    code, _, err = aer1("key", "retire", keyring, f"{prefix}.pub", "--at", _ago(-3))
    assert code == 0, err
    code, key, _ = _key_check(verify, old, "--keyring", keyring, "--tsa-roots", tsa_roots)
    assert code == 0 and key["status"] == "PASS", key


def test_signature_after_revocation_is_invalid(tmp_path: Path, tsa: LocalTSA, tsa_roots: Path, aer1: Cli,
                                               verify: Cli) -> None:
    prefix = _keygen(aer1, tmp_path)
    keyring = f"{prefix}.keyring.json"
    code, _, err = aer1("key", "revoke", keyring, f"{prefix}.pub", "--reason", "compromised", "--at", _ago(0))
    assert code == 0, err
    path, _ = save_run(tmp_path, signing_key=f"{prefix}.key", timestamp=tsa.url)  # the stolen key, used after
    code, key, verdict = _key_check(verify, path, "--keyring", keyring, "--tsa-roots", tsa_roots)
    assert code == 1 and verdict == "INVALID" and key["status"] == "FAIL", key
    assert "after the key was revoked" in key["detail"] and "compromised" in key["detail"], key


def test_signature_outside_the_window_is_invalid(tmp_path: Path, tsa: LocalTSA, tsa_roots: Path, aer1: Cli,
                                                 verify: Cli) -> None:
    prefix = _keygen(aer1, tmp_path)
    keyring = f"{prefix}.keyring.json"
    code, _, err = aer1("key", "retire", keyring, f"{prefix}.pub", "--at", _ago(0))
    assert code == 0, err
    path, _ = save_run(tmp_path, signing_key=f"{prefix}.key", timestamp=tsa.url)
    code, key, _ = _key_check(verify, path, "--keyring", keyring, "--tsa-roots", tsa_roots)
    assert code == 1 and key["status"] == "FAIL" and "after the key's window" in key["detail"], key
    doc = json.loads(Path(keyring).read_text())
    doc["keys"][0]["valid_from"] = "2999-01-01T00:00:00Z"
    doc["keys"][0].pop("valid_until")
    Path(keyring).write_text(json.dumps(doc))
    code, key, _ = _key_check(verify, path, "--keyring", keyring, "--tsa-roots", tsa_roots)
    assert code == 1 and "before the key's window" in key["detail"], key


def test_without_a_token_validity_at_signing_is_not_established(tmp_path: Path, tsa: LocalTSA, tsa_roots: Path,
                                                                aer1: Cli, verify: Cli) -> None:
    prefix = _keygen(aer1, tmp_path)
    keyring = f"{prefix}.keyring.json"
    path, _ = save_run(tmp_path, signing_key=f"{prefix}.key")
    code, key, verdict = _key_check(verify, path, "--keyring", keyring, "--tsa-roots", tsa_roots)
    assert code == 0 and verdict == "VALID" and key["status"] == "NOT CHECKED", key
    assert "could not be established" in key["detail"], key
    code, text, _ = verify(path, "--keyring", keyring)
    assert "key validity at signing NOT established (no independent time)" in text, text
    stamped, _ = save_run(tmp_path, "stamped", signing_key=f"{prefix}.key", timestamp=tsa.url)
    code, key, _ = _key_check(verify, stamped, "--keyring", keyring)  # token present, TSA not trusted
    assert code == 0 and key["status"] == "NOT CHECKED", key
    code, _, err = aer1("key", "revoke", keyring, f"{prefix}.pub", "--reason", "superseded")
    assert code == 0, err
    code, key, _ = _key_check(verify, path, "--keyring", keyring)
    assert code == 1 and key["status"] == "FAIL" and "no verified timestamp" in key["detail"], key


def test_keyring_keys_are_the_trusted_keys(tmp_path: Path, aer1: Cli, verify: Cli) -> None:
    mine = _keygen(aer1, tmp_path, "mine")
    other = _keygen(aer1, tmp_path, "other")
    path, _ = save_run(tmp_path, signing_key=f"{other}.key")
    code, out, _ = verify(path, "--keyring", f"{mine}.keyring.json", "--json")
    checks = checks_of(out)
    assert code == 1 and checks["signature"]["status"] == "FAIL" and checks["key"]["status"] == "NOT CHECKED", out
    unsigned, _ = save_run(tmp_path, "unsigned")
    code, out, _ = verify(unsigned, "--keyring", f"{mine}.keyring.json", "--json")
    assert code == 1 and checks_of(out)["signature"]["status"] == "FAIL", out


@pytest.mark.parametrize("content", [
    "not json",
    "[]",
    '{"type": "aer1-keyring", "version": "1"}',
    '{"type": "other", "version": "1", "keys": []}',
    '{"type": "aer1-keyring", "version": "1", "keys": [{"key_id": "00"}]}',
    '{"type": "aer1-keyring", "version": "1", "keys": [1]}',
])
def test_malformed_keyring_is_one_line_exit_2(tmp_path: Path, verify: Cli, content: str) -> None:
    path, _ = save_run(tmp_path)
    keyring = tmp_path / "bad.keyring.json"
    keyring.write_text(content)
    code, out, err = verify(path, "--keyring", keyring)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "keyring" in err, err
    code, out, _ = verify(path, "--keyring", keyring, "--json")
    assert code == 2 and json.loads(out)["verdict"] == "MALFORMED"


def test_keyring_entry_edits_are_checked(tmp_path: Path, aer1: Cli) -> None:
    prefix = _keygen(aer1, tmp_path)
    keyring = Path(f"{prefix}.keyring.json")
    good = json.loads(keyring.read_text())
    entry = good["keys"][0]
    variants = [
        {**entry, "key_id": "0" * 64},
        {**entry, "public_key": "AAAA"},
        {**entry, "valid_from": "yesterday"},
        {**entry, "valid_until": "2000-01-01T00:00:00Z"},
        {**entry, "revoked_at": "2030-01-01T00:00:00Z"},
        {**entry, "revoked_at": "2030-01-01T00:00:00Z", "revocation_reason": ""},
        {**entry, "extra": 1},
    ]
    for bad in variants:
        keyring.write_text(json.dumps({**good, "keys": [bad]}))
        code, _, err = aer1("key", "revoke", keyring, entry["key_id"], "--reason", "x")
        assert code == 2 and err.count("\n") == 1 and "keyring" in err, (bad, err)
    keyring.write_text(json.dumps({**good, "keys": [entry, entry]}))
    code, _, err = aer1("key", "revoke", keyring, entry["key_id"], "--reason", "x")
    assert code == 2 and "twice" in err, err
    keyring.write_text(json.dumps(good))
    assert aer1("key", "revoke", keyring, entry["key_id"], "--reason", "lost laptop")[0] == 0
    code, _, err = aer1("key", "revoke", keyring, entry["key_id"], "--reason", "again")
    assert code == 2 and "already revoked" in err, err
    code, _, err = aer1("key", "revoke", keyring, "f" * 64, "--reason", "x")
    assert code == 2 and "is not in" in err, err
    code, _, err = aer1("key", "retire", keyring, entry["key_id"], "--at", "1999-01-01T00:00:00Z")
    assert code == 2 and "not after" in err, err


@pytest.mark.parametrize("kind", ["device", "fifo", "directory", "missing"])
def test_keyring_that_is_not_a_regular_file_is_one_line_exit_2(tmp_path: Path, verify: Cli, aer1: Cli,
                                                                kind: str) -> None:
    path, _ = save_run(tmp_path)
    target = {"device": Path(os.devnull), "fifo": tmp_path / "k.fifo", "directory": tmp_path / "k.dir",
              "missing": tmp_path / "nothing.json"}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    if kind == "directory":
        target.mkdir()
    code, out, err = verify(path, "--keyring", target)
    assert code == 2 and out == "" and err.count("\n") == 1 and "keyring" in err, err
    code, _, err = aer1("key", "revoke", target, "0" * 64, "--reason", "x")
    assert code == 2 and err.count("\n") == 1, err


def test_token_accuracy_widens_the_time_a_revocation_is_checked_at(tmp_path: Path, tmp_path_factory: Any,
                                                                   aer1: Cli) -> None:
    pki = make_pki(tmp_path_factory.mktemp("no-accuracy-pki"), "NoAccuracy")
    cnf = pki / "tsa.cnf"
    cnf.write_text(cnf.read_text().replace("accuracy = secs:1\n", ""))  # a token stating no accuracy
    server = LocalTSA(pki)
    try:
        prefix = _keygen(aer1, tmp_path)
        path, _ = save_run(tmp_path, signing_key=f"{prefix}.key", timestamp=server.url)
    finally:
        server.close()
    trust = load_tsa_trust(str(pki))
    stamp = verify_receipt(str(path), tsa_trust=trust).check("timestamp")
    assert stamp.status == "PASS" and stamp.facts["accuracy_s"] == 1.0, stamp.facts
    tsa_time = parse_time(stamp.facts["time"], "time")
    keyring = Path(f"{prefix}.keyring.json")
    for after_s, want in ((0.5, "FAIL"), (1.5, "PASS")):
        doc = json.loads(keyring.read_text())
        doc["keys"][0].update(revoked_at=format_time(tsa_time + _dt.timedelta(seconds=after_s)),
                              revocation_reason="compromised")
        keyring.write_text(json.dumps(doc))
        key = verify_receipt(str(path), tsa_trust=trust, keyring=load_keyring(str(keyring))).check("key")
        assert key.status == want, (after_s, key.detail)


def test_content_stamped_before_revocation_but_signed_after_is_invalid(tmp_path: Path, tsa: LocalTSA,
                                                                        tsa_roots: Path, aer1: Cli,
                                                                        verify: Cli) -> None:
    """An attacker has fabricated content stamped while the key was good, then signs it with the key stolen later."""
    prefix = _keygen(aer1, tmp_path)
    keyring = f"{prefix}.keyring.json"
    path, stamped = save_run(tmp_path, timestamp=tsa.url)  # unsigned: no key proof, the token dates content only
    assert KEY_PROOF_MEMBER not in stamped
    code, _, err = aer1("key", "revoke", keyring, f"{prefix}.pub", "--reason", "retired", "--at", _ago(-3))
    assert code == 0, err
    stolen = load_private_key(f"{prefix}.key")
    signed = {**stamped, "signature": sign_receipt(stamped, stolen)}
    path.write_text(json.dumps(signed))
    code, key, verdict = _key_check(verify, path, "--keyring", keyring, "--tsa-roots", tsa_roots)
    assert code == 1 and verdict == "INVALID" and key["status"] == "FAIL", key
    assert "date the content, not the key's use" in key["detail"], key
    forged = {**stamped, KEY_PROOF_MEMBER: make_key_proof(stamped, stolen)}  # a proof made now is not covered
    forged["signature"] = sign_receipt(forged, stolen)
    path.write_text(json.dumps(forged))
    code, out, _ = verify(path, "--keyring", keyring, "--tsa-roots", tsa_roots, "--json")
    assert code == 1 and checks_of(out)["timestamp"]["status"] == "FAIL", out  # the token is not over it


def test_key_proof_that_does_not_verify_fails_even_under_a_good_token(tmp_path: Path, tsa: LocalTSA,
                                                                       tsa_roots: Path, aer1: Cli) -> None:
    prefix = _keygen(aer1, tmp_path)
    key = load_private_key(f"{prefix}.key")
    _, unsigned = save_run(tmp_path)
    good = make_key_proof(unsigned, key)
    other = make_key_proof(unsigned, load_private_key(KEYS / "attacker.key"))
    trust, keyring = load_tsa_trust(str(tsa_roots)), load_keyring(f"{prefix}.keyring.json")
    for proof, want in ((good, "PASS"), ({**good, "value": other["value"]}, "does not verify"), (other, "is not"),
                        ({**good, "value": "AAAA"}, "not canonical base64")):
        receipt = {**unsigned, KEY_PROOF_MEMBER: proof}
        receipt[TIMESTAMPS_MEMBER] = request_timestamps(receipt, [tsa.url])  # the token covers this proof
        receipt["signature"] = sign_receipt(receipt, key)
        report = verify_receipt(receipt, tsa_trust=trust, keyring=keyring)
        assert report.check("timestamp").status == "PASS", report.check("timestamp").detail
        got = report.check("key")
        assert (got.status == "PASS") if want == "PASS" else (got.status == "FAIL" and want in got.detail), (
            proof, got.detail)


def test_proofs_refuse_tsa_roots_and_keyring(tmp_path: Path, tsa_roots: Path, aer1: Cli, verify: Cli) -> None:
    prefix = _keygen(aer1, tmp_path)
    path, _ = save_run(tmp_path, signing_key=f"{prefix}.key")
    proof = tmp_path / "step1.proof.json"
    assert aer1("prove", path, "--step", "1", "-o", proof)[0] == 0
    for option, value in (("--keyring", f"{prefix}.keyring.json"), ("--tsa-roots", tsa_roots)):
        code, out, err = verify(proof, option, value)
        assert code == 2 and out == "" and err.count("\n") == 1 and "cannot apply to a proof" in err, err


@pytest.mark.parametrize("proof", [None, "text", {}, {"key_id": "x", "value": ""}, {"key_id": "0" * 64, "value": 1},
                                   {"key_id": "0" * 64, "value": "A" * 89}, {"key_id": "0" * 64, "value": "", "x": 1}])
def test_malformed_key_proof_fails_the_members_check(tmp_path: Path, verify: Cli, proof: Any) -> None:
    path, receipt = save_run(tmp_path)
    path.write_text(json.dumps({**receipt, KEY_PROOF_MEMBER: proof}))
    code, out, _ = verify(path, "--json")
    members = checks_of(out)["members"]
    assert code == 1 and members["status"] == "FAIL" and KEY_PROOF_MEMBER in members["detail"], members
