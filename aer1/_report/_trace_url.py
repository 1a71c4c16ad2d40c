"""``aer1 report --trace-url TEMPLATE``: links from a receipt's page to its trace in a trace viewer.

The template is the user's (``https://jaeger.example/trace/{trace_id}``); the ids come from
the receipt, which is untrusted. So the template is checked once (an absolute ``http`` or
``https`` URL, no character that could leave an attribute or start markup nor any other
character that is not printable, only the two placeholders and only after the host, so that
they never make the link's scheme or host), and an id enters a link only when it has the exact W3C form (lowercase hex
of the right length, not all zero): anything else gives no link. The page's escaping then
applies to the link as to every other value (spec/report.md).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MAX_TRACE_LINKS", "MAX_TRACE_URL_CHARS", "TraceUrl"]

#: Longest template accepted (characters).
MAX_TRACE_URL_CHARS = 2000
#: Distinct traces linked from a receipt's header; its steps each link their own.
MAX_TRACE_LINKS = 20

_TRACE = "{trace_id}"
_SPAN = "{span_id}"
_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
#: ASCII characters refused anywhere in a template: whitespace, controls, quotes, markup and backslash (with every
#: other character that is not printable).
_UNSAFE = re.compile(r"[\x00-\x20\x7f-\x9f\"'<>`\\]")


def _id(value: Any, form: re.Pattern[str]) -> str | None:
    """The id when it has the exact W3C form (and is not all zero), else None."""
    if type(value) is not str or form.fullmatch(value) is None or not value.strip("0"):
        return None
    return value


def _unsafe_character(template: str) -> tuple[int, str] | None:
    """(position, character) of the first character refused in a template, else None: those of ``_UNSAFE``, and
    any other a browser would not keep as written (Unicode spaces, line and paragraph separators, format characters
    such as bidirectional overrides, lone surrogates): every character that is not printable."""
    found = _UNSAFE.search(template)
    if found is not None:
        return found.start(), found.group()
    return next(((i, ch) for i, ch in enumerate(template) if not ch.isprintable()), None)


class TraceUrl:
    """A checked template; :meth:`link` fills it with a step's ids, or gives None for ids of the wrong form."""

    def __init__(self, template: str) -> None:
        if not isinstance(template, str) or not template:
            raise ValueError("the template is empty")
        if len(template) > MAX_TRACE_URL_CHARS:
            raise ValueError(f"the template has {len(template)} characters; at most {MAX_TRACE_URL_CHARS}")
        bad = _unsafe_character(template)
        if bad is not None:
            raise ValueError(f"the template holds {bad[1]!r} at {bad[0]}: whitespace, controls, quotes, "
                             "< > ` and \\ are not allowed (percent-encode them)")
        rest = template.replace(_TRACE, "").replace(_SPAN, "")
        if "{" in rest or "}" in rest:
            raise ValueError("the template may hold only the placeholders {trace_id} and {span_id}")
        if _TRACE not in template:
            raise ValueError("the template must hold {trace_id}")
        parts = urllib.parse.urlsplit(template)  # the placeholders in place: they must not make the scheme or host
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            raise ValueError("the template must be an absolute http:// or https:// URL")
        if "{" in parts.netloc:
            raise ValueError("the placeholders go after the host (in the path, query or fragment)")
        _ = parts.port  # a port out of range or not a number raises ValueError: refused in one line
        self.template = template
        self.uses_span = _SPAN in template

    def link(self, trace_id: Any, span_id: Any = None) -> str | None:
        """The URL for these ids; None when an id given is not of the W3C form, or the span is needed and missing."""
        trace = _id(trace_id, _TRACE_ID)
        span = _id(span_id, _SPAN_ID) if span_id is not None else None
        if trace is None or (span_id is not None and span is None) or (self.uses_span and span is None):
            return None
        return self.template.replace(_TRACE, trace).replace(_SPAN, span or "")

    def run_links(self, steps: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
        """The distinct traces of the steps, in step order (each at its first step's span), at most MAX_TRACE_LINKS."""
        seen: dict[str, dict[str, str]] = {}
        for step in steps:
            trace = step.get("trace_id")
            if not isinstance(trace, str) or trace in seen:
                continue
            url = self.link(trace, step.get("span_id"))
            if url is not None:
                seen[trace] = {"trace_id": trace, "url": url}
                if len(seen) >= MAX_TRACE_LINKS:
                    break
        return list(seen.values())
