"""The Collector: API contract, chain closing, concurrency, redaction, evidence."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import logging
import threading
from pathlib import Path

import pytest

from aer1 import Collector, CollectorClosedError, verify_receipt
from aer1._receipt import DEFAULT_VERIFY_URL
from aer1._redact import REDACTED, credential_redactor, is_secret_key
from aer1._vocabulary import status_counts

from ..helpers import KEYS, make_collector


def test_receipt_has_every_section_8_member() -> None:
    r = make_collector().finalize(final_answer="done")
    for name in ("type", "version", "workflow_id", "receipt_id", "session_id", "goal", "status", "steps",
                 "merkle_version", "merkle_root", "output_hash", "verify_url", "profile", "chain_head"):
        assert name in r, name
    assert r["type"] == "verifiable-workflow-receipt" and r["version"] == "1"
    assert r["merkle_version"] == "receipt-id-v0" and r["verify_url"] == DEFAULT_VERIFY_URL
    assert [s["seq"] for s in r["steps"]] == list(range(1, 7))
    assert [s["kind"] for s in r["steps"]] == ["task", "message", "tool_call", "handoff", "message", "close"]
    for s in r["steps"]:
        for name in ("seq", "receipt_id", "tool", "receipt_hash", "started_at", "ended_at", "status", "kind",
                     "agent", "prev_digest"):
            assert name in s
        assert s["receipt_id"][14] == "8"  # UUID version 8
        assert s["started_at"].endswith("Z") and len(s["started_at"]) == 27
    assert r["steps"][2]["call_id"] == "call_1" and r["steps"][3]["target"] == "bob"
    assert r["chain_head"] != r["steps"][-1]["prev_digest"]


def test_kind_defaults_to_tool_label_or_tool_call() -> None:
    c = Collector(goal="g")
    assert c.record("handoff", {})["kind"] == "handoff"
    assert c.record("search_web", {})["kind"] == "tool_call"
    assert c.record("x", {}, kind="approval")["kind"] == "approval"
    with pytest.raises(ValueError, match="kind must be one of"):
        c.record("x", {}, kind="bogus")
    with pytest.raises(ValueError, match="reserved"):
        c.record("close", {})
    with pytest.raises(ValueError, match="status must be one of"):
        c.record("x", {}, status="fine")
    with pytest.raises(ValueError, match="tool must be a non-empty string"):
        c.record("", {})
    with pytest.raises(TypeError, match="reply_to must be a string"):
        c.record("x", {}, reply_to=3)  # type: ignore[arg-type]


def test_output_hash_is_sha256_of_utf8_final_answer() -> None:
    import hashlib

    r = Collector(goal="g").finalize(final_answer="héllo")
    assert r["output_hash"] == hashlib.sha256("héllo".encode()).hexdigest()
    assert Collector(goal="g").finalize()["output_hash"] == hashlib.sha256(b"").hexdigest()


def test_real_timings_are_kept() -> None:
    c = Collector(goal="g")
    start = dt.datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=dt.timezone.utc)
    step = c.record("t", {}, started_at=start, ended_at=start.timestamp() + 1.5)
    assert step["started_at"] == "2026-03-01T12:00:00.123456Z"
    assert step["ended_at"] == "2026-03-01T12:00:01.623456Z"
    with pytest.raises(ValueError, match="before started_at"):
        c.record("t", {}, started_at=10.0, ended_at=9.0)
    with pytest.raises(ValueError, match="naive"):
        c.record("t", {}, started_at=dt.datetime(2026, 1, 1))


def test_finalize_twice_and_record_after_finalize_keep_the_chain_intact(caplog: pytest.LogCaptureFixture) -> None:
    c = make_collector()
    first = c.finalize(final_answer="x")
    assert c.finalize(final_answer="x") == first
    with pytest.raises(CollectorClosedError):
        c.finalize(final_answer="other")
    with pytest.raises(CollectorClosedError):
        c.record("message", {"late": True})
    with caplog.at_level(logging.WARNING, logger="aer1"):
        assert c.safe_record("message", {"late": True}) is None
    assert c.late_records == 1 and "after finalize" in caplog.text
    assert c.finalize(final_answer="x") == first
    assert verify_receipt(first).valid


def test_safe_record_never_raises_and_is_never_silent(caplog: pytest.LogCaptureFixture) -> None:
    c = Collector(goal="g")
    loop: list[object] = []
    loop.append(loop)
    with caplog.at_level(logging.WARNING, logger="aer1"):
        assert c.safe_record("message", loop) is None
    assert "failed to record" in caplog.text
    c.record("message", {"ok": 1})
    r = c.finalize()
    assert r["status"] == "incomplete" and r["recording_failures"] == 1
    report = verify_receipt(r)
    assert report.valid, report.failures


def test_the_workflow_status_says_how_the_run_ended() -> None:
    """spec/steps.md: a failed action is its step's error; the run's end decides the workflow's status."""
    handled = Collector(goal="g")
    handled.record("search", {"error": "boom"}, status="error")
    assert handled.finalize()["status"] == "ok"
    raised = Collector(goal="g")
    raised.record("search", {"error": "boom"}, status="error")
    raised.record("error", {"error": "boom"}, kind="error", status="error")
    assert raised.finalize()["status"] == "error"
    ended = Collector(goal="g")
    ended.record("termination", {"outcome": "error"}, kind="termination", status="error")
    assert ended.finalize()["status"] == "error"
    for kind in ("termination", "error"):
        cut = Collector(goal="g")
        cut.record("error", {"outcome": "cancelled"}, kind=kind, status="cancelled")
        cut.record("error", {"outcome": "error"}, kind="error", status="error")
        assert cut.finalize()["status"] == "incomplete"  # a run cut short is never ok, nor merely error
    counted = Collector(goal="g")
    for status in ("ok", "error", "cancelled", "ok"):
        counted.record("search", {}, status=status)
    assert counted.status_counts() == {"ok": 2, "error": 1, "cancelled": 1}
    assert status_counts(counted.finalize()) == {"ok": 2, "error": 1, "cancelled": 1}


