"""The journal: its exact lines, byte-identical receipts, fsync policies, failures, threads and asyncio."""

from __future__ import annotations

import asyncio
import errno
import gc
import hashlib
import os
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

import orjson
import pytest

from aer1 import Collector
from aer1._canonical import canonical_bytes
from aer1._chain import PROFILE
from aer1._journal import FSYNC_POLICIES, JournalError
from aer1._recover import recover_journal
from aer1.verifier import verify_receipt

from .conftest import RECEIPT_ID, STEPS, TRUSTED_KEY, WORKFLOW_ID, feed, journal_lines

#: How long the interval thread may take to catch up (generous: a correctness wait, not a speed target).
SYNC_WAIT_S = 10


def _collector(journal: Path | None = None, **kw: object) -> Collector:
    return Collector("journal test", session_id="s-1", _ids=(WORKFLOW_ID, RECEIPT_ID), journal=journal,
                     **kw)  # type: ignore[arg-type]


def test_lines_are_header_agents_steps_close_and_final(tmp_path: Path, fixed_clock: None) -> None:
    path = tmp_path / "run.journal"
    c = _collector(path, fsync="step")
    steps = feed(c)
    receipt = c.finalize("the answer")
    lines = journal_lines(path)
    assert [line["type"] for line in lines] == (
        ["aer1-journal", "agent", "agent"] + ["step"] * (STEPS + 1) + ["final"]
    )
    header = lines[0]
    assert {k: v for k, v in header.items() if k != "created_at"} == {
        "type": "aer1-journal", "version": "1", "profile": PROFILE, "workflow_id": WORKFLOW_ID,
        "receipt_id": RECEIPT_ID, "session_id": "s-1", "goal": "journal test",
        "verify_url": receipt["verify_url"], "evidence": True,
    }
    assert [line["agent"] for line in lines[1:3]] == receipt["agents"]
    journaled = [line["step"] for line in lines[3:-1]]
    assert journaled == receipt["steps"]
    assert journaled[:STEPS] == steps
    for line, step in zip(lines[3:-1], receipt["steps"], strict=True):
        assert hashlib.sha256(canonical_bytes(line["content"])).hexdigest() == step["receipt_hash"]
    assert lines[3]["content"] == {"content": "step 1", "n": 1, "nested": {"ok": True, "list": [1, 2, 1]}}
    assert lines[-1] == {"type": "final", "status": receipt["status"], "step_count": STEPS + 1,
                         "merkle_root": receipt["merkle_root"], "chain_head": receipt["chain_head"]}


@pytest.mark.parametrize("policy", FSYNC_POLICIES)
@pytest.mark.parametrize("signed", [False, True])
def test_finalize_is_byte_identical_with_and_without_journal(
    tmp_path: Path, fixed_clock: None, policy: str, signed: bool
) -> None:
    key = str(TRUSTED_KEY) if signed else None
    plain = _collector(signing_key=key)
    journaled = _collector(tmp_path / "run.journal", fsync=policy, signing_key=key)
    assert feed(plain) == feed(journaled)
    a, b = plain.finalize("the answer"), journaled.finalize("the answer")
    assert orjson.dumps(a) == orjson.dumps(b)
    assert plain.save(tmp_path / "a.json", a) and journaled.save(tmp_path / "b.json", b)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert (tmp_path / "a.evidence.jsonl").read_bytes() == (tmp_path / "b.evidence.jsonl").read_bytes()
    assert journaled.finalize("the answer") == b  # a second finalize() adds nothing to the journal
    assert journal_lines(tmp_path / "run.journal")[-1]["type"] == "final"
    assert len(journal_lines(tmp_path / "run.journal")) == 3 + STEPS + 2


