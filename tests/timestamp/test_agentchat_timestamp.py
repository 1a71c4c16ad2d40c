"""A real AgentChat team on a scripted model, timestamped at finalize by the real local TSA."""

from __future__ import annotations

from pathlib import Path

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat

from aer1._imprint import TIMESTAMPS_MEMBER
from aer1.collectors import AER1AgentWrapper, AER1AutoGenCollector

from ..scripted_models import scripted_client
from .conftest import Cli, checks_of
from .tsa import LocalTSA

KEYS = Path(__file__).resolve().parents[1] / "fixtures" / "keys"


async def test_team_receipt_carries_a_verified_token(tmp_path: Path, tsa: LocalTSA, tsa_roots: Path,
                                                     verify: Cli) -> None:
    collector = AER1AutoGenCollector(goal="Plan the product launch", signing_key=KEYS / "trusted.key",
                                     timestamp=tsa.url)
    planner = AER1AgentWrapper(AssistantAgent("planner", model_client=scripted_client(["draft plan"])), collector)
    critic = AER1AgentWrapper(AssistantAgent("critic", model_client=scripted_client(["looks good"])), collector)
    team = RoundRobinGroupChat([planner, critic], termination_condition=MaxMessageTermination(3))
    result = await collector.run(team, task="Plan the product launch")
    receipt = collector.finalize(result)
    (entry,) = receipt[TIMESTAMPS_MEMBER]
    assert "token" in entry, entry
    path = Path(collector.save(str(tmp_path / "team.json"), workflow=receipt))
    code, out, _ = verify(path, "--tsa-roots", tsa_roots, "--key", KEYS / "trusted.pub", "--json")
    checks = checks_of(out)
    assert code == 0 and checks["timestamp"]["status"] == "PASS" and checks["evidence"]["status"] == "PASS", out
