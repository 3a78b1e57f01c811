"""Shared fixtures: the real OTel SDK with in-memory exporters, instrumentors, the fake provider."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.testing.fake_provider import FakeProvider

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # the test MCP server module


def _mcp_major() -> int | None:
    try:
        return int(version("mcp").split(".", 1)[0])
    except (PackageNotFoundError, ValueError):
        return None


# The mcp 1.x cells of `make test-matrix`: modules written against the mcp 2.x API are left out.
# They import `mcp_types` (a package only mcp 2.x brings), or are named here when they use other
# 2.x-only names; mcp 1.x has its own module, test_mcp_v1.py.
_MCP2_ONLY = {"test_classify.py", "test_lifecycle.py", "test_prometheus_e2e.py", "test_five_numbers_demo.py"}
if _mcp_major() == 1:
    _sources = {p.name: p.read_text(encoding="utf-8") for p in HERE.glob("test_*.py")}
    _ignored = {name for name, text in _sources.items() if name in _MCP2_ONLY or "mcp_types" in text}
    while True:  # and the modules that import one of those
        _more = {name for name, text in _sources.items() if name not in _ignored
                 and any(f"from {other[:-3]} import" in text for other in _ignored)}
        if not _more:
            break
        _ignored |= _more
    collect_ignore = sorted(_ignored)

# One global tracer provider for the session: the mcp and anthropic SDKs trace through the global
# provider, and it can be set only once per process.
SPANS = InMemorySpanExporter()
TRACER_PROVIDER = TracerProvider()
TRACER_PROVIDER.add_span_processor(SimpleSpanProcessor(SPANS))
trace.set_tracer_provider(TRACER_PROVIDER)


class Telemetry:
    """What one test exported: finished spans and metric points."""

    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self, name: str | None = None, scope: str | None = "otel_sampling") -> list:
        return [s for s in SPANS.get_finished_spans()
                if (name is None or s.name == name) and (scope is None or s.instrumentation_scope.name == scope)]

    def points(self, metric: str) -> list:
        data = self.reader.get_metrics_data()
        found = []
        for rm in (data.resource_metrics if data else ()):
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == metric:
                        found.extend(m.data.data_points)
        return found

    def counts(self, metric: str, *keys: str) -> dict:
        """Sum of a counter (or count of a histogram) grouped by the given attribute keys."""
        out: dict = {}
        for p in self.points(metric):
            key = tuple(p.attributes.get(k) for k in keys)
            out[key] = out.get(key, 0) + (p.value if hasattr(p, "value") else p.count)
        return out


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    SPANS.clear()
    t = Telemetry()
    yield t
    t.meter_provider.shutdown()


def with_policy(telemetry: Telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy_toml: str,
                *classes) -> Iterator[Telemetry]:
    """``policy_toml`` as the OTEL_SAMPLING_POLICY file (read at instrument()), then ``classes`` instrumented."""
    path = tmp_path / "policy.toml"
    path.write_text(policy_toml)
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(path))
    yield from _instrumented(telemetry, *classes)


def _instrumented(telemetry: Telemetry, *classes) -> Iterator[Telemetry]:
    instrumentors = [cls() for cls in classes]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    yield telemetry
    for instrumentor in instrumentors:
        instrumentor.uninstrument()


@pytest.fixture
def mcp_instrumented(telemetry: Telemetry) -> Iterator[Telemetry]:
    yield from _instrumented(telemetry, MCPSamplingInstrumentor)


@pytest.fixture
def anthropic_instrumented(telemetry: Telemetry) -> Iterator[Telemetry]:
    yield from _instrumented(telemetry, AnthropicInstrumentor)


@pytest.fixture
def openai_instrumented(telemetry: Telemetry) -> Iterator[Telemetry]:
    yield from _instrumented(telemetry, OpenAIInstrumentor)


@pytest.fixture
def instrumented(telemetry: Telemetry) -> Iterator[Telemetry]:
    """Both instrumentors, sharing one meter provider."""
    yield from _instrumented(telemetry, MCPSamplingInstrumentor, AnthropicInstrumentor)


@pytest.fixture(scope="session")
def fake_provider() -> Iterator[FakeProvider]:
    with FakeProvider() as fp:
        yield fp


POLICY_TOML = """
[servers."sampling-test-server"]
primary_model = "claude-sonnet-5-5"
permitted_models = ["claude-sonnet-5-5", "claude-haiku-5-5"]
context_ceiling = "thisServer"
"""


@pytest.fixture
def policy_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A policy file for the test server, named by OTEL_SAMPLING_POLICY (set before instrument())."""
    path = tmp_path / "policy.toml"
    path.write_text(POLICY_TOML)
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(path))
    return path
