"""Forged inputs that must never verify VALID: stripped profiles and forged proofs; the verdict's basis."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector
from aer1._canonical import canonical_bytes
from aer1._cli import main as aer1_main
from aer1._merkle import inclusion_proof, leaf_receipt_id
from aer1._proof import build_step_proof
from aer1._signing import key_id, load_public_key
from aer1.verifier import verify_proof, verify_receipt
from aer1.verifier._cli import main as verify_main

from ..helpers import KEYS, make_collector, make_receipt

TRUSTED = key_id(load_public_key(KEYS / "trusted.pub"))


def _strip_profile(r: dict[str, Any], edit_seq: int = 3) -> dict[str, Any]:
    """Edit a step, drop every profile member and the signature, keep the step ids (and so the root)."""
    forged = copy.deepcopy(r)
    step = forged["steps"][edit_seq - 1]
    step["agent"], step["tool"] = "mallory", "wire_money"
    step["receipt_hash"] = hashlib.sha256(canonical_bytes({"to": "mallory"})).hexdigest()
    for name in ("profile", "chain_head", "signature"):
        forged.pop(name, None)
    for s in forged["steps"]:
        s.pop("prev_digest", None)
    return forged


@pytest.mark.parametrize("edit_seq", [1, 3, 6])
def test_stripped_profile_with_ids_kept_is_invalid(edit_seq: int) -> None:
    r = make_receipt(signing_key=KEYS / "trusted.key")
    forged = _strip_profile(r, edit_seq)
    report = verify_receipt(forged, expected_root=r["merkle_root"])
    assert report.verdict == "INVALID", report.to_text()
    assert report.failures[0].check == "members"
    assert "profile stripped" in report.failures[0].message


def test_stripped_profile_with_one_step_id_kept_is_invalid() -> None:
    """Every other id replaced by a random v4 UUID: the one derived id left still gives it away."""
    r = make_receipt()
    forged = _strip_profile(r)
    for i, s in enumerate(forged["steps"]):
        if i != 2:
            s["receipt_id"] = f"00000000-0000-4000-8000-{i:012d}"
    report = verify_receipt(forged)
    assert report.verdict == "INVALID"
    assert [f.seq for f in report.failures] == [3]


def test_foreign_receipt_with_v4_ids_still_valid_on_base_checks() -> None:
    r = make_receipt()
    forged = _strip_profile(r)
    for i, s in enumerate(forged["steps"]):
        s["receipt_id"] = f"00000000-0000-4000-8000-{i:012d}"
    from aer1._merkle import merkle_root_hex

    forged["merkle_root"] = merkle_root_hex([s["receipt_id"] for s in forged["steps"]])
    report = verify_receipt(forged)
    assert report.verdict == "VALID", report.to_text()
    assert report.basis()["level"] == "AER-1 base checks only"
    assert "verdict: VALID (AER-1 base checks only; no chain" in report.to_text()


# ---------------------------------------------------------------------- proofs


@pytest.fixture
def signed_run(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    c = make_collector(signing_key=KEYS / "trusted.key")
    path = Path(c.save(tmp_path / "receipt.json"))
    return json.loads(path.read_text()), path


def test_honest_proof_valid_only_when_pinned(signed_run: tuple[dict[str, Any], Path]) -> None:
    r, path = signed_run
    proof = build_step_proof(r, 3, {"arguments": {"q": "dates"}, "result": [1, 2.5], "is_error": False})
    assert verify_proof(proof, expected_root=r["merkle_root"]).verdict == "VALID"
    unpinned = verify_proof(proof)
    assert unpinned.verdict == "INVALID" and unpinned.failures[0].check == "root_pinned"
    by_receipt = verify_proof(proof, receipt=path, trusted_key_ids=[TRUSTED])
    assert by_receipt.verdict == "VALID", by_receipt.to_text()
    assert f"root pinned by receipt signed by trusted key {TRUSTED}" in by_receipt.to_text()
    attacker = key_id(load_public_key(KEYS / "attacker.pub"))
    untrusted = verify_proof(proof, receipt=path, trusted_key_ids=[attacker])
    assert untrusted.verdict == "INVALID" and untrusted.failures[0].check == "root_pinned"
    for seq in range(1, len(r["steps"]) + 1):
        assert verify_proof(build_step_proof(r, seq), expected_root=r["merkle_root"]).valid, seq


def test_pinning_receipt_must_be_signed_by_a_trusted_key(tmp_path: Path) -> None:
    unsigned = Path(make_collector().save(tmp_path / "unsigned.json"))
    r = json.loads(unsigned.read_text())
    report = verify_proof(build_step_proof(r, 2), receipt=unsigned, trusted_key_ids=[TRUSTED])
    assert report.verdict == "INVALID" and report.failures[0].check == "root_pinned"


def _proof_without_prev_digest(r: dict[str, Any], **edit: str) -> Any:
    proof = build_step_proof(r, 3)
    del proof["step"]["prev_digest"]
    proof["step"].update(edit)
    return verify_proof(proof, expected_root=r["merkle_root"])


def test_proof_step_without_prev_digest_is_invalid(signed_run: tuple[dict[str, Any], Path]) -> None:
    report = _proof_without_prev_digest(signed_run[0], agent="mallory")
    assert report.verdict == "INVALID"
    assert "profile stripped" in report.failures[0].message


def test_proof_step_with_foreign_id_is_invalid(signed_run: tuple[dict[str, Any], Path]) -> None:
    """No derived id at all: nothing binds the step's members, so the proof proves nothing."""
    report = _proof_without_prev_digest(signed_run[0], receipt_id="00000000-0000-4000-8000-000000000000")
    assert report.verdict == "INVALID" and report.failures[0].check == "step_id"


