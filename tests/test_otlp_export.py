"""The production path: spans AND metrics through the real OTLP/HTTP exporters to a receiver on 127.0.0.1.

One real sampling round trip (mcp 2.x, legacy JSON-RPC path, in-memory) whose host callback calls
the real anthropic SDK against the local fake provider; everything is exported with
``opentelemetry-exporter-otlp-proto-http`` and decoded with ``opentelemetry-proto``. The check: names,
units, kinds, attributes and histogram buckets arrive exactly as ``otel_sampling.names`` defines
them (the buckets are the MCP and GenAI semantic-convention advice), under our scope and schema URL.
"""

from __future__ import annotations

import anyio
import pytest

pytest.importorskip("mcp_types", reason="the round trip runs mcp 2.x")

import anthropic
import mcp_types as types
from mcp import Client
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from harness.otlp_receiver import OTLPReceiver
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from sampling_server import SERVER_NAME, build_server

MODEL = "claude-sonnet-5-5"  # what the host callback requests; the fake provider serves it
ARGS = {"hint": "claude-sonnet", "include_context": "thisServer"}
# Usage the fake provider reports for its "cache" scenario, measured in a real run
# (tests/test_anthropic.py: 25 input + 400 cache-read + 100 cache-creation, 5 output): input
# includes the cache tokens, as the GenAI semconv says.
INPUT_TOKENS, OUTPUT_TOKENS = 525, 5


@pytest.fixture(scope="module")
def exported(fake_provider):
    """Run one round trip with OTLP/HTTP exporters; return (spans, latest metrics) as received."""
    with OTLPReceiver() as receiver:
        resource = Resource.create({"service.name": "otlp-test-host"})
        tracer_provider = TracerProvider(resource=resource)
        tracer_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint)))
        # The interval is long on purpose: shutdown() does the one export this test reads.
        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=receiver.metrics_endpoint), export_interval_millis=3_600_000
        )
        meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
        instrumentors = [MCPSamplingInstrumentor(), AnthropicInstrumentor()]
        for instrumentor in instrumentors:
            instrumentor.instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
        try:
            anyio.run(_round_trip, host_callback(fake_provider))
        finally:
            for instrumentor in instrumentors:
                instrumentor.uninstrument()
            tracer_provider.shutdown()
            meter_provider.shutdown()
        return receiver.spans, receiver.latest_metrics()


def host_callback(fake_provider):
    """The host's sampling callback: one anthropic call (fake provider scenario "cache")."""

    async def callback(ctx, params):
        client = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        try:
            message = await client.messages.create(
                model=MODEL,
                max_tokens=params.max_tokens,
                messages=[{"role": "user", "content": "hi"}],
                extra_headers={"x-fake-scenario": "cache"},
            )
        finally:
            await client.close()
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=message.content[0].text),
            model=message.model,
            stop_reason="endTurn",
        )

    return callback


async def _round_trip(callback):
    async with Client(build_server(), mode="legacy", sampling_callback=callback) as client:
        out = await client.call_tool("sample", ARGS)
    assert out.content[0].text == f"{MODEL}|endTurn"


def ours(spans, name):
    found = [s for s in spans if s["name"] == name and s["scope"] == names.SCOPE_NAME]
    assert len(found) == 1, [s["name"] for s in spans]
    return found[0]


def test_spans_arrive_with_our_attributes_scope_and_schema(exported):
    spans, _ = exported
    sampling = ours(spans, names.SPAN_SAMPLING)
    chat = ours(spans, f"{names.OPERATION_CHAT} {MODEL}")
    assert (sampling["kind"], chat["kind"]) == ("SERVER", "CLIENT")
    assert sampling["schema_url"] == chat["schema_url"] == names.SCHEMA_URL
    assert sampling["service_name"] == "otlp-test-host"
    # The provider call nests in the sampling request, across the export.
    assert chat["trace_id"] == sampling["trace_id"] and chat["parent_span_id"] == sampling["span_id"]
    a = sampling["attributes"]
    assert {
        k: a[k]
        for k in (
            names.MCP_METHOD_NAME,
            names.SAMPLING_PATH,
            names.MCP_SERVER_NAME,
            names.SAMPLING_ENDING,
            names.SAMPLING_SUBSTITUTION,
            names.DEGRADATION_MODE,
            names.GEN_AI_RESPONSE_MODEL,
            names.SAMPLING_INCLUDE_CONTEXT_REQUESTED,
        )
    } == {
        "mcp.method.name": "sampling/createMessage",
        "otel_sampling.sampling.path": "rpc",
        "mcp.server.name": SERVER_NAME,
        "otel_sampling.sampling.ending": "completed",
        "otel_sampling.sampling.substitution": "none",
        "degradation.mode": "primary",
        "gen_ai.response.model": MODEL,
        "otel_sampling.sampling.include_context.requested": "thisServer",
    }
    assert a[names.SAMPLING_MODEL_HINTS] == ["claude-sonnet"]  # arrays survive as arrays
    assert a[names.GEN_AI_REQUEST_MAX_TOKENS] == 64  # ints as ints
    assert a[names.GEN_AI_RESPONSE_FINISH_REASONS] == ["endTurn"]
    assert (a[names.GEN_AI_USAGE_INPUT_TOKENS], a[names.GEN_AI_USAGE_OUTPUT_TOKENS]) == (INPUT_TOKENS, OUTPUT_TOKENS)
    c = chat["attributes"]
    assert c[names.GEN_AI_PROVIDER_NAME] == "anthropic" and c[names.GEN_AI_REQUEST_MODEL] == MODEL
    assert "gen_ai.system" not in c  # the pre-1.37 name: never ours (docs/telemetry.md, semconv version)


