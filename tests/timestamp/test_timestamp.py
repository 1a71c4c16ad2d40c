"""RFC 3161 tokens at finalize and the ``timestamp`` check, against a real local OpenSSL TSA."""

from __future__ import annotations

import base64
import json
import logging
import socket
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector
from aer1._imprint import KEY_PROOF_MEMBER, MAX_TIMESTAMPS, TIMESTAMPS_MEMBER, imprint_digest
from aer1._signing import load_private_key, sign_receipt
from aer1.verifier import verify_receipt
from aer1.verifier._stream import verify_streaming
from aer1.verifier._timestamp import load_tsa_trust

from ..receipts import PeerCli, PeerWorkflow
from .conftest import Cli, checks_of, record_run, save_run
from .tsa import MISBEHAVIOURS, TEST_POLICY, LocalTSA

KEYS = Path(__file__).resolve().parents[1] / "fixtures" / "keys"


def _write(path: Path, receipt: dict[str, Any]) -> Path:
    path.write_text(json.dumps(receipt), encoding="utf-8")
    return path


def _closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens (a TSA that is down)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/tsr"


def test_good_token_verifies_and_reports_the_tsa_time(tmp_path: Path, tsa: LocalTSA, tsa_roots: Path,
                                                       verify: Cli, peer_verify_cli: PeerCli,
                                                       peer_verify_workflow: PeerWorkflow) -> None:
    path, receipt = save_run(tmp_path, signing_key=KEYS / "trusted.key", timestamp=tsa.url)
    (entry,) = receipt[TIMESTAMPS_MEMBER]
    assert set(entry) == {"tsa", "nonce", "token"} and entry["tsa"] == tsa.url
    code, out, _ = verify(path, "--tsa-roots", tsa_roots, "--json")
    assert code == 0, out
    stamp = checks_of(out)["timestamp"]
    assert stamp["status"] == "PASS" and "TSA time 20" in stamp["detail"], stamp
    code, text, _ = verify(path, "--tsa-roots", tsa_roots)
    assert code == 0 and "timestamped by a trusted TSA at 20" in text, text
    assert "signature" in receipt and KEY_PROOF_MEMBER in receipt  # the token covers the key proof, the signature both
    peer_code, peer_out = peer_verify_cli(path)  # the token is a member other AER-1 verifiers pass over
    assert peer_code == 0 and peer_verify_workflow(receipt) == [], peer_out
    forged = {**receipt, TIMESTAMPS_MEMBER: [{**entry, "tsa": "http://elsewhere.example/"}]}
    assert verify_receipt(forged).check("signature").status == "FAIL"


def test_token_policy_is_checked_when_demanded(tmp_path: Path, tsa: LocalTSA, tsa_roots: Path,
                                               verify: Cli) -> None:
    path, _ = save_run(tmp_path, timestamp=tsa.url)
    code, out, _ = verify(path, "--tsa-roots", tsa_roots, "--tsa-policy", TEST_POLICY, "--json")
    assert code == 0 and checks_of(out)["timestamp"]["status"] == "PASS", out
    code, out, _ = verify(path, "--tsa-roots", tsa_roots, "--tsa-policy", "1.2.3.4", "--json")
    stamp = checks_of(out)["timestamp"]
    assert code == 1 and stamp["status"] == "FAIL" and "differs from the one demanded" in stamp["detail"], stamp


def test_token_from_an_untrusted_tsa_fails(tmp_path: Path, rogue_tsa: LocalTSA, tsa_roots: Path,
                                           verify: Cli) -> None:
    path, _ = save_run(tmp_path, signing_key=KEYS / "trusted.key", timestamp=rogue_tsa.url)
    code, out, _ = verify(path, "--tsa-roots", tsa_roots, "--json")
    stamp = checks_of(out)["timestamp"]
    assert code == 1 and stamp["status"] == "FAIL", stamp
    assert "does not chain to a trusted TSA root" in stamp["detail"], stamp


def test_token_over_another_receipt_fails(tmp_path: Path, tsa: LocalTSA, tsa_roots: Path, verify: Cli) -> None:
    _, donor = save_run(tmp_path, "donor", timestamp=tsa.url)
    path, receipt = save_run(tmp_path, "target")
    key = load_private_key(KEYS / "attacker.key")
    grafted = {**receipt, TIMESTAMPS_MEMBER: donor[TIMESTAMPS_MEMBER]}
    grafted["signature"] = sign_receipt(grafted, key)  # well signed, chain intact: only the token is wrong
    _write(path, grafted)
    code, out, _ = verify(path, "--tsa-roots", tsa_roots, "--json")
    checks = checks_of(out)
    assert checks["chain"]["status"] == "PASS" and checks["signature"]["status"] == "PASS", checks
    assert code == 1 and checks["timestamp"]["status"] == "FAIL", checks["timestamp"]
    assert "imprint is not this receipt's digest" in checks["timestamp"]["detail"]


