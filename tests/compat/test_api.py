"""Every public name of aer1-autogen 0.1.15 is in aer1.collectors, with the same call shape."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

import aer1.collectors as ours
from aer1.errors import UsageError

from .conftest import ns, recorded_run


def _keyword_only(func: Any) -> set[str]:
    return {p.name for p in inspect.signature(func).parameters.values() if p.kind == inspect.Parameter.KEYWORD_ONLY}


def _same_shape(theirs: Any, mine: Any) -> str | None:
    """Why a call valid on ``theirs`` may not be on ``mine`` (None: none can fail).

    Each of their positional parameters is ours at the same place, under its name or
    under ours with theirs accepted as a keyword alias.
    """
    t, m = _positional(theirs), _positional(mine)
    if len(m) < len(t):
        return f"got {len(m)} positional parameters {m}, want at least {len(t)} {t}"
    for i, name in enumerate(t):
        if m[i] != name and name not in _keyword_only(mine):
            return f"parameter {i}: got {m[i]!r}, want {name!r} (or {name!r} as a keyword)"
    return None


def _positional(func: Any) -> list[str]:
    """Names a caller may pass positionally or by keyword (``self`` left out)."""
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in inspect.signature(func).parameters.values() if p.kind in kinds and p.name != "self"]


def test_every_peer_name_is_exported(peer_module: Any) -> None:
    """The peer's ``__all__`` is a subset of ours, and each name resolves."""
    missing = sorted(set(peer_module.__all__) - set(ours.__all__))
    assert not missing, f"got no {missing} in aer1.collectors.__all__, want every name of the peer's"
    for name in peer_module.__all__:
        assert getattr(ours, name) is not None


def test_constants_match(peer_module: Any) -> None:
    """Receipt type and version are the peer's; the verdict values and construction keys too."""
    for name in ("WORKFLOW_TYPE", "WORKFLOW_VERSION", "VERDICT_PASS", "VERDICT_FAIL", "VERDICT_NOT_CHECKED",
                 "VERDICT_UNAVAILABLE"):  # fmt: skip
        assert getattr(ours, name) == getattr(peer_module, name), f"{name}: got {getattr(ours, name)!r}"
    assert set(ours.CONSTRUCTION_VERSIONS) == set(peer_module.CONSTRUCTION_VERSIONS)
    assert ours.DEFAULT_VERIFY_URL.startswith("https://")


FUNCTIONS = ("merkle_root", "verify_workflow_receipt", "verify_receipt_verdicts", "verdicts_summary",
             "all_verdicts_pass", "anchor_chain_head", "verify_anchor", "proof_to_json", "proof_from_json",
             "bip340_verify", "attach_legacy_hooks")  # fmt: skip
METHODS = ("record_agentchat_turn", "record_legacy_message", "record_legacy_tool", "to_json", "reset", "finalize",
           "verify", "save")  # fmt: skip


@pytest.mark.parametrize("name", FUNCTIONS)
def test_function_call_shapes(peer_module: Any, name: str) -> None:
    """Our parameters start with the peer's, in its order (extras only after, or keyword-only)."""
    problem = _same_shape(getattr(peer_module, name), getattr(ours, name))
    assert problem is None, f"{name}: {problem}"


@pytest.mark.parametrize("name", METHODS)
def test_collector_method_shapes(peer_module: Any, name: str) -> None:
    """The collector methods take the peer's arguments in the peer's order."""
    problem = _same_shape(getattr(peer_module.AER1AutoGenCollector, name), getattr(ours.AER1AutoGenCollector, name))
    assert problem is None, f"{name}: {problem}"


def test_properties_and_goal_default() -> None:
    """step_count and session_id read as on the peer; the goal may be left out, as there."""
    c = ours.AER1AutoGenCollector(session_id="s-1")
    assert (c.goal, c.session_id, c.step_count) == ("autogen run", "s-1", 0)