def _long_run() -> dict[str, Any]:
    c = make_collector()
    for i in range(8):
        c.record("message", {"n": i}, agent="alice")
    r = c.finalize()
    assert len(r["steps"]) == 14
    return r


@pytest.mark.parametrize("fake_index", [14, 15])
def test_proof_past_the_real_tree_is_invalid(fake_index: int) -> None:
    """14 leaves have the root of 16 whose last two repeat leaves 12 and 13 (the duplicated odd node)."""
    r = _long_run()
    leaves = [leaf_receipt_id(s["receipt_id"]) for s in r["steps"]]
    fake = [*leaves, leaves[12], leaves[13]]
    real_index = fake_index - 2
    for keep_prev_digest in (True, False):
        proof = build_step_proof(r, real_index + 1)
        proof.update(tree_size=16, leaf_index=fake_index,
                     audit_path=[h.hex() for h in inclusion_proof(fake, fake_index)])
        proof["step"]["seq"] = fake_index + 1
        if not keep_prev_digest:
            del proof["step"]["prev_digest"]
        proof["close"] = {"step": dict(r["steps"][13]), "audit_path": [h.hex() for h in inclusion_proof(fake, 15)]}
        if fake_index == 15:
            proof.pop("close")
        report = verify_proof(proof, expected_root=r["merkle_root"])
        assert report.verdict == "INVALID", report.to_text()


def test_proof_without_its_close_step_is_invalid() -> None:
    r = _long_run()
    proof = build_step_proof(r, 5)
    del proof["close"]
    report = verify_proof(proof, expected_root=r["merkle_root"])
    assert report.verdict == "INVALID" and report.failures[0].check == "members"


def test_proof_with_a_wrong_tree_size_is_invalid() -> None:
    """A shorter claimed tree whose 'last' step is not a close step: the size is not fixed."""
    r = _long_run()
    proof = build_step_proof(r, 4)
    leaves = [leaf_receipt_id(s["receipt_id"]) for s in r["steps"]][:8]
    proof.update(tree_size=8, audit_path=[h.hex() for h in inclusion_proof(leaves, 3)])
    proof["close"] = {"step": dict(r["steps"][7]), "audit_path": [h.hex() for h in inclusion_proof(leaves, 7)]}
    report = verify_proof(proof, expected_root=r["merkle_root"])
    assert report.verdict == "INVALID"


def test_prove_refuses_receipts_without_the_chain(tmp_path: Path) -> None:
    r = make_receipt()
    foreign = _strip_profile(r)
    path = tmp_path / "foreign.json"
    path.write_text(json.dumps(foreign))
    assert aer1_main(["prove", str(path), "--step", "2"]) == 2


# -------------------------------------------------------- options for proofs


@pytest.fixture
def proof_file(signed_run: tuple[dict[str, Any], Path]) -> tuple[Path, Path, str]:
    r, path = signed_run
    out = path.parent / "step2.proof.json"
    assert aer1_main(["prove", str(path), "--step", "2", "-o", str(out)]) == 0
    return out, path, r["merkle_root"]


