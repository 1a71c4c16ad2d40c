"""One scenario suite: the same run shapes on every collector, read in one vocabulary (spec/steps.md).

Each collector runs each shape for real (AgentChat on a replay client, the autogen-core
hooks, legacy pyautogen / AG2 classic on a scripted model client, Agent Framework on a
scripted chat client, the built-in manager):

- ``tools``: a tool call that succeeds, one whose tool raises, one with malformed arguments;
- ``code``: a code block that exits 3;
- ``cancel``: a cancellation while a tool runs, the receipt finalized at once;
- ``timeout``: a time limit (``asyncio.timeout``) expiring while a tool runs, finalized after.

Every receipt is saved with its evidence and verified by ours and by both peer verifiers
(``tests/.peers``); the suite asserts the same content members and statuses whichever
collector recorded, and one policy file gives the same answer over the ``tools`` receipts.
A shape a framework cannot run is skipped with the reason.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("autogen_agentchat")

from autogen_agentchat.agents import AssistantAgent, CodeExecutorAgent
from autogen_core import CancellationToken, FunctionCall
from autogen_core.code_executor import CodeBlock
from autogen_core.tools import FunctionTool
from autogen_ext.code_executors.local import LocalCommandLineCodeExecutor

from aer1 import Collector
from aer1 import _steps_vocab as vocab
from aer1._vocabulary import VOCABULARY, status_counts
from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector
from aer1.collectors.autogen_core import observe_code_executor, observe_tools
from aer1.groupchat import GroupChat, ScriptedAgent, ToolExecutor
from aer1.verifier._cli import main as verify_main

from ..receipts import Peers, evidence_contents, verify_everywhere
from ..scripted_models import function_calls, scripted_client

pytestmark = pytest.mark.filterwarnings("ignore:Using LocalCommandLineCodeExecutor:UserWarning")

#: (call id, tool, arguments text) of the three calls of the ``tools`` shape.
SHAPE = [("c1", "add", '{"a": 2, "b": 3}'), ("c2", "explode", '{"reason": "boom"}'), ("c3", "add", '{"a": 1, ')]
#: What every collector records of them: (status, arguments, malformed, has a result, has an error).
WANT = [
    ("ok", {"a": 2, "b": 3}, False, True, False),
    ("error", {"reason": "boom"}, False, False, True),
    ("error", '{"a": 1, ', True, False, True),
]
#: The code block of the ``code`` shape and its exit code.
FAILING_CODE = "import sys\nprint('bad input', file=sys.stderr)\nsys.exit(3)"
EXIT = 3
#: Every collector of the suite.
COLLECTORS = ["agentchat", "autogen_core", "legacy", "agent_framework", "groupchat", "ag2"]
SHAPES = ["tools", "code", "cancel", "timeout"]
#: Shapes a framework has no way to run, and why (skipped, never passed).
CANNOT = {
    ("agent_framework", "code"): "Agent Framework runs no code locally (its code interpreter is a hosted tool)",
    ("ag2", "code"): "an AG2 1.x Agent runs no code blocks itself (code runs as one of its tools)",
}

Done = tuple[dict[str, Any], dict[int, Any]]


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def explode(reason: str) -> str:
    """Always raises."""
    raise ValueError(reason)


class Waiter:
    """A tool that never returns; ``started`` is set once it runs."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def wait_forever(self, seconds: int) -> str:
        """Never returns."""
        self.started.set()
        await asyncio.Event().wait()
        return "unreachable"


class Ctx:
    """What a runner gets: a folder for its receipt and the peers (None outside CI without ``make``)."""

    def __init__(self, folder: Path, peers: Peers | None) -> None:
        self.folder, self.peers = folder, peers

    def done(self, collector: Collector, receipt: dict[str, Any]) -> Done:
        """Save with evidence, verify with ours and both peers; (receipt, contents by seq)."""
        path = collector.save(self.folder / "receipt.json", workflow=receipt)
        verify_everywhere(path, receipt, self.peers)
        return receipt, evidence_contents(path)


async def cut(run: Awaitable[Any], started: asyncio.Event, collector: Collector, *, at_once: bool) -> dict[str, Any]:
    """Run ``run`` until its tool starts; then cancel it (finalized first when ``at_once``) or let a limit expire."""
    if at_once:
        task = asyncio.ensure_future(run)
        await started.wait()
        receipt = collector.finalize()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return receipt

    async def limited() -> None:
        async with asyncio.timeout(None) as limit:
            watcher = asyncio.ensure_future(started.wait())
            job = asyncio.ensure_future(run)
            await asyncio.wait([watcher, job], return_when=asyncio.FIRST_COMPLETED)
            limit.reschedule(asyncio.get_running_loop().time())  # the time limit expires now, mid-tool
            await job

    with pytest.raises(TimeoutError):
        await limited()
    return collector.receipt()  # the receipt, finalized now or by the run itself as it unwound