def test_an_action_still_open_at_finalize_is_recorded_cut_off() -> None:
    c = Collector(goal="g")
    c.open_action("call", lambda: c.safe_record("slow", {"x": 1}, status="cancelled"))
    c.open_action("done", lambda: c.safe_record("never", {}))
    assert c.close_action("done") and not c.close_action("done")
    receipt = c.finalize()
    assert [(s["tool"], s["status"]) for s in receipt["steps"]] == [("slow", "cancelled"), ("close", "ok")]
    assert not c.close_action("call")  # finalize() already recorded it: the late end records nothing
    assert c.verify(receipt) == []


def test_save_after_finalize_with_a_result_needs_no_arguments_again(tmp_path: Path) -> None:
    c = Collector(goal="g")
    c.record("search", {})
    receipt = c.finalize("the answer", status="ok")
    path = c.save(tmp_path / "r.json")
    assert json.loads(Path(path).read_text())["receipt_id"] == receipt["receipt_id"]
    assert c.save_bundle(tmp_path / "bundle")
    assert c.receipt() == receipt


def test_threads_and_tasks_record_in_exact_seq_order(tmp_path: Path) -> None:
    c = Collector(goal="g")
    n_threads, per_thread, n_tasks, per_task = 8, 200, 4, 50
    seqs: dict[str, list[int]] = {}

    def work(t: int) -> None:
        mine = seqs.setdefault(f"a{t}", [])
        for i in range(per_thread):
            mine.append(c.record("message", {"by": f"a{t}", "i": i}, agent=f"a{t}")["seq"])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()

    async def async_work() -> None:
        async def one(t: int) -> None:
            mine = seqs.setdefault(f"task{t}", [])
            for i in range(per_task):
                mine.append(c.record("message", {"by": f"task{t}", "i": i}, agent=f"task{t}")["seq"])
                await asyncio.sleep(0)

        await asyncio.gather(*(one(t) for t in range(n_tasks)))

    asyncio.run(async_work())
    r = c.finalize()
    total = n_threads * per_thread + n_tasks * per_task
    # Every record() got its own seq, each writer's seqs rise in the order it recorded,
    # the tasks recorded after the threads, and the steps are stored in seq order.
    assert sorted(s for mine in seqs.values() for s in mine) == list(range(1, total + 1))
    assert all(mine == sorted(mine) for mine in seqs.values())
    assert min(min(seqs[f"task{t}"]) for t in range(n_tasks)) == n_threads * per_thread + 1
    assert [s["seq"] for s in r["steps"]] == list(range(1, total + 2))
    by_seq = {s: agent for agent, mine in seqs.items() for s in mine}
    assert [s["agent"] for s in r["steps"][:-1]] == [by_seq[n] for n in range(1, total + 1)]
    # The evidence holds each writer's contents at the seqs record() returned.
    c.save(tmp_path / "r.json", workflow=r)
    lines = (tmp_path / "r.evidence.jsonl").read_text().splitlines()[1:-1]
    contents = {json.loads(line)["seq"]: json.loads(line)["content"] for line in lines}
    for agent, mine in seqs.items():
        assert [contents[s] for s in mine] == [{"by": agent, "i": i} for i in range(len(mine))]
    assert verify_receipt(tmp_path / "r.json").valid


