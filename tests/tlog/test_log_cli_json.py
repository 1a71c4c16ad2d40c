"""``--json`` on every one-shot log command: one JSON object on standard output, errors too (exit 2).

``aer1 log init|append|prove|witness`` and ``aer1 witness vkey``; the servers print their
start-up lines and are covered by the witness tests.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from aer1._cli import main
from aer1._logdir import LogDir
from aer1._signing import generate_key_pair

from ..helpers import make_collector


def run_json(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, dict[str, Any]]:
    code = main([str(a) for a in args] + ["--json"])
    out = capsys.readouterr()
    doc = json.loads(out.out)  # exactly one object, nothing else on standard output
    assert isinstance(doc, dict) and doc["exit_code"] == code, doc
    assert "Traceback" not in out.err
    return code, doc


@pytest.fixture
def key(tmp_path: Path) -> Path:
    k = tmp_path / "log.key"
    k.write_bytes(generate_key_pair()[0])
    return k


def test_init_append_prove_as_json(capsys: pytest.CaptureFixture[str], tmp_path: Path, key: Path) -> None:
    log = tmp_path / "log"
    code, doc = run_json(capsys, "log", "init", log, "--origin", "example.com/json", "--key", key)
    assert code == 0 and doc["command"] == "log init" and doc["origin"] == "example.com/json"
    assert doc["vkey"] == LogDir(log).verifier.vkey and Path(doc["vkey_file"]).read_text().strip() == doc["vkey"]
    paths = []
    for i in range(3):
        c = make_collector()
        paths.append(c.save(tmp_path / f"r{i}.json", workflow=c.finalize(final_answer="ok")))
    code, doc = run_json(capsys, "log", "append", log, *paths)
    assert code == 0 and doc["command"] == "log append"
    assert [r["index"] for r in doc["receipts"]] == [0, 1, 2]
    assert [r["path"] for r in doc["receipts"]] == paths
    assert all(Path(r["proof"]).is_file() for r in doc["receipts"])
    assert doc["checkpoint"]["size"] == 3 and doc["checkpoint"]["origin"] == "example.com/json"
    code, doc = run_json(capsys, "log", "prove", log, paths[1])
    assert code == 0 and doc["command"] == "log prove" and doc["receipts"][0]["index"] == 1


def test_appending_the_same_receipts_again_logs_nothing_new(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                            key: Path) -> None:
    """Trial: ``aer1 log append`` run twice on one folder logged every receipt twice."""
    log = tmp_path / "log"
    assert main(["log", "init", str(log), "--origin", "example.com/json", "--key", str(key)]) == 0
    capsys.readouterr()
    paths = []
    for i in range(2):
        c = make_collector()
        paths.append(c.save(tmp_path / f"r{i}.json", workflow=c.finalize(final_answer="ok")))
    code, doc = run_json(capsys, "log", "append", log, *paths, paths[0])  # one named twice in one batch
    assert code == 0 and [(r["index"], r["logged_before"]) for r in doc["receipts"]] == [(0, False), (1, False),
                                                                                          (0, False)]
    assert doc["checkpoint"]["size"] == 2
    c = make_collector()
    paths.append(c.save(tmp_path / "r2.json", workflow=c.finalize(final_answer="ok")))
    code, doc = run_json(capsys, "log", "append", log, *paths)
    assert code == 0 and doc["checkpoint"]["size"] == 3
    assert [(r["index"], r["logged_before"]) for r in doc["receipts"]] == [(0, True), (1, True), (2, False)]
    proof = Path(doc["receipts"][0]["proof"]).read_text()
    assert "\n3\n" in proof  # every proof is against the new checkpoint
    assert main(["log", "append", str(log), paths[1]]) == 0
    assert "it was logged before: not logged again" in capsys.readouterr().out
    assert LogDir(log).checkpoint()[0].size == 3
    Path(doc["receipts"][1]["proof"]).unlink()  # no proof beside it: the receipt is logged again, as it says
    code, doc = run_json(capsys, "log", "append", log, paths[1])
    assert code == 0 and doc["receipts"][0] == {**doc["receipts"][0], "index": 3, "logged_before": False}


def test_one_receipt_under_two_names_is_proved_and_appended_under_both(capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: Path, key: Path) -> None:
    """Trial: ``aer1 log prove`` of a receipt and its copy failed with an internal KeyError."""
    log = tmp_path / "log"
    assert main(["log", "init", str(log), "--origin", "example.com/json", "--key", str(key)]) == 0
    c = make_collector()
    first = Path(c.save(tmp_path / "a.json", workflow=c.finalize(final_answer="ok")))
    copy = tmp_path / "a2.json"
    copy.write_bytes(first.read_bytes())
    link = tmp_path / "alink.json"
    link.symlink_to(first.name)
    capsys.readouterr()
    code, doc = run_json(capsys, "log", "append", log, first)
    assert code == 0
    code, doc = run_json(capsys, "log", "prove", log, first, copy, link)
    assert code == 0 and [r["index"] for r in doc["receipts"]] == [0, 0, 0]
    assert Path(doc["receipts"][1]["proof"]).is_file()


def test_a_proof_path_that_is_not_a_regular_file_is_refused_before_logging(capsys: pytest.CaptureFixture[str],
                                                                            tmp_path: Path, key: Path) -> None:
    """Trial: a folder at NAME.tlog-proof made every append log the receipt again, then fail."""
    log = tmp_path / "log"
    assert main(["log", "init", str(log), "--origin", "example.com/json", "--key", str(key)]) == 0
    c = make_collector()
    path = c.save(tmp_path / "o.json", workflow=c.finalize(final_answer="ok"))
    (tmp_path / "o.tlog-proof").mkdir()
    capsys.readouterr()
    for _ in range(2):
        code, doc = run_json(capsys, "log", "append", log, path)
        assert code == 2 and "not a regular file" in doc["error"]
    assert LogDir(log).checkpoint()[0].size == 0  # nothing was logged
    (tmp_path / "o.tlog-proof").rmdir()
    assert main(["log", "append", str(log), path]) == 0
    other = tmp_path / "other.key"
    other.write_bytes(generate_key_pair()[0])
    capsys.readouterr()
    code, doc = run_json(capsys, "log", "append", log, path, "--key", other)  # nothing new: the key still counts
    assert code == 2 and LogDir(log).checkpoint()[0].size == 1


@pytest.mark.parametrize("args, why", [
    (["log", "init", "LOG", "--origin", "has space", "--key", "KEY"], "no spaces"),
    (["log", "append", "NOTALOG", "RECEIPT"], "not a log"),
    (["log", "prove", "LOG", "UNLOGGED"], "not in the log"),
    (["log", "append", "LOG", "GARBAGE"], "GARBAGE"),
    (["log", "witness", "NOTALOG", "--witness", "http://127.0.0.1:1"], "not a log"),
    (["witness", "vkey", "--key", "GARBAGE"], ""),
])
def test_log_command_errors_are_json_too(capsys: pytest.CaptureFixture[str], tmp_path: Path, key: Path,
                                         args: list[str], why: str) -> None:
    log = tmp_path / "log"
    assert main(["log", "init", str(log), "--origin", "example.com/json", "--key", str(key)]) == 0
    c = make_collector()
    unlogged = c.save(tmp_path / "unlogged.json", workflow=c.finalize(final_answer="ok"))
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"\x00{not json")
    (tmp_path / "notalog").mkdir()
    names = {"LOG": str(tmp_path / "new") if args[1] == "init" else str(log), "KEY": str(key),
             "NOTALOG": str(tmp_path / "notalog"), "RECEIPT": unlogged, "UNLOGGED": unlogged,
             "GARBAGE": str(garbage)}
    capsys.readouterr()
    code, doc = run_json(capsys, *[names.get(a, a).replace("GARBAGE", str(garbage)) for a in args])
    assert code == 2 and why.replace("GARBAGE", str(garbage)) in doc["error"], doc
    assert "\n" not in doc["error"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_log_witness_as_json_names_each_witness(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                key: Path) -> None:
    """A witness nobody answers for: exit 1, and the JSON says which witness failed and why."""
    log = tmp_path / "log"
    assert main(["log", "init", str(log), "--origin", "example.com/json", "--key", str(key)]) == 0
    LogDir(log).append([b"one entry"])
    capsys.readouterr()
    url = f"http://127.0.0.1:{_closed_port()}"
    code, doc = run_json(capsys, "log", "witness", log, "--witness", url, "--timeout", "5")
    assert code == 1 and doc["command"] == "log witness" and doc["written"] == 0
    assert doc["checkpoint"]["size"] == 1 and doc["verified"] is False
    (w,) = doc["witnesses"]
    assert w["url"] == url and w["cosigned"] is False and w["error"] and w["signatures"] == []


def test_witness_vkey_as_json(capsys: pytest.CaptureFixture[str], key: Path) -> None:
    code, doc = run_json(capsys, "witness", "vkey", "--key", key, "--name", "witness.example/w1")
    assert code == 0 and doc["name"] == "witness.example/w1" and doc["vkey"].startswith("witness.example/w1+")