# ------------------------------------------------------------------ AgentChat


async def agentchat(shape: str, ctx: Ctx) -> Done:
    collector = AER1AutoGenCollector(goal=shape)
    if shape == "tools":
        client = scripted_client([function_calls(*(FunctionCall(id=i, name=n, arguments=a) for i, n, a in SHAPE)),
                                  "done"])
        agent = AER1AgentWrapper(AssistantAgent("alice", model_client=client, tools=[add, explode]), collector)
        return ctx.done(collector, collector.finalize(await agent.run(task="use the tools")))
    if shape == "code":
        executor = LocalCommandLineCodeExecutor(work_dir=ctx.folder / "work", timeout=60)
        runner = AER1AgentWrapper(CodeExecutorAgent("alice", code_executor=executor), collector)
        result = await runner.run(task=f"```python\n{FAILING_CODE}\n```")
        return ctx.done(collector, collector.finalize(result))
    waiter = Waiter()
    client = scripted_client([function_calls(FunctionCall(id="w1", name="wait_forever", arguments='{"seconds": 5}'))])
    tool = FunctionTool(waiter.wait_forever, name="wait_forever", description="Never returns.")
    agent = AER1AgentWrapper(AssistantAgent("alice", model_client=client, tools=[tool]), collector)
    receipt = await cut(agent.run(task="wait"), waiter.started, collector, at_once=shape == "cancel")
    return ctx.done(collector, receipt)


# ------------------------------------------------------------------ autogen-core


async def autogen_core(shape: str, ctx: Ctx) -> Done:
    collector = Collector(goal=shape)
    if shape == "tools":
        tools = {t.name: t for t in observe_tools([FunctionTool(add, description="Add."),
                                                   FunctionTool(explode, description="Raise.")],
                                                  collector, agent="alice")}
        for call_id, name, text in SHAPE:
            try:
                await tools[name].run_json(json.loads(text), CancellationToken(), call_id=call_id)
            except json.JSONDecodeError:  # never reaches the tool: the caller records the refusal
                refused = vocab.tool_call("autogen_core", name=name, call_id=call_id, arguments=text, result=None,
                                          error=vocab.error_code("arguments_invalid", "not JSON"))
                collector.record(name, refused, agent="alice", kind="tool_call", status="error", call_id=call_id)
            except ValueError:  # the tool raised: recorded by the hook
                pass
        return ctx.done(collector, collector.finalize("done"))
    if shape == "code":
        executor = observe_code_executor(LocalCommandLineCodeExecutor(work_dir=ctx.folder / "work", timeout=60),
                                         collector, agent="alice")
        await executor.execute_code_blocks([CodeBlock(code=FAILING_CODE, language="python")], CancellationToken())
        return ctx.done(collector, collector.finalize("done"))
    waiter = Waiter()
    (tool,) = observe_tools([FunctionTool(waiter.wait_forever, name="wait_forever", description="Never returns.")],
                            collector, agent="alice")
    run = tool.run_json({"seconds": 5}, CancellationToken(), call_id="w1")
    return ctx.done(collector, await cut(run, waiter.started, collector, at_once=shape == "cancel"))


# ------------------------------------------------------------------ legacy pyautogen / AG2 classic


async def legacy(shape: str, ctx: Ctx) -> Done:
    pytest.importorskip("autogen")
    import autogen

    from aer1.collectors import attach_legacy_hooks

    from .legacy.support import make_client, quiet, scripted_llm_config, tool_call, tool_calls_reply

    collector = AER1AutoGenCollector(goal=shape)
    assistant = autogen.ConversableAgent("alice", llm_config=scripted_llm_config(), human_input_mode="NEVER")
    executor = autogen.ConversableAgent("executor", llm_config=False, human_input_mode="NEVER",
                                        is_termination_msg=lambda m: "TERMINATE" in (m.get("content") or ""),
                                        code_execution_config={"work_dir": str(ctx.folder / "work"),
                                                               "use_docker": False, "timeout": 60})
    waiter = Waiter()

    async def wait_forever(seconds: int) -> str:
        """Never returns."""
        return await waiter.wait_forever(seconds)

    if shape == "tools":
        functions: dict[str, Any] = {"add": add, "explode": explode}
        script: list[Any] = [tool_calls_reply(*(tool_call(i, n, a) for i, n, a in SHAPE)), "TERMINATE"]
    elif shape == "code":
        functions, script = {}, [f"```python\n{FAILING_CODE}\n```", "TERMINATE"]
    else:
        functions = {"wait_forever": wait_forever}
        script = [tool_calls_reply(tool_call("w1", "wait_forever", {"seconds": 5}))]
    for name, function in functions.items():
        autogen.register_function(function, caller=assistant, executor=executor, name=name,
                                  description=function.__doc__ or name)
    assistant.register_model_client(make_client(script))  # after register_function, which rebuilds the client
    for agent in (assistant, executor):
        attach_legacy_hooks(agent, collector)
    with quiet():
        run = executor.a_initiate_chat(assistant, message=f"run the {shape} shape")
        if shape in ("tools", "code"):
            result = await run
            return ctx.done(collector, collector.finalize(final_answer=result.summary))
        return ctx.done(collector, await cut(run, waiter.started, collector, at_once=shape == "cancel"))