def test_receipt_edited_after_the_token_fails(tmp_path: Path, tsa: LocalTSA, tsa_roots: Path,
                                              verify: Cli) -> None:
    path, receipt = save_run(tmp_path, timestamp=tsa.url)
    before = imprint_digest(receipt)
    for member, value in (("goal", "Plan something else"), ("status", "error"), ("merkle_root", "0" * 64)):
        edited = {**receipt, member: value}
        assert imprint_digest(edited) != before
        _write(path, edited)
        code, out, _ = verify(path, "--tsa-roots", tsa_roots, "--json")
        stamp = checks_of(out)["timestamp"]
        assert code == 1 and stamp["status"] == "FAIL", (member, stamp)
        assert "imprint is not this receipt's digest" in stamp["detail"], (member, stamp)


def test_nonce_other_than_recorded_fails(tmp_path: Path, tsa: LocalTSA, tsa_roots: Path) -> None:
    _, receipt = save_run(tmp_path, timestamp=tsa.url)
    (entry,) = receipt[TIMESTAMPS_MEMBER]
    other = {**receipt, TIMESTAMPS_MEMBER: [{**entry, "nonce": str(int(entry["nonce"]) + 1)}]}
    stamp = verify_receipt(other, tsa_trust=load_tsa_trust(str(tsa_roots))).check("timestamp")
    assert stamp.status == "FAIL" and "nonce differs" in stamp.detail, stamp.detail


def test_two_distinct_tsas_each_verified(tmp_path: Path, tsa: LocalTSA, rogue_tsa: LocalTSA, tsa_roots: Path,
                                         verify: Cli) -> None:
    path, receipt = save_run(tmp_path, timestamp=[tsa.url, rogue_tsa.url])
    assert [e["tsa"] for e in receipt[TIMESTAMPS_MEMBER]] == [tsa.url, rogue_tsa.url]
    both = tmp_path / "both-roots"
    both.mkdir()
    for name, pki in (("a", tsa.pki), ("b", rogue_tsa.pki)):
        for cert in ("root.crt", "intermediate.crt"):
            (both / f"{name}-{cert}").write_bytes((pki / cert).read_bytes())
    code, out, _ = verify(path, "--tsa-roots", both, "--json")
    assert code == 0 and checks_of(out)["timestamp"]["status"] == "PASS", out
    report = verify_receipt(str(path), tsa_trust=load_tsa_trust(str(both)))
    assert len(report.check("timestamp").facts["signers"]) == 2, report.check("timestamp").facts
    code, out, _ = verify(path, "--tsa-roots", tsa_roots, "--json")  # one of the two is not trusted: not counted
    stamp = checks_of(out)["timestamp"]
    assert code == 0 and stamp["status"] == "PASS" and "1 not verified (not counted)" in stamp["detail"], stamp
    report = verify_receipt(str(path), tsa_trust=load_tsa_trust(str(tsa_roots)))
    assert len(report.check("timestamp").facts["signers"]) == 1


