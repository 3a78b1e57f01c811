"""Our names through the real exporters: Prometheus series names, and OTLP/HTTP spans."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from harness.otlp_receiver import OTLPReceiver
from otel_sampling import names
from otel_sampling.metrics import Instruments
from otel_sampling.mixin.prometheus_names import label_name, metric_name
from otel_sampling.settings import Settings


def test_prometheus_names_match_the_real_exporter():
    registry = CollectorRegistry()
    provider = MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)])
    instruments = Instruments(Settings(), meter_provider=provider)
    attrs = {names.MCP_SERVER_NAME: "s", names.DEGRADATION_MODE: "primary"}
    instruments.sampling_requests.add(1, attrs)
    instruments.sampling_duration.record(0.5, attrs)
    instruments.sampling_in_flight.add(1, attrs)
    instruments.inference.operation_duration.record(0.5, attrs)
    instruments.inference.token_usage.record(5, attrs)
    exported = {
        s.name: s.labels for f in text_string_to_metric_families(generate_latest(registry).decode()) for s in f.samples
    }
    expected = {
        metric_name(names.METRIC_SAMPLING_REQUESTS, names.UNIT_REQUEST, counter=True),
        metric_name(names.METRIC_SAMPLING_DURATION, names.UNIT_SECONDS) + "_count",
        metric_name(names.METRIC_SAMPLING_IN_FLIGHT, names.UNIT_REQUEST),
        metric_name(names.METRIC_GEN_AI_OPERATION_DURATION, names.UNIT_SECONDS) + "_bucket",
        metric_name(names.METRIC_GEN_AI_TOKEN_USAGE, names.UNIT_TOKEN) + "_sum",
    }
    assert expected <= exported.keys()
    assert expected == {
        "otel_sampling_sampling_requests_total",
        "otel_sampling_sampling_duration_seconds_count",
        "otel_sampling_sampling_in_flight",
        "gen_ai_client_operation_duration_seconds_bucket",
        "gen_ai_client_token_usage_sum",
    }
    labels = exported["otel_sampling_sampling_requests_total"]
    assert labels[label_name(names.MCP_SERVER_NAME)] == "s"
    assert labels[label_name(names.DEGRADATION_MODE)] == "primary"
    provider.shutdown()


def test_otlp_http_spans_arrive_intact():
    with OTLPReceiver() as receiver:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint)))
        tracer = provider.get_tracer(names.SCOPE_NAME)
        with tracer.start_as_current_span(names.SPAN_SAMPLING, kind=SpanKind.SERVER) as s:
            s.set_attributes(
                {
                    names.SAMPLING_ENDING: "timeout",
                    names.SAMPLING_MODEL_HINTS: ["a", "b"],
                    names.GEN_AI_REQUEST_MAX_TOKENS: 64,
                }
            )
        provider.shutdown()
        (span,) = receiver.spans
    assert span["name"] == "sampling/createMessage" and span["kind"] == "SERVER" and span["scope"] == "otel_sampling"
    assert span["attributes"] == {
        "otel_sampling.sampling.ending": "timeout",
        "otel_sampling.sampling.model_hints": ["a", "b"],
        "gen_ai.request.max_tokens": 64,
    }
