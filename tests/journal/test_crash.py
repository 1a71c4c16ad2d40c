"""A real recording process killed with SIGKILL mid-run: every acknowledged step is recovered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from aer1._recover import recover_journal
from aer1._signing import key_id, load_public_key
from aer1.verifier import verify_receipt

from .conftest import TRUSTED_KEY, TRUSTED_PUB

CHILD = Path(__file__).parent / "recording_child.py"
#: Acknowledged steps to wait for before the kill.
ACKS_BEFORE_KILL = 40
_TIMEOUT_S = 60

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")


def _run_and_kill(journal: Path, policy: str, key: Path | None) -> tuple[str, dict[int, str]]:
    """Start the child, read acknowledgements, SIGKILL it mid-run; returns (workflow id, seq -> receipt id)."""
    cmd = [sys.executable, str(CHILD), str(journal), policy] + ([str(key)] if key else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=journal.parent)
    acked: dict[int, str] = {}
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline().split()
        assert ready[:1] == [b"ready"], proc.stderr.read() if proc.stderr else b""
        while len(acked) < ACKS_BEFORE_KILL:
            words = proc.stdout.readline().split()
            assert words[:1] == [b"ack"], words
            acked[int(words[1])] = words[2].decode()
        os.kill(proc.pid, signal.SIGKILL)
        # Acks already in the pipe were printed after record() returned: they count too.
        for line in proc.stdout.read().splitlines():
            words = line.split()
            if len(words) == 3 and words[0] == b"ack":
                acked[int(words[1])] = words[2].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(_TIMEOUT_S)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGKILL
    return ready[1].decode(), acked


@pytest.mark.parametrize(("policy", "key"), [("step", None), ("step", TRUSTED_KEY), ("never", None)])
def test_sigkill_mid_run_loses_no_acknowledged_step(tmp_path: Path, policy: str, key: Path | None) -> None:
    journal = tmp_path / "run.journal"
    workflow_id, acked = _run_and_kill(journal, policy, key)
    assert sorted(acked) == list(range(1, len(acked) + 1))

    result = recover_journal(journal, tmp_path / "receipt.json", signing_key=str(key) if key else None)
    steps = result.receipt["steps"]
    recovered = {s["seq"]: s["receipt_id"] for s in steps[:-1]}
    assert {seq: recovered.get(seq) for seq in acked} == acked
    assert result.receipt["workflow_id"] == workflow_id
    assert result.receipt["status"] == "incomplete" and result.receipt["closed_by"] == "recovery"
    assert steps[-1]["kind"] == "close" and steps[-1]["seq"] == result.steps_recovered + 1
    # At most the one line being written when the kill came is torn; nothing else is wrong.
    assert [p.message.split(" (")[0] for p in result.problems] in ([], ["torn last line"])
    evidence = (tmp_path / "receipt.evidence.jsonl").read_bytes().splitlines()
    assert orjson.loads(evidence[1])["content"] == {"content": "message 1", "payload": "x" * 150}

    trusted = {key_id(load_public_key(TRUSTED_PUB))} if key else None
    report = verify_receipt(tmp_path / "receipt.json", trusted_key_ids=trusted)
    assert report.valid, [f.reason for f in report.failures]
    assert report.check("evidence").status == "PASS" and report.check("chain").status == "PASS"
    assert report.check("signature").status == ("PASS" if key else "NOT CHECKED")
