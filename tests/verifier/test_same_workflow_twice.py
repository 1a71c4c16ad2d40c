"""Trial: the same receipt under two names in one archive was counted twice and named nowhere."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from ..helpers import make_collector

BIN = Path(sys.executable).parent


def _run(*args: str) -> tuple[int, str]:
    done = subprocess.run([str(BIN / "aer1-verify"), *args], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout


def test_a_copied_receipt_is_named_as_the_same_workflow(tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    archive.mkdir()
    for name in ("a", "b"):
        c = make_collector()
        c.record("message", {"n": name}, agent="alice")
        c.save(archive / f"{name}.json", workflow=c.finalize(final_answer="ok"))
    shutil.copy(archive / "a.json", archive / "c-copy.json")
    shutil.copy(archive / "a.evidence.jsonl", archive / "c-copy.evidence.jsonl")
    code, out = _run("--json", "-j", "1", str(archive))
    doc = json.loads(out)
    assert code == 0 and doc["summary"]["VALID"] == 3  # each file verifies on its own
    same = doc["breakdown"]["same_workflow"]
    assert same == {"count": 1, "files": [f"{archive / 'c-copy.json'}: the same workflow_id as {archive / 'a.json'}"]}
    code, text = _run("-j", "1", str(archive))
    assert code == 0 and "receipts whose workflow_id an earlier file holds (copies are counted again): 1" in text


def test_distinct_runs_name_nothing(tmp_path: Path) -> None:
    for name in ("a", "b"):
        c = make_collector()
        c.save(tmp_path / f"{name}.json", workflow=c.finalize(final_answer="ok"))
    code, out = _run("--json", "-j", "1", str(tmp_path))
    assert code == 0 and json.loads(out)["breakdown"]["same_workflow"] == {"count": 0, "files": []}


def test_a_file_named_twice_is_named_again(tmp_path: Path) -> None:
    c = make_collector()
    path = str(c.save(tmp_path / "a.json", workflow=c.finalize(final_answer="ok")))
    code, out = _run("--json", "-j", "1", path, path)
    doc = json.loads(out)
    assert code == 0 and doc["summary"]["VALID"] == 2
    assert doc["breakdown"]["same_workflow"] == {"count": 1, "files": [f"{path}: named again in this run"]}