def test_an_existing_journal_is_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    path.write_bytes(b"earlier run\n")
    with pytest.raises(JournalError, match="already exists"):
        Collector("g", journal=path)
    assert path.read_bytes() == b"earlier run\n"
    with pytest.raises(JournalError, match="cannot create journal"):
        Collector("g", journal=tmp_path / "missing-dir" / "run.journal")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fsync": "always"}, "fsync must be one of step, interval, never"),
        ({"fsync_interval_ms": 0}, "fsync_interval_ms must be an integer from 1 to 60000"),
        ({"fsync_interval_ms": 60_001}, "fsync_interval_ms must be an integer from 1 to 60000"),
        ({"fsync_interval_ms": 1.5}, "fsync_interval_ms must be an integer"),
    ],
)
def test_bad_policies_are_refused_before_any_file_is_made(tmp_path: Path, kwargs: dict[str, object],
                                                          message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Collector("g", journal=tmp_path / "run.journal", **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "run.journal").exists()


def test_without_evidence_only_the_close_content_is_journaled(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    c = Collector("g", journal=path, evidence=False)
    c.record("message", {"content": "secret-ish"}, agent="a")
    c.finalize("done")
    lines = journal_lines(path)
    assert lines[0]["evidence"] is False
    assert [sorted(line) for line in lines[1:]] == [["step", "type"], ["content", "step", "type"],
                                                    ["chain_head", "merkle_root", "status", "step_count", "type"]]
    result = recover_journal(path, tmp_path / "r.json")
    assert result.evidence_path is None and not (tmp_path / "r.evidence.jsonl").exists()
    assert result.finalized and result.problems == []
    assert verify_receipt(tmp_path / "r.json").valid


def test_interval_thread_syncs_and_stops_at_finalize(tmp_path: Path) -> None:
    c = Collector("g", journal=tmp_path / "run.journal", fsync="interval", fsync_interval_ms=1)
    journal = c.journal
    assert journal is not None and journal.syncing_in_background
    for i in range(50):
        c.record("message", {"i": i}, agent="a")
    # Nobody syncs but the background thread: it catches up with every line written.
    deadline = time.monotonic() + SYNC_WAIT_S
    while journal.lines_synced < 50:
        assert time.monotonic() < deadline, f"synced {journal.lines_synced} of 50 lines"
        time.sleep(0.01)
    assert journal.lines_synced == journal.lines_written == 50
    c.finalize()
    assert not journal.syncing_in_background
    assert journal.finished and journal.error is None and not journal.active


def test_an_abandoned_collector_stops_its_thread_and_closes_its_file(tmp_path: Path) -> None:
    c = Collector("g", journal=tmp_path / "run.journal", fsync="interval", fsync_interval_ms=1)
    c.record("message", {"i": 1}, agent="a")
    assert c.journal is not None and c.journal._thread is not None
    thread, fd = c.journal._thread, c.journal._fd
    ref = weakref.ref(c.journal)
    del c
    gc.collect()
    assert ref() is None
    with pytest.raises(OSError) as info:
        os.fstat(fd)
    assert info.value.errno == errno.EBADF
    thread.join(10)
    assert not thread.is_alive()
    assert [line["type"] for line in journal_lines(tmp_path / "run.journal")] == ["aer1-journal", "step"]


_FULL_DISK_CHILD = """
import logging, resource, signal, sys
from aer1 import Collector
from aer1.verifier import verify_receipt
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
resource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000))
c = Collector("g", journal=sys.argv[1], fsync="step", evidence=False)
for i in range(40):
    c.record("message", {"content": "x" * 100, "i": i}, agent="a")
r = c.finalize("done")
print(type(c.journal.error).__name__, c.journal.error.errno, len(r["steps"]), r["status"], verify_receipt(r).valid)
"""


def test_a_full_disk_stops_the_journal_loudly_but_never_the_run(tmp_path: Path) -> None:
    """A real write failure (the file size limit: EFBIG) in a real process."""
    path = tmp_path / "run.journal"
    done = subprocess.run([sys.executable, "-c", _FULL_DISK_CHILD, str(path)], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["OSError", str(errno.EFBIG), "41", "ok", "True"]
    assert done.stderr.count("journaling stopped") == 1
    assert done.stderr.startswith("ERROR aer1: journal ")
    result = recover_journal(path, tmp_path / "r.json")
    n = result.steps_recovered
    assert 0 < n < 40
    assert [(p.line, p.seq) for p in result.problems] == [(n + 2, n + 1)]  # the header is line 1
    assert result.problems[0].message.startswith("torn last line (")
    assert verify_receipt(tmp_path / "r.json").valid


def test_threads_write_lines_in_seq_order(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    c = Collector("g", journal=path, fsync="step")
    per_thread, threads = 25, 4

    def work(name: str) -> None:
        for i in range(per_thread):
            c.record("message", {"i": i}, agent=name)

    pool = [threading.Thread(target=work, args=(f"t{n}",)) for n in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    lines = journal_lines(path)[1:]
    assert [line["step"]["seq"] for line in lines] == list(range(1, per_thread * threads + 1))
    result = recover_journal(path, tmp_path / "r.json")
    assert result.problems == [] and result.steps_recovered == per_thread * threads
    assert verify_receipt(tmp_path / "r.json").valid


async def test_journal_on_the_async_path(tmp_path: Path) -> None:
    """Tasks record concurrently from one event loop; the unfinished journal recovers every step."""
    path = tmp_path / "run.journal"
    c = Collector("async run", journal=path, fsync="interval", fsync_interval_ms=5)
    c.register_agent("a0", type="AssistantAgent")
    recorded: list[tuple[int, str]] = []

    async def agent(name: str) -> None:
        for i in range(20):
            step = c.record("message", {"agent": name, "i": i}, agent=name)
            recorded.append((step["seq"], step["receipt_id"]))
            await asyncio.sleep(0)

    await asyncio.gather(*(agent(f"a{n}") for n in range(5)))
    assert sorted(recorded) == recorded and len(recorded) == 100
    result = recover_journal(path, tmp_path / "r.json")
    assert result.exit_code == 0 and not result.finalized
    assert [(s["seq"], s["receipt_id"]) for s in result.receipt["steps"][:-1]] == recorded
    assert result.receipt["agents"] == [{"name": "a0", "type": "AssistantAgent"}]
    assert verify_receipt(tmp_path / "r.json").valid
    c.finalize()