def test_default_redaction_keeps_secrets_out_of_hashes_and_evidence(tmp_path: Path) -> None:
    c = Collector(goal="g")
    c.record("call", {"api_key": "sk-abcdefghijklmnopqrstuvwx", "headers": {"Authorization": "Bearer abcdefghijk"},
                      "usage": {"max_tokens": 5, "prompt_tokens": 3}, "nested": [{"password": {"x": 1}}]})
    c.register_agent("a", type="T", config={"api_key": "sk-abcdefghijklmnopqrstuvwx", "model": "m"})
    path = c.save(tmp_path / "r.json")
    evidence = (tmp_path / "r.evidence.jsonl").read_text()
    assert "sk-abc" not in evidence and "abcdefghijk" not in evidence
    assert evidence.count(REDACTED) == 3
    assert '"max_tokens":5' in evidence
    assert "sk-" not in Path(path).read_text()
    assert verify_receipt(path).valid
    assert is_secret_key("OPENAI_API_KEY") and is_secret_key("accessToken") and not is_secret_key("tokens")


def test_credential_redactor_also_scrubs_strings(tmp_path: Path) -> None:
    c = Collector(goal="g", redact=credential_redactor)
    c.record("message", {"text": "key is sk-proj-ABCDEFGHIJKLMNOPQRSTUV and Bearer abcdefghijk", "token": "t"})
    c.save(tmp_path / "r.json")
    evidence = (tmp_path / "r.evidence.jsonl").read_text()
    assert "sk-proj" not in evidence and "abcdefghijk" not in evidence
    assert evidence.count(REDACTED) == 3


def test_plain_fast_path_equals_the_general_path() -> None:
    """The one-walk redaction of plain data gives the same bytes as normalize + redact + JCS."""
    from aer1._canonical import canonical_bytes, normalize
    from aer1._redact import default_redactor

    samples = [{"a": "x", "api_key": "k", "n": [1, {"token": None, "b": True}]}, ["x", 2, None],
               {"\u00e9": {"password": [1, 2]}}, "text", 7]
    fast, slow = Collector(goal="g", evidence=False), Collector(goal="g", evidence=False, redact=default_redactor)
    for value in samples:  # observed through record(): a step's receipt_hash is the SHA-256 of its content bytes
        want = hashlib.sha256(canonical_bytes(default_redactor(normalize(value)))).hexdigest()
        assert fast.record("t", value, agent="a")["receipt_hash"] == want
        assert slow.record("t", value, agent="a")["receipt_hash"] == want


