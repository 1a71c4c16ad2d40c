"""Importing without AutoGen, and what the receipt says about each agent."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import autogen
import pytest

from aer1.collectors import AER1AutoGenCollector, attach_legacy_hooks, observe_groupchat

from .support import CLIENT_NAME, make_client

NO_AUTOGEN = textwrap.dedent(
    """
    import sys
    sys.modules["autogen"] = None  # as if the classic API were not installed
    from aer1.collectors import AER1AutoGenCollector, attach_legacy_hooks, observe_groupchat
    collector = AER1AutoGenCollector(goal="no autogen")
    for call in (lambda: attach_legacy_hooks(object(), collector), lambda: observe_groupchat(object(), collector)):
        try:
            call()
        except ImportError as e:
            print(e)
        else:
            raise SystemExit("no ImportError")
    """
)


def test_import_needs_no_autogen_and_calls_name_the_extra() -> None:
    done = subprocess.run([sys.executable, "-c", NO_AUTOGEN], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2
    assert all("pip install 'aer1[legacy]'" in line for line in lines)


def _agent(api_key: str | None, collector: AER1AutoGenCollector) -> dict[str, Any]:
    entry = {"model": "gpt-test", "model_client_cls": CLIENT_NAME}
    if api_key is not None:
        entry["api_key"] = api_key
    agent = autogen.ConversableAgent(
        "writer",
        system_message="You write.",
        description="Writes the plan",
        llm_config={"config_list": [entry], "temperature": 0.2, "cache_seed": None},
        human_input_mode="NEVER",
        function_map={"lookup": lambda q: q},
    )
    agent.register_model_client(make_client(["x"]))
    attach_legacy_hooks(agent, collector)
    (identity,) = collector.finalize()["agents"]
    return dict(identity)


def test_config_digest_binds_config_but_never_the_api_key() -> None:
    with_key = _agent("sk-live-0123456789abcdef", AER1AutoGenCollector(goal="a"))
    other_key = _agent("sk-live-fedcba9876543210", AER1AutoGenCollector(goal="b"))
    without = _agent(None, AER1AutoGenCollector(goal="c"))
    assert with_key == other_key == without
    assert with_key["name"] == "writer"
    assert with_key["type"] == "autogen.ConversableAgent"
    assert with_key["description"] == "Writes the plan"
    assert len(with_key["config_digest"]) == 64


def _digest(entry_extra: dict[str, Any], top_extra: dict[str, Any], redact: Any = None) -> str:
    entry: dict[str, Any] = {"model": "gpt-test", "model_client_cls": CLIENT_NAME, **entry_extra}
    agent = autogen.ConversableAgent(
        "writer", llm_config={"config_list": [entry], "cache_seed": None, **top_extra}, human_input_mode="NEVER"
    )
    agent.register_model_client(make_client(["x"]))
    collector = AER1AutoGenCollector(goal="digest", redact=redact)
    attach_legacy_hooks(agent, collector)
    (identity,) = collector.finalize()["agents"]
    return str(identity["config_digest"])


@pytest.mark.parametrize("redact", [None, False], ids=["default_redaction", "redaction_off"])
def test_credentials_never_enter_the_config_digest(redact: Any) -> None:
    """Whatever the collector's redaction, secret-looking keys (the core's rule) and transport
    objects are left out, so the digest is the same with or without them."""
    bare = _digest({}, {}, redact)
    secrets = [
        ({"api_key": "sk-live-0123456789abcdef"}, {}),
        ({"azure_ad_token": "tok-1"}, {}),
        ({"default_headers": {"Authorization": "Bearer abc.def.ghi"}}, {}),
        ({"password": "hunter2", "client_secret": "s3"}, {}),
        ({"base_url": "https://user:pw@llm.example/v1"}, {}),
    ]
    with_url = _digest({"base_url": "https://llm.example/v1"}, {}, redact)
    for entry_extra, top_extra in secrets:
        want = with_url if "base_url" in entry_extra else bare
        assert _digest(entry_extra, top_extra, redact) == want, f"got a digest that depends on {entry_extra}"
    assert _digest({"temperature_hint": "low"}, {}, redact) != bare  # other settings are bound


def test_agents_sharing_a_name_get_distinct_receipt_names() -> None:
    """Two objects named alike are two actors: the second is listed as ``twin#2``."""
    collector = AER1AutoGenCollector(goal="names")
    first = autogen.ConversableAgent("twin", llm_config=False, system_message="one")
    other = autogen.ConversableAgent("twin", llm_config=False, system_message="one")
    attach_legacy_hooks(first, collector)
    attach_legacy_hooks(other, collector)
    attach_legacy_hooks(first, collector)  # again: the same object keeps its name
    agents = collector.finalize()["agents"]
    assert [a["name"] for a in agents] == ["twin", "twin#2"]
    assert agents[0]["config_digest"] == agents[1]["config_digest"]  # identical configs, still two agents


def test_wrong_objects_are_refused() -> None:
    collector = AER1AutoGenCollector(goal="types")
    for call in (attach_legacy_hooks, observe_groupchat):
        with pytest.raises(TypeError, match="got str"):
            call("not an agent", collector)
