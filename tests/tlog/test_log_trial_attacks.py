"""Attacks on the log check and the walk found by a trial; each test is named after its defect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from aer1._tlog import (
    Checkpoint,
    Ed25519Signer,
    TlogProof,
    format_tlog_proof,
    parse_checkpoint,
    parse_note,
    parse_tlog_proof,
    sign_note,
)
from aer1.verifier._cli import main

from .helpers import LOG_ORIGIN, make_log


def _run_json(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, dict[str, Any]]:
    code = main([str(a) for a in args] + ["--json"])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    doc: dict[str, Any] = json.loads(out.out)
    assert doc["exit_code"] == code
    return code, doc


def _log_signer(root: Path) -> Ed25519Signer:
    """The log's own key (``make_log`` keeps it in ``root/log.key``), under the log's name."""
    key = load_pem_private_key((root / "log.key").read_bytes(), None)
    assert isinstance(key, Ed25519PrivateKey)
    return Ed25519Signer(LOG_ORIGIN, key)


def _other_origin(note: bytes, signer: Ed25519Signer) -> bytes:
    """The same tree under the origin ``other.example/log``, signed by the log key (named the log's origin)."""
    cp = parse_checkpoint(parse_note(note).text)
    return sign_note(Checkpoint("other.example/log", cp.size, cp.root).text(), [signer])


def test_a_proof_whose_checkpoint_names_another_origin(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Trial: a proof whose checkpoint says origin other.example/log, signed by the trusted key named
    example.com/test-log, passed as "entry 0 of other.example/log": the key name is the origin."""
    _, vkey, _, paths = make_log(tmp_path, 1)
    proof_file = paths[0].with_suffix(".tlog-proof")
    proof = parse_tlog_proof(proof_file.read_bytes())
    forged = _other_origin(proof.checkpoint, _log_signer(tmp_path))
    proof_file.write_bytes(format_tlog_proof(TlogProof(proof.index, proof.path, forged)))
    code, doc = _run_json(capsys, paths[0], "--log-key", vkey)
    log = next(c for c in doc["checks"] if c["name"] == "log")
    assert code == 1 and log["status"] == "FAIL" and "want one named the origin" in json.dumps(log), log


def test_a_log_checkpoint_that_names_another_origin(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Trial: the walk took a checkpoint of origin other.example/log signed by the key of example.com/test-log
    as VALID for the log; so did --since."""
    log, vkey, _, _ = make_log(tmp_path, 2)
    signer = _log_signer(tmp_path)
    kept = tmp_path / "kept.checkpoint"
    kept.write_bytes(_other_origin((log / "checkpoint").read_bytes(), signer))
    code, doc = _run_json(capsys, "--log", log, "--log-key", vkey, "--since", kept)
    assert code == 1 and doc["log"]["verdict"] == "INVALID", doc["log"]
    assert any(p.startswith("since:") and "want one named the origin" in p for p in doc["log"]["problems"])
    (log / "checkpoint").write_bytes(_other_origin((log / "checkpoint").read_bytes(), signer))
    code, doc = _run_json(capsys, "--log", log, "--log-key", vkey)
    assert code == 1 and doc["log"]["verdict"] == "INVALID", doc["log"]
    assert "want one named the origin" in doc["log"]["problems"][0]


def test_since_without_a_log_names_the_missing_log(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """New user: `aer1-verify --since CHECKPOINT --log-key VKEY` (no --log) said "the following arguments are
    required: PATH", though no PATH is wanted: it now says --since goes with --log DIR."""
    log, vkey, _, _ = make_log(tmp_path, 1)
    code = main(["--since", str(log / "checkpoint"), "--log-key", str(vkey)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--since go with --log DIR" in err, err


def test_a_proof_that_cannot_be_written_is_named_and_nothing_is_logged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Trial: `aer1 log append` with a folder where NAME.tlog-proof goes said only "log append DIR: Is a
    directory", though the entry was logged (and a second try logged it again): the error now names the
    proof file, and it comes before anything is logged."""
    from aer1._cli import main as aer1_main

    log, _, _, paths = make_log(tmp_path, 1)
    size = parse_checkpoint(parse_note((log / "checkpoint").read_bytes()).text).size
    paths[0].with_suffix(".tlog-proof").unlink()
    paths[0].with_suffix(".tlog-proof").mkdir()
    code = aer1_main(["log", "append", str(log), str(paths[0]), "--json"])
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert code == 2 and doc["exit_code"] == 2 and "Traceback" not in out.err
    assert str(paths[0].with_suffix(".tlog-proof")) in doc["error"], doc
    assert "nothing was logged" in doc["error"], doc
    assert parse_checkpoint(parse_note((log / "checkpoint").read_bytes()).text).size == size


def _edited(receipt: dict[str, Any], how: str) -> dict[str, Any]:
    """``receipt`` with one thing changed after the run: its goal, a step's tool, its chain_head or its root."""
    out = json.loads(json.dumps(receipt))
    if how == "goal":
        out["goal"] = f"{out['goal']} (edited)"
    elif how == "step":
        out["steps"][1]["tool"] = "edited"
    elif how == "chain_head":
        out["chain_head"] = "0" * 64
    else:
        out["merkle_root"] = "1" * 64
    return out


@pytest.mark.parametrize("how", ["goal", "step", "chain_head", "merkle_root"])
def test_append_refuses_a_receipt_whose_hash_chain_does_not_verify(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, how: str
) -> None:
    """Trial: `aer1 log append` logged a receipt whose hash chain fails (a goal, a step or chain_head edited
    after the run): its entry binds nothing and would stay in the log for ever. It is now refused (exit 2, one
    line naming the receipt and the broken link, nothing of the batch logged); with --json, one JSON error."""
    from aer1._cli import main as aer1_main

    from ..helpers import make_receipt

    log, _, archive, _ = make_log(tmp_path, 0)
    good, bad = archive / "good.json", archive / "bad.json"
    receipt = make_receipt()
    good.write_text(json.dumps(make_receipt()))
    bad.write_text(json.dumps(_edited(receipt, how)))
    size = parse_checkpoint(parse_note((log / "checkpoint").read_bytes()).text).size
    code = aer1_main(["log", "append", str(log), str(good), str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{bad}: its hash chain does not verify" in err and "nothing was logged" in err, err
    code = aer1_main(["log", "append", str(log), str(bad), "--json"])
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert code == 2 and doc["exit_code"] == 2 and "its hash chain does not verify" in doc["error"], doc
    assert parse_checkpoint(parse_note((log / "checkpoint").read_bytes()).text).size == size
    assert not good.with_suffix(".tlog-proof").exists() and not bad.with_suffix(".tlog-proof").exists()


def test_append_still_logs_unsigned_and_wrongly_signed_receipts(capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    """The refusal of a broken chain leaves the signature to the verifier: an unsigned receipt is logged with
    signer none, one whose signature does not verify with the key ID it names (its signature check fails)."""
    from aer1._cli import main as aer1_main

    from ..helpers import KEYS, make_receipt

    log, _, archive, _ = make_log(tmp_path, 0)
    unsigned = make_receipt()
    assert "signature" not in unsigned
    wrong = make_receipt(signing_key=str(KEYS / "trusted.key"))
    value = wrong["signature"]["value"]
    wrong["signature"]["value"] = ("A" if value[0] != "A" else "B") + value[1:]
    (archive / "unsigned.json").write_text(json.dumps(unsigned))
    (archive / "wrong.json").write_text(json.dumps(wrong))
    code = aer1_main(["log", "append", str(log), str(archive / "unsigned.json"), str(archive / "wrong.json")])
    assert code == 0, capsys.readouterr().err
    assert parse_checkpoint(parse_note((log / "checkpoint").read_bytes()).text).size == 2


@pytest.mark.parametrize(("config", "want"), [
    ({"key": "log\u0000.key"}, "cannot read key file 'log\\x00.key': embedded null byte"),
    ({"origin": [1]}, "no origin named"),
])
def test_a_hand_edited_log_config_is_one_line_naming_what_is_wrong(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, config: dict[str, Any], want: str
) -> None:
    """Trial: a log-config.json whose key path holds a NUL byte made `aer1 log append` say "internal error:
    ValueError: embedded null byte", and one whose origin is not a string said "got an empty name"."""
    from aer1._cli import main as aer1_main

    log, _, _, paths = make_log(tmp_path, 1)
    (log / "log-config.json").write_text(json.dumps({**json.loads((log / "log-config.json").read_text()),
                                                     **config}))
    code = aer1_main(["log", "append", str(log), str(paths[0])])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and want in err and "internal error" not in err, err


def test_one_witness_key_trusted_under_two_names_counts_once(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    """Trial: a cosignature's message holds no name, so with one witness key trusted under two names
    (`--witness A+id1+KEY --witness B+id2+KEY --min-witnesses 2`), its line copied under the other name and
    key ID verified, and the proof passed as "cosigned by 2 of 2 trusted witnesses": one key, counted once."""
    from aer1._tlog import CosignatureSigner, Signature
    from aer1._tlog._note import key_id_for

    log, vkey, _, paths = make_log(tmp_path, 1)
    witness = CosignatureSigner("witness.example/a", Ed25519PrivateKey.generate())
    twin_id = key_id_for("witness.example/b", witness.key_type, witness.public)
    twin = f"witness.example/b+{twin_id:08x}+{witness.verifier().vkey.split('+', 2)[2]}"
    note = (log / "checkpoint").read_bytes()
    line = witness.sign(parse_note(note).text.encode())
    cosigned = sign_note(parse_note(note).text, [], [*parse_note(note).signatures, line,
                                                     Signature("witness.example/b", twin_id, line.sig)])
    (log / "checkpoint").write_bytes(cosigned)
    proof_file = paths[0].with_suffix(".tlog-proof")
    proof = parse_tlog_proof(proof_file.read_bytes())
    proof_file.write_bytes(format_tlog_proof(TlogProof(proof.index, proof.path, cosigned)))
    trust = ["--log-key", vkey, "--witness", witness.verifier().vkey, "--witness", twin]
    code, doc = _run_json(capsys, paths[0], *trust, "--min-witnesses", "2")
    log_check = next(c for c in doc["checks"] if c["name"] == "log")
    assert code == 1 and log_check["status"] == "FAIL" and "got 1 by trusted witnesses" in json.dumps(log_check)
    code, doc = _run_json(capsys, "--log", log, *trust, "--min-witnesses", "2")
    assert code == 1 and doc["log"]["verdict"] == "INVALID", doc["log"]
    code, doc = _run_json(capsys, paths[0], *trust, "--min-witnesses", "1")
    assert code == 0, doc


def test_an_unreadable_proof_file_is_named_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Trial: a NAME.tlog-proof that is a FIFO failed the log check as "log: P: P: a FIFO, not a regular
    file", its path said twice."""
    import os

    _, vkey, _, paths = make_log(tmp_path, 1)
    proof_file = paths[0].with_suffix(".tlog-proof")
    proof_file.unlink()
    os.mkfifo(proof_file)
    code, doc = _run_json(capsys, paths[0], "--log-key", vkey)
    log = next(c for c in doc["checks"] if c["name"] == "log")
    assert code == 1 and log["status"] == "FAIL" and "a FIFO, not a regular file" in log["detail"], log
    assert log["detail"].count(str(proof_file)) == 1, log


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_receipt_edited_in_place_is_not_matching_not_missing(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path, jobs: str) -> None:
    """Trial: a logged receipt whose goal was edited in the archive (its chain broken) was counted both
    "listed in the log, missing from the archive" and "in the archive, not listed", though it is in the
    archive under the ids the log lists: it is now one receipt not matching its entry, and nothing missing."""
    log, vkey, archive, paths = make_log(tmp_path, 2, opened=False)
    wf = json.loads(paths[0].read_text())
    wf["goal"] += " (edited)"
    paths[0].write_text(json.dumps(wf))
    code, doc = _run_json(capsys, "--log", log, "--log-key", vkey, "--complete", archive, "-j", jobs)
    complete = doc["log"]["complete"]
    counts = {k: complete[k]["count"] for k in ("missing", "not_matching", "not_listed", "never_closed")}
    assert code == 1 and counts == {"missing": 0, "not_matching": 1, "not_listed": 0, "never_closed": 0}, complete
    assert complete["not_matching"]["named"][0].startswith(f"{paths[0]} (its chain check did not pass)"), complete


@pytest.mark.parametrize("command", ["append", "prove"])
def test_two_receipts_whose_proof_is_one_file_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                          command: str) -> None:
    """Trial: `aer1 log append LOG x.json x` (two receipts) logged both and said "proof x.tlog-proof" for
    each, but the second proof replaced the first, so x.json's log check failed; `aer1 log prove` likewise
    (and said "internal error: UsageError" once refused). Both are refused now, before anything is written;
    one receipt named twice is still fine."""
    from aer1._cli import main as aer1_main

    log, _, archive, paths = make_log(tmp_path, 2)
    other = archive / "r0"
    other.write_bytes(paths[1].read_bytes())
    proof = archive / "r0.tlog-proof"
    before = proof.read_bytes()
    size = parse_checkpoint(parse_note((log / "checkpoint").read_bytes()).text).size
    code = aer1_main(["log", command, str(log), str(paths[0]), str(other)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "internal error" not in err, err
    assert f"{paths[0]} and {other} are two receipts whose proof would be one file" in err, err
    assert proof.read_bytes() == before
    assert parse_checkpoint(parse_note((log / "checkpoint").read_bytes()).text).size == size
    spelt = archive / "." / paths[0].name
    assert aer1_main(["log", command, str(log), str(paths[0]), str(spelt)]) == 0, capsys.readouterr().err


def test_a_log_whose_origin_is_not_ascii_is_made_and_verified(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    """Trial: `aer1 log init DIR --origin é.example/log` (a key name is UTF-8) said "internal error:
    UnicodeEncodeError" and left DIR holding log-config.json alone, so a second try was "not empty". The log
    is now made (its log.vkey UTF-8), appended to and verified by its log.vkey file, proof and walk."""
    from aer1._cli import main as aer1_main
    from aer1._signing import generate_key_pair

    from ..helpers import make_receipt

    key = tmp_path / "log.key"
    key.write_bytes(generate_key_pair()[0])
    log, receipt = tmp_path / "log", tmp_path / "archive" / "r.json"
    receipt.parent.mkdir()
    receipt.write_text(json.dumps(make_receipt()))
    assert aer1_main(["log", "init", str(log), "--origin", "é.example/log", "--key", str(key)]) == 0
    assert aer1_main(["log", "append", str(log), str(receipt)]) == 0
    capsys.readouterr()
    code, doc = _run_json(capsys, receipt, "--log-key", log / "log.vkey")
    check = next(c for c in doc["checks"] if c["name"] == "log")
    assert code == 0 and check["status"] == "PASS" and "é.example/log" in check["detail"], check
    code, doc = _run_json(capsys, "--log", log, "--log-key", log / "log.vkey", "--complete", receipt.parent, "-j", "1")
    assert code == 0 and doc["log"]["verdict"] == "VALID", doc["log"]


@pytest.mark.parametrize(("record", "want"), [
    ([1], "a JSON list, not an object"),
    ({"old_size": 1, "size": 2, "note": "x", "batches": [["../../outside", 1, 1]]}, "want a file name in pending/"),
    ({"old_size": 1, "size": 2, "note": 5, "batches": []}, "note: want the checkpoint's text"),
    ({"old_size": 1, "size": "2", "note": "x", "batches": []}, "size: got '2', want a size"),
])
def test_a_hand_edited_sequencing_record_is_refused_and_touches_nothing_outside(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, record: Any, want: str
) -> None:
    """Trial: a sequencing.json that is a JSON list made `aer1 log append` say "internal error:
    AttributeError"; one whose batch is named "../../outside" made the writer write outside.done and remove
    outside.entries beside the log's folder. The record is now checked as the writer writes it, first."""
    from aer1._cli import main as aer1_main

    from ..helpers import make_receipt

    log, _, archive, _ = make_log(tmp_path, 1)
    outside = tmp_path / "outside.entries"
    outside.write_bytes(b"keep")
    (log / "pending").mkdir(exist_ok=True)
    (log / "sequencing.json").write_text(json.dumps(record))
    receipt = archive / "new.json"
    receipt.write_text(json.dumps(make_receipt()))
    code = aer1_main(["log", "append", str(log), str(receipt)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and want in err and "internal error" not in err, err
    assert outside.read_bytes() == b"keep" and not (tmp_path / "outside.done").exists()
