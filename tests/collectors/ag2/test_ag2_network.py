"""Networks: a workflow channel on a real in-process ``ag2.network`` hub, observed with ``observe_hub``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from ag2 import Agent
from ag2.knowledge import MemoryKnowledgeStore
from ag2.network import Finish, Handoff, Hub, HubClient, LocalLink
from ag2.network.transitions import AgentTarget, FromSpeaker, TerminateTarget, Transition, TransitionGraph
from ag2.testing import TestConfig

from aer1.collectors.ag2 import AER1AG2Collector, channel_actor

from .conftest import Check
from .support import call, of_kind


def route(reason: str) -> Handoff:
    """Hand the case to billing."""
    return Handoff(target="billing", reason=reason)


def resolve(summary: str) -> Finish:
    """Close the case."""
    return Finish(summary=summary, reason="resolved")


@dataclass
class Run:
    hub: Any
    channel_id: str
    state: str
    close_reason: str
    ids: dict[str, str]


async def _workflow(collector: AER1AG2Collector | None, triage: TestConfig, billing: TestConfig,
                    graph: Callable[[dict[str, str]], TransitionGraph], *,
                    middleware: Mapping[str, Sequence[Any]] | None = None) -> Run:
    """desk opens a workflow channel with triage and billing and says the case; wait until it closes.

    ``middleware``: agent middleware by agent name (the user's own, beside the recorder)."""
    hub = await Hub.open(MemoryKnowledgeStore(), expectation_sweep_interval=0, ttl_sweep_interval=0)
    if collector is not None:
        assert collector.observe_hub(hub) is hub
    client = HubClient(LocalLink(hub), hub=hub)
    extra = middleware or {}
    agents = [Agent("desk", config=TestConfig("unused")),
              Agent("triage", config=triage, tools=[route], middleware=extra.get("triage", ())),
              Agent("billing", config=billing, tools=[resolve], middleware=extra.get("billing", ()))]
    clients = {}
    for agent in agents:
        if collector is not None:
            collector.observe(agent)
        clients[agent.name] = await client.register(agent)
    ids = {name: c.agent_id for name, c in clients.items()}
    channel = await clients["desk"].open(type="workflow", target=["triage", "billing"],
                                         knobs={"graph": graph(ids).to_dict()})
    await channel.send("I was charged twice")
    for _ in range(200):
        info = await channel.info()
        if info.is_terminal():
            break
        await asyncio.sleep(0.01)
    await client.close()
    return Run(hub, channel.channel_id, info.state.value, info.close_reason, ids)


def _desk_to_triage(ids: dict[str, str], **options: Any) -> TransitionGraph:
    return TransitionGraph(initial_speaker=ids["desk"],
                           transitions=[Transition(FromSpeaker(ids["desk"]), AgentTarget(ids["triage"]))],
                           default_target=TerminateTarget(), **options)


async def test_a_handoff_then_a_finish(collector: AER1AG2Collector, check: Check) -> None:
    triage = TestConfig(call("route", "r1", reason="a billing question"), "handing over")
    billing = TestConfig(call("resolve", "f1", summary="refunded the double charge"), "refunded")
    run = await _workflow(collector, triage, billing, _desk_to_triage)
    assert (run.state, run.close_reason) == ("closed", "resolved")
    receipt, contents = check(collector)
    actor = channel_actor(run.channel_id)
    [(handoff_step, handoff)] = of_kind(receipt, contents, "handoff")
    assert handoff_step["agent"] == "triage" and handoff_step["target"] == "billing" == handoff["target"]
    assert handoff_step["call_id"] == handoff["call_id"] == "r1"  # the tool call that returned the Handoff
    assert handoff["content"] == "a billing question" and handoff["ag2"]["tool"] == "route"
    assert handoff["ag2"]["kind"] == "handoff"
    [(end_step, closed)] = of_kind(receipt, contents, "termination")  # one run: the channel
    assert end_step["tool"] == "channel_closed" and end_step["agent"] == actor and end_step["status"] == "ok"
    assert (closed["outcome"], closed["reason"]) == ("finished", "resolved")
    assert closed["ag2"]["channel_id"] == run.channel_id
    [finish] = [c for s, c in of_kind(receipt, contents, "message") if s["tool"] == "finish"]
    assert finish["content"] == "refunded the double charge" and finish["ag2"]["reason"] == "resolved"
    picks = [(s.get("target"), c["selected"], c["mechanism"], c["ag2"]["after_turn"]) for s, c in
             of_kind(receipt, contents, "speaker_selection")]
    assert picks == [("triage", ["triage"], "graph", 1), ("billing", ["billing"], "handoff", 2), (None, [], "graph", 3)]
    assert all(s["agent"] == actor for s, _ in of_kind(receipt, contents, "speaker_selection"))
    tasks = {s["agent"]: c for s, c in of_kind(receipt, contents, "task") if s["agent"] in ("triage", "billing")}
    assert tasks["triage"]["ag2"]["run_id"] == tasks["billing"]["ag2"]["run_id"] == run.channel_id  # the channel
    assert tasks["triage"]["ag2"]["channel"] == {"channel_id": run.channel_id, "type": "workflow"}
    assert tasks["triage"]["team"] == {"name": "workflow", "id": run.channel_id, "type": "ag2.network.Channel"}
    [created] = [c for s, c in of_kind(receipt, contents, "task") if s["tool"] == "channel_created"]
    assert created["ag2"]["type"] == "workflow" and created["ag2"]["creator"] == "desk"
    assert created["ag2"]["participants"] == ["desk", "triage", "billing"]
    assert created["task"] == {"type": "workflow", "participants": ["desk", "triage", "billing"]}
    ends = [c["ag2"] for s, c in of_kind(receipt, contents, "message") if s["tool"] == "turn_end"]
    assert {e["run_id"] for e in ends} == {run.channel_id}  # agent turns in a channel end with their reply
    order = [s["tool"] for s in receipt["steps"]]
    assert order.index("handoff") < order.index("finish") < order.index("channel_closed")
    calls = {s["call_id"]: c for s, c in of_kind(receipt, contents, "tool_call")}
    assert calls["r1"]["result"]["type"] == "Handoff" and calls["f1"]["result"]["type"] == "Finish"
    assert receipt["status"] == "ok"


async def test_max_turns_closes_the_channel(collector: AER1AG2Collector, check: Check) -> None:
    triage = TestConfig("let me think")
    billing = TestConfig("unused")

    def graph(ids: dict[str, str]) -> TransitionGraph:
        return TransitionGraph(initial_speaker=ids["desk"],
                               transitions=[Transition(FromSpeaker(ids["desk"]), AgentTarget(ids["triage"])),
                                            Transition(FromSpeaker(ids["triage"]), AgentTarget(ids["billing"]))],
                               default_target=TerminateTarget(), max_turns=2)

    run = await _workflow(collector, triage, billing, graph)
    assert (run.state, run.close_reason) == ("closed", "max_turns")
    receipt, contents = check(collector)
    [closed] = [c for s, c in of_kind(receipt, contents, "termination") if s["tool"] == "channel_closed"]
    assert (closed["outcome"], closed["reason"]) == ("finished", "max_turns")
    assert [s for s, c in of_kind(receipt, contents, "task") if s["agent"] == "billing"] == []


async def test_a_terminate_target_closes_with_its_reason(collector: AER1AG2Collector, check: Check) -> None:
    def graph(ids: dict[str, str]) -> TransitionGraph:
        return TransitionGraph(initial_speaker=ids["desk"],
                               transitions=[Transition(FromSpeaker(ids["desk"]), AgentTarget(ids["triage"]))],
                               default_target=TerminateTarget(reason="triaged"))

    run = await _workflow(collector, TestConfig("noted"), TestConfig("unused"), graph)
    assert (run.state, run.close_reason) == ("closed", "triaged")
    receipt, contents = check(collector)
    picks = [c for _, c in of_kind(receipt, contents, "speaker_selection")]
    assert picks[-1]["selected"] == [] and picks[-1]["ag2"]["ends"] is True
    assert picks[-1]["ag2"]["close_reason"] == "triaged"
    [closed] = [c for s, c in of_kind(receipt, contents, "termination") if s["tool"] == "channel_closed"]
    assert closed["reason"] == "triaged"


async def test_a_turn_failing_inside_a_network(collector: AER1AG2Collector, check: Check) -> None:
    triage = TestConfig(call("route", "r1", reason="billing"), "handing over")
    billing = TestConfig(TimeoutError("provider timed out"))
    run = await _workflow(collector, triage, billing, _desk_to_triage)
    assert run.state == "active"  # AG2 keeps the channel alive after a failed turn
    receipt, contents = check(collector)
    failures = [(s, c) for s, c in of_kind(receipt, contents, "error") if s["tool"] == "turn_failed"]
    assert failures  # billing is handed each envelope addressed to it, and fails each time
    for failed_step, failed in failures:
        assert failed["ag2"]["agent"] == "billing" and failed["error"]["type"] == "TimeoutError"
        assert failed["phase"] == "reply"
        assert failed_step["agent"] == channel_actor(run.channel_id) and failed_step["status"] == "error"
    models = [c for s, c in of_kind(receipt, contents, "error") if s["tool"] == "model_call"]
    assert len(models) == len(failures) and models[0]["error"]["message"] == "provider timed out"
    # the channel was still open at finalize: its run is recorded unfinished, the receipt incomplete
    [(end_step, end)] = of_kind(receipt, contents, "termination")
    assert (end_step["tool"], end_step["status"], end["outcome"], end["observed"]) == (
        "channel_unfinished", "cancelled", "unfinished", False)
    assert end["error"]["type"] == "cancelled" and receipt["status"] == "incomplete"


async def test_the_same_network_unobserved_ends_the_same(collector: AER1AG2Collector, check: Check) -> None:
    def scripts() -> tuple[TestConfig, TestConfig]:
        return (TestConfig(call("route", "r1", reason="billing"), "handing over"),
                TestConfig(call("resolve", "f1", summary="done"), "done"))

    plain = await _workflow(None, *scripts(), _desk_to_triage)
    observed = await _workflow(collector, *scripts(), _desk_to_triage)
    assert (plain.state, plain.close_reason) == (observed.state, observed.close_reason) == ("closed", "resolved")
    assert [e.event_type for e in await plain.hub.read_wal(plain.channel_id)] == [
        e.event_type for e in await observed.hub.read_wal(observed.channel_id)]
    check(collector)


async def test_an_envelope_sent_out_of_turn_is_rejected(collector: AER1AG2Collector, check: Check) -> None:
    hub = collector.observe_hub(await Hub.open(MemoryKnowledgeStore(), expectation_sweep_interval=0,
                                               ttl_sweep_interval=0))
    client = HubClient(LocalLink(hub), hub=hub)
    members = {}
    for agent in (Agent("desk", config=TestConfig("unused")), Agent("triage", config=TestConfig("unused"))):
        members[agent.name] = await client.register(collector.observe(agent))
    graph = TransitionGraph(initial_speaker=members["desk"].agent_id, default_target=TerminateTarget())
    channel = await members["triage"].open(type="workflow", target=["desk"], knobs={"graph": graph.to_dict()})
    try:
        with pytest.raises(Exception, match="expects"):  # the graph wants desk first
            await channel.send("me first")
    finally:
        await client.close()
    receipt, contents = check(collector)
    [(step, rejected)] = of_kind(receipt, contents, "error")
    assert step["tool"] == "envelope_rejected" and step["agent"] == channel_actor(channel.channel_id)
    assert rejected["ag2"]["sender"] == "triage" and "expects" in str(rejected["ag2"]["reason"])
    assert rejected["phase"] == "validation" and rejected["error"]["type"] == "envelope_rejected"