def test_custom_and_disabled_redaction(tmp_path: Path) -> None:
    c = Collector(goal="g", redact=lambda v: {"masked": True})
    c.record("x", {"password": "p"})
    c.save(tmp_path / "a.json")
    assert '"content":{"masked":true}' in (tmp_path / "a.evidence.jsonl").read_text()
    c2 = Collector(goal="g", redact=False)
    c2.record("x", {"password": "p"})
    c2.save(tmp_path / "b.json")
    assert '"password":"p"' in (tmp_path / "b.evidence.jsonl").read_text()


def test_evidence_false_keeps_hashes_only(tmp_path: Path) -> None:
    c = Collector(goal="g", evidence=False)
    c.record("x", {"v": 1})
    c.save(tmp_path / "r.json")
    assert not (tmp_path / "r.evidence.jsonl").exists()
    report = verify_receipt(tmp_path / "r.json")
    assert report.valid and report.check("evidence").status == "NOT CHECKED"


def test_evidence_lets_an_auditor_recompute_every_hash(tmp_path: Path) -> None:
    c = make_collector()
    c.save(tmp_path / "r.json")
    report = verify_receipt(tmp_path / "r.json")
    assert report.valid and report.check("evidence").status == "PASS"
    lines = (tmp_path / "r.evidence.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["type"] == "aer1-evidence" and len(lines) == 7


def test_signing_key_from_path_object_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from aer1._signing import load_private_key

    for key in (KEYS / "trusted.key", str(KEYS / "trusted.key"), load_private_key(KEYS / "trusted.key")):
        assert "signature" in Collector(goal="g", signing_key=key).finalize()
    monkeypatch.setenv("AER1_SIGNING_KEY", str(KEYS / "trusted.key"))
    r = Collector(goal="g").finalize()
    assert r["signature"]["alg"] == "Ed25519"
    monkeypatch.setenv("AER1_SIGNING_KEY", str(KEYS / "missing.key"))
    with pytest.raises(ValueError, match="cannot read key file"):
        Collector(goal="g")


def test_agents_are_listed_once_and_bound() -> None:
    c = Collector(goal="g")
    c.register_agent("a", type="T", description="d", config={"m": 1})
    c.register_agent("a", type="T", description="d", config={"m": 1})
    with pytest.raises(ValueError, match="different identity"):
        c.register_agent("a", type="T", description="other")
    r = c.finalize()
    assert [a["name"] for a in r["agents"]] == ["a"]


def test_bad_constructor_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="goal"):
        Collector(goal="")
    with pytest.raises(ValueError, match="verify_url"):
        Collector(goal="g", verify_url="ftp://x")
    with pytest.raises(TypeError, match="redact"):
        Collector(goal="g", redact=3)  # type: ignore[arg-type]


def test_records_racing_finalize_never_follow_the_close_step() -> None:
    """Threads still recording while finalize() runs become late records; the chain stays valid."""
    for _ in range(30):
        c = Collector(goal="g", evidence=False)
        stop = threading.Event()

        def writer(c: Collector = c, stop: threading.Event = stop) -> None:
            while not stop.is_set():
                c.safe_record("message", {"x": 1}, agent="w")

        threads = [threading.Thread(target=writer) for _ in range(3)]
        for th in threads:
            th.start()
        for i in range(50):
            c.record("message", {"i": i}, agent="main")
        receipt = c.finalize()
        stop.set()
        for th in threads:
            th.join()
        assert receipt["steps"][-1]["kind"] == "close"
        assert verify_receipt(receipt).valid, [f.reason for f in verify_receipt(receipt).failures]
        assert c.finalize() == receipt


def test_start_from_time_time_with_default_end_never_fails() -> None:
    """A start taken with time.time() and an end left to the collector: never 'end before start'."""
    import time

    c = Collector(goal="g", evidence=False)
    for _ in range(20_000):
        c.record("message", {}, started_at=time.time())
    assert c.recording_failures == 0
    with pytest.raises(ValueError, match="before started_at"):
        c.record("message", {}, started_at=time.time() + 60, ended_at=time.time())
