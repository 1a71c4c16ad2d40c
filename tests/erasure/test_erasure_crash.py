"""SIGKILL during ``aer1 erase`` over an archive: every receipt still verifies, nothing torn, nothing withheld.

The command runs in a real subprocess and is killed at random points of its run (a
bounded number of times). Each disclosures and erasure records file is then old or new:
the receipt verifies VALID with its evidence, and no committed field is withheld (a record
is written before its disclosure is removed). A last run to completion erases everything.
"""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from aer1 import Collector

from .conftest import Key, fields, run_aer1, verify

EMAIL = "alice@example.com"
RECEIPTS = 6
KILLS = 8


def _archive(folder: Path, key: Key) -> list[Path]:
    folder.mkdir()
    paths = []
    for i in range(RECEIPTS):
        c = Collector(f"case {i}", signing_key=str(key.private), personal=["**.email"])
        for j in range(20):
            c.record("lookup", {"arguments": {"email": EMAIL if j % 2 == 0 else f"other{j}@example.com", "n": j}})
        paths.append(Path(c.save(str(folder / f"case{i}.json"))))
    return paths


def _erase_command(folder: Path, key: Key) -> list[str]:
    return [sys.executable, "-c", "import sys; from aer1._cli import main; sys.exit(main(sys.argv[1:]))",
            "erase", str(folder), "--value", EMAIL, "--reason", "erasure request 7", "--key", str(key.private)]


def _all_verify(paths: list[Path], key: Key) -> int:
    """Every receipt VALID with nothing withheld; returns how many fields are erased in all."""
    erased = 0
    for p in paths:
        report = verify(p, key)
        assert report.verdict == "VALID", report.to_text()
        got = fields(report)
        assert got["withheld"] == [], f"{p.name}: {got['withheld']}"
        erased += len(got["erased"])
    return erased


def test_sigkill_during_erase_leaves_every_receipt_verifying(tmp_path: Path, key: Key) -> None:
    pristine = tmp_path / "pristine"
    _archive(pristine, key)
    started = time.monotonic()
    subprocess.run(_erase_command(shutil.copytree(pristine, tmp_path / "timing"), key), check=True,
                   capture_output=True)
    whole = time.monotonic() - started
    rng = random.Random(20261202)
    partial: list[int] = []  # fields erased when each kill landed
    for i in range(KILLS):
        archive = shutil.copytree(pristine, tmp_path / f"run{i}")
        paths = sorted(archive.glob("case*.json"))
        process = subprocess.Popen(_erase_command(archive, key), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.0) * whole)
        process.send_signal(signal.SIGKILL)
        process.wait()
        partial.append(_all_verify(paths, key))
        subprocess.run(_erase_command(archive, key), check=True, capture_output=True)  # completes what was left
        assert _all_verify(paths, key) == RECEIPTS * 10
        for p in paths:
            assert EMAIL not in p.with_name(p.stem + ".disclosures.jsonl").read_text()
    print(f"fields erased when killed: {partial} of {RECEIPTS * 10}")


def test_crash_between_the_record_and_the_disclosure_leaves_the_field_disclosed(
        tmp_path: Path, key: Key, monkeypatch: pytest.MonkeyPatch) -> None:
    """The records file is written first: a crash before the disclosures file is replaced loses nothing."""
    import aer1._erase as erase_module

    paths = _archive(tmp_path / "archive", key)[:1]
    real = erase_module.replace_file
    writes: list[str] = []

    def crash_on_second(path: str, write: Any, *, durable: bool = False) -> None:
        writes.append(path)
        if len(writes) == 2:
            raise KeyboardInterrupt  # the process dies here
        real(path, write, durable=durable)

    monkeypatch.setattr(erase_module, "replace_file", crash_on_second)
    code, _, _ = run_aer1("erase", paths[0], "--value", EMAIL, "--reason", "r", "--key", key.private)
    assert code == 2 and writes[0].endswith(".erasures.jsonl") and writes[1].endswith(".disclosures.jsonl")
    assert _all_verify(paths, key) == 0  # still disclosed: the record counts for nothing while it is
    monkeypatch.setattr(erase_module, "replace_file", real)
    code, _, _ = run_aer1("erase", paths[0], "--value", EMAIL, "--reason", "r", "--key", key.private)
    assert code == 0 and _all_verify(paths, key) == 10
