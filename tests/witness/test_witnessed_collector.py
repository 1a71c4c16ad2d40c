"""End to end across processes: a collector logs through ``aer1 log serve``, which has a witness
process cosign each checkpoint; ``aer1-verify`` requiring that witness accepts the receipt.

A split view: a second server over a fork of the same log (same key, other entries)
gets no cosignature from that witness, so the verifier requiring it refuses the receipt
logged there, though the fork's checkpoint is signed by the very same log key.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aer1._logdir import init_log
from aer1._signing import load_private_key
from aer1._tlog import CosignatureSigner

from .conftest import server_process

KEY = Path(__file__).parent.parent / "fixtures" / "keys" / "trusted.key"
CHILD = Path(__file__).parent / "collector_child.py"
ORIGIN = "example.test/collector-log"
NAME = "witness.test/collector"
VERIFY = str(Path(sys.executable).with_name("aer1-verify"))


def run_child(url: str, out: Path) -> str:
    out.parent.mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, str(CHILD), url, str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def log_check(receipt: Path, log_vkey: str, witness_vkey: str) -> tuple[int, dict[str, object]]:
    done = subprocess.run([VERIFY, str(receipt), "--json", "--log-key", log_vkey, "--witness", witness_vkey,
                           "--min-witnesses", "1"], capture_output=True, text=True, timeout=120)
    report = json.loads(done.stdout)
    return done.returncode, next(c for c in report["checks"] if c["name"] == "log")


@pytest.mark.unverified_receipts  # the receipts are made in child processes and checked here
def test_collector_through_a_witnessed_log_server_and_a_split_view(tmp_path: Path) -> None:
    log_a = tmp_path / "log-a"
    vkey = init_log(log_a, ORIGIN, str(KEY))
    fork_b = tmp_path / "log-b"
    shutil.copytree(log_a, fork_b)  # the same log, key and (empty) history: it forks from here
    witness_vkey = CosignatureSigner(NAME, load_private_key(str(KEY))).verifier().vkey
    witness = ["witness", "serve", "--key", str(KEY), "--name", NAME, "--state", str(tmp_path / "w"),
               "--log", f"{ORIGIN}={vkey}"]
    with server_process(witness) as w:
        serve = ["--witness", w.url, "--witness-key", witness_vkey]
        with server_process(["log", "serve", str(log_a), *serve]) as a:
            assert run_child(a.url, tmp_path / "a" / "receipt.json") == ""
            assert run_child(a.url, tmp_path / "a2" / "receipt.json") == ""
        with server_process(["log", "serve", str(fork_b), *serve]) as b:
            assert run_child(b.url, tmp_path / "b" / "receipt.json") == ""  # logged, but never cosigned
    for run in ("a", "a2"):
        assert (tmp_path / run / "receipt.tlog-proof").is_file()
        code, check = log_check(tmp_path / run / "receipt.json", vkey, witness_vkey)
        assert (code, check["status"]) == (0, "PASS"), check
    code, check = log_check(tmp_path / "b" / "receipt.json", vkey, witness_vkey)
    assert code != 0 and check["status"] == "FAIL", check
    assert "cosignatures" in json.dumps(check)
    # Without the witness requirement the fork's receipt passes: the log key alone cannot see a split view.
    done = subprocess.run([VERIFY, str(tmp_path / "b" / "receipt.json"), "--log-key", vkey], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
