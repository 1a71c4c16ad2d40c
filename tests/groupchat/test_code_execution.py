"""Code execution through the manager with the real sandbox; the refusal and the opt-out."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aer1.groupchat import ChatResult, CodeRunnerAgent, GroupChat, ScriptedAgent
from aer1.groupchat._sandbox import SandboxUnavailableError, UnsandboxedExecutor

from .helpers import step_contents, step_pairs

M = "manager"
FENCE = "`" * 3
PROGRAM = f"""Here is the plan.
{FENCE}sh
echo "from sh" > note.txt
pwd
{FENCE}
{FENCE}javascript
console.log("never runs")
{FENCE}
{FENCE}
echo "untagged: never runs"
{FENCE}
{FENCE}python
import os
print(open("note.txt").read().strip(), "| seen by python")
print("HOST_SECRET" in os.environ)
{FENCE}
"""


def ends(message: dict[str, Any]) -> bool:
    return "TERMINATE" in (message["content"] or "")


def run_code(runner: CodeRunnerAgent, *programs: str) -> ChatResult:
    coder = ScriptedAgent("coder", [*programs, "done TERMINATE"])
    return GroupChat([coder, runner], is_termination_msg=ends, initiator="user").run("Run some code.")


def executions(result: ChatResult, folder: Path) -> list[dict[str, Any]]:
    contents = step_contents(result, folder)
    return [contents[s["seq"] - 1] for s in result.receipt["steps"] if s["kind"] == "code_execution"]


def expected_pairs(executions: int) -> list[tuple[str, str]]:
    return [
        ("task", "user"),
        ("speaker_selection", M),
        ("message", "coder"),
        ("speaker_selection", M),
        *[("code_execution", "runner")] * executions,
        ("message", "runner"),
        ("speaker_selection", M),
        ("message", "coder"),
        ("termination", M),
        ("close", "aer1"),
    ]


def test_blocks_run_in_the_sandbox_and_each_is_recorded(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOST_SECRET", "s3cr3t")
    runner = CodeRunnerAgent("runner", work_dir=tmp_path / "work")
    assert runner.sandbox.name == "bubblewrap"
    result = run_code(runner, PROGRAM)
    assert step_pairs(result) == expected_pairs(2)
    assert (tmp_path / "work" / "note.txt").read_text() == "from sh\n"
    first, second = executions(result, tmp_path)
    assert first == {
        "vocabulary": "aer1-steps/1",
        "language": "sh",
        "code_blocks": [{"language": "sh", "code": 'echo "from sh" > note.txt\npwd'}],
        "exit_code": 0,
        "output": first["output"],
        "groupchat": {"index": 0, "sandbox": "bubblewrap", "unsandboxed_opt_in": False, "timed_out": False,
                      "output_truncated": False, "limits_hit": []},
    }
    assert str(tmp_path) not in first["output"]  # the sandbox shows its own path for work_dir
    assert (second["language"], second["exit_code"], second["output"]) == (
        "python",
        0,
        "from sh | seen by python\nFalse\n",
    )
    reply = result.messages[2]
    assert reply["name"] == "runner" and reply["role"] == "user"
    assert reply["content"] == "exitcode: 0 (execution succeeded)\nCode output:\n" + first["output"] + second["output"]
    check_receipt(result)


def test_execution_stops_at_the_first_failing_block(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    program = f"{FENCE}python\nimport sys\nprint('about to fail')\nsys.exit(3)\n{FENCE}\n{FENCE}sh\necho later\n{FENCE}"
    result = run_code(CodeRunnerAgent("runner", work_dir=tmp_path / "work"), program)
    assert step_pairs(result) == expected_pairs(1)
    [only] = executions(result, tmp_path)
    assert (only["exit_code"], only["output"]) == (3, "about to fail\n")
    assert result.messages[2]["content"] == "exitcode: 3 (execution failed)\nCode output:\nabout to fail\n"
    [header] = [s for s in result.receipt["steps"] if s["kind"] == "code_execution"]
    assert header["status"] == "error"
    assert result.receipt["status"] == "ok"
    check_receipt(result)


def test_a_message_without_supported_blocks_runs_nothing(tmp_path: Path) -> None:
    program = f"Only prose, and\n{FENCE}ruby\nputs 1\n{FENCE}"
    result = run_code(CodeRunnerAgent("runner", work_dir=tmp_path / "work"), program)
    assert step_pairs(result) == expected_pairs(0)
    assert result.messages[2]["content"] == "No code blocks to execute."


def test_without_a_sandbox_the_executor_refuses(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-bwrap")  # a machine without bubblewrap: the real probe fails
    with pytest.raises(SandboxUnavailableError, match="no working sandbox for code execution") as info:
        CodeRunnerAgent("runner", work_dir=tmp_path / "work", bwrap=missing)
    assert "allow_unsandboxed=True" in str(info.value) and missing in str(info.value)
    assert not (tmp_path / "work").exists()


def test_an_unsandboxed_executor_needs_the_explicit_opt_out(tmp_path: Path) -> None:
    with pytest.raises(SandboxUnavailableError, match="pass allow_unsandboxed=True"):
        CodeRunnerAgent("runner", work_dir=tmp_path / "work", sandbox=UnsandboxedExecutor())


def test_the_opt_out_runs_unsandboxed_and_says_so_in_the_receipt(
    tmp_path: Path, check_receipt: Callable[[ChatResult], Path]
) -> None:
    missing = str(tmp_path / "no-such-bwrap")
    runner = CodeRunnerAgent("runner", work_dir=tmp_path / "work", allow_unsandboxed=True, bwrap=missing)
    assert runner.sandbox.name == "none"
    result = run_code(runner, f"{FENCE}python\nprint(6 * 7)\n{FENCE}")
    assert step_pairs(result) == expected_pairs(1)
    [only] = executions(result, tmp_path)
    assert (only["groupchat"]["sandbox"], only["groupchat"]["unsandboxed_opt_in"], only["output"]) == (
        "none",
        True,
        "42\n",
    )
    [listed] = [a for a in result.receipt["agents"] if a["name"] == "runner"]
    assert listed["type"] == "CodeRunnerAgent"
    check_receipt(result)
