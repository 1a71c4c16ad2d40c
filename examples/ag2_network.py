"""AG2 1.x network, offline: a workflow channel where triage hands off to billing, whose refund is gated.

    python examples/ag2_network.py [OUT_DIR]

Needs ``pip install "aer1[ag2]"`` (AG2 1.x, ``from ag2 import Agent``). The agents answer
from AG2's own scripted model (``ag2.testing.TestConfig``) on an in-process hub, so no
model or key is needed. The desk opens a workflow channel; triage's tool returns a
``Handoff`` to billing; billing's refund tool runs only after the approval gate's
reviewer approves it, then its tool returns ``Finish``. Writes OUT_DIR/receipt.json and its
evidence (default OUT_DIR: out/ag2_network), signed with a fresh key whose public half is
OUT_DIR/signing.pub, verifies them and prints the verdict.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from _outdir import missing_extra, parse_out_dir

try:
    from ag2 import Agent, tool
    from ag2.events import ToolCallEvent
    from ag2.knowledge import MemoryKnowledgeStore
    from ag2.network import Finish, Handoff, Hub, HubClient, LocalLink
    from ag2.network.transitions import AgentTarget, FromSpeaker, TerminateTarget, Transition, TransitionGraph
    from ag2.testing import TestConfig
except ModuleNotFoundError as e:
    missing_extra(e, "ag2")

from aer1 import format_timeline, generate_key_pair, key_id, load_public_key, verify_receipt
from aer1.collectors import AER1AG2Collector
from aer1.groupchat import CallbackApproval, ToolApprovalRequest

#: How long the example waits for the channel to close before it gives up.
CHANNEL_TIMEOUT_S = 10.0


def call(name: str, call_id: str, **arguments: object) -> ToolCallEvent:
    """One scripted tool call of the model."""
    return ToolCallEvent(name=name, arguments=json.dumps(arguments), id=call_id)


def route(reason: str) -> Handoff:
    """Hand the case to billing."""
    return Handoff(target="billing", reason=reason)


def refund(order: str, amount: int) -> str:
    """Refund an order (the approval gate asks a reviewer first)."""
    return f"refunded {amount} EUR on order {order}"


def close_case(summary: str) -> Finish:
    """Close the case."""
    return Finish(summary=summary, reason="resolved")


def reviewer(request: ToolApprovalRequest) -> bool:
    """The ops lead's rule: refunds up to 50 EUR are fine."""
    return request.tool == "refund" and int(request.arguments.get("amount", 0)) <= 50


async def run(collector: AER1AG2Collector) -> str:
    hub = collector.observe_hub(await Hub.open(MemoryKnowledgeStore(), expectation_sweep_interval=0,
                                               ttl_sweep_interval=0))
    gate = collector.approval_gate(CallbackApproval(reviewer))
    desk = collector.observe(Agent("desk", config=TestConfig("unused")))
    triage = collector.observe(Agent("triage", "Route each case.", tools=[route], config=TestConfig(
        call("route", "t1", reason="a refund for a broken order"), "Billing will take it.")))
    billing = collector.observe(Agent("billing", "Refund broken orders.",
                                      tools=[tool(refund, middleware=[gate]), close_case], config=TestConfig(
        call("refund", "b1", order="A-17", amount=40),
        call("close_case", "b2", summary="refunded 40 EUR on order A-17"), "Done.")))
    client = HubClient(LocalLink(hub), hub=hub)
    members = {agent.name: await client.register(agent) for agent in (desk, triage, billing)}
    ids = {name: member.agent_id for name, member in members.items()}
    graph = TransitionGraph(initial_speaker=ids["desk"],
                            transitions=[Transition(FromSpeaker(ids["desk"]), AgentTarget(ids["triage"]))],
                            default_target=TerminateTarget(), max_turns=8)
    channel = await members["desk"].open(type="workflow", target=["triage", "billing"],
                                         knobs={"graph": graph.to_dict()})
    await channel.send("Order A-17 arrived broken; I want my 40 EUR back.")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + CHANNEL_TIMEOUT_S
    info = await channel.info()
    while not info.is_terminal() and loop.time() < deadline:
        await asyncio.sleep(0.01)
        info = await channel.info()
    await client.close()
    return f"channel {info.state.value}: {info.close_reason}"


def main(out_dir: Path) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    private_pem, public_pem = generate_key_pair()
    (out_dir / "signing.pub").write_bytes(public_pem)
    collector = AER1AG2Collector(goal="Refund a broken order", signing_key=private_pem)
    answer = asyncio.run(run(collector))
    receipt = collector.finalize(final_answer=answer)
    path = collector.save(out_dir / "receipt.json", workflow=receipt)
    report = verify_receipt(path, trusted_key_ids=[key_id(load_public_key(public_pem))])
    print(format_timeline(receipt))
    print(f"{answer}")
    print(f"receipt:  {path}")
    print(f"evidence: {out_dir / 'receipt.evidence.jsonl'}")
    print(report.to_text())
    return int(report.exit_code)


if __name__ == "__main__":
    sys.exit(main(parse_out_dir((__doc__ or "").splitlines()[0], Path("out/ag2_network"))))
