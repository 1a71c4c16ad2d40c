"""The verifier against a log: the per-receipt ``log`` check, the log walk, completeness, and the attacks.

Each attack is a test named after its defect: the log is built by real collectors with
``Collector(log=DIR)``, then one thing is changed the way an operator could change it.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from aer1._logdir import LogDir, init_log
from aer1._tlog import (
    Checkpoint,
    CosignatureSigner,
    Ed25519Signer,
    Signature,
    encode_bundle,
    entries_path,
    format_note,
    parse_note,
    sign_note,
    tile_path,
)
from aer1.verifier._cli import main

from ..helpers import make_collector
from .helpers import LOG_ORIGIN, make_log

SCHEMA = json.loads((Path(__file__).parents[2] / "spec" / "verdict-schema.json").read_text())
WITNESS = CosignatureSigner("witness.example/w1", Ed25519PrivateKey.from_private_bytes(b"\x05" * 32))
OTHER_WITNESS = CosignatureSigner("witness.example/w2", Ed25519PrivateKey.from_private_bytes(b"\x06" * 32))


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out + out.err


def run_json(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, dict[str, Any]]:
    code, out = run(capsys, *args, "--json")
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    return code, doc


@pytest.fixture
def logged(tmp_path: Path) -> tuple[Path, Path, Path, list[Path]]:
    return make_log(tmp_path, 4)


def _complete(capsys: pytest.CaptureFixture[str], log: Path, vkey: Path, archive: Path,
              *more: str | Path) -> tuple[int, dict[str, Any]]:
    return run_json(capsys, "--log", log, "--log-key", vkey, "--complete", archive, "-j", "1", *more)


def _counts(doc: dict[str, Any]) -> dict[str, int]:
    c = doc["log"]["complete"]
    return {k: c[k]["count"] for k in ("missing", "not_matching", "not_listed", "never_closed")}


def test_an_honest_archive_is_complete(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    log, vkey, archive, _paths = logged
    code, doc = _complete(capsys, log, vkey, archive)
    assert code == 0 and doc["verdict"] == "VALID", doc["log"]
    assert _counts(doc) == {"missing": 0, "not_matching": 0, "not_listed": 0, "never_closed": 0}
    assert doc["log"]["entries_checked"] == 8 and doc["log"]["checkpoint"]["size"] == 8
    assert all(next(c for c in r["checks"] if c["name"] == "log")["status"] == "PASS" for r in doc["results"])
    code, text = run(capsys, "--log", log, "--log-key", vkey, "--complete", archive, "-j", "1")
    assert code == 0 and "completeness over 4 receipts" in text and text.rstrip().endswith("(of 4)")


def test_the_log_check_in_worker_processes_is_the_same(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    """The log trust crosses to worker processes: the parsed keys the command line checked first stay behind.

    ``aer1-verify --log-key VKEY FOLDER`` with the default ``--jobs`` (the cores) was an internal error,
    the parsed Ed25519 keys being unpicklable; found following the README.
    """
    log, vkey, archive, _paths = logged
    one = _complete(capsys, log, vkey, archive)
    two = run_json(capsys, "--log", log, "--log-key", vkey, "--complete", archive, "-j", "2")
    assert two[0] == one[0] == 0, two[1]
    assert two[1]["results"] == one[1]["results"] and two[1]["log"] == one[1]["log"]
    code, doc = run_json(capsys, "--log-key", vkey, "-j", "2", archive)
    assert code == 0 and [next(c for c in r["checks"] if c["name"] == "log")["status"] for r in doc["results"]] \
        == ["PASS"] * 4, doc


def test_one_receipt_with_its_proof_alone(capsys: pytest.CaptureFixture[str], logged: Any, tmp_path: Path) -> None:
    _, vkey, _, paths = logged
    alone = tmp_path / "alone"
    alone.mkdir()
    for suffix in (".json", ".evidence.jsonl", ".tlog-proof"):
        shutil.copy(paths[2].with_suffix(suffix), alone / f"r{suffix}")
    code, doc = run_json(capsys, alone / "r.json", "--log-key", vkey, "--require", "log")
    log_check = next(c for c in doc["checks"] if c["name"] == "log")
    assert code == 0 and log_check["status"] == "PASS", log_check
    assert doc["basis"]["log"].startswith("entry 5 of example.com/test-log (checkpoint size 6")


def test_a_receipt_deleted_from_the_archive(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    log, vkey, archive, paths = logged
    for suffix in (".json", ".evidence.jsonl", ".tlog-proof"):
        paths[1].with_suffix(suffix).unlink()
    code, doc = _complete(capsys, log, vkey, archive)
    assert code == 1 and doc["verdict"] == "INVALID"
    assert _counts(doc) == {"missing": 1, "not_matching": 0, "not_listed": 0, "never_closed": 0}
    receipt = json.loads(json.dumps(doc["log"]["complete"]["missing"]["named"]))
    assert "(entry 3)" in receipt[0]


def test_a_receipt_edited_after_logging(capsys: pytest.CaptureFixture[str], logged: Any, tmp_path: Path) -> None:
    log, vkey, archive, paths = logged
    # the operator re-records the run with another result, same ids, and re-signs nothing: a new valid receipt
    wf = json.loads(paths[0].read_text())
    c = make_collector(_ids=(wf["workflow_id"], wf["receipt_id"]))
    c.save(paths[0], workflow=c.finalize(final_answer="a different answer"))
    code, doc = _complete(capsys, log, vkey, archive)
    assert code == 1 and _counts(doc)["not_matching"] == 1, doc["log"]
    assert doc["log"]["complete"]["not_matching"]["named"][0].startswith(str(paths[0]))
    edited = next(r for r in doc["results"] if r["source"] == str(paths[0]))
    assert edited["verdict"] == "INVALID"  # its own proof no longer proves it either
    assert next(c for c in edited["checks"] if c["name"] == "log")["status"] == "FAIL"


def test_a_receipt_the_log_does_not_list(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    log, vkey, archive, _ = logged
    c = make_collector()
    c.save(archive / "unlogged.json", workflow=c.finalize(final_answer="x"))
    code, doc = _complete(capsys, log, vkey, archive)
    assert code == 1 and _counts(doc)["not_listed"] == 1
    assert doc["log"]["complete"]["not_listed"]["named"] == [str(archive / "unlogged.json")]


def test_an_opened_run_never_closed(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    log, vkey, archive, _ = logged
    crashed = make_collector(log=log)  # started, logged as opened, never finalized
    code, doc = _complete(capsys, log, vkey, archive)
    assert code == 1 and _counts(doc) == {"missing": 0, "not_matching": 0, "not_listed": 0, "never_closed": 1}
    assert crashed.workflow_id in doc["log"]["complete"]["never_closed"]["named"][0]


def test_a_recovered_run_closes_its_opened_entry(capsys: pytest.CaptureFixture[str], logged: Any,
                                                  tmp_path: Path) -> None:
    from aer1._cli import main as aer1_main

    log, vkey, archive, _ = logged
    c = make_collector(log=log, journal=tmp_path / "run.journal")  # the run crashes: never finalized
    assert c.journal is not None
    c.journal.close()
    code, doc = _complete(capsys, log, vkey, archive)
    assert code == 1 and _counts(doc)["never_closed"] == 1
    code = aer1_main(["recover", str(tmp_path / "run.journal"), "-o", str(archive / "recovered.json"),
                      "--log", str(log)])
    out = capsys.readouterr().out
    assert code == 0 and "logged:   entry 9 of" in out, out
    code, doc = _complete(capsys, log, vkey, archive)
    assert code == 0, doc["log"]
    recovered = next(r for r in doc["results"] if r["source"].endswith("recovered.json"))
    assert recovered["basis"]["closed_by"] == "recovery" and recovered["basis"]["log"].startswith("entry 9")


def _rebuild_without(log: Path, key: Path, drop: int, more: int = 0) -> None:
    """The operator drops one entry and rebuilds the log from the others (and ``more`` new ones), with the real key."""
    entries = []
    size = LogDir(log).checkpoint()[0].size
    from aer1._tlog import decode_bundle, dir_bundle_reader

    for t in range(-(-size // 256)):
        entries.extend(decode_bundle(dir_bundle_reader(log)(t, min(256, size - t * 256))))
    shutil.rmtree(log)
    init_log(log, LOG_ORIGIN, str(key))
    LogDir(log).append([e for i, e in enumerate(entries) if i != drop] + [b"filler %d" % i for i in range(more)])


def test_an_entry_dropped_and_the_tree_rebuilt(capsys: pytest.CaptureFixture[str], logged: Any,
                                               tmp_path: Path) -> None:
    log, vkey, archive, paths = logged
    kept = tmp_path / "kept-checkpoint"
    shutil.copy(log / "checkpoint", kept)
    vkey_text = vkey.read_text()
    _rebuild_without(log, tmp_path / "log.key", drop=3, more=2)  # the closed entry of r1; the log grows on
    (tmp_path / "vkey").write_text(vkey_text)
    code, doc = _complete(capsys, log, tmp_path / "vkey", archive)
    assert code == 1 and _counts(doc)["not_listed"] == 1  # the receipt is not in the rebuilt log
    assert "entry 7: log entry" in doc["log"]["problems"][0]  # the fillers are no entries of ours
    r1 = next(r for r in doc["results"] if r["source"] == str(paths[1]))
    # its proof still shows the log once signed a tree holding it: the two signed trees are the fork's evidence
    assert next(c for c in r1["checks"] if c["name"] == "log")["detail"].startswith("entry 3 of")
    code, doc = run_json(capsys, "--log", log, "--log-key", tmp_path / "vkey", "--since", kept)
    assert code == 1 and "consistency proof" in doc["log"]["problems"][0]


def test_a_log_rolled_back(capsys: pytest.CaptureFixture[str], logged: Any, tmp_path: Path) -> None:
    log, vkey, archive, _ = logged
    early = tmp_path / "early"
    shutil.copytree(log, early)
    c = make_collector(log=log)
    c.save(archive / "late.json", workflow=c.finalize(final_answer="x"))
    kept = tmp_path / "kept"
    shutil.copy(log / "checkpoint", kept)
    code, doc = run_json(capsys, "--log", log, "--log-key", vkey, "--since", kept)
    assert code == 0 and doc["log"]["since"]["size"] == 10
    code, doc = run_json(capsys, "--log", early, "--log-key", vkey, "--since", kept)
    assert code == 1 and "rolled back" in doc["log"]["problems"][0]


def test_a_tampered_tile(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log, vkey, _archive, _ = make_log(tmp_path, 150)  # 300 entries: one full level-0 tile
    tile = log / tile_path(0, 0)
    data = bytearray(tile.read_bytes())
    data[40] ^= 1
    tile.write_bytes(bytes(data))
    code, doc = run_json(capsys, "--log", log, "--log-key", vkey)
    assert code == 1 and "from the tile above" in doc["log"]["problems"][0]


def test_a_tampered_partial_tile(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    log, vkey, _, _ = logged
    tile = log / tile_path(0, 0, 8)
    tile.write_bytes(tile.read_bytes()[32:] + tile.read_bytes()[:32])
    code, doc = run_json(capsys, "--log", log, "--log-key", vkey)
    assert code == 1 and "got root" in doc["log"]["problems"][0]


def test_a_tampered_entry_bundle(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    log, vkey, archive, _ = logged
    bundle = log / entries_path(0, 8)
    bundle.write_bytes(bundle.read_bytes().replace(b"status ok", b"status xx", 1))
    code, doc = _complete(capsys, log, vkey, archive)
    assert code == 1 and "leaf hash" in doc["log"]["problems"][0]
    bundle.write_bytes(encode_bundle([b"x"] * 8))
    code, doc = run_json(capsys, "--log", log, "--log-key", vkey)
    assert code == 1 and doc["log"]["problems"]


def test_a_cut_entry_bundle_is_malformed(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    log, vkey, _, _ = logged
    bundle = log / entries_path(0, 8)
    bundle.write_bytes(bundle.read_bytes()[:-3])
    code, doc = run_json(capsys, "--log", log, "--log-key", vkey)
    assert code == 2 and doc["verdict"] == "MALFORMED" and "cut off" in doc["log"]["problems"][0]


def test_a_tampered_checkpoint(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    log, vkey, archive, _ = logged
    cp = log / "checkpoint"
    cp.write_bytes(cp.read_bytes().replace(b"\n8\n", b"\n7\n"))
    code, doc = _complete(capsys, log, vkey, archive)
    assert code == 1 and "does not verify" in doc["log"]["problems"][0]


def test_a_checkpoint_signed_by_another_key(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    log, vkey, _, _ = logged
    cp = log / "checkpoint"
    other = Ed25519Signer(LOG_ORIGIN, Ed25519PrivateKey.generate())
    cp.write_bytes(sign_note(parse_note(cp.read_bytes()).text, [other]))
    code, doc = run_json(capsys, "--log", log, "--log-key", vkey)
    assert code == 1 and "no signature by a trusted key" in doc["log"]["problems"][0]


def test_an_unknown_key_signature_is_ignored(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    log, vkey, archive, _paths = logged
    cp = log / "checkpoint"
    stranger = Ed25519Signer("stranger.example", Ed25519PrivateKey.generate())
    note = parse_note(cp.read_bytes())
    junk = Signature(LOG_ORIGIN, 0x12345678, b"\x00" * 64)  # the log's name with another key id: unknown
    cp.write_bytes(sign_note(note.text, [stranger], existing=[*note.signatures, junk]))
    code, doc = _complete(capsys, log, vkey, archive)
    assert code == 0, doc["log"]


def test_a_known_key_bad_signature_is_rejected(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    log, vkey, _, _paths = logged
    cp = log / "checkpoint"
    note = parse_note(cp.read_bytes())
    good = note.signatures[0]
    bad = Signature(good.name, good.key_id, bytes([good.sig[0] ^ 1]) + good.sig[1:])
    cp.write_bytes(format_note(type(note)(note.text, (good, bad))))
    code, doc = run_json(capsys, "--log", log, "--log-key", vkey)
    assert code == 1 and "does not verify" in doc["log"]["problems"][0]


def test_a_tampered_proof(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    _, vkey, _, paths = logged
    proof = paths[3].with_suffix(".tlog-proof")
    lines = proof.read_bytes().split(b"\n")
    lines[2] = base64.b64encode(b"\x00" * 32)
    proof.write_bytes(b"\n".join(lines))
    code, doc = run_json(capsys, paths[3], "--log-key", vkey)
    log_check = next(c for c in doc["checks"] if c["name"] == "log")
    assert code == 1 and log_check["status"] == "FAIL" and "got root" in log_check["detail"]
    proof.write_bytes(b"c2sp.org/tlog-proof@v1\nindex x\n\n")
    code, doc = run_json(capsys, paths[3], "--log-key", vkey)
    assert code == 1 and "malformed" in next(c for c in doc["checks"] if c["name"] == "log")["detail"]


def test_a_proof_for_another_receipt(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    _, vkey, _, paths = logged
    shutil.copy(paths[0].with_suffix(".tlog-proof"), paths[1].with_suffix(".tlog-proof"))
    code, doc = run_json(capsys, paths[1], "--log-key", vkey)
    assert code == 1 and "got root" in next(c for c in doc["checks"] if c["name"] == "log")["detail"]


def test_a_missing_proof_is_not_checked_and_fails_a_requirement(capsys: pytest.CaptureFixture[str],
                                                                 logged: Any) -> None:
    _, vkey, _, paths = logged
    paths[0].with_suffix(".tlog-proof").unlink()
    code, doc = run_json(capsys, paths[0], "--log-key", vkey)
    assert code == 0 and next(c for c in doc["checks"] if c["name"] == "log")["status"] == "NOT CHECKED"
    code, doc = run_json(capsys, paths[0], "--log-key", vkey, "--require", "log")
    assert code == 1 and doc["failures"][0]["rule"] == "require.log"


def _cosign(log: Path, *witnesses: CosignatureSigner) -> None:
    cp = log / "checkpoint"
    note = parse_note(cp.read_bytes())
    cp.write_bytes(sign_note(note.text, witnesses, existing=note.signatures))


def test_witness_quorum(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    from aer1._cli import main as aer1_main

    log, vkey, archive, paths = logged
    wargs = ["--witness", WITNESS.verifier().vkey, "--witness", OTHER_WITNESS.verifier().vkey]
    code, doc = run_json(capsys, "--log", log, "--log-key", vkey, *wargs, "--min-witnesses", "1")
    assert code == 1 and "want at least 1" in doc["log"]["problems"][0]
    _cosign(log, WITNESS)
    code, doc = run_json(capsys, "--log", log, "--log-key", vkey, *wargs, "--min-witnesses", "1")
    assert code == 0 and doc["log"]["witnesses"] == ["witness.example/w1"]
    code, doc = run_json(capsys, archive, "--log-key", vkey, *wargs, "--min-witnesses", "1", "-j", "1")
    assert code == 1  # the proofs beside the receipts predate the cosignature: alone, they fall short
    code, doc = _complete(capsys, log, vkey, archive, *wargs, "--min-witnesses", "1")
    assert code == 0, doc["log"]  # the walked log is cosigned and holds every entry: its proofs are not needed
    assert all(next(c for c in r["checks"] if c["name"] == "log")["detail"].startswith("entry ")
               and "in the log's checkpoint" in next(c for c in r["checks"] if c["name"] == "log")["detail"]
               for r in doc["results"])
    assert aer1_main(["log", "prove", str(log), *map(str, paths)]) == 0
    assert "against the current checkpoint" in capsys.readouterr().out
    code, doc = _complete(capsys, log, vkey, archive, *wargs, "--min-witnesses", "1")
    assert code == 0, [r["failures"] for r in doc["results"]]
    code, doc = _complete(capsys, log, vkey, archive, *wargs, "--min-witnesses", "2")
    assert code == 1
    code, text = run(capsys, "--log", log, "--log-key", vkey, *wargs, "--min-witnesses", "3")
    assert code == 2 and "want 0 to the number of trusted witnesses (2)" in text


def test_log_prove_refuses_a_receipt_the_log_lacks(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    from aer1._cli import main as aer1_main

    log, _, archive, _ = logged
    c = make_collector()
    path = c.save(archive / "unlogged.json", workflow=c.finalize(final_answer="x"))
    assert aer1_main(["log", "prove", str(log), path]) == 2
    assert "not in the log" in capsys.readouterr().err


def test_a_witness_cosigned_proof_verifies_offline(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    log, vkey, _, paths = logged
    _cosign(log, WITNESS)
    c = make_collector(log=log)
    path = Path(c.save(paths[0].parent / "late.json", workflow=c.finalize(final_answer="x")))
    proof = path.with_suffix(".tlog-proof")  # written from the checkpoint the append signed: no cosignature yet
    code, doc = run_json(capsys, path, "--log-key", vkey, "--witness", WITNESS.verifier().vkey,
                         "--min-witnesses", "1")
    assert code == 1 and "want at least 1" in next(c for c in doc["checks"] if c["name"] == "log")["detail"]
    note = parse_note(proof.read_bytes().split(b"\n\n", 1)[1])
    head = proof.read_bytes().split(b"\n\n", 1)[0]
    proof.write_bytes(head + b"\n\n" + sign_note(note.text, [WITNESS], existing=note.signatures))
    code, doc = run_json(capsys, path, "--log-key", vkey, "--witness", WITNESS.verifier().vkey,
                         "--min-witnesses", "1")
    assert code == 0, doc["checks"]


def test_a_policy_names_the_log_keys(capsys: pytest.CaptureFixture[str], logged: Any, tmp_path: Path) -> None:
    log, vkey, _archive, paths = logged
    _cosign(log, WITNESS)
    policy = tmp_path / "policy.toml"
    policy.write_text(f'format = "aer1-policy-v1"\n[require]\nlog = true\nmin_witnesses = 0\n'
                      f'[trust]\nlog_keys = ["{vkey}"]\nwitnesses = ["{WITNESS.verifier().vkey}"]\n')
    code, doc = run_json(capsys, paths[0], "--policy", policy)
    assert code == 0 and next(c for c in doc["checks"] if c["name"] == "log")["status"] == "PASS"
    code, text = run(capsys, paths[0], "--policy", policy, "--min-witnesses", "1")
    assert code == 2 and "disagree" in text
    bare = tmp_path / "bare.toml"
    bare.write_text('format = "aer1-policy-v1"\n[require]\nlog = true\n')
    code, text = run(capsys, paths[0], "--policy", bare)
    assert code == 2 and "no log key is trusted" in text


@pytest.mark.parametrize("args, why", [
    (["--complete", "ARCHIVE", "--log-key", "VKEY"], "go with --log DIR"),
    (["--log", "LOG"], "goes with --log-key"),
    (["--log", "LOG", "--log-key", "VKEY", "RECEIPT"], "not with PATHs"),
    (["--log-key", "nonsense", "RECEIPT"], "name+keyid+key"),
    (["--log-key", "WITNESSKEY", "RECEIPT"], "type 0x01"),
    (["--log-key", "VKEY", "--witness", "VKEY", "RECEIPT"], "type 0x04"),
    (["--log-key", "VKEY", "-"], "standard input"),
    (["--log-key", "VKEY", "--proof", "RECEIPT"], "not with --bundle or --proof"),
])
def test_misused_log_options_are_one_line_usage_errors(capsys: pytest.CaptureFixture[str], logged: Any,
                                                       args: list[str], why: str) -> None:
    log, vkey, archive, paths = logged
    names = {"ARCHIVE": str(archive), "VKEY": str(vkey), "LOG": str(log), "RECEIPT": str(paths[0]),
             "WITNESSKEY": WITNESS.verifier().vkey}
    code, text = run(capsys, *[names.get(a, a) for a in args])
    assert code == 2 and why in text and "Traceback" not in text
    assert len(text.strip().splitlines()) == 1


def test_a_log_folder_that_is_not_a_log(capsys: pytest.CaptureFixture[str], logged: Any, tmp_path: Path) -> None:
    _, vkey, _, _ = logged
    (tmp_path / "empty").mkdir()
    code, doc = run_json(capsys, "--log", tmp_path / "empty", "--log-key", vkey)
    assert code == 2 and "missing" in doc["log"]["problems"][0]
    shutil.copy(vkey, tmp_path / "empty" / "checkpoint")
    code, doc = run_json(capsys, "--log", tmp_path / "empty", "--log-key", vkey)
    assert code == 2 and doc["verdict"] == "MALFORMED"


def test_checkpoint_of_the_log_uses_checkpoint_dataclass() -> None:
    assert Checkpoint(LOG_ORIGIN, 0, b"\x00" * 32).origin == LOG_ORIGIN


def test_the_log_trust_reaches_worker_processes_after_the_walk_parsed_its_keys(
        capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    """Defect: the walk cached the parsed keys on the trust, and ``-j 2`` could not pickle it to the workers."""
    log, vkey, archive, _paths = logged
    code, doc = run_json(capsys, "--log", log, "--log-key", vkey, "--complete", archive, "-j", "2")
    assert code == 0 and doc["verdict"] == "VALID", doc.get("log")
    assert _counts(doc) == {"missing": 0, "not_matching": 0, "not_listed": 0, "never_closed": 0}
    assert doc["log"]["complete"]["receipts"] == 4
    assert all(next(c for c in r["checks"] if c["name"] == "log")["status"] == "PASS" for r in doc["results"])


def test_completeness_with_j2_still_finds_a_deleted_receipt(capsys: pytest.CaptureFixture[str], logged: Any) -> None:
    log, vkey, archive, paths = logged
    for suffix in (".json", ".evidence.jsonl", ".tlog-proof"):
        paths[1].with_suffix(suffix).unlink()
    code, doc = run_json(capsys, "--log", log, "--log-key", vkey, "--complete", archive, "-j", "2")
    assert code == 1 and doc["verdict"] == "INVALID"
    assert _counts(doc)["missing"] == 1


def test_a_policy_names_log_and_witness_keys_by_files_beside_it(capsys: pytest.CaptureFixture[str], logged: Any,
                                                                 tmp_path: Path) -> None:
    """spec/policy.md: a value without ``+`` is a file, relative to the policy; K must be met by trusted witnesses."""
    from aer1._cli import main as aer1_main

    log, vkey, _archive, paths = logged
    _cosign(log, WITNESS)
    assert aer1_main(["log", "prove", str(log), str(paths[0])]) == 0  # its proof against the cosigned checkpoint
    capsys.readouterr()
    folder = tmp_path / "policies"
    folder.mkdir()
    shutil.copy(vkey, folder / "log.vkey")
    (folder / "w1.vkey").write_text(WITNESS.verifier().vkey + "\n")
    (folder / "w2.vkey").write_text(OTHER_WITNESS.verifier().vkey + "\n")
    policy = folder / "policy.toml"
    policy.write_text('format = "aer1-policy-v1"\n[require]\nlog = true\nmin_witnesses = 1\n'
                      '[trust]\nlog_keys = ["log.vkey"]\nwitnesses = ["w1.vkey", "w2.vkey"]\n')
    code, doc = run_json(capsys, paths[0], "--policy", policy)
    log_check = next(c for c in doc["checks"] if c["name"] == "log")
    assert code == 0 and log_check["status"] == "PASS", log_check
    assert "cosigned by 1 of 2 trusted witnesses (witness.example/w1)" in log_check["detail"]
    policy.write_text(policy.read_text().replace("min_witnesses = 1", "min_witnesses = 2"))
    code, doc = run_json(capsys, paths[0], "--policy", policy)
    assert code == 1 and next(c for c in doc["checks"] if c["name"] == "log")["status"] == "FAIL"
    assert any(f["rule"] == "require.log" for c in doc["checks"] if c["name"] == "policy" for f in c["failures"])


@pytest.mark.parametrize("members", ['[trust]\nwitnesses = ["w1.vkey"]\n', "[require]\nmin_witnesses = 1\n"])
def test_a_policy_s_witness_demands_without_a_log_key_are_not_ignored(
        capsys: pytest.CaptureFixture[str], logged: Any, tmp_path: Path, members: str) -> None:
    """Defect: a policy naming witnesses or a quorum, but no log key, was applied without them (exit 0)."""
    _, _, _, paths = logged
    (tmp_path / "w1.vkey").write_text(WITNESS.verifier().vkey + "\n")
    policy = tmp_path / "policy.toml"
    policy.write_text('format = "aer1-policy-v1"\n' + members)
    code, text = run(capsys, paths[0], "--policy", policy)
    assert code == 2 and "goes with --log-key" in text and len(text.strip().splitlines()) == 1


def test_a_completeness_run_with_a_policy_checks_each_proof_before_the_policy(
        capsys: pytest.CaptureFixture[str], logged: Any, tmp_path: Path) -> None:
    """``require.log`` is judged on a log check that exists when the policy runs: the proof's, in the worker."""
    log, vkey, archive, paths = logged
    policy = tmp_path / "policy.toml"
    policy.write_text('format = "aer1-policy-v1"\n[require]\nlog = true\n')
    code, doc = _complete(capsys, log, vkey, archive, "--policy", policy)
    assert code == 0, [r["failures"] for r in doc["results"]]
    assert all("in its checkpoint" in next(c for c in r["checks"] if c["name"] == "log")["detail"]
               for r in doc["results"])
    paths[0].with_suffix(".tlog-proof").unlink()  # now its log check is NOT CHECKED, and the policy fails it
    code, doc = _complete(capsys, log, vkey, archive, "--policy", policy)
    assert code == 1 and _counts(doc) == {"missing": 0, "not_matching": 0, "not_listed": 0, "never_closed": 0}
    r0 = next(r for r in doc["results"] if r["source"] == str(paths[0]))
    assert any(f["rule"] == "require.log" for f in r0["failures"])


