"""Code execution: the code_execution_config path and the CodeExecutor path."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import autogen
import pytest
from autogen.coding import LocalCommandLineCodeExecutor

from aer1.collectors import AER1AutoGenCollector, attach_legacy_hooks

from .support import CLOSE, Finish, ended, make_client, of_kind, rows, says_terminate, scripted_llm_config, two_agent

GOOD = "Here you go:\n```python\nprint(6 * 7)\n```"
BAD = "And this fails:\n```python\nimport sys\nsys.stderr.write('bad input')\nsys.exit(3)\n```"

EXPECTED = [
    *two_agent(
        "runner",
        "coder",
        ("message", "runner", "coder"),
        ("message", "coder", "runner"),
        ("code_execution", "runner", None),
        ("message", "runner", "coder"),
        ("message", "coder", "runner"),
        ("code_execution", "runner", None),
        ("message", "runner", "coder"),
        ("message", "coder", "runner"),
    ),
    CLOSE,
]


def _agents(code_config: dict[str, Any], collector: AER1AutoGenCollector) -> tuple[Any, Any]:
    coder = autogen.ConversableAgent("coder", llm_config=scripted_llm_config(), human_input_mode="NEVER")
    coder.register_model_client(make_client([GOOD, BAD, "TERMINATE"]))
    runner = autogen.ConversableAgent(
        "runner",
        llm_config=False,
        human_input_mode="NEVER",
        code_execution_config=code_config,
        is_termination_msg=says_terminate,
    )
    attach_legacy_hooks(coder, collector)
    attach_legacy_hooks(runner, collector)
    return runner, coder


def _run(chat: str, runner: Any, coder: Any) -> Any:
    if chat == "sync":
        return runner.initiate_chat(coder, message="Compute 6 * 7")
    return asyncio.run(runner.a_initiate_chat(coder, message="Compute 6 * 7"))


@pytest.mark.parametrize("chat", ["sync", "async"])
def test_legacy_code_execution_config(
    chat: str, tmp_path: Path, collector: AER1AutoGenCollector, finish: Finish
) -> None:
    runner, coder = _agents({"work_dir": str(tmp_path / "work"), "use_docker": False, "timeout": 60}, collector)
    _run(chat, runner, coder)
    receipt, contents = finish(collector)

    assert rows(receipt) == EXPECTED
    assert ended(receipt, contents) == ("ok", "finished", "is_termination_msg")
    good, bad = of_kind(receipt, contents, "code_execution")
    assert good["legacy"]["executor"] == "legacy"
    assert good["code_blocks"] == [{"language": "python", "code": "print(6 * 7)"}]
    assert good["exit_code"] == 0 and good["output"].strip() == "42"
    assert bad["exit_code"] == 3 and "bad input" in bad["output"]
    statuses = [s["status"] for s in receipt["steps"] if s["kind"] == "code_execution"]
    assert statuses == ["ok", "error"]


@pytest.mark.parametrize("chat", ["sync", "async"])
def test_executor_code_result(chat: str, tmp_path: Path, collector: AER1AutoGenCollector, finish: Finish) -> None:
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path / "work", timeout=60)
    runner, coder = _agents({"executor": executor}, collector)
    result = _run(chat, runner, coder)
    receipt, contents = finish(collector)

    assert rows(receipt) == EXPECTED
    good, bad = of_kind(receipt, contents, "code_execution")
    assert good["legacy"]["executor"] == "autogen.LocalCommandLineCodeExecutor"
    assert good["code_blocks"] == [{"language": "python", "code": "print(6 * 7)"}]
    assert good["exit_code"] == 0 and good["output"].strip() == "42"
    assert good["legacy"]["code_file"].endswith(".py")
    assert bad["exit_code"] == 3 and "bad input" in bad["output"]
    statuses = [s["status"] for s in receipt["steps"] if s["kind"] == "code_execution"]
    assert statuses == ["ok", "error"]
    # What the runner sent back is what the executor produced.
    assert "42" in result.chat_history[2]["content"]


def test_shared_executor_names_the_running_agent(
    tmp_path: Path, collector: AER1AutoGenCollector, finish: Finish
) -> None:
    """Two agents share one executor: each execution is attributed to the agent that ran it."""
    executor = LocalCommandLineCodeExecutor(work_dir=tmp_path / "work", timeout=60)
    first = autogen.ConversableAgent(
        "first",
        llm_config=False,
        human_input_mode="NEVER",
        code_execution_config={"executor": executor},
        max_consecutive_auto_reply=1,
    )
    second = autogen.ConversableAgent(
        "second",
        llm_config=False,
        human_input_mode="NEVER",
        code_execution_config={"executor": executor},
        max_consecutive_auto_reply=1,
    )
    attach_legacy_hooks(first, collector)
    attach_legacy_hooks(second, collector)
    first.initiate_chat(second, message="```python\nprint('from first')\n```", max_turns=1)
    receipt, contents = finish(collector)

    assert rows(receipt) == [
        *two_agent("first", "second", ("message", "first", "second"), ("code_execution", "second", None),
              ("message", "second", "first")),
        CLOSE,
    ]
    assert ended(receipt, contents) == ("ok", "finished", "max_turns")
    (run,) = of_kind(receipt, contents, "code_execution")
    assert run["output"].strip() == "from first"
