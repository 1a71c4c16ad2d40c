"""Trial: journals that break the receipt limits: recovery refuses them or leaves the line out, never
writes a receipt the verifier refuses."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from aer1 import Collector
from aer1._limits import MAX_AGENTS_BYTES, MAX_MEMBER_CHARS, MAX_PARSE_COST_BYTES
from aer1._recover import RecoveryError, recover_journal
from aer1.verifier import verify_receipt


def _journal(tmp_path: Path) -> list[bytes]:
    path = tmp_path / "run.journal"
    c = Collector(goal="trial recovery", journal=path, fsync="never")
    c.register_agent("alice", type="T")
    c.record("message", {"content": "one"}, agent="alice")
    c.record("message", {"content": "two"}, agent="alice")
    return path.read_bytes().splitlines(keepends=True)


def _recover(tmp_path: Path, lines: list[bytes]) -> tuple[list[str], int]:
    """Recover ``lines``; (problems, steps recovered), after checking the receipt verifies with its evidence."""
    journal = tmp_path / "edited.journal"
    journal.write_bytes(b"".join(lines))
    result = recover_journal(journal, tmp_path / "recovered.json")
    report = verify_receipt(tmp_path / "recovered.json")
    assert report.verdict == "VALID", [f.reason for f in report.failures]
    return [p.message for p in result.problems], result.steps_recovered


def _agent_line(name: str, description: str) -> bytes:
    return orjson.dumps({"type": "agent", "agent": {"name": name, "type": "T", "description": description}}) + b"\n"


@pytest.mark.parametrize("member", ["goal", "session_id", "verify_url"])
def test_header_member_over_the_limit_is_refused(tmp_path: Path, member: str) -> None:
    """A header goal of 1 Mi + 5 characters gave a receipt the verifier called MALFORMED."""
    lines = _journal(tmp_path)
    header = orjson.loads(lines[0])
    header[member] = "https://" + "x" * MAX_MEMBER_CHARS
    lines[0] = orjson.dumps(header) + b"\n"
    (tmp_path / "edited.journal").write_bytes(b"".join(lines))
    with pytest.raises(RecoveryError, match=r"over the \d+ limit"):
        recover_journal(tmp_path / "edited.journal", tmp_path / "recovered.json")
    assert not (tmp_path / "recovered.json").exists()


def test_agent_member_over_the_limit_is_left_out(tmp_path: Path) -> None:
    lines = _journal(tmp_path)
    problems, steps = _recover(tmp_path, [*lines[:2], _agent_line("bob", "d" * (MAX_MEMBER_CHARS + 1)), *lines[2:]])
    assert steps == 0 and "limit" in problems[0], f"got {problems}, want the agent line refused for its length"


def test_step_member_over_the_limit_is_left_out(tmp_path: Path) -> None:
    lines = _journal(tmp_path)
    record = orjson.loads(lines[-1])
    record["step"]["tool"] = "t" * (MAX_MEMBER_CHARS + 1)
    problems, steps = _recover(tmp_path, [*lines[:-1], orjson.dumps(record) + b"\n"])
    assert steps == 1 and "limit" in problems[0], f"got {problems}, want step 2 refused for its length"


def test_agents_past_the_collectors_budget_are_left_out(tmp_path: Path) -> None:
    lines = _journal(tmp_path)
    count = MAX_AGENTS_BYTES // MAX_MEMBER_CHARS + 1
    agents = [_agent_line(f"agent{i}", "d" * (MAX_MEMBER_CHARS - 64)) for i in range(count)]
    problems, _ = _recover(tmp_path, [*lines[:2], *agents, *lines[2:]])
    assert "agents member would grow past" in problems[0], f"got {problems}"


def test_line_costly_to_parse_is_left_out_before_parsing(tmp_path: Path) -> None:
    """A line of tiny containers took about 20 times its size to parse (a 128 MiB line: gigabytes)."""
    lines = _journal(tmp_path)
    n = MAX_PARSE_COST_BYTES // 80 + 1
    costly = b'{"type":"agent","agent":[' + b"[]," * (n - 1) + b"[]]}\n"
    problems, steps = _recover(tmp_path, [*lines[:2], costly, *lines[2:]])
    assert steps == 0 and "to parse" in problems[0], f"got {problems}, want the line refused for its parse cost"
