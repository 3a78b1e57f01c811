"""Tracer and metric instruments of the public API (degradations, runs, disclosures, evaluations, cache).

The API functions are module-level (``otel_sampling.degraded(...)``), not methods of an
instrumentor, so they share one set of instruments: the one bound by the most recent
``instrument()`` call (its ``tracer_provider`` / ``meter_provider``), or, before any, one built
on the global providers. Binding again to the same providers keeps the existing set, so the
observable gauges are registered once per meter provider.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from opentelemetry import metrics, trace
from opentelemetry.metrics import CallbackOptions, Observation

from otel_sampling import names
from otel_sampling.labels import BoundedLabel
from otel_sampling.settings import Settings
from otel_sampling.version import __version__

_lock = threading.Lock()
_bound: ApiInstruments | None = None


class ApiInstruments:
    """Tracer, bounded label sets and the instruments the public API records into.

    Args:
        settings: label caps and the policy (cache provenance reads its identity).
        tracer_provider: defaults to the global tracer provider.
        meter_provider: defaults to the global meter provider.
    """

    def __init__(self, settings: Settings, tracer_provider: trace.TracerProvider | None = None,
                 meter_provider: metrics.MeterProvider | None = None) -> None:
        self.settings = settings
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.tracer = trace.get_tracer(names.SCOPE_NAME, __version__, tracer_provider, schema_url=names.SCHEMA_URL)
        meter = metrics.get_meter(names.SCOPE_NAME, __version__, meter_provider, schema_url=names.SCHEMA_URL)
        limit = settings.label_value_limit
        # Host code names these; a host that puts ids in them must not grow cardinality.
        self.component_label = BoundedLabel(limit)
        self.reason_label = BoundedLabel(limit, always=names.DEGRADATION_REASONS)
        self.run_name_label = BoundedLabel(limit)
        self.outcome_label = BoundedLabel(limit)
        self.evaluation_name_label = BoundedLabel(limit)

        meter.create_observable_gauge(
            names.METRIC_DEGRADATION_ACTIVE, callbacks=[self._observe_active], unit=names.UNIT_ONE,
            description="Named degradations active now, by component and reason.",
        )
        meter.create_observable_gauge(
            names.METRIC_DEGRADATION_EXPIRED, callbacks=[self._observe_expired], unit=names.UNIT_ONE,
            description="Named degradations still active past their expires_at, by component and reason.",
        )
        self.degradation_transitions = meter.create_counter(
            names.METRIC_DEGRADATION_TRANSITIONS, unit=names.UNIT_TRANSITION,
            description="Named degradations entered and exited, by component and direction.",
        )
        self.silent_incidents = meter.create_counter(
            names.METRIC_SILENT_INCIDENTS, unit=names.UNIT_INCIDENT,
            description="Runs that ended degraded, or with a substitution outside policy, without telling the person.",
        )
        self.agent_runs = meter.create_counter(
            names.METRIC_AGENT_RUNS, unit=names.UNIT_RUN,
            description="Agent runs (tasks) ended, by name, mode, outcome and whether a degradation was disclosed.",
        )
        self.run_cost = meter.create_counter(
            names.METRIC_AGENT_RUN_COST, unit=names.UNIT_USD,
            description="Cost of the provider calls made inside agent runs, USD, by name, mode and outcome.",
        )
        self.run_duration = meter.create_histogram(
            names.METRIC_AGENT_RUN_DURATION, unit=names.UNIT_SECONDS,
            description="Duration of agent runs, by name, mode and outcome.",
            explicit_bucket_boundaries_advisory=list(names.RUN_DURATION_BUCKETS),
        )
        self.evaluation_score = meter.create_histogram(
            names.METRIC_EVALUATION_SCORE, unit=names.UNIT_ONE,
            description="Evaluation scores the host recorded, by evaluation name and mode.",
            explicit_bucket_boundaries_advisory=list(names.EVALUATION_SCORE_BUCKETS),
        )
        self.cache_lookups = meter.create_counter(
            names.METRIC_CACHE_LOOKUPS, unit=names.UNIT_LOOKUP,
            description="Answer-cache lookups the host reported, by result and the provenance of the entry.",
        )

    def _observe(self, expired: bool) -> Iterable[Observation]:
        from otel_sampling import degradation  # degradation.py imports this module

        counts = degradation.observe()[1 if expired else 0]
        labelled: dict[tuple[str, str], int] = {}
        for (component, reason), count in counts.items():
            key = (self.component_label.value(component), self.reason_label.value(reason))
            labelled[key] = labelled.get(key, 0) + count
        for (component, reason), count in sorted(labelled.items()):
            yield Observation(count, {names.DEGRADATION_COMPONENT: component, names.DEGRADATION_REASON: reason})

    def _observe_active(self, options: CallbackOptions) -> Iterable[Observation]:
        return list(self._observe(expired=False))

    def _observe_expired(self, options: CallbackOptions) -> Iterable[Observation]:
        return list(self._observe(expired=True))


def bind(settings: Settings, tracer_provider: trace.TracerProvider | None = None,
         meter_provider: metrics.MeterProvider | None = None) -> ApiInstruments:
    """Make the API record through these providers (called by every instrumentor's ``instrument()``)."""
    global _bound
    with _lock:
        bound = _bound
        if bound is None or bound.tracer_provider is not tracer_provider or bound.meter_provider is not meter_provider:
            _bound = bound = ApiInstruments(settings, tracer_provider, meter_provider)
        return bound


def current() -> ApiInstruments:
    """The bound instruments; before any ``instrument()``, a set on the global providers."""
    bound = _bound
    if bound is not None:
        return bound
    return bind(Settings())