def test_metrics_arrive_with_names_units_kinds_and_buckets(exported):
    _, metrics = exported
    for metric in metrics.values():
        if metric["name"].startswith(("otel_sampling.sampling.", "gen_ai.client.")):
            assert (metric["scope"], metric["schema_url"]) == (names.SCOPE_NAME, names.SCHEMA_URL)

    requests = metrics[names.METRIC_SAMPLING_REQUESTS]
    assert (requests["type"], requests["monotonic"], requests["temporality"], requests["unit"]) == (
        "sum",
        True,
        "CUMULATIVE",
        "{request}",
    )
    (point,) = requests["points"]
    assert point["value"] == 1
    assert point["attributes"] == {
        "mcp.server.name": SERVER_NAME,
        "otel_sampling.sampling.path": "rpc",
        "otel_sampling.sampling.ending": "completed",
        "otel_sampling.sampling.substitution": "none",
        "degradation.mode": "primary",
        "otel_sampling.sampling.include_context.requested": "thisServer",
        "gen_ai.response.model": MODEL,
        "otel_sampling.sampling.include_context.granted": "unreported",  # the callback did not call grant_context()
    }

    in_flight = metrics[names.METRIC_SAMPLING_IN_FLIGHT]
    assert (in_flight["type"], in_flight["monotonic"], in_flight["unit"]) == ("sum", False, "{request}")
    assert [p["value"] for p in in_flight["points"]] == [0]

    duration = metrics[names.METRIC_SAMPLING_DURATION]
    assert (duration["type"], duration["unit"]) == ("histogram", "s")
    (point,) = duration["points"]
    assert point["explicit_bounds"] == [float(b) for b in names.MCP_DURATION_BUCKETS]  # MCP semconv advice
    assert len(point["bucket_counts"]) == len(names.MCP_DURATION_BUCKETS) + 1
    assert point["count"] == sum(point["bucket_counts"]) == 1
    assert point["attributes"] == {"mcp.server.name": SERVER_NAME, "otel_sampling.sampling.ending": "completed"}

    operation = metrics[names.METRIC_GEN_AI_OPERATION_DURATION]
    assert (operation["type"], operation["unit"]) == ("histogram", "s")
    (point,) = operation["points"]
    assert point["explicit_bounds"] == [float(b) for b in names.GEN_AI_DURATION_BUCKETS]  # GenAI semconv advice
    assert point["count"] == 1
    assert {
        k: point["attributes"][k]
        for k in (
            names.GEN_AI_OPERATION_NAME,
            names.GEN_AI_PROVIDER_NAME,
            names.GEN_AI_REQUEST_MODEL,
            names.GEN_AI_RESPONSE_MODEL,
        )
    } == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": MODEL,
        "gen_ai.response.model": MODEL,
    }
    assert names.ERROR_TYPE not in point["attributes"]

    tokens = metrics[names.METRIC_GEN_AI_TOKEN_USAGE]
    assert (tokens["type"], tokens["unit"]) == ("histogram", "{token}")
    by_type = {p["attributes"][names.GEN_AI_TOKEN_TYPE]: p for p in tokens["points"]}
    for token_type, expected in ((names.TOKEN_TYPE_INPUT, INPUT_TOKENS), (names.TOKEN_TYPE_OUTPUT, OUTPUT_TOKENS)):
        point = by_type[token_type]
        assert point["explicit_bounds"] == [float(b) for b in names.GEN_AI_TOKEN_BUCKETS]  # GenAI semconv advice
        assert (point["count"], point["sum"]) == (1, expected)


@pytest.mark.parametrize("compression", ["none", "gzip", "deflate"])
def test_the_receiver_takes_every_compression_the_exporter_sends(compression):
    """OTEL_EXPORTER_OTLP_COMPRESSION (gzip, deflate) must not make the demo's receiver drop everything."""
    from opentelemetry.exporter.otlp.proto.http import Compression

    with OTLPReceiver() as receiver:
        provider = TracerProvider()
        provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint, compression=Compression(compression)))
        )
        provider.get_tracer("compression-test").start_span("compressed", attributes={"k": "v"}).end()
        provider.shutdown()
        assert [(s["name"], s["attributes"]) for s in receiver.spans] == [("compressed", {"k": "v"})]