def test_tsa_down_finalizes_without_a_token_and_says_so(tmp_path: Path, tsa_roots: Path, verify: Cli,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    url = _closed_port_url()
    with caplog.at_level(logging.WARNING, logger="aer1.timestamp"):
        path, receipt = save_run(tmp_path, signing_key=KEYS / "trusted.key", timestamp=url, timestamp_timeout=5)
    (entry,) = receipt[TIMESTAMPS_MEMBER]
    assert set(entry) == {"tsa", "error"} and entry["tsa"] == url and "unreachable" in entry["error"], entry
    assert any("no token from" in r.getMessage() for r in caplog.records)
    code, out, _ = verify(path, "--tsa-roots", tsa_roots, "--json")
    stamp = checks_of(out)["timestamp"]
    assert code == 0 and stamp["status"] == "NOT CHECKED" and "gave none at finalize" in stamp["detail"], stamp


def test_tsa_slow_finalizes_at_the_timeout_without_a_token(tmp_path: Path, trusted_pki: Path, tsa_roots: Path,
                                                           verify: Cli) -> None:
    slow = LocalTSA(trusted_pki, delay_s=120)
    try:
        path, receipt = save_run(tmp_path, timestamp=slow.url, timestamp_timeout=0.5)
    finally:
        slow.close()
    (entry,) = receipt[TIMESTAMPS_MEMBER]
    assert entry == {"tsa": slow.url, "error": "no reply within 0.5 s"}, entry
    assert slow.requests == 1
    code, out, _ = verify(path, "--tsa-roots", tsa_roots, "--json")
    assert code == 0 and checks_of(out)["timestamp"]["status"] == "NOT CHECKED", out


def test_callable_tsa_and_a_failing_one(tmp_path: Path, tsa: LocalTSA, tsa_roots: Path, verify: Cli) -> None:
    def broken(request: bytes) -> bytes:
        raise ConnectionError("TSA refused")

    def garbage(request: bytes) -> bytes:
        return b"\x30\x03\x02\x01\x00"

    path, receipt = save_run(tmp_path, timestamp=[tsa.answer, broken, garbage])
    good, bad, junk = receipt[TIMESTAMPS_MEMBER]
    assert "token" in good and bad["error"] == "TSA refused" and "not a time-stamp response" in junk["error"]
    code, out, _ = verify(path, "--tsa-roots", tsa_roots, "--json")
    assert code == 0 and checks_of(out)["timestamp"]["status"] == "PASS", out


def test_token_without_trusted_roots_is_not_claimed(tmp_path: Path, tsa: LocalTSA, verify: Cli) -> None:
    path, _ = save_run(tmp_path, timestamp=tsa.url)
    code, out, _ = verify(path, "--json")
    stamp = checks_of(out)["timestamp"]
    assert code == 0 and stamp["status"] == "NOT CHECKED" and "--tsa-roots" in stamp["detail"], stamp
    code, text, _ = verify(path)
    assert "timestamped" not in text, text


def test_streaming_verifier_checks_tokens_too(tmp_path: Path, tsa: LocalTSA, rogue_tsa: LocalTSA,
                                              tsa_roots: Path) -> None:
    trust = load_tsa_trust(str(tsa_roots))
    for url, want in ((tsa.url, "PASS"), (rogue_tsa.url, "FAIL")):
        path, _ = save_run(tmp_path, timestamp=url)
        report = verify_streaming(str(path), evidence=None, trusted_key_ids=None, expected_root=None,
                                  expected_head=None, tsa_trust=trust)
        assert report is not None and report.check("timestamp").status == want, report.to_text()


@pytest.mark.parametrize("member", [
    "not a list",
    [],
    [{"tsa": "x"}],
    [{"tsa": "x", "nonce": "12", "token": "not base64!"}],
    [{"tsa": "x", "nonce": "-1", "token": "AA=="}],
    [{"tsa": "x", "error": "e", "token": "AA=="}],
    [{"tsa": "x", "nonce": "1", "token": base64.b64encode(b"\x30\x00").decode()}],
    [{"tsa": "x", "error": "e"}] * (MAX_TIMESTAMPS + 1),
])
def test_malformed_timestamps_member_fails_without_traceback(tmp_path: Path, tsa_roots: Path, verify: Cli,
                                                             member: Any) -> None:
    path, receipt = save_run(tmp_path)
    _write(path, {**receipt, TIMESTAMPS_MEMBER: member})
    code, out, err = verify(path, "--tsa-roots", tsa_roots, "--json")
    assert code == 1 and checks_of(out)["timestamp"]["status"] == "FAIL" and "Traceback" not in err + out, out


@pytest.mark.parametrize("bad", ["missing-dir", "empty-dir", "not-a-cert", "leaf-only"])
def test_bad_tsa_roots_is_one_line_exit_2(tmp_path: Path, trusted_pki: Path, verify: Cli, bad: str) -> None:
    path, _ = save_run(tmp_path)
    folder = tmp_path / bad
    if bad != "missing-dir":
        folder.mkdir()
    if bad == "not-a-cert":
        (folder / "x.pem").write_text("-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n")
    if bad == "leaf-only":
        (folder / "tsa.crt").write_bytes((trusted_pki / "tsa.crt").read_bytes())
    code, out, err = verify(path, "--tsa-roots", folder)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "--tsa-roots" in err, err
    code, out, err = verify(path, "--tsa-roots", folder, "--json")
    assert code == 2 and json.loads(out)["verdict"] == "MALFORMED", out


def test_aer1_timestamp_adds_a_token_to_a_saved_receipt(tmp_path: Path, tsa: LocalTSA, tsa_roots: Path,
                                                        aer1: Cli, verify: Cli) -> None:
    path, _ = save_run(tmp_path, signing_key=KEYS / "trusted.key")
    code, _, err = aer1("timestamp", path, "--tsa", tsa.url)
    assert code == 2 and "give its signing key (--key)" in err, err
    code, _, err = aer1("timestamp", path, "--tsa", tsa.url, "--key", KEYS / "attacker.key")
    assert code == 2 and "not the key that signed" in err, err
    code, out, err = aer1("timestamp", path, "--tsa", tsa.url, "--key", KEYS / "trusted.key")
    assert code == 0 and "signed again" in out, err
    code, out, _ = verify(path, "--tsa-roots", tsa_roots, "--key", KEYS / "trusted.pub", "--json")
    checks = checks_of(out)
    assert code == 0 and checks["timestamp"]["status"] == "PASS" and checks["evidence"]["status"] == "PASS", out
    code, _, err = aer1("timestamp", path, "--tsa", _closed_port_url(), "--key", KEYS / "trusted.key",
                        "--timeout", "5")
    assert code == 2 and "left unchanged" in err, err
    assert verify(path, "--tsa-roots", tsa_roots)[0] == 0


def test_aer1_timestamp_refuses_a_tampered_receipt(tmp_path: Path, tsa: LocalTSA, aer1: Cli) -> None:
    path, receipt = save_run(tmp_path)
    _write(path, {**receipt, "goal": "something else"})
    before = tsa.requests
    code, _, err = aer1("timestamp", path, "--tsa", tsa.url)
    assert code == 2 and "cannot be timestamped" in err and tsa.requests == before, err


def test_collector_refuses_bad_timestamp_options() -> None:
    with pytest.raises(ValueError, match="http"):
        Collector(goal="g", timestamp="ftp://tsa.example/")
    with pytest.raises(TypeError, match="URL or a callable"):
        Collector(goal="g", timestamp=[42])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="timestamp_timeout"):
        Collector(goal="g", timestamp="http://127.0.0.1:9/", timestamp_timeout=0)
    with pytest.raises(ValueError, match="at most"):
        Collector(goal="g", timestamp=["http://127.0.0.1:9/"] * (MAX_TIMESTAMPS + 1))
    assert record_run().finalize().get(TIMESTAMPS_MEMBER) is None  # no TSA: no member


