"""Fixtures for the compatibility tests: the peer's sdist, a real local TSA and its roots, a recorded run."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from autogen_agentchat.messages import ToolCallExecutionEvent, ToolCallRequestEvent
from autogen_core import FunctionCall
from autogen_core.models import FunctionExecutionResult

from aer1.collectors import AER1AutoGenCollector
from aer1.verifier import TsaTrust
from aer1.verifier._timestamp import load_tsa_trust

# The real local TSAs of the timestamp tests (trusted and rogue), shared, not rebuilt.
from ..timestamp.conftest import rogue_tsa, trusted_pki, tsa, tsa_roots, untrusted_pki  # noqa: F401
from .peer_suite import PEER_SDIST


@pytest.fixture(scope="session")
def peer_sdist() -> Path:
    """The pinned aer1-autogen 0.1.15 sdist (``make`` downloads it); skipped without it, failed under CI."""
    if PEER_SDIST.is_file():
        return PEER_SDIST
    problem = f"{PEER_SDIST.name} not downloaded (run make test-main)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"peer sdist unavailable under CI: {problem}")
    pytest.skip(problem)


@pytest.fixture(scope="session")
def trust(request: pytest.FixtureRequest) -> TsaTrust:
    """The auditor's trust: the trusted TSA's root and intermediate (the ``tsa_roots`` folder)."""
    return load_tsa_trust(str(request.getfixturevalue("tsa_roots")))


def ns(**members: Any) -> SimpleNamespace:
    """A duck-typed message, as the peer's tests build them."""
    return SimpleNamespace(**members)


def recorded_run(**options: Any) -> AER1AutoGenCollector:
    """A collector with two turns and a tool call recorded through the peer's methods (not finalized)."""
    c = AER1AutoGenCollector(goal="compat run", **options)
    c.record_agentchat_turn("alice", [ns(source="user", content="go")],
                            ns(chat_message=ns(source="alice", content="draft"), inner_messages=[]), 1000.0, 1001.0)
    request = ToolCallRequestEvent(source="bob", content=[FunctionCall(id="call_1", name="add",
                                                                       arguments='{"a": 2, "b": 3}')])
    execution = ToolCallExecutionEvent(source="bob", content=[
        FunctionExecutionResult(call_id="call_1", name="add", content="5", is_error=False)])
    c.record_agentchat_turn("bob", [ns(source="alice", content="draft")],
                            ns(chat_message=ns(source="bob", content="sum is 5"), inner_messages=[request, execution]),
                            1002.0, 1003.0)  # fmt: skip
    return c
