"""``aer1 recover``: unfinished and finalized journals, torn and tampered lines, bad input, exit codes."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from aer1 import Collector
from aer1._canonical import canonical_bytes
from aer1._chain import STEP_TAG, uuid8_from_digest
from aer1._receipt import close_content
from aer1._recover import Problem, RecoveryError, recover_journal
from aer1._signing import key_id, load_public_key
from aer1.verifier import verify_receipt
from tests.fixtures.generate_adversarial import forged_finalized_journal

from .conftest import STEPS, TRUSTED_KEY, TRUSTED_PUB, feed

Recover = Callable[..., tuple[int, Any, str]]
FIRST_STEP_LINE = 4  # line 1 header, lines 2-3 agents


def _journal(tmp_path: Path, **kw: Any) -> tuple[Path, Collector, list[dict[str, Any]]]:
    path = tmp_path / "run.journal"
    c = Collector("recover test", session_id="s-r", journal=path, fsync="never", **kw)
    return path, c, feed(c)


def _line_of(seq: int) -> int:
    return FIRST_STEP_LINE + seq - 1


def _edit_line(path: Path, number: int, edit: Callable[[dict[str, Any]], None]) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    record = orjson.loads(lines[number - 1])
    edit(record)
    lines[number - 1] = orjson.dumps(record) + b"\n"
    path.write_bytes(b"".join(lines))


def _valid(path: Path, **kw: Any) -> bool:
    """The recovered receipt and its evidence (every journal here keeps evidence) verify."""
    report = verify_receipt(path, **kw)
    assert report.check("evidence").status == "PASS", report.check("evidence").detail
    return bool(report.valid)


def _file(name: str, data: bytes) -> Callable[[Path], Path]:
    def make(d: Path) -> Path:
        (d / name).write_bytes(data)
        return d / name

    return make


def test_an_unfinished_run_recovers_every_step(tmp_path: Path) -> None:
    path, c, steps = _journal(tmp_path)
    result = recover_journal(path, tmp_path / "r.json")
    r = result.receipt
    assert (result.exit_code, result.steps_recovered, result.finalized, result.problems) == (0, STEPS, False, [])
    assert r["steps"][:STEPS] == steps
    assert r["status"] == "incomplete" and r["closed_by"] == "recovery"
    assert r["output_hash"] == hashlib.sha256(b"").hexdigest()
    assert [a["name"] for a in r["agents"]] == ["alice", "bob"]
    assert (r["workflow_id"], r["receipt_id"], r["session_id"], r["goal"]) == (
        c.workflow_id, c.receipt_id, "s-r", "recover test")
    close = r["steps"][-1]
    assert (close["seq"], close["kind"], close["tool"], close["agent"]) == (STEPS + 1, "close", "close", "aer1")
    workflow = {k: v for k, v in r.items() if k not in ("steps", "merkle_root", "chain_head")}
    evidence = (tmp_path / "r.evidence.jsonl").read_bytes().splitlines()
    assert len(evidence) == 1 + STEPS + 1
    assert orjson.loads(evidence[-1])["content"] == close_content(workflow, STEPS + 1)
    assert _valid(tmp_path / "r.json")
    c.finalize()


def test_a_signed_recovery_verifies_with_the_trusted_key(tmp_path: Path, run_recover: Recover) -> None:
    path, _, _ = _journal(tmp_path)
    code, out, err = run_recover(path, "-o", tmp_path / "r.json", "--key", TRUSTED_KEY)
    assert (code, err) == (0, "")
    assert out == {
        "journal": str(path), "receipt": str(tmp_path / "r.json"), "evidence": str(tmp_path / "r.evidence.jsonl"),
        "workflow_id": out["workflow_id"], "status": "incomplete", "steps_recovered": STEPS, "steps": STEPS + 1,
        "finalized": False, "closed_by": "recovery", "signed": True, "lines_left_out": 0, "problems": [],
        "notes": [], "exit_code": 0,
    }
    trusted = {key_id(load_public_key(TRUSTED_PUB))}
    report = verify_receipt(tmp_path / "r.json", trusted_key_ids=trusted)
    assert report.valid and report.check("signature").detail.startswith("valid signature by trusted key")
    done = subprocess.run([sys.executable, "-m", "aer1.verifier._cli", str(tmp_path / "r.json"), "--key",
                           str(TRUSTED_PUB)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert done.stdout.splitlines()[-1].startswith(
        "verdict: VALID (aer1-chain-v1; chain checked; CLOSED BY RECOVERY (incomplete run); signed by trusted key ")


def _recovered_from_finalized(tmp_path: Path, drop_final_line: bool) -> tuple[dict[str, Any], Any, dict[str, Any]]:
    path, c, steps = _journal(tmp_path, signing_key=str(TRUSTED_KEY))
    original = c.finalize("the answer")
    if drop_final_line:
        path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:-1]))
    result = recover_journal(path, tmp_path / "r.json", signing_key=str(TRUSTED_KEY))
    r = result.receipt
    assert (result.exit_code, result.finalized, result.steps_recovered, result.problems) == (0, True, STEPS, [])
    assert r["steps"][:STEPS] == steps
    return original, result, r


@pytest.mark.parametrize("drop_final_line", [False, True], ids=["final_line_kept", "finalize_interrupted"])
def test_a_finalized_journal_still_gives_a_recovered_receipt(tmp_path: Path, drop_final_line: bool) -> None:
    """The journal is not signed: its claim to be finalized cannot be told from a forgery."""
    original, result, r = _recovered_from_finalized(tmp_path, drop_final_line)
    assert (r["status"], r["closed_by"]) == ("incomplete", "recovery")
    assert r["output_hash"] == original["output_hash"]  # the journaled answer hash is kept, bound as recovered
    assert r["steps"][-1]["kind"] == "close" and r["steps"][-1]["receipt_id"] != original["steps"][-1]["receipt_id"]
    assert "replaced by a recovery close step" in result.notes[0]
    assert ("final line is missing" in result.notes[-1]) == drop_final_line
    trusted = {key_id(load_public_key(TRUSTED_PUB))}
    report = verify_receipt(tmp_path / "r.json", trusted_key_ids=trusted)
    assert report.valid and report.basis()["closed_by"] == "recovery"
    assert "CLOSED BY RECOVERY" in report.to_text().splitlines()[-1]


def test_a_forged_finalized_journal_is_not_laundered(tmp_path: Path) -> None:
    """A hand-written journal, fully re-chained, claiming a finalized run with status ok."""
    path = tmp_path / "run.journal"
    forged_finalized_journal(path)
    result = recover_journal(path, tmp_path / "r.json", signing_key=str(TRUSTED_KEY))
    assert result.finalized and result.problems == []
    r = result.receipt
    assert (r["status"], r["closed_by"]) == ("incomplete", "recovery")
    report = verify_receipt(tmp_path / "r.json", trusted_key_ids={key_id(load_public_key(TRUSTED_PUB))})
    assert report.valid and report.basis()["closed_by"] == "recovery"
    assert "CLOSED BY RECOVERY (incomplete run)" in report.to_text().splitlines()[-1]


def test_a_torn_last_line_is_reported_and_left_out(tmp_path: Path) -> None:
    path, c, steps = _journal(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:-40])
    result = recover_journal(path, tmp_path / "r.json")
    torn = len(data.splitlines()[-1]) + 1 - 40
    assert result.problems == [
        Problem(_line_of(STEPS), f"torn last line ({torn} bytes, no newline): an interrupted write; left out", STEPS)
    ]
    assert (result.exit_code, result.steps_recovered, result.lines_left_out) == (1, STEPS - 1, 1)
    assert result.receipt["steps"][:-1] == steps[:-1]
    assert _valid(tmp_path / "r.json")
    c.finalize()


def test_a_tampered_middle_line_is_reported_by_seq(tmp_path: Path, run_recover: Recover) -> None:
    path, c, steps = _journal(tmp_path)

    def edit(record: dict[str, Any]) -> None:
        record["content"]["content"] = "rewritten"

    _edit_line(path, _line_of(3), edit)
    code, out, _ = run_recover(path, "-o", tmp_path / "r.json")
    assert code == 1
    assert out["problems"] == [
        {"line": _line_of(3), "seq": 3, "message": "content does not hash to receipt_hash (the line was changed)"},
        {"line": _line_of(4), "seq": None,
         "message": f"{STEPS - 3} later line(s) left out: nothing after a bad line can be trusted"},
    ]
    assert (out["steps_recovered"], out["lines_left_out"]) == (2, STEPS - 2)
    receipt = orjson.loads((tmp_path / "r.json").read_bytes())
    assert receipt["steps"][:2] == steps[:2]
    assert _valid(tmp_path / "r.json")
    code, text, _ = run_recover(path, "-o", tmp_path / "r2.json", json=False)
    assert code == 1
    assert text.splitlines()[1:3] == [
        f"  problem: line {_line_of(3)} (seq 3): content does not hash to receipt_hash (the line was changed)",
        f"  problem: line {_line_of(4)}: {STEPS - 3} later line(s) left out: nothing after a bad line can be trusted",
    ]
    c.finalize()


def test_an_edited_member_breaks_the_derived_id(tmp_path: Path) -> None:
    path, c, _ = _journal(tmp_path)

    def edit(record: dict[str, Any]) -> None:
        record["step"]["agent"] = "mallory"

    _edit_line(path, _line_of(4), edit)
    result = recover_journal(path, tmp_path / "r.json")
    assert result.problems[0] == Problem(
        _line_of(4), "receipt_id is not derived from the step's members (the line was changed)", 4)
    assert result.steps_recovered == 3 and _valid(tmp_path / "r.json")
    c.finalize()


def test_an_edit_with_its_id_recomputed_breaks_the_next_link(tmp_path: Path) -> None:
    path, c, _ = _journal(tmp_path)

    def edit(record: dict[str, Any]) -> None:
        step = record["step"]
        step["agent"] = "mallory"
        body = {k: v for k, v in step.items() if k != "receipt_id"}
        step["receipt_id"] = uuid8_from_digest(hashlib.sha256(STEP_TAG + canonical_bytes(body)).digest())

    _edit_line(path, _line_of(4), edit)
    result = recover_journal(path, tmp_path / "r.json")
    assert result.problems[0] == Problem(
        _line_of(5), "prev_digest does not link to the digest of seq 4: the chain is broken here", 5)
    assert result.steps_recovered == 4 and _valid(tmp_path / "r.json")
    c.finalize()


@pytest.mark.parametrize(
    ("times", "message"),
    [
        (("2026-13-01T00:00:00.000000Z", "2026-13-01T00:00:00.000000Z"),
         "started_at is not a real date and time YYYY-MM-DDTHH:MM:SS.ffffffZ"),
        (("2026-02-30T00:00:00.000000Z", "2026-03-01T00:00:00.000000Z"),
         "started_at is not a real date and time YYYY-MM-DDTHH:MM:SS.ffffffZ"),
        (("2026-03-01T00:00:01.000000Z", "2026-03-01T00:00:00.000000Z"), "ended_at is before started_at"),
    ],
    ids=["month-13", "february-30", "ended-before-started"],
)
def test_a_self_consistent_last_line_with_impossible_times_is_left_out(
    tmp_path: Path, times: tuple[str, str], message: str
) -> None:
    """An edited last line with its id recomputed links; its times must still be real, or it is left out."""
    path, c, steps = _journal(tmp_path)

    def edit(record: dict[str, Any]) -> None:
        step = record["step"]
        step["started_at"], step["ended_at"] = times
        body = {k: v for k, v in step.items() if k != "receipt_id"}
        step["receipt_id"] = uuid8_from_digest(hashlib.sha256(STEP_TAG + canonical_bytes(body)).digest())

    _edit_line(path, _line_of(STEPS), edit)
    result = recover_journal(path, tmp_path / "r.json")
    assert result.problems == [Problem(_line_of(STEPS), message, STEPS)]
    assert (result.exit_code, result.steps_recovered) == (1, STEPS - 1)
    assert result.receipt["steps"][:-1] == steps[:-1]
    assert _valid(tmp_path / "r.json")
    c.finalize()


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda lines: lines[: _line_of(3) - 1] + lines[_line_of(3):],
         (3, "seq 4 out of order (the journal is cut or reordered here)")),
        (lambda lines: [*lines[: _line_of(3)], lines[_line_of(3) - 1], *lines[_line_of(3):]],
         (4, "seq 3 out of order (the journal is cut or reordered here)")),
        (lambda lines: [*lines[: _line_of(3) - 1], b"\x00" * 64 + b"\n", *lines[_line_of(3):]],
         (3, "not a journal record (invalid JSON at byte 0)")),
        (lambda lines: [*lines[: _line_of(3) - 1], b'{"type":"note"}\n', *lines[_line_of(3):]],
         (3, "unknown journal record type 'note'")),
    ],
    ids=["line-dropped", "line-duplicated", "zero-filled-line", "unknown-record"],
)
def test_damaged_lines_stop_recovery_there(tmp_path: Path, damage: Callable[[list[bytes]], list[bytes]],
                                           problem: tuple[int, str]) -> None:
    path, c, steps = _journal(tmp_path)
    path.write_bytes(b"".join(damage(path.read_bytes().splitlines(keepends=True))))
    result = recover_journal(path, tmp_path / "r.json")
    assert (result.problems[0].seq, result.problems[0].message) == problem
    assert result.receipt["steps"][:-1] == steps[: problem[0] - 1]
    assert result.exit_code == 1 and _valid(tmp_path / "r.json")
    c.finalize()


def test_a_zero_filled_tail_after_power_loss_is_a_torn_line(tmp_path: Path) -> None:
    path, c, _ = _journal(tmp_path)
    with open(path, "ab") as f:
        f.write(b"\x00" * 4096)
    result = recover_journal(path, tmp_path / "r.json")
    assert [(p.line, p.seq) for p in result.problems] == [(_line_of(STEPS + 1), STEPS + 1)]
    assert result.steps_recovered == STEPS and _valid(tmp_path / "r.json")
    c.finalize()


def test_a_journal_with_no_steps_recovers_a_close_only_receipt(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    c = Collector("nothing happened", journal=path)
    result = recover_journal(path, tmp_path / "r.json")
    assert (result.exit_code, result.steps_recovered, len(result.receipt["steps"])) == (0, 0, 1)
    assert "agents" not in result.receipt and _valid(tmp_path / "r.json")
    c.finalize()


def test_the_close_step_binds_closed_by_and_the_status(tmp_path: Path) -> None:
    path, c, _ = _journal(tmp_path)
    receipt = recover_journal(path, tmp_path / "r.json").receipt
    relabeled = {**receipt, "status": "ok"}
    assert [f.check for f in verify_receipt(relabeled).failures] == ["members"]
    for edited in ({k: v for k, v in receipt.items() if k != "closed_by"},
                   {**{k: v for k, v in receipt.items() if k != "closed_by"}, "status": "ok"}):
        assert [(f.check, f.seq) for f in verify_receipt(edited).failures] == [("chain", STEPS + 1)]
    c.finalize()


def test_recovered_receipts_pass_the_peer_verifier(tmp_path: Path,
                                                   peer_verify_workflow: Callable[[dict[str, Any]], list[str]]) -> None:
    path, c, _ = _journal(tmp_path)
    assert peer_verify_workflow(recover_journal(path, tmp_path / "r.json").receipt) == []
    c.finalize()


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda d: d / "missing.journal", "cannot read"),
        (lambda d: d, "is a directory, not a journal"),
        (_file("empty.journal", b""),
         "is not an aer1 journal (no complete header line)"),
        (_file("x.journal", b'{"type":"verifiable-workflow-receipt"}\n'),
         "is not an aer1 journal (line 1 is not a journal header)"),
        (_file("y.journal", b"not json\n"),
         "is not an aer1 journal (line 1 is not JSON)"),
    ],
    ids=["missing", "directory", "empty", "a-receipt", "not-json"],
)
def test_bad_input_exits_2_and_writes_nothing(tmp_path: Path, run_recover: Recover, make: Callable[[Path], Path],
                                              error: str) -> None:
    source = make(tmp_path)
    code, out, err = run_recover(source, "-o", tmp_path / "r.json", json=False)
    assert (code, out) == (2, "")
    assert err.startswith("aer1 recover: error: ") and error in err and len(err.splitlines()) == 1
    code, out, err = run_recover(source, "-o", tmp_path / "r.json")  # --json: the error is a JSON object
    assert (code, err) == (2, "") and isinstance(out, dict) and error in out["error"] and out["exit_code"] == 2
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "r.evidence.jsonl").exists()


def test_an_unusable_key_exits_2_and_writes_nothing(tmp_path: Path, run_recover: Recover) -> None:
    path, c, _ = _journal(tmp_path)
    code, out, err = run_recover(path, "-o", tmp_path / "r.json", "--key", tmp_path / "missing.key", json=False)
    assert (code, out) == (2, "")
    assert err.startswith("aer1 recover: error: cannot read key file ") and len(err.splitlines()) == 1
    assert not (tmp_path / "r.json").exists()
    c.finalize()


def test_the_output_must_not_be_the_journal(tmp_path: Path) -> None:
    path, c, _ = _journal(tmp_path)
    with pytest.raises(RecoveryError, match="must not be the journal"):
        recover_journal(path, path)
    named_like_evidence = tmp_path / "r.evidence.jsonl"
    path.rename(named_like_evidence)
    before = named_like_evidence.read_bytes()
    for out in (tmp_path / "r.json", tmp_path / "link.json"):
        if out.name == "link.json":
            (tmp_path / "link.evidence.jsonl").symlink_to(named_like_evidence)
        with pytest.raises(RecoveryError, match="would overwrite it"):
            recover_journal(named_like_evidence, out)
        assert named_like_evidence.read_bytes() == before and not out.exists()
    c.finalize()
