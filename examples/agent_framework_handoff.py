"""Microsoft Agent Framework handoff, offline: triage hands off to billing, whose refund needs approval.

    python examples/agent_framework_handoff.py [OUT_DIR]

Needs ``pip install "aer1[agent-framework]"``. The agents answer from a script (a chat
client built on the framework's base client, with its function-invocation and middleware
layers), so no model or key is needed. Writes OUT_DIR/receipt.json and its evidence
(default OUT_DIR: out/agent_framework_handoff), signed with a fresh key whose public half
is OUT_DIR/signing.pub, verifies them and prints the verdict.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from pathlib import Path
from typing import Any

from _outdir import missing_extra, parse_out_dir

try:
    from agent_framework import (
        Agent,
        BaseChatClient,
        ChatMiddlewareLayer,
        ChatResponse,
        ChatResponseUpdate,
        Content,
        FunctionInvocationLayer,
        Message,
        ResponseStream,
        tool,
    )
    from agent_framework.orchestrations import HandoffBuilder
except ModuleNotFoundError as e:
    missing_extra(e, "agent-framework")

from aer1 import format_timeline, generate_key_pair, key_id, load_public_key, verify_receipt
from aer1.collectors import AER1AgentFrameworkCollector


class ScriptClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """Plays a fixed script: each model call returns the next text, or a tool call (name, arguments, id)."""

    def __init__(self, script: Sequence[str | tuple[str, dict[str, Any], str]]) -> None:
        super().__init__()
        self.script = list(script)

    def _reply(self) -> Message:
        turn = self.script.pop(0)
        if isinstance(turn, str):
            return Message(role="assistant", contents=[Content.from_text(turn)])
        name, arguments, call_id = turn
        return Message(role="assistant",
                       contents=[Content.from_function_call(call_id=call_id, name=name, arguments=arguments)])

    async def _respond(self) -> ChatResponse[Any]:
        return ChatResponse(messages=[self._reply()])

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> Awaitable[ChatResponse[Any]] | ResponseStream[ChatResponseUpdate, ChatResponse[Any]]:
        if not stream:
            return self._respond()

        async def updates() -> AsyncIterator[ChatResponseUpdate]:
            yield ChatResponseUpdate(role="assistant", contents=self._reply().contents)

        return self._build_response_stream(updates())


@tool(approval_mode="always_require")
def refund(order: str, amount: int) -> str:
    """Refund an order (a person must approve it first)."""
    return f"refunded {amount} EUR on order {order}"


def billing_answered(conversation: list[Message]) -> bool:
    """The run ends once billing has replied with text after the refund."""
    return any(m.author_name == "billing" and "refunded" in m.text for m in conversation)


async def run(collector: AER1AgentFrameworkCollector) -> str:
    history = {"require_per_service_call_history_persistence": True}
    triage = Agent(client=ScriptClient([("handoff_to_billing", {}, "h1")]), name="triage", **history)
    billing = Agent(client=ScriptClient([("refund", {"order": "A-17", "amount": 40}, "r1"),
                                         "Done: refunded 40 EUR on order A-17."]),
                    name="billing", tools=[refund], **history)
    workflow = (HandoffBuilder(participants=[triage, billing], termination_condition=billing_answered)
                .with_start_agent(triage).build())
    first = await collector.run(workflow, "Order A-17 arrived broken; I want my 40 EUR back.")
    approvals = {e.request_id: e.data.to_function_approval_response(True) for e in first.get_request_info_events()}
    final = await collector.run(workflow, responses=approvals, responder="ops-lead")
    return " ".join(str(getattr(o, "text", o)) for o in final.get_outputs())


def main(out_dir: Path) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    private_pem, public_pem = generate_key_pair()
    (out_dir / "signing.pub").write_bytes(public_pem)
    collector = AER1AgentFrameworkCollector(goal="Refund a broken order", signing_key=private_pem)
    answer = asyncio.run(run(collector))
    receipt = collector.finalize(final_answer=answer)
    path = collector.save(out_dir / "receipt.json", workflow=receipt)
    report = verify_receipt(path, trusted_key_ids=[key_id(load_public_key(public_pem))])
    print(format_timeline(receipt))
    print(f"receipt:  {path}")
    print(f"evidence: {out_dir / 'receipt.evidence.jsonl'}")
    print(report.to_text())
    return int(report.exit_code)


if __name__ == "__main__":
    sys.exit(main(parse_out_dir((__doc__ or "").splitlines()[0], Path("out/agent_framework_handoff"))))