def test_a_positional_verify_url_is_refused_naming_the_keyword() -> None:
    """The peer took verify_url third; ours takes signing_key there: a clear error, not a key file read."""
    with pytest.raises(UsageError, match=r"pass verify_url=\.\.\. by keyword"):
        ours.AER1AutoGenCollector("g", "s", "https://example.com/verify")
    c = ours.AER1AutoGenCollector("g", "s", verify_url="https://example.com/verify")
    assert c.verify_url == "https://example.com/verify"


def test_merkle_root_matches_the_peer(peer_module: Any) -> None:
    ids = [f"id-{i}" for i in range(7)]
    for n in range(len(ids) + 1):
        assert ours.merkle_root(ids[:n]) == peer_module.merkle_root(ids[:n]), f"got a different root for {n} ids"


def test_peer_recording_methods_give_our_receipt(peer_module: Any) -> None:
    """The peer's recording calls give our chained receipt, valid for both verifiers."""
    c = recorded_run()
    c.record_legacy_message("carol", "dave", {"content": "hi"})
    c.record_legacy_tool("dave", None, {"name": None, "arguments": "{}"}, False, "boom", 1004.0, 1005.0)
    receipt = c.finalize(final_answer="done")
    got = [(s["tool"], s["kind"], s["agent"], s["status"], s.get("reply_to"), s.get("recipient"))
           for s in receipt["steps"]]
    assert got == [
        ("message", "message", "alice", "ok", "user", None),
        ("add", "tool_call", "bob", "ok", None, None),
        ("message", "message", "bob", "ok", "alice", None),
        ("message", "message", "carol", "ok", None, "dave"),
        ("tool", "tool_call", "dave", "error", None, None),
        ("close", "close", "aer1", "ok", None, None),
    ], got
    assert receipt["status"] == "ok"  # a failed tool is its step's error, not the run's (spec/steps.md)
    assert ours.verify_workflow_receipt(receipt) == []
    assert c.verify(workflow=receipt) == c.verify(receipt) == []
    assert peer_module.verify_workflow_receipt(json.loads(json.dumps(receipt))) == []


def test_a_handoff_turn_records_its_target() -> None:
    from autogen_agentchat.messages import HandoffMessage

    c = ours.AER1AutoGenCollector(goal="handoff")
    c.record_agentchat_turn("coord", [], ns(chat_message=HandoffMessage(source="coord", target="researcher",
                                                                          content="over to you"), inner_messages=[]),
                            1.0, 2.0)  # fmt: skip
    step = c.finalize()["steps"][0]
    assert (step["tool"], step["kind"], step["target"]) == ("handoff", "handoff", "researcher")


def test_to_json_and_reset(tmp_path: Path) -> None:
    """to_json gives the finalized receipt; reset starts a new run with the same session_id."""
    c = recorded_run()
    receipt = c.finalize(final_answer="one")
    assert json.loads(c.to_json()) == receipt
    assert json.loads(c.to_json(receipt, indent=None)) == receipt
    first = (c.workflow_id, c.receipt_id, c.session_id)
    c.reset()
    assert (c.step_count, c.closed, c.session_id) == (0, False, first[2])
    assert c.workflow_id != first[0] and c.receipt_id != first[1]
    c.record_legacy_message("a", "b", "again")
    second = c.finalize(final_answer="two")
    assert [s["tool"] for s in second["steps"]] == ["message", "close"]
    assert ours.verify_workflow_receipt(second) == []
    assert ours.verify_workflow_receipt(receipt) == []  # the first run's receipt is untouched


def test_reset_is_refused_with_a_journal(tmp_path: Path) -> None:
    c = ours.AER1AutoGenCollector(goal="journaled", journal=tmp_path / "run.journal")
    with pytest.raises(UsageError, match="refused for a collector with a journal"):
        c.reset()
    c.finalize()


@pytest.mark.parametrize("bad", [None, "receipt.json", 42, [1, 2], b"{}"])
def test_verify_workflow_receipt_never_raises_on_non_objects(bad: Any) -> None:
    """A non-object (a string is not read as a path) gives one reason, never a traceback."""
    assert ours.verify_workflow_receipt(bad) == ["workflow is not a JSON object"]
