"""Tracers, meters and the metric instruments, created once per ``instrument()`` call.

Each instrumentor builds one of these from the ``tracer_provider`` / ``meter_provider`` it is given
(the global ones by default), so tests and hosts with their own providers get their own set.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable, Mapping

from opentelemetry import metrics, trace
from opentelemetry._logs import LoggerProvider, get_logger
from opentelemetry.metrics import CallbackOptions, Observation

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
        logger_provider: for the content-capture events; defaults to the global logger provider.
    """

    def __init__(self, settings: Settings, tracer_provider: trace.TracerProvider | None = None,
                 meter_provider: metrics.MeterProvider | None = None,
                 logger_provider: LoggerProvider | None = None) -> None:
        self.settings = settings
        self.tracer = trace.get_tracer(names.SCOPE_NAME, __version__, tracer_provider, schema_url=names.SCHEMA_URL)
        # Events (GenAI content capture) are log records; the global logger provider by default.
        self.event_logger = get_logger(names.SCOPE_NAME, __version__, logger_provider, schema_url=names.SCHEMA_URL)
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
        self.sampling_in_flight = _in_flight(meter_provider, meter)
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
        self.time_to_first_chunk = meter.create_histogram(
            names.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK,
            unit=names.UNIT_SECONDS,
            description="Time to receive the first chunk of a streamed response, from the request.",
            explicit_bucket_boundaries_advisory=list(names.GEN_AI_DURATION_BUCKETS),
        )
        self.cost = meter.create_counter(
            names.METRIC_GEN_AI_COST,
            unit=names.UNIT_USD,
            description="Cost of provider calls in USD, from the policy file's price table.",
        )
        self.sampling_stalls = meter.create_counter(
            names.METRIC_SAMPLING_STALLS,
            unit=names.UNIT_REQUEST,
            description="Sampling requests pending longer than the stall threshold.",
        )
        self.sampling_violations = meter.create_counter(
            names.METRIC_SAMPLING_VIOLATIONS,
            unit=names.UNIT_VIOLATION,
            description="Sampling policy violations, by kind.",
        )
        self.sampling_grants = meter.create_counter(
            names.METRIC_SAMPLING_GRANTS,
            unit=names.UNIT_GRANT,
            description="Budget grants recorded by the host (otel_sampling.record_grant).",
        )
        self.sampling_granted_usd = meter.create_counter(
            names.METRIC_SAMPLING_GRANTED_USD,
            unit=names.UNIT_USD,
            description="USD added to sampling budgets by grants.",
        )
        self.sampling_server_requests = meter.create_counter(
            names.METRIC_SAMPLING_SERVER_REQUESTS,
            unit=names.UNIT_REQUEST,
            description="Sampling requests an MCP server sent, by the ending the server saw.",
        )


class InFlight:
    """``mcp.sampling.in_flight``: an asynchronous UpDownCounter over counts kept here.

    ``add(amount, attributes)`` as on a synchronous UpDownCounter; the SDK reads the counts at
    collection. The exported points are those of a synchronous UpDownCounter (a non-monotonic
    cumulative sum per attribute set, 0 once every request ended), but a request costs two dict
    updates instead of two SDK measurements (each one cleans and hashes its attributes). Memory:
    one count per attribute set, bounded like the ``mcp.server.name`` label.
    """

    def __init__(self) -> None:
        self._counts: dict[tuple[tuple[str, str], ...], int] = {}
        self._lock = threading.Lock()

    def add(self, amount: int, attributes: Mapping[str, str]) -> None:
        key = tuple(attributes.items())
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + amount

    def observe(self, options: CallbackOptions) -> Iterable[Observation]:
        with self._lock:
            counts = list(self._counts.items())
        return [Observation(count, dict(key)) for key, count in counts]


class _GlobalProvider:
    """Key of the store for instruments made through the global meter provider."""


# One store per meter provider: the SDK keeps the first callback of an instrument name registered
# twice on a meter (each instrumentor builds its own Instruments on the same meter), so they must
# share it. Instruments made through the global provider share one store whether it was set before
# or after them: before, each got a proxy meter of its own, and the proxies' instruments all land
# on the same meter once the provider is set.
_GLOBAL = _GlobalProvider()
_in_flight_lock = threading.Lock()
_in_flight_by_provider: weakref.WeakKeyDictionary[object, InFlight] = weakref.WeakKeyDictionary()


def _in_flight(meter_provider: metrics.MeterProvider | None, meter: metrics.Meter) -> InFlight:
    key = meter_provider if meter_provider not in (None, metrics.get_meter_provider()) else _GLOBAL
    with _in_flight_lock:
        store = _in_flight_by_provider.get(key)
        if store is None:
            store = _in_flight_by_provider[key] = InFlight()
            meter.create_observable_up_down_counter(
                names.METRIC_SAMPLING_IN_FLIGHT,
                callbacks=[store.observe],
                unit=names.UNIT_REQUEST,
                description="Sampling requests the host is handling now.",
            )
        return store
