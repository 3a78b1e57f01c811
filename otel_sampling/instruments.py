"""Tracers, meters and the metric instruments, created once per ``instrument()`` call.

Each instrumentor builds one of these from the ``tracer_provider`` / ``meter_provider`` it is given
(the global ones by default), so tests and hosts with their own providers get their own set.
"""

from __future__ import annotations

from opentelemetry import metrics, trace

from otel_sampling import names
from otel_sampling.labels import BoundedLabel
from otel_sampling.settings import Settings
from otel_sampling.version import __version__


class Instruments:
    """Tracer, meter, metric instruments and bounded label sets for one instrumentor.

    Args:
        settings: the frozen settings (policy, label caps).
        tracer_provider: defaults to the global tracer provider.
        meter_provider: defaults to the global meter provider.
    """

    def __init__(self, settings: Settings, tracer_provider=None, meter_provider=None) -> None:
        self.settings = settings
        self.tracer = trace.get_tracer(names.SCOPE_NAME, __version__, tracer_provider, schema_url=names.SCHEMA_URL)
        meter = metrics.get_meter(names.SCOPE_NAME, __version__, meter_provider, schema_url=names.SCHEMA_URL)
        limit = settings.label_value_limit
        self.server_label = BoundedLabel(limit)
        self.model_label = BoundedLabel(limit)
        self.error_type_label = BoundedLabel(limit)  # provider error bodies choose their own type names

        self.sampling_requests = meter.create_counter(
            names.METRIC_SAMPLING_REQUESTS,
            unit=names.UNIT_REQUEST,
            description="MCP sampling requests handled by the host, by ending, substitution and mode.",
        )
        self.sampling_duration = meter.create_histogram(
            names.METRIC_SAMPLING_DURATION,
            unit=names.UNIT_SECONDS,
            description="Time from a sampling request reaching the host to its ending.",
            explicit_bucket_boundaries_advisory=list(names.MCP_DURATION_BUCKETS),
        )
        self.sampling_in_flight = meter.create_up_down_counter(
            names.METRIC_SAMPLING_IN_FLIGHT,
            unit=names.UNIT_REQUEST,
            description="Sampling requests the host is handling now.",
        )
        self.operation_duration = meter.create_histogram(
            names.METRIC_GEN_AI_OPERATION_DURATION,
            unit=names.UNIT_SECONDS,
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=list(names.GEN_AI_DURATION_BUCKETS),
        )
        self.token_usage = meter.create_histogram(
            names.METRIC_GEN_AI_TOKEN_USAGE,
            unit=names.UNIT_TOKEN,
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=list(names.GEN_AI_TOKEN_BUCKETS),
        )
