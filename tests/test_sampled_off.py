"""Tracing sampled off (``ALWAYS_OFF``): no span attribute work, the same metric points.

The OTel SDK hands out a ``NonRecordingSpan`` when the sampler drops a span; every attribute we
would build for it is wasted work on the hot path. Proof that none is built: a counting hook on
the ``NonRecordingSpan`` methods that take attributes (every attribute dict we build ends in one
of them) and on ``metrics.clean`` and ``clean_texts`` (the per-attribute string work) as imported
by the modules that build span attributes. The metrics must not depend on sampling: the same workload under
``ALWAYS_ON`` and ``ALWAYS_OFF`` gives the same points with the same labels.

The ``agent.run*`` metrics too: a sampling request that no run owns is its own run, opened and
ended by the request itself, so sampled off it is the same run. (An agent span's run is different:
the span processor sees it start, and the SDK calls no processor for a span its sampler dropped.)
"""

from __future__ import annotations

import anthropic
import anyio
import openai
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import Span, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON
from opentelemetry.trace import NonRecordingSpan

from drivers import call, callback_returning, result
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.records import provider_call
from otel_sampling.records import sampling as sampling_record

pytest.importorskip("mcp_types", reason="mcp 2.x sessions")

MESSAGES = [{"role": "user", "content": "Summarise: printer on fire"}]
DURATIONS = {
    names.METRIC_GEN_AI_OPERATION_DURATION,
    names.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK,
    names.METRIC_GEN_AI_TIME_PER_OUTPUT_CHUNK,
    names.METRIC_SAMPLING_DURATION,
    names.METRIC_AGENT_RUN_DURATION,
    names.METRIC_MCP_SERVER_OPERATION_DURATION,
    names.METRIC_MCP_CLIENT_OPERATION_DURATION,
}


def _provider_calls(fp) -> None:
    """anthropic and openai, plain and streamed (the SDK's own anthropic span is off: it is not ours)."""
    a = anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0, open_telemetry=False)
    a.messages.create(model="claude-req", max_tokens=64, messages=MESSAGES)
    for _ in a.messages.create(model="claude-req", max_tokens=64, messages=MESSAGES, stream=True):
        pass
    o = openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0)
    o.chat.completions.create(model="gpt-req", messages=MESSAGES, max_completion_tokens=64)
    for _ in o.chat.completions.create(
        model="gpt-req",
        messages=MESSAGES,
        max_completion_tokens=64,
        stream=True,
        stream_options={"include_usage": True},
    ):
        pass


def _sampling_requests() -> None:
    """One MCP sampling request on each protocol path (legacy JSON-RPC, 2026-07-28 input-required)."""
    for mode in ("legacy", "auto"):
        assert anyio.run(call, mode, callback_returning(result())) == "claude-sonnet-5-5-20261001|endTurn"


def _points(reader: InMemoryMetricReader) -> dict:
    """metric name -> sorted (labels, sum or value) of its points; timings by count only."""
    out: dict = {}
    for rm in reader.get_metrics_data().resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                points = out.setdefault(metric.name, [])
                for p in metric.data.data_points:
                    value = p.count if metric.name in DURATIONS else getattr(p, "sum", getattr(p, "value", None))
                    points.append((tuple(sorted(p.attributes.items())), value))
    return {name: sorted(points) for name, points in out.items()}


def _run(sampler, workload) -> tuple[dict, list]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(sampler=sampler)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    instrumentors = [AnthropicInstrumentor(), OpenAIInstrumentor(), MCPSamplingInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        workload()
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    points = _points(reader)
    meter_provider.shutdown()
    return points, exporter.get_finished_spans()


@pytest.fixture
def attribute_work(monkeypatch):
    """Counts every attribute hand-off to a non-recording span, a recording span's ``set_attributes``
    and every ``clean`` of values."""
    calls: list[str] = []

    def counting(name, original=None):
        def hook(*args, **kwargs):
            calls.append(name)
            return original(*args, **kwargs) if original is not None else None

        return hook

    for method in ("set_attribute", "set_attributes", "add_event", "set_status", "add_link"):
        monkeypatch.setattr(NonRecordingSpan, method, counting(f"NonRecordingSpan.{method}"))
    # A recording span's attribute work, so the sampled-on run shows the hooks see real work.
    monkeypatch.setattr(Span, "set_attributes", counting("Span.set_attributes", Span.set_attributes))
    monkeypatch.setattr(sampling_record, "clean", counting("sampling_record.clean", sampling_record.clean))
    monkeypatch.setattr(provider_call, "clean_texts", counting("provider_call.clean_texts", provider_call.clean_texts))
    return calls


@pytest.mark.parametrize("workload", [_provider_calls, _sampling_requests], ids=["provider_sdks", "mcp"])
def test_sampled_off_does_no_attribute_work_and_records_the_same_metrics(fake_provider, attribute_work, workload):
    def run():
        workload(fake_provider) if workload is _provider_calls else workload()

    on_points, on_spans = _run(ALWAYS_ON, run)
    on_work = list(attribute_work)
    attribute_work.clear()
    off_points, off_spans = _run(ALWAYS_OFF, run)

    assert on_spans and not off_spans
    assert "NonRecordingSpan.set_attributes" not in on_work and on_work  # the hook sees real work
    # Sampled off: the one clean left is a provider call's start attributes (the sampler's input: its
    # model, which names the span, and its server address, in one pass), at most one per call, and
    # none for the plain names these calls give (they fit as they are).
    assert attribute_work == []
    assert off_points == on_points
    expected = (
        {
            names.METRIC_GEN_AI_OPERATION_DURATION,
            names.METRIC_GEN_AI_TOKEN_USAGE,
            names.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK,
            names.METRIC_GEN_AI_TIME_PER_OUTPUT_CHUNK,
        }
        if workload is _provider_calls
        else {
            names.METRIC_SAMPLING_REQUESTS,
            names.METRIC_SAMPLING_DURATION,
            names.METRIC_SAMPLING_IN_FLIGHT,
            names.METRIC_MCP_SERVER_OPERATION_DURATION,  # the host receives sampling/createMessage
            names.METRIC_AGENT_RUNS,
            names.METRIC_AGENT_RUN_DURATION,
        }
    )  # each request its own run
    assert expected <= set(off_points)
