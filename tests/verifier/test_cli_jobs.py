"""``aer1-verify -j N FILE``: the steps of one large receipt checked in N processes, with the same report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aer1 import Collector
from aer1._limits import PARALLEL_MIN_STEPS

BIN = Path(sys.executable).parent


def _cli(*args: str) -> tuple[int, dict[str, object]]:
    done = subprocess.run([str(BIN / "aer1-verify"), "--json", *args], capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    c = Collector("large", session_id="large")
    for i in range(PARALLEL_MIN_STEPS + 500):
        c.record("message", {"n": i}, agent="alice" if i % 2 else "bob", kind="message")
    return Path(c.save(tmp_path_factory.mktemp("jobs") / "large.json"))


def test_one_large_receipt_gets_the_same_valid_report_in_two_processes(large: Path) -> None:
    one, two = _cli(str(large), "-j", "1"), _cli(str(large), "-j", "2")
    assert one[0] == two[0] == 0, one[1]
    assert one[1] == two[1]


@pytest.mark.unverified_receipts
@pytest.mark.parametrize("where", [1, 1024, 1025, PARALLEL_MIN_STEPS // 2, PARALLEL_MIN_STEPS + 499])
def test_a_tampered_step_gets_the_same_report_in_two_processes(large: Path, tmp_path: Path, where: int) -> None:
    lines = large.read_bytes().split(b"\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(b'    {"seq":%d,' % where))
    lines[at] = lines[at].replace(b'"agent":"', b'"agent":"x', 1)
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\n".join(lines))
    one, two = _cli(str(bad), "-j", "1"), _cli(str(bad), "-j", "2")
    assert one[0] == two[0] == 1
    assert one[1] == two[1]
