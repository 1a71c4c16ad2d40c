"""A three-agent group chat on the built-in manager, recorded into a signed receipt, offline.

    python examples/builtin_groupchat.py [OUT_DIR]

The analyst (a model client replaying scripted completions, so no network or key is
needed) looks up sales through a tool, has the runner compute the growth in the sandbox,
then sends a report through a tool that needs approval. The speaker is chosen by an
auto selector. Writes OUT_DIR/receipt.json, OUT_DIR/receipt.evidence.jsonl and
OUT_DIR/signing.pub (default OUT_DIR: out/builtin_groupchat), verifies the receipt and
prints the verdict and a timeline.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from _outdir import missing_extra, parse_out_dir

try:
    from autogen_core import FunctionCall
    from autogen_core.models import CreateResult, RequestUsage
    from autogen_ext.models.replay import ReplayChatCompletionClient
except ModuleNotFoundError as e:
    missing_extra(e, "agentchat")

from aer1 import format_timeline, generate_key_pair, key_id, load_public_key, verify_receipt
from aer1.groupchat import (
    AutoSelector,
    CallbackApproval,
    CodeRunnerAgent,
    GroupChat,
    ModelAgent,
    SelectionContext,
    ToolApprovalRequest,
    ToolExecutor,
)

FENCE = "`" * 3
SALES = {"north": [120, 135, 150], "south": [90, 88, 95]}
GROWTH_CODE = f"""Let me compute the growth in the sandbox.
{FENCE}python
sales = [120, 135, 150]
growth = (sales[-1] - sales[0]) / sales[0] * 100
print(f"growth: {{growth:.1f}}%")
{FENCE}
"""


def get_sales(region: str) -> list[int]:
    """Monthly sales for a region.

    Args:
        region: The sales region, "north" or "south".
    """
    return SALES[region]


def send_report(to: str, summary: str) -> str:
    """Send a report by e-mail (a stand-in: nothing leaves this process).

    Args:
        to: The recipient's address.
        summary: One line to send.
    """
    return f"report sent to {to}"


def calls(*items: tuple[str, str, str]) -> CreateResult:
    """A scripted completion that asks for tool calls."""
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=i, name=n, arguments=a) for i, n, a in items],
        usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
    )


def reviewer(request: ToolApprovalRequest) -> bool:
    """The human in the loop, scripted: approve reports to the team address only."""
    approved = request.tool == "send_report" and request.arguments.get("to") == "team@example.com"
    print(f"approval asked: {request.tool}({dict(request.arguments)}) -> {'yes' if approved else 'no'}")
    return approved


def next_speaker(context: SelectionContext) -> str | None:
    """Tool calls go to the tools agent, code to the runner; anything else to the analyst."""
    last: Any = context.history.last()
    if last is None:
        return None
    if last.get("tool_calls"):
        return "tools"
    if f"{FENCE}python" in (last.get("content") or ""):
        return "runner"
    return "analyst"


def main(out_dir: Path) -> int:
    logging.getLogger("autogen_core.events").setLevel(logging.ERROR)  # the replay client's token-count notes
    out_dir.mkdir(parents=True, exist_ok=True)
    private_pem, public_pem = generate_key_pair()
    (out_dir / "signing.pub").write_bytes(public_pem)

    model = ReplayChatCompletionClient(
        [
            calls(("call_sales", "get_sales", '{"region": "north"}')),
            GROWTH_CODE,
            calls(("call_report", "send_report", '{"to": "team@example.com", "summary": "North grew 25%."}')),
            "The report is sent: north sales grew 25.0% over the quarter. TERMINATE",
        ]
    )
    tools = ToolExecutor(
        "tools",
        {"get_sales": get_sales, "send_report": send_report},
        requires_confirmation=["send_report"],
        approval=CallbackApproval(reviewer),
    )
    analyst = ModelAgent("analyst", model, tools=tools, description="Analyses sales and reports.")
    runner = CodeRunnerAgent("runner", work_dir=out_dir / "work")
    chat = GroupChat(
        [analyst, tools, runner],
        speaker_selection=AutoSelector(next_speaker),
        max_round=12,
        is_termination_msg=lambda m: "TERMINATE" in (m["content"] or ""),
        initiator="user",
        collector_options={"signing_key": private_pem.decode()},
    )
    result = chat.run("Report the north region's sales growth to the team.")

    path = result.save(str(out_dir / "receipt.json"))
    report = verify_receipt(path, trusted_key_ids=[key_id(load_public_key(public_pem))])
    print(format_timeline(result.receipt))
    print(f"stop reason: {result.stop_reason}; sandbox: {runner.sandbox.name}")
    print(f"final answer: {result.final_answer}")
    print(f"receipt:  {path}")
    print(f"evidence: {out_dir / 'receipt.evidence.jsonl'}")
    print(report.to_text())
    return int(report.exit_code)



if __name__ == "__main__":
    sys.exit(main(parse_out_dir((__doc__ or "").splitlines()[0], Path("out/builtin_groupchat"))))
