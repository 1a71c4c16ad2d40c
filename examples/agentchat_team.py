"""A real AutoGen team, recorded: a tool call, a handoff and a code execution in one receipt.

    python examples/agentchat_team.py [OUT_DIR] [--live]

A ``Swarm`` of two agents runs offline on scripted models (``ReplayChatCompletionClient``):
the planner looks launch dates up with a tool and hands off to the analyst, a
``CodeExecutorAgent`` that writes Python, has it approved, runs it on this machine and
reports. Each agent is wrapped in one line; ``collector.run(team, task=...)`` adds the
task, the speaker selections and the stop reason. The script writes OUT_DIR/receipt.json
and OUT_DIR/receipt.evidence.jsonl (default OUT_DIR: out/agentchat), signed with a fresh
key whose public half is OUT_DIR/signing.pub, verifies them and prints a timeline.

With ``--live`` and ``OPENAI_API_KEY`` set, both agents use ``gpt-4o-mini`` instead: the
steps then depend on what the model decides.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from _outdir import missing_extra

try:
    from autogen_agentchat.agents import ApprovalRequest, ApprovalResponse, AssistantAgent, CodeExecutorAgent
    from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
    from autogen_agentchat.teams import Swarm
    from autogen_core import FunctionCall
    from autogen_core.models import ChatCompletionClient, CreateResult, ModelFamily, ModelInfo, RequestUsage
    from autogen_ext.code_executors.local import LocalCommandLineCodeExecutor
    from autogen_ext.models.replay import ReplayChatCompletionClient
except ModuleNotFoundError as e:
    missing_extra(e, "agentchat")

from aer1 import format_timeline, generate_key_pair, key_id, load_public_key, verify_receipt
from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector, observe_tools

TASK = "Pick the launch date in May with the most free days after it, and say how many."
LIVE_MODEL = "gpt-4o-mini"
#: Ends the run if a live model never says TERMINATE.
MAX_MESSAGES = 12
#: Code the approval policy refuses to run.
FORBIDDEN = ("import os", "import subprocess", "shutil", "open(")

SCRIPTED = ModelInfo(
    vision=False, function_calling=True, json_output=False, family=ModelFamily.UNKNOWN, structured_output=False
)
ANALYSIS = "```python\nfree = {'May 4': 27, 'May 18': 13}\nbest = max(free, key=free.get)\nprint(best, free[best])\n```"


def lookup_dates(month: str) -> list[str]:
    """The launch dates still free in a month."""
    return [f"{month} 4", f"{month} 18"]


def approve(request: ApprovalRequest) -> ApprovalResponse:
    """Approve code that neither touches files nor starts processes."""
    bad = [word for word in FORBIDDEN if word in request.code]
    if bad:
        return ApprovalResponse(approved=False, reason=f"refused: uses {', '.join(bad)}")
    return ApprovalResponse(approved=True, reason="pure computation")


def scripted_models() -> tuple[ChatCompletionClient, ChatCompletionClient]:
    usage = RequestUsage(prompt_tokens=0, completion_tokens=0)
    planner = ReplayChatCompletionClient(
        [
            CreateResult(
                finish_reason="function_calls",
                content=[
                    FunctionCall(id="call_dates", name="lookup_dates", arguments='{"month": "May"}'),
                    FunctionCall(id="call_handoff", name="transfer_to_analyst", arguments="{}"),
                ],
                usage=usage,
                cached=False,
            )
        ],
        model_info=SCRIPTED,
    )
    analyst = ReplayChatCompletionClient(
        [ANALYSIS, "May 4 leaves 27 free days after it: launch on May 4. TERMINATE"], model_info=SCRIPTED
    )
    return planner, analyst


def live_models() -> tuple[ChatCompletionClient, ChatCompletionClient]:
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    return OpenAIChatCompletionClient(model=LIVE_MODEL), OpenAIChatCompletionClient(model=LIVE_MODEL)


async def run_team(collector: AER1AutoGenCollector, work_dir: Path, live: bool) -> Any:
    planner_model, analyst_model = live_models() if live else scripted_models()
    planner = AER1AgentWrapper(
        AssistantAgent(
            "planner",
            model_client=planner_model,
            # observe_tools gives each tool call its own timing (optional).
            tools=observe_tools([lookup_dates], collector, agent="planner"),
            handoffs=["analyst"],
            system_message="Look the free launch dates up, then hand off to the analyst.",
        ),
        collector,
    )
    analyst = AER1AgentWrapper(
        CodeExecutorAgent(
            "analyst",
            code_executor=LocalCommandLineCodeExecutor(work_dir=work_dir),
            model_client=analyst_model,
            approval_func=approve,
        ),
        collector,
    )
    stop = TextMentionTermination("TERMINATE") | MaxMessageTermination(MAX_MESSAGES)
    team = Swarm([planner, analyst], termination_condition=stop)
    return await collector.run(team, task=TASK)


def main(out_dir: Path, live: bool = False) -> int:
    if live and not os.environ.get("OPENAI_API_KEY"):
        print("--live needs OPENAI_API_KEY in the environment", file=sys.stderr)
        return 2
    out_dir.mkdir(parents=True, exist_ok=True)
    private_pem, public_pem = generate_key_pair()
    (out_dir / "signing.pub").write_bytes(public_pem)
    collector = AER1AutoGenCollector(goal="Plan the product launch", signing_key=private_pem.decode())

    if not live:  # the scripted client warns that it counts tokens on text only
        logging.getLogger("autogen_core.events").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the local executor's "not sandboxed" notice
        result = asyncio.run(run_team(collector, out_dir / "work", live))

    receipt = collector.finalize(result)
    path = collector.save(out_dir / "receipt.json", workflow=receipt)
    report = verify_receipt(path, trusted_key_ids=[key_id(load_public_key(public_pem))])

    print(format_timeline(receipt))
    print(f"stop reason: {result.stop_reason}")
    print(f"receipt:  {path}")
    print(f"evidence: {out_dir / 'receipt.evidence.jsonl'}")
    print(report.to_text())
    return int(report.exit_code)


def parse_out_dir(argv: list[str] | None = None) -> tuple[Path, bool]:
    """OUT_DIR (created) and --live from the command line; a bad command line exits with code 2."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("out_dir", nargs="?", type=Path, default=Path("out/agentchat"), metavar="OUT_DIR")
    parser.add_argument("--live", action="store_true", help="use gpt-4o-mini (needs OPENAI_API_KEY)")
    args = parser.parse_args(argv)
    try:
        args.out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        parser.error(f"cannot use {args.out_dir} as the output directory: {e.strerror or e}")
    out_dir: Path = args.out_dir
    return out_dir, bool(args.live)


if __name__ == "__main__":
    out_dir, live = parse_out_dir()
    sys.exit(main(out_dir, live=live))
