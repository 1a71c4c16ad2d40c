"""CodeExecutorAgent with a real LocalCommandLineCodeExecutor: executions and approvals recorded."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat.agents import ApprovalRequest, ApprovalResponse, CodeExecutorAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import TextMessage
from autogen_core import CancellationToken
from autogen_core.code_executor import CodeBlock, CodeExecutor
from autogen_core.models import CreateResult
from autogen_ext.code_executors.local import LocalCommandLineCodeExecutor
from autogen_ext.models.replay import ReplayChatCompletionClient

from aer1 import Collector
from aer1.collectors.autogen_core import observe_approval, observe_code_executor

pytestmark = pytest.mark.filterwarnings(
    "ignore:Using LocalCommandLineCodeExecutor:UserWarning",
    "ignore:No approval function set:UserWarning",
)

Scripted = Callable[[Sequence[str | CreateResult]], ReplayChatCompletionClient]
CLOSE = ("close", "aer1")
AGENT = "executor"
HELLO = "```python\nprint('hello')\n```"
#: What the agent asks to approve: each block re-fenced (the block's code keeps its newline).
HELLO_FOR_APPROVAL = "```python\nprint('hello')\n\n```"


def kinds(receipt: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["kind"], s["agent"]) for s in receipt["steps"]]


def approve(request: ApprovalRequest) -> ApprovalResponse:
    return ApprovalResponse(approved=True, reason="prints only")


async def deny(request: ApprovalRequest) -> ApprovalResponse:
    return ApprovalResponse(approved=False, reason="no code today")


def make_agent(
    collector: Collector,
    tmp_path: Path,
    approval: Callable[[ApprovalRequest], Any] | None,
    model_client: ReplayChatCompletionClient | None = None,
) -> CodeExecutorAgent:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path / "work")
    return CodeExecutorAgent(
        AGENT,
        code_executor=observe_code_executor(executor, collector, agent=AGENT),
        model_client=model_client,
        approval_func=observe_approval(approval, collector, agent=AGENT) if approval else None,
    )


def last_text(result: TaskResult) -> str:
    message = result.messages[-1]
    assert isinstance(message, TextMessage)
    return message.content


async def test_approved_execution_without_model_client(collector: Collector, finish: Any, tmp_path: Path) -> None:
    result = await make_agent(collector, tmp_path, approve).run(task=HELLO)
    assert last_text(result) == "hello\n"

    receipt, evidence = finish(collector)
    assert kinds(receipt) == [("approval", AGENT), ("code_execution", AGENT), CLOSE]
    assert [s["tool"] for s in receipt["steps"][:2]] == ["approval", "code_execution"]
    assert evidence[1] == {
        "vocabulary": "aer1-steps/1",
        "decision": "approved",
        "approved": True,
        "name": "code_execution",
        "call_id": None,
        "arguments": None,
        "responder": None,
        "autogen_core": {"reason": "prints only", "code": HELLO_FOR_APPROVAL, "context_messages": 0},
    }
    execution = evidence[2]
    assert execution["language"] == "python"
    assert execution["code_blocks"] == [{"language": "python", "code": "print('hello')\n"}]
    assert (execution["exit_code"], execution["output"]) == (0, "hello\n")
    assert execution["autogen_core"]["code_file"].endswith(".py")
    assert execution["autogen_core"]["result_type"] == "autogen_ext.code_executors._common.CommandLineCodeResult"


@pytest.mark.parametrize(
    ("code", "exit_code", "raw_output", "agent_says"),
    [
        (
            "import sys\nprint('bad input')\nsys.exit(3)",
            3,
            "bad input\n",
            "The script ran, then exited with an error",
        ),
        ("x = 1", 0, "", "The script ran but produced no output to console."),
    ],
)
async def test_raw_result_is_recorded_before_the_agent_rewrites_it(
    collector: Collector,
    finish: Any,
    tmp_path: Path,
    code: str,
    exit_code: int,
    raw_output: str,
    agent_says: str,
) -> None:
    result = await make_agent(collector, tmp_path, None).run(task=f"```python\n{code}\n```")
    assert last_text(result).startswith(agent_says)

    receipt, evidence = finish(collector)
    assert kinds(receipt) == [("code_execution", AGENT), CLOSE]
    # one status rule (spec/steps.md): a code block that exits non-zero is an error step
    assert receipt["steps"][0]["status"] == ("ok" if exit_code == 0 else "error")
    assert (evidence[1]["exit_code"], evidence[1]["output"]) == (exit_code, raw_output)
    if exit_code != 0:
        assert evidence[1]["error"] == {"type": "exit_code", "module": None, "message": f"exit code {exit_code}"}
        assert receipt["status"] == "ok"  # the run itself ended normally


async def test_denied_execution_records_the_decision_only(collector: Collector, finish: Any, tmp_path: Path) -> None:
    result = await make_agent(collector, tmp_path, deny).run(task=HELLO)
    assert last_text(result) == "Code execution was not approved. Reason: no code today"

    receipt, evidence = finish(collector)
    assert kinds(receipt) == [("approval", AGENT), CLOSE]
    assert evidence[1] == {
        "vocabulary": "aer1-steps/1",
        "decision": "denied",
        "approved": False,
        "name": "code_execution",
        "call_id": None,
        "arguments": None,
        "responder": None,
        "autogen_core": {"reason": "no code today", "code": HELLO_FOR_APPROVAL, "context_messages": 0},
    }


@pytest.mark.parametrize("approval", [approve, deny])
async def test_with_model_client(
    collector: Collector,
    finish: Any,
    tmp_path: Path,
    scripted: Scripted,
    approval: Callable[[ApprovalRequest], Any],
) -> None:
    client = scripted(["Let me compute it.\n```python\nprint(6 * 7)\n```", "The answer is 42."])
    result = await make_agent(collector, tmp_path, approval, model_client=client).run(task="What is 6 * 7?")
    assert last_text(result) == "The answer is 42."

    receipt, evidence = finish(collector)
    if approval is approve:
        assert kinds(receipt) == [("approval", AGENT), ("code_execution", AGENT), CLOSE]
        assert (evidence[2]["exit_code"], evidence[2]["output"]) == (0, "42\n")
    else:
        assert kinds(receipt) == [("approval", AGENT), CLOSE]
    # The approver saw the model context: the task and the model's reply.
    assert evidence[1]["autogen_core"]["context_messages"] == 2
    assert evidence[1]["autogen_core"]["code"] == "```python\nprint(6 * 7)\n\n```"


async def test_observed_executor_is_a_delegating_code_executor(collector: Collector, tmp_path: Path) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path / "work", timeout=7)
    observed = observe_code_executor(executor, collector, agent=AGENT)
    assert isinstance(observed, CodeExecutor)
    assert observe_code_executor(observed, collector, agent=AGENT) is observed
    delegated: Any = observed  # attributes beyond CodeExecutor come from the wrapped executor
    assert delegated.work_dir == executor.work_dir and delegated.timeout == 7
    assert observed.dump_component() == executor.dump_component()
    plain_agent = CodeExecutorAgent(AGENT, code_executor=executor)
    observed_agent = CodeExecutorAgent(AGENT, code_executor=observed)
    assert observed_agent.dump_component() == plain_agent.dump_component()

    async with observed as entered:
        assert entered is observed
        assert executor._started
        shell = await observed.execute_code_blocks([CodeBlock(code="echo shell", language="sh")], CancellationToken())
    assert not executor._started
    assert (shell.exit_code, shell.output) == (0, "shell\n")
    with pytest.warns(UserWarning, match="not supported"):
        await observed.restart()
    assert collector.step_count == 1


class ApprovalServiceDown(RuntimeError):
    """The approval service could not be reached."""


async def test_approval_that_raises_is_recorded_and_reraised(collector: Collector, finish: Any) -> None:
    failure = ApprovalServiceDown("approver unreachable")

    async def unreachable(request: ApprovalRequest) -> ApprovalResponse:
        raise failure

    observed = observe_approval(unreachable, collector, agent=AGENT)
    with pytest.raises(ApprovalServiceDown) as info:
        await observed(ApprovalRequest(code=HELLO, context=[]))
    assert info.value is failure

    receipt, evidence = finish(collector)
    assert kinds(receipt) == [("approval", AGENT), CLOSE]
    assert receipt["steps"][0]["status"] == "error"
    assert evidence[1] == {
        "vocabulary": "aer1-steps/1",
        "decision": "pending",
        "approved": None,
        "name": "code_execution",
        "call_id": None,
        "arguments": None,
        "responder": None,
        "error": {"type": "ApprovalServiceDown", "module": __name__, "message": "approver unreachable"},
        "autogen_core": {"reason": None, "code": HELLO, "context_messages": 0},
    }


def test_approval_keeps_sync_or_async_shape(collector: Collector) -> None:
    assert not inspect.iscoroutinefunction(observe_approval(approve, collector, agent=AGENT))
    assert inspect.iscoroutinefunction(observe_approval(deny, collector, agent=AGENT))
    assert observe_approval(approve, collector, agent=AGENT).__name__ == "approve"