def test_completeness_names_each_kind_of_problem_in_order(tmp_path: Path) -> None:
    """Crafted entries against crafted receipts' entries: another closed version of a receipt, the same
    entry twice, an unreadable entry; each problem counted and named in log or arrival order."""
    from types import SimpleNamespace

    from aer1._signing import generate_key_pair
    from aer1._tlog._entry import LogEntry, opened_entry
    from aer1.verifier._tlog import Completeness, LogTrust, walk_log

    def uid(n: int) -> str:
        return f"{n:08x}-0000-4000-8000-{n:012x}"

    def closed(n: int, version: int) -> bytes:
        return LogEntry("closed", uid(n), uid(n), "2026-01-01T00:00:00.000000Z", "ok", f"{version:064x}", "a" * 64,
                        None, "2026-01-01T00:00:01.000000Z").encode()

    key = tmp_path / "log.key"
    key.write_bytes(generate_key_pair()[0])
    init_log(tmp_path / "log", LOG_ORIGIN, str(key))
    started = "2026-01-01T00:00:00.000000Z"
    log_entries = [closed(1, 1), closed(2, 1), closed(3, 1), closed(4, 1), closed(4, 2), closed(5, 1), closed(5, 2),
                   opened_entry(uid(6), uid(6), started).encode(), b"not an entry", closed(1, 1),
                   opened_entry(uid(1), uid(1), started).encode()]
    LogDir(tmp_path / "log").append(log_entries)
    archive = [closed(3, 9), closed(1, 1), closed(7, 1), closed(4, 1), closed(5, 2), closed(3, 8), None]
    trust = LogTrust((LogDir(tmp_path / "log").verifier.vkey,))
    walk = walk_log(str(tmp_path / "log"), trust)
    assert walk.problems == ["entry 8: log entry: want 'aer1-log-entry/v1', a kind, then member lines, each ending "
                             "in a newline"]
    c = Completeness(walk, trust)
    for i, e in enumerate(archive):
        c.add(SimpleNamespace(report=SimpleNamespace(kind="receipt", source=f"r{i}"), log_entry=e, log_why="no ids"))
    got = {k: v for k, v in c.finish()["complete"].items() if k != "receipts"}
    assert got == {
        "missing": {"count": 1, "named": [f"{uid(2)}/{uid(2)} (entry 1)"]},
        "not_matching": {"count": 3, "named": ["r0 (entries 2)", "r5 (entries 2)",
                                               f"{uid(4)}/{uid(4)} (entry 4: another version than the archive's)"]},
        "not_listed": {"count": 2, "named": ["r6 (no ids)", "r2"]},
        "never_closed": {"count": 1, "named": [f"{uid(6)}/{uid(6)} (opened at entry 7)"]},
    }


@pytest.mark.parametrize("given", ["directory", "missing"])
def test_a_key_option_naming_no_key_file_says_what_it_names(capsys: pytest.CaptureFixture[str], logged: Any,
                                                              given: str) -> None:
    """``--log-key DIR`` said "got 1 '+'-separated parts": now one line naming a directory or a missing file."""
    _, _, archive, _ = logged
    path = archive if given == "directory" else archive / "no-such.vkey"
    want = "got a directory" if given == "directory" else "got no such file"
    code, text = run(capsys, "--log-key", path, archive / "r0.json")
    assert code == 2 and len(text.strip().splitlines()) == 1, f"got exit {code} and {text!r}"
    assert want in text and "'+'-separated" not in text, f"got {text!r}, want {want!r}"
