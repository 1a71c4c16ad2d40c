"""A real OpenTelemetry SDK tracer provider per test, global for the test's length, spans kept in memory.

AutoGen's tool spans and Agent Framework's spans come from the global provider, so each test
installs its own as the global one and takes it away after. Tracers that frameworks obtained
during the test keep pointing at it; its sampler is then switched off, so their later spans
are not sampled and no step of a later test picks up an id from them.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult

from aer1 import Collector
from aer1.collectors import _ag2_internals as ag2_internals

from ...receipts import Peers, verify_everywhere

#: The Agent Framework and AG2 1.x tests need their extras (not installed in the ag2 classic and autogen
#: environments; their own suites' conftests fail CI when one is missing).
collect_ignore_glob = [
    *([] if importlib.util.find_spec("agent_framework_orchestrations") else ["*agent_framework*.py"]),
    *([] if ag2_internals.installed() is not None else ["*ag2*.py"]),
]


class _Switch(Sampler):
    """Samples every span while on."""

    def __init__(self) -> None:
        self.on = True

    def should_sample(self, parent_context: Any, trace_id: int, name: str, kind: Any = None,
                      attributes: Any = None, links: Any = None, trace_state: Any = None) -> SamplingResult:
        # the span's attributes are the ones a sampler passes on
        if not self.on:
            return SamplingResult(Decision.DROP)
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)

    def get_description(self) -> str:
        return "on while its test runs"


@dataclass
class Tracing:
    provider: TracerProvider
    exporter: InMemorySpanExporter
    sampler: _Switch
    monkeypatch: pytest.MonkeyPatch

    def off(self) -> None:
        """Tracing off: no global provider, and tracers already handed out sample nothing."""
        self.sampler.on = False
        self.monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)

    def spans(self) -> list[Any]:
        return list(self.exporter.get_finished_spans())


@pytest.fixture
def tracing(monkeypatch: pytest.MonkeyPatch) -> Iterator[Tracing]:
    """A provider exporting to memory (the user's exporter), installed as the global provider for this test."""
    sampler = _Switch()
    provider = TracerProvider(sampler=sampler)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    yield Tracing(provider, exporter, sampler, monkeypatch)
    sampler.on = False
    provider.shutdown()


def finalized(collector: Collector, tmp_path: Path, peers: Peers | None) -> dict[str, Any]:
    """The native collector's receipt: no recording failure, saved, and verified everywhere."""
    receipt = collector.finalize("done")
    assert collector.recording_failures == 0
    verify_everywhere(collector.save(tmp_path / "r.json", workflow=receipt), receipt, peers)
    return receipt
