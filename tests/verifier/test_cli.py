"""aer1-verify and aer1: exit codes, --json shape, bad inputs, folders, proofs, keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aer1._cli import main as aer1_main
from aer1._recover import RecoveryError, recover_journal
from aer1.verifier._cli import main as verify_main

from ..helpers import KEYS, make_collector

BIN = Path(sys.executable).parent


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    c = make_collector(signing_key=KEYS / "trusted.key")
    return Path(c.save(tmp_path / "receipt.json"))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "aer1-verify"), *args], capture_output=True, text=True, timeout=60)


def test_console_script_valid_receipt(saved: Path) -> None:
    done = _cli(str(saved), "--key", str(KEYS / "trusted.pub"))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [ln.split()[1] for ln in lines[1:11]] == ["parse", "members", "sequence", "merkle_root", "chain",
                                                     "signature", "evidence", "expected", "timestamp", "key"]
    assert "valid signature by trusted key" in done.stdout
    assert lines[-1].startswith("verdict: VALID")
    assert "Traceback" not in done.stderr


def test_json_shape(saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert verify_main([str(saved), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "VALID" and doc["exit_code"] == 0 and doc["profile"] == "aer1-chain-v1"
    assert [c["name"] for c in doc["checks"]] == ["parse", "members", "sequence", "merkle_root", "chain",
                                                  "signature", "evidence", "expected", "timestamp", "key"]
    assert doc["checks"][5]["detail"].startswith("valid signature; signed by an untrusted key")
    assert doc["failures"] == []


def test_tampered_receipt_exits_1_with_seq_expected_actual(saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = json.loads(saved.read_text())
    r["steps"][2]["agent"] = "mallory"
    saved.write_text(json.dumps(r))
    assert verify_main([str(saved), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    f = doc["failures"][0]
    assert doc["verdict"] == "INVALID" and f["check"] == "chain" and f["seq"] == 3
    assert f["expected"] and f["actual"] and f["expected"] != f["actual"]
    assert verify_main([str(saved)]) == 1
    assert "verdict: INVALID: chain: step 3:" in capsys.readouterr().out


def test_signature_with_wrong_trusted_key_fails(saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert verify_main([str(saved), "--key", str(KEYS / "attacker.pub")]) == 1
    assert "signed by an untrusted key" in capsys.readouterr().out
    assert verify_main([str(saved), "--trusted-keys", str(KEYS)]) == 0


def test_expected_root_and_head(saved: Path) -> None:
    r = json.loads(saved.read_text())
    assert verify_main([str(saved), "--expected-root", r["merkle_root"], "--expected-head", r["chain_head"]]) == 0
    assert verify_main([str(saved), "--expected-root", "0" * 64]) == 1
    assert verify_main([str(saved), "--expected-head", "xyz"]) == 2


BAD_INPUTS = {
    "not_json": b"hello",
    "truncated": b'{"type": "verifiable-workflow-receipt", "steps": [',
    "duplicate_keys": b'{"goal": "a", "goal": "b"}',
    "nan": b'{"goal": NaN}',
    "huge_number": b'{"goal": 1e999}',
    "deep_nesting": b"[" * 3000 + b"]" * 3000,
    "huge_string": b'{"goal": "' + b"x" * (2 * 1024 * 1024) + b'"}',
    "bom": b'\xef\xbb\xbf{"goal": "a"}',
    "empty": b"",
    "binary": b"\x00\x01\x02\xff",
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_exits_2_with_one_line_reason(tmp_path: Path, name: str) -> None:
    p = tmp_path / f"{name}.json"
    p.write_bytes(BAD_INPUTS[name])
    done = _cli(str(p))
    assert done.returncode == 2, done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stdout.startswith(f"{p}: MALFORMED: parse:")
    assert len(done.stderr.strip().splitlines()) == 1


def test_missing_file_directory_and_usage_errors(tmp_path: Path) -> None:
    done = _cli(str(tmp_path / "missing.json"))
    assert done.returncode == 2 and "cannot read" in done.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _cli(str(empty))
    assert done.returncode == 2 and "no *.json files" in done.stderr
    done = _cli("--bogus")
    assert done.returncode == 2 and "usage" in done.stderr
    done = _cli(str(tmp_path / "x.json"), "--key", str(tmp_path / "nokey.pub"))
    assert done.returncode == 2 and "does not exist" in done.stderr


WRONG_TYPES = {
    "type": 1, "version": 1, "workflow_id": "NOT-A-UUID", "receipt_id": 5, "session_id": "", "goal": None,
    "status": [], "steps": {}, "merkle_root": "abc", "output_hash": 7, "verify_url": "file:///x",
    "merkle_version": "v9", "chain_head": 1, "profile": "other", "agents": "alice",
}
STEP_WRONG_TYPES = {
    "seq": "1", "receipt_id": None, "tool": "", "receipt_hash": "XYZ", "started_at": "yesterday",
    "ended_at": "2026-13-01T00:00:00.000000Z", "status": 0, "kind": "dance", "agent": 3, "prev_digest": "0",
    "reply_to": 4,
}


@pytest.mark.parametrize("member", sorted(WRONG_TYPES))
def test_wrong_type_in_every_workflow_member_names_it(saved: Path, member: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    r = json.loads(saved.read_text())
    r[member] = WRONG_TYPES[member]
    saved.write_text(json.dumps(r))
    # a document whose type is not the receipt type is not a receipt: MALFORMED, exit 2 (spec/verifier.md)
    assert verify_main([str(saved), "--json"]) == (2 if member == "type" else 1)
    doc = json.loads(capsys.readouterr().out)
    assert doc["failures"][0]["check"] == ("parse" if member == "type" else "members")
    assert any(member in f["message"] for f in doc["failures"]), doc["failures"]


@pytest.mark.parametrize("member", sorted(STEP_WRONG_TYPES))
def test_wrong_type_in_every_step_member_names_it(saved: Path, member: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    r = json.loads(saved.read_text())
    r["steps"][1][member] = STEP_WRONG_TYPES[member]
    saved.write_text(json.dumps(r))
    assert verify_main([str(saved), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    f = doc["failures"][0]
    assert f["check"] == "members" and f["seq"] == 2 and member in f["message"], doc["failures"]


def test_folder_of_receipts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    (store / "2026" / "11").mkdir(parents=True)
    for i in range(3):
        make_collector().save(store / "2026" / "11" / f"run{i}.json")
    assert verify_main([str(store)]) == 0
    assert "3 valid, 0 invalid, 0 unreadable (of 3)" in capsys.readouterr().out
    bad = json.loads((store / "2026" / "11" / "run1.json").read_text())
    bad["goal"] = "edited"
    (store / "2026" / "11" / "run1.json").write_text(json.dumps(bad))
    assert verify_main([str(store), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"] == {"VALID": 2, "INVALID": 1, "MALFORMED": 0}
    assert [r["verdict"] for r in doc["results"]] == ["VALID", "INVALID", "VALID"]


def test_prove_and_verify_one_step(saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "step3.proof.json"
    assert aer1_main(["prove", str(saved), "--step", "3", "-o", str(out)]) == 0
    proof = json.loads(out.read_text())
    assert proof["step"]["seq"] == 3 and proof["content"]["arguments"] == {"q": "dates"}
    root = json.loads(saved.read_text())["merkle_root"]
    assert verify_main(["--proof", str(out), "--expected-root", root]) == 0
    assert verify_main([str(out), "--expected-root", "1" * 64]) == 1
    proof["step"]["agent"] = "mallory"
    out.write_text(json.dumps(proof))
    assert verify_main([str(out)]) == 1
    assert "step_id" in capsys.readouterr().out
    assert aer1_main(["prove", str(saved), "--step", "99"]) == 2


def test_keygen_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prefix = str(tmp_path / "k")
    assert aer1_main(["keygen", "-o", prefix]) == 0
    assert oct(os.stat(prefix + ".key").st_mode & 0o777) == "0o600"
    assert aer1_main(["keygen", "-o", prefix]) == 2
    assert "exists" in capsys.readouterr().err
    c = make_collector(signing_key=prefix + ".key")
    path = c.save(tmp_path / "r.json")
    assert verify_main([path, "--key", prefix + ".pub"]) == 0


def test_aer1_verify_subcommand_and_show(saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert aer1_main(["verify", str(saved)]) == 0
    assert aer1_main(["show", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "handoff" in out and "alice -> bob" in out


def test_directories_given_as_files_are_named(saved: Path, tmp_path: Path) -> None:
    done = _cli(str(saved), "--evidence", str(tmp_path))
    assert done.returncode == 2 and "a directory, not an evidence file" in done.stderr
    done = _cli(str(saved), "--key", str(tmp_path))
    assert done.returncode == 2 and "is a directory" in done.stderr


def test_standard_input(saved: Path) -> None:
    done = subprocess.run([str(BIN / "aer1-verify"), "-", "--json"], input=saved.read_bytes(), capture_output=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout
    doc = json.loads(done.stdout)
    assert doc["verdict"] == "VALID" and doc["source"] == "(standard input)"
    assert doc["checks"][6]["status"] == "NOT CHECKED"  # no evidence beside standard input
    done = subprocess.run([str(BIN / "aer1-verify"), "-"], input=b"{", capture_output=True, timeout=60)
    assert done.returncode == 2 and b"MALFORMED: parse:" in done.stdout and b"Traceback" not in done.stderr
    done = _cli("-", str(saved))
    assert done.returncode == 2 and "goes alone" in done.stderr


def test_values_cannot_borrow_characters_from_their_neighbours(saved: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """started_at one character short and ended_at one long still fail, though their concatenation is fine."""
    r = json.loads(saved.read_text())
    step = r["steps"][1]
    step["started_at"], step["ended_at"] = step["started_at"][:-1], step["started_at"][-1] + step["ended_at"]
    saved.write_text(json.dumps(r))
    assert verify_main([str(saved), "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["failures"][0]["check"] == "members" and doc["failures"][0]["seq"] == 2


def test_keygen_force_writes_a_new_private_key_file_with_mode_0600(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "k"
    (tmp_path / "k.key").write_text("old")
    os.chmod(tmp_path / "k.key", 0o644)
    (tmp_path / "k.pub").write_text("old")
    assert aer1_main(["keygen", "-o", str(out), "--force"]) == 0
    mode = (tmp_path / "k.key").stat().st_mode & 0o777
    assert mode == 0o600, f"got mode {mode:o}, want 600"
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me")
    (tmp_path / "k.key").unlink()
    (tmp_path / "k.key").symlink_to(target)  # --force replaces the link itself, never writes through it
    assert aer1_main(["keygen", "-o", str(out), "--force"]) == 0
    assert target.read_text() == "keep me" and not (tmp_path / "k.key").is_symlink()


def test_outputs_never_overwrite_an_input(saved: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = tmp_path / "r.evidence.jsonl"  # recover -o r.json would write its evidence here
    c = make_collector(journal=journal)
    c.finalize()
    before = journal.read_bytes()
    assert aer1_main(["recover", str(journal), "-o", str(tmp_path / "r.json")]) == 2
    assert aer1_main(["recover", str(journal), "-o", str(journal)]) == 2
    with pytest.raises(RecoveryError, match="must not be the journal itself"):  # the library refuses it too
        recover_journal(journal, tmp_path / "r.json")
    assert journal.read_bytes() == before
    assert not (tmp_path / "r.json").exists()
    receipt = saved.read_bytes()
    assert aer1_main(["prove", str(saved), "--step", "1", "-o", str(saved)]) == 2
    assert aer1_main(["prove", str(saved), "--step", "1", "-o", str(saved.with_name("receipt.evidence.jsonl"))]) == 2
    assert saved.read_bytes() == receipt
    err = capsys.readouterr().err
    assert err.count("is an input") == 4 and err.count("must not be the journal itself") == 0