@pytest.mark.parametrize("extra", [
    ["--expected-head", "a" * 64],
    ["--trusted-keys", str(KEYS)],
    ["--key", str(KEYS / "trusted.pub")],
])
def test_options_that_cannot_apply_to_a_proof_are_refused(
    proof_file: tuple[Path, Path, str], extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    proof, _, root = proof_file
    assert verify_main([str(proof), "--expected-root", root, *extra]) == 2
    assert verify_main([str(proof.parent), "--expected-root", root, *extra]) == 2  # a folder holding it
    assert "proof" in capsys.readouterr().err


def test_evidence_option_refused_for_a_proof(proof_file: tuple[Path, Path, str]) -> None:
    proof, receipt, root = proof_file
    evidence = str(receipt).replace(".json", ".evidence.jsonl")
    assert verify_main([str(proof), "--expected-root", root, "--evidence", evidence]) == 2


def test_proof_pinned_by_a_signed_receipt_from_the_cli(proof_file: tuple[Path, Path, str],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    proof, receipt, _ = proof_file
    assert verify_main([str(proof), "--receipt", str(receipt), "--key", str(KEYS / "trusted.pub")]) == 0
    assert verify_main([str(proof), "--receipt", str(receipt)]) == 2  # no trusted key: cannot pin
    assert verify_main([str(receipt), "--receipt", str(receipt)]) == 2  # not a proof
    assert verify_main([str(proof)]) == 1
    out = capsys.readouterr().out
    assert "root not pinned" in out


# ------------------------------------------------------------- verdict basis


def _verdict(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, dict[str, Any]]:
    code = verify_main(argv)
    line = capsys.readouterr().out.splitlines()[-1]
    json_code = verify_main([*argv, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert json_code == code == doc["exit_code"]
    return code, line, doc


def test_verdict_names_its_basis(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    signed = make_collector(signing_key=KEYS / "trusted.key").save(tmp_path / "signed.json")
    root = json.loads(Path(signed).read_text())["merkle_root"]
    code, line, doc = _verdict([signed, "--key", str(KEYS / "trusted.pub"), "--expected-root", root], capsys)
    assert code == 0
    assert line.startswith("verdict: VALID (aer1-chain-v1; chain checked; finalized; signed by trusted key "
                           f"{TRUSTED}; evidence checked; root pinned;")
    assert doc["basis"] == {"level": "aer1-chain-v1", "chain": "checked", "signature": "trusted key",
                            "key_id": TRUSTED, "evidence": "checked", "root": "pinned", "head": "not pinned",
                            "closed_by": "finalize", "timestamp": "not verified", "tsa_time": None,
                            "key_validity": "not checked"}

    code, line, doc = _verdict([signed], capsys)
    assert code == 0 and "signed by an unknown key" in line and "root not pinned" in line
    assert doc["basis"]["signature"] == "unknown key"

    unsigned = make_collector(evidence=False).save(tmp_path / "unsigned.json")
    code, line, doc = _verdict([unsigned], capsys)
    assert code == 0 and "; unsigned; evidence not checked; root not pinned;" in line
    assert doc["basis"]["signature"] == "unsigned" and doc["basis"]["evidence"] == "not checked"


def test_invalid_json_has_no_basis_claims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(make_collector().save(tmp_path / "r.json"))
    r = json.loads(path.read_text())
    r["goal"] = "edited"
    path.write_text(json.dumps(r))
    code, line, doc = _verdict([str(path)], capsys)
    assert code == 1 and line.startswith("verdict: INVALID: chain:")
    assert doc["basis"]["chain"] == "not checked" and doc["valid"] is False


# ------------------------------------------------ canonical collisions (evidence)


def _save(tmp_path: Path, *contents: Any) -> Path:
    c = make_collector()
    for content in contents:
        c.record("lookup", content, agent="alice")
    return Path(c.save(tmp_path / "r.json"))


def test_contents_json_cannot_hold_are_recorded_one_to_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    honest = {"name": "caf\ufffd", "id": "18446744073709551617", "x": "NaN", "tag": {"$aer1:int": "5"}}
    raw = {"name": "caf\udead", "id": 2**64 + 1, "x": float("nan"), "tag": 5}
    path = _save(tmp_path, honest, raw)
    steps = json.loads(path.read_text())["steps"]
    assert steps[5]["receipt_hash"] != steps[6]["receipt_hash"]
    assert verify_main([str(path)]) == 0
    assert "evidence checked" in capsys.readouterr().out


@pytest.mark.parametrize(("recorded", "raw_json", "reason"), [
    ("caf\ufffd", '"caf\\udead"', "lone surrogate"),
    ("18446744073709551617", "18446744073709551617", "no exact JSON number form"),
])
def test_evidence_holding_values_without_an_exact_form_is_invalid(
    tmp_path: Path, recorded: str, raw_json: str, reason: str
) -> None:
    """The old verifier normalized evidence, so these swaps kept the hash; now they are refused."""
    path = _save(tmp_path, {"v": recorded})
    evidence = path.with_name("r.evidence.jsonl")
    lines = evidence.read_bytes().splitlines(keepends=True)
    line = json.loads(lines[6])
    assert line["content"] == {"v": recorded}
    lines[6] = (f'{{"seq":{line["seq"]},"receipt_hash":"{line["receipt_hash"]}","content":{{"v":{raw_json}}}}}\n'
                .encode())
    evidence.write_bytes(b"".join(lines))
    report = verify_receipt(path)
    assert report.verdict == "INVALID" and report.failures[0].check == "evidence", report.to_text()
    assert reason in report.failures[0].message


@pytest.mark.parametrize("make", [
    lambda: Collector(goal="caf\udead"),
    lambda: Collector(goal="g", session_id="s\udead"),
    lambda: Collector(goal="g", verify_url="https://x/\udead"),
    lambda: make_collector().register_agent("carol", type="A", description="d\udead"),
])
def test_workflow_members_without_an_exact_form_are_refused_up_front(make: Any) -> None:
    """They would be hashed exactly by the verifier: refuse them when given, not at finalize()."""
    with pytest.raises(ValueError, match="not valid text"):
        make()


def test_step_content_with_an_unrepresentable_key_is_a_counted_failure() -> None:
    c = make_collector()
    assert c.safe_record("lookup", {"caf\udead": 1}, agent="alice") is None
    assert c.recording_failures == 1
    assert verify_receipt(c.finalize()).valid


_ODD_VALUES = [None, [], {}, "", "x", 1.5, -1, 0, 2**70, True, "0" * 64, {"seq": 1}]


def test_odd_proof_members_never_crash_and_never_pass(signed_run: tuple[dict[str, Any], Path]) -> None:
    r, _ = signed_run
    good = build_step_proof(r, 3, {"q": 1})
    targets = [(k,) for k in good] + [("step", k) for k in good["step"]] + [("close", "step", k)
                                                                            for k in good["close"]["step"]]
    for path in [*targets, ("close", "audit_path"), ("extra",), ("step", "extra"), ("close", "extra")]:
        for value in _ODD_VALUES:
            proof = copy.deepcopy(good)
            node = proof
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = value
            report = verify_proof(proof, expected_root=r["merkle_root"])
            assert report.verdict != "VALID", (path, value)
            report.to_text()
            json.dumps(report.to_dict())
        proof = copy.deepcopy(good)
        node = proof
        for k in path[:-1]:
            node = node[k]
        node.pop(path[-1], None)
        if path not in {("content",)} and path[-1] not in ("extra", "reply_to", "target", "recipient", "call_id"):
            assert verify_proof(proof, expected_root=r["merkle_root"]).verdict != "VALID", ("dropped", path)


def test_a_proof_from_standard_input_is_verified_as_a_proof(proof_file: tuple[Path, Path, str]) -> None:
    proof, _, root = proof_file
    for args, want in ((["--expected-root", root], 0), ([], 1), (["--expected-head", root], 2)):
        done = subprocess.run([sys.executable, "-m", "aer1.verifier._cli", "--proof", "-", "--json", *args],
                              input=proof.read_bytes(), capture_output=True, timeout=120)
        assert done.returncode == want, done.stderr
        if want != 2:
            doc = json.loads(done.stdout)
            assert doc["kind"] == "proof" and doc["exit_code"] == want


def test_a_proof_carries_tagged_content_exactly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _save(tmp_path, {"id": 2**64 + 1, "name": "caf\udead", "ratio": float("inf")})
    out = tmp_path / "s.proof.json"
    assert aer1_main(["prove", str(path), "--step", "6", "-o", str(out)]) == 0
    proof = json.loads(out.read_text())
    assert proof["content"] == {"id": {"$aer1:int": "18446744073709551617"}, "name": {"$aer1:str": ["caf", 0xDEAD]},
                                "ratio": {"$aer1:float": "Infinity"}}
    root = json.loads(path.read_text())["merkle_root"]
    capsys.readouterr()
    assert verify_main([str(out), "--expected-root", root]) == 0
    assert "content checked" in capsys.readouterr().out


def test_an_evidence_line_whose_own_receipt_hash_is_edited_fails(tmp_path: Path) -> None:
    path = _save(tmp_path, {"q": "x"})
    evidence = path.with_name("r.evidence.jsonl")
    lines = evidence.read_bytes().splitlines(keepends=True)
    line = json.loads(lines[1])  # lines[0] is the evidence header
    flipped = line["receipt_hash"][:-1] + ("0" if line["receipt_hash"][-1] != "0" else "1")
    lines[1] = lines[1].replace(line["receipt_hash"].encode(), flipped.encode())
    evidence.write_bytes(b"".join(lines))
    report = verify_receipt(str(path))
    assert report.verdict == "INVALID"
    assert report.check("evidence").status == "FAIL"
    assert "evidence line's receipt_hash" in report.check("evidence").detail