# ------------------------------------------------------------------ Agent Framework


async def agent_framework(shape: str, ctx: Ctx) -> Done:
    pytest.importorskip("agent_framework_orchestrations")
    from agent_framework import Agent, tool

    from aer1.collectors.agent_framework import AER1AgentFrameworkCollector

    from .agent_framework.scripted import Call, ScriptedChatClient

    collector = AER1AgentFrameworkCollector(goal=shape)
    if shape == "tools":
        calls = []
        for call_id, name, text in SHAPE:
            call = Call(name, {}, call_id)
            call.arguments = text  # type: ignore[assignment]  # the model's text, as sent (malformed too)
            calls.append(call)
        client = ScriptedChatClient([calls, "done"])
        agent = collector.observe(Agent(client=client, name="alice", tools=[tool(add), tool(explode)]))
        await agent.run("use the tools")
        return ctx.done(collector, collector.finalize("done"))
    waiter = Waiter()

    async def wait_forever(seconds: int) -> str:
        """Never returns."""
        return await waiter.wait_forever(seconds)

    client = ScriptedChatClient([Call("wait_forever", {"seconds": 5}, "w1"), "done"])
    agent = collector.observe(Agent(client=client, name="alice", tools=[tool(wait_forever)]))
    return ctx.done(collector, await cut(agent.run("wait"), waiter.started, collector, at_once=shape == "cancel"))


# ------------------------------------------------------------------ the built-in manager


async def groupchat(shape: str, ctx: Ctx) -> Done:
    from aer1.groupchat import CodeRunnerAgent

    def stop(message: Any) -> bool:
        return "TERMINATE" in (message.get("content") or "")

    collector = Collector(goal=shape)
    if shape == "code":
        runner = CodeRunnerAgent("runner", work_dir=ctx.folder / "work", allow_unsandboxed=True)
        planner = ScriptedAgent("alice", [f"```python\n{FAILING_CODE}\n```", "TERMINATE"])
        chat = GroupChat([planner, runner], is_termination_msg=stop, initiator="user")
        result = await chat.arun("run the code", collector=collector)
        return ctx.done(collector, result.receipt)
    waiter = Waiter()
    if shape == "tools":
        calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in SHAPE]
        functions: dict[str, Any] = {"add": add, "explode": explode}
    else:
        calls = [{"id": "w1", "type": "function", "function": {"name": "wait_forever", "arguments": '{"seconds": 5}'}}]
        functions = {"wait_forever": waiter.wait_forever}
    planner = ScriptedAgent("alice", [{"role": "assistant", "content": None, "tool_calls": calls}, "TERMINATE"])
    chat = GroupChat([planner, ToolExecutor("tools", functions)], is_termination_msg=stop, initiator="user")
    if shape == "tools":
        result = await chat.arun("use the tools", collector=collector)
        return ctx.done(collector, result.receipt)
    run = chat.arun("wait", collector=collector)
    return ctx.done(collector, await cut(run, waiter.started, collector, at_once=shape == "cancel"))


# ------------------------------------------------------------------ AG2 1.x


async def ag2(shape: str, ctx: Ctx) -> Done:
    from .ag2.scenarios import cancelled_mid_tool_run, timeout_run, tool_calls_run

    if shape == "tools":
        receipt, contents = await tool_calls_run(ctx.folder)
    else:
        _, receipt, contents = await (cancelled_mid_tool_run if shape == "cancel" else timeout_run)(ctx.folder)
    verify_everywhere(ctx.folder / "receipt.json", receipt, ctx.peers)
    return receipt, contents