def test_aer1_timestamp_to_another_file_takes_the_evidence_along(tmp_path: Path, tsa: LocalTSA, tsa_roots: Path,
                                                                 aer1: Cli, verify: Cli) -> None:
    path, _ = save_run(tmp_path)
    out = tmp_path / "stamped.json"
    code, _, err = aer1("timestamp", path, "--tsa", tsa.url, "-o", out)
    assert code == 0, err
    code, report, _ = verify(out, "--tsa-roots", tsa_roots, "--json")
    checks = checks_of(report)
    assert code == 0 and checks["timestamp"]["status"] == "PASS" and checks["evidence"]["status"] == "PASS", report
    code, _, err = aer1("timestamp", path, "--tsa", tsa.url, "-o", tmp_path / "receipt.evidence.jsonl")
    assert code == 2 and "evidence file" in err, err


def test_token_whose_chain_cannot_be_completed_fails(tmp_path: Path, tsa: LocalTSA, trusted_pki: Path,
                                                     verify: Cli) -> None:
    root_only = tmp_path / "root-only"
    root_only.mkdir()
    (root_only / "root.crt").write_bytes((trusted_pki / "root.crt").read_bytes())
    path, _ = save_run(tmp_path, timestamp=tsa.url)
    code, out, _ = verify(path, "--tsa-roots", root_only, "--json")
    stamp = checks_of(out)["timestamp"]
    assert code == 1 and stamp["status"] == "FAIL" and "does not chain" in stamp["detail"], stamp


def test_aer1_timestamp_failure_is_one_line(tmp_path: Path, aer1: Cli) -> None:
    path, _ = save_run(tmp_path)
    before = path.read_bytes()
    code, out, err = aer1("timestamp", path, "--tsa", _closed_port_url(), "--timeout", "5")
    assert code == 2 and out == "" and err.count("\n") == 1 and "left unchanged" in err, err
    assert path.read_bytes() == before


@pytest.mark.parametrize(("misbehave", "why"), [("redirect", "HTTP 307"), ("error", "HTTP 503"),
                                                ("html", "content type")])
def test_tsa_answering_badly_gives_no_token(tmp_path: Path, trusted_pki: Path, misbehave: str, why: str) -> None:
    assert misbehave in MISBEHAVIOURS
    bad = LocalTSA(trusted_pki, misbehave=misbehave)
    try:
        _, receipt = save_run(tmp_path, timestamp=bad.url)
    finally:
        bad.close()
    (entry,) = receipt[TIMESTAMPS_MEMBER]
    assert set(entry) == {"tsa", "error"} and why in entry["error"], entry
