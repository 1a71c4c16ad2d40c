"""Canary: every AG2 name the collector reads exists, and every behaviour it relies on still holds.

Each behaviour test names the collector code that depends on it; a release that changes
one fails here, not as a receipt that silently says less.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any, ClassVar

import pytest
from ag2 import Agent, MemoryStream, tool
from ag2.middleware import BaseMiddleware
from ag2.middleware.builtin.tools.approval import BYPASS_KEY, approval_required
from ag2.network import Hub, policies
from ag2.testing import TestConfig

from aer1.collectors import _ag2_internals as internals

from .support import call


def test_the_installed_ag2_is_the_pinned_version() -> None:
    assert internals.installed() == internals.PINNED, f"got ag2 {internals.installed()}, want {internals.PINNED}"


def test_every_name_the_collector_uses_exists() -> None:
    assert internals.missing() == [], f"got these names missing from ag2 {internals.installed()}, want none"


def test_a_missing_name_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The canary itself can fail: a renamed attribute or class is listed."""
    names = (*internals.TABLE.entries, internals.Name("ag2:Agent", "_renamed_upstream", "canary check"),
             internals.Name("ag2:NoSuchClass", "ask", "canary check"))
    monkeypatch.setattr(internals.TABLE, "entries", names)
    assert internals.missing() == ["ag2:Agent._renamed_upstream", "ag2:NoSuchClass.ask"]


def test_the_keys_match_ag2s_own_constants() -> None:
    assert internals.ALWAYS_GRANTS_KEY == BYPASS_KEY
    assert internals.CHANNEL_DEPENDENCY == policies.CHANNEL_DEP and internals.HUB_DEPENDENCY == policies.HUB_DEP


def test_hub_adapter_state_is_read_at_once() -> None:
    """collectors/ag2.py reads the next speaker inside the listener without awaiting it."""
    assert not inspect.iscoroutinefunction(Hub.adapter_state)


class _Hooks(BaseMiddleware):
    log: ClassVar[list[tuple[Any, ...]]] = []

    async def on_turn(self, call_next: Any, event: Any, context: Any) -> Any:
        self.log.append(("turn", type(event).__name__))
        return await call_next(event, context)

    async def on_llm_call(self, call_next: Any, events: Any, context: Any) -> Any:
        self.log.append(("llm",))
        return await call_next(events, context)

    async def on_tool_execution(self, call_next: Any, event: Any, context: Any) -> Any:
        self.log.append(("tool", event.id, context.tool_call_id, event.source is not None))
        return await call_next(event, context)


def add(a: int, b: int) -> int:
    """Add."""
    return a + b


async def test_hooks_run_in_causal_order_and_the_call_id_is_the_events() -> None:
    """The recorder's on_turn / on_llm_call / on_tool_execution see a turn in order; inside middleware
    ``context.tool_call_id`` is None and the call id is ``event.id``; the call carries its source."""
    _Hooks.log = []
    agent = Agent("a", config=TestConfig(call("add", "c1", a=1, b=2), "3"), tools=[add], middleware=[_Hooks])
    await agent.ask("go")
    assert _Hooks.log == [("turn", "ModelRequest"), ("llm",), ("tool", "c1", None, True), ("llm",)]


async def test_a_late_subscriber_sees_the_reply_before_the_request() -> None:
    """Why the collector records from middleware, not from stream subscriptions made inside a turn."""
    seen: list[str] = []

    class Late(BaseMiddleware):
        async def on_turn(self, call_next: Any, event: Any, context: Any) -> Any:
            context.stream.subscribe(lambda e: seen.append(type(e).__name__))
            return await call_next(event, context)

    await Agent("a", config=TestConfig("hi"), middleware=[Late]).ask("go")
    assert seen.index("ModelResponse") < seen.index("ModelRequest")


async def test_a_raising_subscriber_fails_the_turn() -> None:
    """Why the collector's one subscriber (tools not found) catches everything."""
    stream = MemoryStream()

    def broken(event: Any) -> None:
        raise RuntimeError("subscriber broke")

    stream.subscribe(broken)
    with pytest.raises(RuntimeError, match="subscriber broke"):
        await Agent("a", config=TestConfig("hi")).ask("go", stream=stream)


async def test_a_model_failure_leaves_no_event() -> None:
    """Why model failures are recorded from on_llm_call: history holds only the request."""
    stream = MemoryStream()
    with pytest.raises(ConnectionError):
        await Agent("a", config=TestConfig(ConnectionError("down"))).ask("go", stream=stream)
    assert [type(e).__name__ for e in await stream.history.get_events()] == ["ModelRequest"]


async def test_approval_requests_never_reach_the_stream() -> None:
    """Why AG2 approvals are recorded from on_human_input."""
    stream = MemoryStream()
    seen: list[str] = []
    stream.subscribe(lambda e: seen.append(type(e).__name__))
    gated = tool(add, middleware=[approval_required()])
    agent = Agent("a", config=TestConfig(call("add", "c1", a=1, b=2), "3"), tools=[gated], hitl_hook=lambda e: "y")
    await agent.ask("go", stream=stream)
    assert "ToolApprovalRequest" not in seen and "HumanInputRequest" not in seen


class _Stateful:
    """A class-based tool middleware with state and no ``__deepcopy__``."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, call_next: Any, event: Any, context: Any) -> Any:
        self.calls += 1
        return await call_next(event, context)


class _Kept(_Stateful):
    def __deepcopy__(self, memo: dict[int, Any]) -> _Kept:
        return self


async def test_registering_a_tool_deep_copies_its_middleware() -> None:
    """Why the gate's ``__deepcopy__`` returns the gate: otherwise its tokens live on a copy."""
    lost, kept = _Stateful(), _Kept()
    agent = Agent("a", config=TestConfig(call("add", "c1", a=1, b=2), "3"),
                  tools=[tool(add, middleware=[lost, kept])])
    await agent.ask("go")
    assert lost.calls == 0 and kept.calls == 1
    assert copy.deepcopy(kept) is kept


async def test_the_innermost_tool_middleware_is_handed_the_tool() -> None:
    """Why the gate knows the arguments it passes on are the arguments that run."""
    seen: list[bool] = []

    async def outer(call_next: Any, event: Any, context: Any) -> Any:
        seen.append(internals.is_tool_itself(call_next))
        return await call_next(event, context)

    async def inner(call_next: Any, event: Any, context: Any) -> Any:
        seen.append(internals.is_tool_itself(call_next))
        return await call_next(event, context)

    gated = tool(add, middleware=[outer, inner])
    agent = Agent("a", config=TestConfig(call("add", "c1", a=1, b=2), "3"), tools=[gated])
    await agent.ask("go")
    assert seen == [False, True]


async def test_the_arguments_a_middleware_passes_on_are_the_ones_that_run() -> None:
    """The gate hands the tool its own copy of the validated arguments through ``serialized_arguments``."""
    ran: list[int] = []

    def record(a: int, b: int) -> int:
        """Record."""
        ran.append(a + b)
        return a + b

    async def edit(call_next: Any, event: Any, context: Any) -> Any:
        passed = copy.copy(event)
        passed.serialized_arguments = {"a": 10, "b": 20}
        return await call_next(passed, context)

    await Agent("a", config=TestConfig(call("record", "c1", a=1, b=2), "ok"),
                tools=[tool(record, middleware=[edit])]).ask("go")
    assert ran == [30]