Runner = Callable[[str, Ctx], Awaitable[Done]]
RUNNERS: dict[str, Runner] = {
    "agentchat": agentchat,
    "autogen_core": autogen_core,
    "legacy": legacy,
    "agent_framework": agent_framework,
    "groupchat": groupchat,
    "ag2": ag2,
}


# ------------------------------------------------------------------ what every collector records


def of_kind(done: Done, kind: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    receipt, contents = done
    return [(s, contents[s["seq"]]) for s in receipt["steps"] if s["kind"] == kind]


def tool_shape(done: Done) -> list[tuple[Any, ...]]:
    out = []
    for step, c in sorted(of_kind(done, "tool_call"), key=lambda sc: sc[0].get("call_id", "")):
        assert c["vocabulary"] == VOCABULARY and c["name"] == step["tool"]
        assert c["call_id"] == step["call_id"]
        assert (c["result"] is None) is (step["status"] != "ok")  # never a result for a call that did not return
        out.append((step["status"], c["arguments"], c.get("arguments_malformed", False), c["result"] is not None,
                    "error" in c))
    return out


async def run_shape(collector: str, shape: str, tmp_path: Path, peers: Peers | None) -> Done:
    if (collector, shape) in CANNOT:
        pytest.skip(CANNOT[collector, shape])
    return await RUNNERS[collector](shape, Ctx(tmp_path, peers))


@pytest.mark.parametrize("collector", COLLECTORS)
async def test_tool_calls_read_the_same(collector: str, tmp_path: Path, peers: Peers | None) -> None:
    done = await run_shape(collector, "tools", tmp_path, peers)
    receipt, _ = done
    assert tool_shape(done) == WANT
    by_id = {s["call_id"]: c for s, c in of_kind(done, "tool_call")}
    assert str(by_id["c1"]["result"]) == "5"
    assert by_id["c3"]["error"]["type"] == vocab.ARGUMENTS_INVALID  # refused before the tool ran
    # handled tool errors are their steps' errors; the run ended by itself: ok
    assert receipt["status"] == "ok"
    assert status_counts(receipt)["error"] >= 2


@pytest.mark.parametrize("collector", COLLECTORS)
async def test_a_failing_code_block_reads_the_same(collector: str, tmp_path: Path, peers: Peers | None) -> None:
    done = await run_shape(collector, "code", tmp_path, peers)
    receipt, _ = done
    ((step, c),) = of_kind(done, "code_execution")
    assert c["vocabulary"] == VOCABULARY
    assert (step["status"], c["exit_code"], c["error"]["type"]) == ("error", EXIT, vocab.EXIT_CODE)
    # the code as the framework extracted it (AgentChat keeps the fence's last newline)
    assert [(b["language"], b["code"].strip()) for b in c["code_blocks"]] == [("python", FAILING_CODE)]
    assert c["language"] == "python"
    assert "bad input" in c["output"]
    assert receipt["status"] == "ok"  # the run went on and ended by itself


@pytest.mark.parametrize("shape", ["cancel", "timeout"])
@pytest.mark.parametrize("collector", COLLECTORS)
async def test_a_run_cut_mid_tool_reads_the_same(collector: str, shape: str, tmp_path: Path,
                                                 peers: Peers | None) -> None:
    done = await run_shape(collector, shape, tmp_path, peers)
    receipt, _ = done
    ((step, c),) = of_kind(done, "tool_call")
    assert (step["status"], step["call_id"], c["call_id"], c["result"]) == ("cancelled", "w1", "w1", None)
    assert c["arguments"] == {"seconds": 5} and c["error"]["type"] in ("cancelled", "CancelledError")
    assert receipt["status"] == "incomplete"  # never ok for a run cut short
    assert "recording_failures" not in receipt


POLICY = """
format = "aer1-policy-v1"
name = "the same answer for every framework"
[require]
evidence = true
[allow]
tools = ["add", "explode"]
[[rule]]
name = "small sums"
form = "argument"
tool = "add"
argument = "a"
max = 10
"""


async def test_one_policy_gives_the_same_answer_for_every_collector(tmp_path: Path, peers: Peers | None,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    answers = {}
    for collector in COLLECTORS:
        folder = tmp_path / collector
        folder.mkdir()
        await run_shape(collector, "tools", folder, peers)
        code = verify_main([str(folder / "receipt.json"), "--policy", str(policy), "--json"])
        verdict = json.loads(capsys.readouterr().out)
        answers[collector] = (code, verdict["valid"], sorted(f["message"] for f in verdict["failures"]))
    want = (1, False, ["rule small sums: tool 'add': its arguments are malformed text (arguments_malformed), "
                       "not a JSON object"])
    assert answers == dict.fromkeys(COLLECTORS, want)
