"""Helpers for the AG2 1.x tests: scripted calls, what a run left, the steps of a receipt."""

from __future__ import annotations

import json
from typing import Any

from ag2.events import ToolCallEvent


def call(name: str, call_id: str, **arguments: Any) -> ToolCallEvent:
    """One scripted tool call of the model."""
    return ToolCallEvent(name=name, arguments=json.dumps(arguments), id=call_id)


def _one(e: Any) -> tuple[Any, ...]:
    kind = type(e).__name__
    result = getattr(e, "result", None)
    parts = [getattr(p, "content", getattr(p, "data", None)) for p in getattr(result, "parts", None) or []]
    if isinstance(getattr(e, "error", None), BaseException):
        parts = [type(e.error).__name__]  # a traceback's text names files and lines
    calls = [(c.id, c.name, c.arguments) for c in getattr(getattr(e, "tool_calls", None), "calls", None) or []]
    if kind == "ToolCallsEvent":
        calls = [(c.id, c.name, c.arguments) for c in e.calls]
    if kind == "ToolResultsEvent":
        calls = sorted((str(r.parent_id), str(_one(r))) for r in e.results)
    return (kind, getattr(e, "name", None), getattr(e, "id", None) if kind == "ToolCallEvent" else None,
            getattr(e, "arguments", None), getattr(e, "content", None) if kind != "ModelRequest" else None,
            tuple(map(str, parts)), tuple(calls))


def shape(events: list[Any]) -> list[Any]:
    """What a run's history says, without its per-run ids and clocks: to compare observed with unobserved runs.

    The events of one tool batch (between a ``ToolCallsEvent`` and its ``ToolResultsEvent``)
    are compared as a set: the calls of a batch run concurrently, so their order varies.
    """
    out: list[Any] = []
    batch: list[tuple[Any, ...]] | None = None
    for e in events:
        one = _one(e)
        if batch is not None and one[0] != "ToolResultsEvent":
            batch.append(one)
            continue
        if batch is not None:
            out.append(tuple(sorted(map(str, batch))))
            batch = None
        out.append(one)
        if one[0] == "ToolCallsEvent":
            batch = []
    if batch is not None:
        out.append(tuple(sorted(map(str, batch))))
    return out


def steps(receipt: dict[str, Any], contents: dict[int, Any]) -> list[tuple[str, str, str, str, Any]]:
    """(kind, tool, agent, status, content) of every step but the close step."""
    return [(s["kind"], s["tool"], s["agent"], s["status"], contents[s["seq"]]) for s in receipt["steps"]
            if s["kind"] != "close"]


def of_kind(receipt: dict[str, Any], contents: dict[int, Any], kind: str) -> list[tuple[dict[str, Any], Any]]:
    """(step, content) of every step of one kind, in chain order."""
    return [(s, contents[s["seq"]]) for s in receipt["steps"] if s["kind"] == kind]
