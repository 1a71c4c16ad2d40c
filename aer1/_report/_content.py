"""What a step's content says, in a few named fields: the one reader of content shapes for the views.

A content in the step vocabulary (``aer1-steps/1``, spec/steps.md) is read by the names
:mod:`aer1._vocabulary` holds for it. Contents from before the vocabulary (or from another
producer) have collectors' own shapes for the same thing. A tool call is AgentChat's
``{name, arguments, result, is_error}``, legacy pyautogen's ``{arguments: "<json text>",
result, success}``, Agent Framework's ``{arguments, result: [contents], executed}`` with an
``error`` on failure. A message carries ``content`` or ``text``; a handoff its ``target``; a
speaker selection its choice (``selected`` or ``participant``) and mechanism (``method``,
``observed_by``). :func:`essentials` maps every shape onto one small set of fields, so a new
shape is one more line here and nowhere else (the page, ``aer1 show --csv`` and ``aer1 diff``
all read content through it).

Content is untrusted: values come back as plain text (JSON for structures), never evaluated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._canonical import restore
from .._vocabulary import error_message, follows_vocabulary, shown_members

__all__ = ["FIELDS", "Essentials", "as_text", "essentials"]

#: The fields, in the order a view shows them.
FIELDS = ("tool", "arguments", "result", "error", "text", "target", "choice", "mechanism", "decision", "exit_code",
          "output")

#: Members naming a tool call's function, in order of preference.
_TOOL_KEYS = ("name", "function", "tool")
#: Members holding a message's text.
_TEXT_KEYS = ("content", "text", "message", "task", "final_answer", "stop_reason", "reason")
#: Members naming a speaker selection's choice and its mechanism.
_CHOICE_KEYS = ("selected", "participant", "speaker", "next_speaker")
_MECHANISM_KEYS = ("method", "mechanism", "speaker_selection_method", "observed_by", "selector")


@dataclass(frozen=True)
class Essentials:
    """A step's content as named text fields (absent fields are left out) and whether it reports a failure."""

    fields: tuple[tuple[str, str], ...]
    failed: bool

    def get(self, name: str) -> str | None:
        """One field's text, or None when the content has none."""
        return next((v for k, v in self.fields if k == name), None)

    def as_dict(self) -> dict[str, str]:
        return dict(self.fields)


def as_text(value: Any) -> str:
    """A value as a person reads it: a string as is, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))


def _first(content: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    return next((content[k] for k in keys if content.get(k) not in (None, "", [], {})), None)


def _contents_text(value: Any) -> Any:
    """Agent Framework's list of contents (``[{type: text, text: ...}, ...]``) as its text; else the value."""
    if isinstance(value, list) and value and all(isinstance(v, Mapping) and isinstance(v.get("text"), str)
                                                 for v in value):
        return "\n".join(v["text"] for v in value)
    return value


def _tool_call(c: Mapping[str, Any], tool: str | None) -> tuple[dict[str, Any], bool]:
    out: dict[str, Any] = {"tool": _first(c, _TOOL_KEYS) or tool}
    if "arguments" in c:
        out["arguments"] = c["arguments"]  # legacy: the model's JSON text, shown as the model wrote it
    if c.get("result") is not None:
        out["result"] = _contents_text(c["result"])
    error = c.get("error")
    failed = bool(error) or c.get("is_error") is True or c.get("success") is False or c.get("executed") is False
    if error:
        out["error"] = error.get("message", error) if isinstance(error, Mapping) else error
    elif failed and "result" in out:
        out["error"], out["result"] = out.pop("result"), None
    return out, failed


def _other(kind: str, c: Mapping[str, Any], target: str | None) -> tuple[dict[str, Any], bool]:
    out: dict[str, Any] = {}
    if kind == "handoff":
        out["target"] = c.get("target") or target
    if kind == "speaker_selection":
        out["choice"] = _first(c, _CHOICE_KEYS) or target
        out["mechanism"] = _first(c, _MECHANISM_KEYS)
    if kind == "approval":
        approved = c.get("approved")
        out["decision"] = c.get("decision") if c.get("decision") is not None else \
            "approved" if approved is True else "denied" if approved is False else None
    if kind == "code_execution":
        out["exit_code"], out["output"] = c.get("exit_code"), c.get("output")
    text = _first(c, _TEXT_KEYS)
    if text is not None:
        out["text"] = _contents_text(text)
    error = c.get("error")
    if error:
        out["error"] = error.get("message", error) if isinstance(error, Mapping) else error
    return out, bool(error)


def _vocabulary(kind: str, c: Mapping[str, Any], tool: str | None,
                target: str | None) -> tuple[dict[str, Any], bool]:
    """A vocabulary content's fields: its members by name; failed exactly when it has an ``error``."""
    out = shown_members(kind, c)
    if kind == "tool_call":
        out.setdefault("tool", tool)
    if kind == "handoff":
        out.setdefault("target", target)
    choice = out.get("choice")
    if isinstance(choice, list) and len(choice) == 1:
        out["choice"] = choice[0]
    for name in ("text", "result"):
        if name in out:
            out[name] = _contents_text(out[name])
    message = error_message(c)
    if message is not None:
        out["error"] = message
    return out, message is not None


def essentials(kind: str, content: Any, *, tool: str | None = None, target: str | None = None) -> Essentials:
    """The named fields of one step's content (tags restored); ``tool`` and ``target`` are the step's own
    members, used when the content does not name them."""
    value = restore(content) if content is not None else None
    if not isinstance(value, Mapping):
        fields = {} if value is None else {"text": value}
        if kind == "handoff" and target:
            fields["target"] = target
        return Essentials(tuple((k, as_text(v)) for k, v in fields.items()), False)
    if follows_vocabulary(value):
        found, failed = _vocabulary(kind, value, tool, target)
    elif kind == "tool_call":
        found, failed = _tool_call(value, tool)
    else:
        found, failed = _other(kind, value, target)
    ordered = tuple((k, as_text(found[k])) for k in FIELDS if found.get(k) is not None)
    return Essentials(ordered, failed)
