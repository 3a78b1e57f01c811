"""Every metric instrument we create: one spec each (name, kind, unit, description, buckets), and their sets.

A spec sits beside the instruments built from it (:func:`create`), as the semantic-conventions
package keeps ``GEN_AI_CLIENT_TOKEN_USAGE`` beside its ``create_*`` function; names and units are
in :mod:`otel_sampling.names` and ``docs/telemetry.md``. :data:`SPECS` lists them all.

:class:`Instruments`: one per instrumentor, built from the ``tracer_provider`` / ``meter_provider``
it is given (the global ones by default), so tests and hosts with their own providers get their
own set. :class:`ApiInstruments`: the public API's, bound by :mod:`otel_sampling.state`.

Every point of a request, call or run is recorded with ``context=`` :func:`recorded_in` of its span,
so that exemplars name that span.

What we export from outside is made fit for it here: a label value that comes from outside is
bounded by a :class:`BoundedLabel` (a point's labels in one call, :func:`bound`), and a span update's
outside values are cleaned and capped (:func:`clean`, :func:`clean_texts`, :func:`otlp_int`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from opentelemetry import metrics, trace
from opentelemetry._logs import LoggerProvider, get_logger
from opentelemetry.context import Context
from opentelemetry.metrics import CallbackOptions, Observation

from otel_sampling import locks, names
from otel_sampling.names import OVERFLOW_LABEL, UNKNOWN_LABEL
from otel_sampling.semconv_mode import Emission
from otel_sampling.settings import Settings
from otel_sampling.version import __version__

COUNTER, HISTOGRAM, UP_DOWN_COUNTER, GAUGE = "counter", "histogram", "up_down_counter", "gauge"


class Spec(NamedTuple):
    """One instrument: its name, kind (:data:`COUNTER`, :data:`HISTOGRAM`, :data:`UP_DOWN_COUNTER`
    observable, :data:`GAUGE` observable), unit (UCUM), description and, for a histogram, the
    advisory bucket boundaries."""

    name: str
    kind: str
    unit: str
    description: str
    buckets: tuple[float, ...] | None = None


SAMPLING_REQUESTS: Final = Spec(
    names.METRIC_SAMPLING_REQUESTS,
    COUNTER,
    names.UNIT_REQUEST,
    "MCP sampling requests handled by the host, by ending, substitution and mode.",
)
SAMPLING_DURATION: Final = Spec(
    names.METRIC_SAMPLING_DURATION,
    HISTOGRAM,
    names.UNIT_SECONDS,
    "Time from a sampling request reaching the host to its ending.",
    names.MCP_DURATION_BUCKETS,
)
MCP_SERVER_OPERATION_DURATION: Final = Spec(
    names.METRIC_MCP_SERVER_OPERATION_DURATION,
    HISTOGRAM,
    names.UNIT_SECONDS,
    "MCP request or notification duration as observed on the receiver from the time it was received "
    "until the result or ack is sent.",
    names.MCP_DURATION_BUCKETS,
)
MCP_CLIENT_OPERATION_DURATION: Final = Spec(
    names.METRIC_MCP_CLIENT_OPERATION_DURATION,
    HISTOGRAM,
    names.UNIT_SECONDS,
    "The duration of the MCP request or notification as observed on the sender from the time it was "
    "sent until the response or ack is received.",
    names.MCP_DURATION_BUCKETS,
)
GEN_AI_OPERATION_DURATION: Final = Spec(
    names.METRIC_GEN_AI_OPERATION_DURATION,
    HISTOGRAM,
    names.UNIT_SECONDS,
    "GenAI operation duration.",
    names.GEN_AI_DURATION_BUCKETS,
)
GEN_AI_TOKEN_USAGE: Final = Spec(
    names.METRIC_GEN_AI_TOKEN_USAGE,
    HISTOGRAM,
    names.UNIT_TOKEN,
    "Number of input and output tokens used.",
    names.GEN_AI_TOKEN_BUCKETS,
)
GEN_AI_TIME_TO_FIRST_CHUNK: Final = Spec(
    names.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK,
    HISTOGRAM,
    names.UNIT_SECONDS,
    "Time to receive the first chunk of a streamed response, from the request.",
    names.GEN_AI_DURATION_BUCKETS,
)
GEN_AI_TIME_PER_OUTPUT_CHUNK: Final = Spec(
    names.METRIC_GEN_AI_TIME_PER_OUTPUT_CHUNK,
    HISTOGRAM,
    names.UNIT_SECONDS,
    "Time per output chunk, recorded for each chunk received after the first one, measured as the time "
    "elapsed from the end of the previous chunk to the end of the current chunk.",
    names.GEN_AI_CHUNK_BUCKETS,
)
# semantic-conventions-genai #521 / #374 (model/gen-ai/metrics.yaml, token-metrics.yaml): emitted
# per OTEL_SEMCONV_STABILITY_OPT_IN (otel_sampling.records.provider_call); descriptions are the briefs.
GEN_AI_INFERENCE_DURATION: Final = Spec(
    names.METRIC_GEN_AI_INFERENCE_DURATION,
    HISTOGRAM,
    names.UNIT_SECONDS,
    "GenAI inference operation duration.",
    names.GEN_AI_DURATION_BUCKETS,
)
GEN_AI_INFERENCE_TIME_TO_FIRST_CHUNK: Final = Spec(
    names.METRIC_GEN_AI_INFERENCE_TIME_TO_FIRST_CHUNK,
    HISTOGRAM,
    names.UNIT_SECONDS,
    "Time to receive the first chunk, measured from when the client issues the generation request to when "
    "the first chunk is received in the response stream.",
    names.GEN_AI_DURATION_BUCKETS,
)
GEN_AI_INFERENCE_TIME_PER_OUTPUT_CHUNK: Final = Spec(
    names.METRIC_GEN_AI_INFERENCE_TIME_PER_OUTPUT_CHUNK,
    HISTOGRAM,
    names.UNIT_SECONDS,
    "Time per output chunk, recorded for each chunk received after the first one, measured as the time "
    "elapsed from the end of the previous chunk to the end of the current chunk.",
    names.GEN_AI_CHUNK_BUCKETS,
)
GEN_AI_USAGE_INPUT_TOKENS: Final = Spec(
    names.METRIC_GEN_AI_USAGE_INPUT_TOKENS,
    COUNTER,
    names.UNIT_TOKEN,
    "The number of input (prompt) tokens used, including cached tokens.",
)
GEN_AI_USAGE_OUTPUT_TOKENS: Final = Spec(
    names.METRIC_GEN_AI_USAGE_OUTPUT_TOKENS,
    COUNTER,
    names.UNIT_TOKEN,
    "The number of output (completion) tokens used, including reasoning tokens.",
)
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = Spec(
    names.METRIC_GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    COUNTER,
    names.UNIT_TOKEN,
    "The number of input tokens served from a provider-managed cache.",
)
GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS: Final = Spec(
    names.METRIC_GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
    COUNTER,
    names.UNIT_TOKEN,
    "The number of input tokens written to a provider-managed cache.",
)
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = Spec(
    names.METRIC_GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
    COUNTER,
    names.UNIT_TOKEN,
    "The number of output tokens used for reasoning (e.g. chain-of-thought, extended thinking).",
)
GEN_AI_OPERATION_INPUT_TOKENS: Final = Spec(
    names.METRIC_GEN_AI_OPERATION_INPUT_TOKENS,
    HISTOGRAM,
    names.UNIT_TOKEN,
    "The number of input (prompt) tokens used per inference operation.",
    names.GEN_AI_TOKEN_BUCKETS,
)
GEN_AI_OPERATION_OUTPUT_TOKENS: Final = Spec(
    names.METRIC_GEN_AI_OPERATION_OUTPUT_TOKENS,
    HISTOGRAM,
    names.UNIT_TOKEN,
    "The number of output (completion) tokens used per inference operation.",
    names.GEN_AI_TOKEN_BUCKETS,
)
CLIENT_COST: Final = Spec(
    names.METRIC_CLIENT_COST,
    COUNTER,
    names.UNIT_USD,
    "Cost of provider calls in USD, from the policy file's price table.",
)
CLIENT_UNPRICED: Final = Spec(
    names.METRIC_CLIENT_UNPRICED,
    COUNTER,
    names.UNIT_CALL,
    "Provider calls that reported token counts but had no price (neither the policy's table nor the price "
    "source knows the model): they carry no cost.",
)
CLIENT_VIOLATIONS: Final = Spec(
    names.METRIC_CLIENT_VIOLATIONS,
    COUNTER,
    names.UNIT_VIOLATION,
    "Violations of provider calls outside a sampling request against their policy scope "
    "(model_outside_policy, boundary_crossed).",
)
CLIENT_USAGE_INPUT_TOKENS: Final = Spec(
    names.METRIC_CLIENT_USAGE_INPUT_TOKENS,
    COUNTER,
    names.UNIT_TOKEN,
    "Input tokens of provider calls, cached ones included, where the GenAI usage counters are not emitted.",
)
CLIENT_USAGE_CACHE_READ_INPUT_TOKENS: Final = Spec(
    names.METRIC_CLIENT_USAGE_CACHE_READ_INPUT_TOKENS,
    COUNTER,
    names.UNIT_TOKEN,
    "Input tokens served from the provider's prompt cache, where the GenAI usage counters are not emitted.",
)
SAMPLING_STALLS: Final = Spec(
    names.METRIC_SAMPLING_STALLS,
    COUNTER,
    names.UNIT_REQUEST,
    "Sampling requests pending longer than the stall threshold.",
)
SAMPLING_VIOLATIONS: Final = Spec(
    names.METRIC_SAMPLING_VIOLATIONS,
    COUNTER,
    names.UNIT_VIOLATION,
    "Sampling policy violations, by kind.",
)
SAMPLING_GRANTS: Final = Spec(
    names.METRIC_SAMPLING_GRANTS,
    COUNTER,
    names.UNIT_GRANT,
    "Budget grants recorded by the host (otel_sampling.record_grant).",
)
SAMPLING_GRANTED_USD: Final = Spec(
    names.METRIC_SAMPLING_GRANTED_USD,
    COUNTER,
    names.UNIT_USD,
    "USD added to sampling budgets by grants.",
)
SAMPLING_SERVER_REQUESTS: Final = Spec(
    names.METRIC_SAMPLING_SERVER_REQUESTS,
    COUNTER,
    names.UNIT_REQUEST,
    "Sampling requests an MCP server sent, by the ending the server saw.",
)
SAMPLING_REJECTED: Final = Spec(
    names.METRIC_SAMPLING_REJECTED,
    COUNTER,
    names.UNIT_REQUEST,
    "Sampling requests the MCP SDK rejected as invalid before the host's callback ran, by server and reason.",
)
DEGRADATION_TRANSITIONS: Final = Spec(
    names.METRIC_DEGRADATION_TRANSITIONS,
    COUNTER,
    names.UNIT_TRANSITION,
    "Named degradations entered and exited, by component and direction.",
)
SILENT_INCIDENTS: Final = Spec(
    names.METRIC_SILENT_INCIDENTS,
    COUNTER,
    names.UNIT_INCIDENT,
    "Runs that ended degraded, or with a substitution outside policy, without telling the person.",
)
AGENT_RUNS: Final = Spec(
    names.METRIC_AGENT_RUNS,
    COUNTER,
    names.UNIT_RUN,
    "Agent runs (tasks) ended, by name, mode, outcome and whether a degradation was disclosed.",
)
AGENT_RUN_COST: Final = Spec(
    names.METRIC_AGENT_RUN_COST,
    COUNTER,
    names.UNIT_USD,
    "Cost of the provider calls made inside agent runs, USD, by name, mode and outcome.",
)
AGENT_RUN_DURATION: Final = Spec(
    names.METRIC_AGENT_RUN_DURATION,
    HISTOGRAM,
    names.UNIT_SECONDS,
    "Duration of agent runs, by name, mode and outcome.",
    names.RUN_DURATION_BUCKETS,
)
AGENT_RUN_STEPS: Final = Spec(
    names.METRIC_AGENT_RUN_STEPS,
    HISTOGRAM,
    names.UNIT_CALL,
    "Provider calls made inside agent runs (steps per run), by name, mode and outcome.",
    names.RUN_STEPS_BUCKETS,
)
AGENT_RUN_TOKENS: Final = Spec(
    names.METRIC_AGENT_RUN_TOKENS,
    HISTOGRAM,
    names.UNIT_TOKEN,
    "Tokens of the provider calls made inside agent runs, per run, by token type, name, mode and outcome.",
    names.GEN_AI_TOKEN_BUCKETS,
)
AGENT_RUN_REPEATED_TOOL_CALLS: Final = Spec(
    names.METRIC_AGENT_RUN_REPEATED_TOOL_CALLS,
    COUNTER,
    names.UNIT_CALL,
    "Tool calls the host sent again within one run with the same tool and arguments, by mode, tool and "
    "whether the policy names the tool as having side effects.",
)
EVALUATION_SCORE: Final = Spec(
    names.METRIC_EVALUATION_SCORE,
    HISTOGRAM,
    names.UNIT_ONE,
    "Evaluation scores the host recorded, by evaluation name and mode.",
    names.EVALUATION_SCORE_BUCKETS,
)
CACHE_LOOKUPS: Final = Spec(
    names.METRIC_CACHE_LOOKUPS,
    COUNTER,
    names.UNIT_LOOKUP,
    "Answer-cache lookups the host reported, by result and the provenance of the entry.",
)
DRILLS: Final = Spec(
    names.METRIC_DRILLS,
    COUNTER,
    names.UNIT_DRILL,
    "Drills that ended, by drill name and outcome.",
)
DEGRADATION_ACTIVE: Final = Spec(
    names.METRIC_DEGRADATION_ACTIVE,
    GAUGE,
    names.UNIT_ONE,
    "Named degradations active now, by component and reason.",
)
DEGRADATION_EXPIRED: Final = Spec(
    names.METRIC_DEGRADATION_EXPIRED,
    GAUGE,
    names.UNIT_ONE,
    "Named degradations still active past their expires_at, by component and reason.",
)
SAMPLING_IN_FLIGHT: Final = Spec(
    names.METRIC_SAMPLING_IN_FLIGHT,
    UP_DOWN_COUNTER,
    names.UNIT_REQUEST,
    "Sampling requests the host is handling now.",
)
CLIENT_TOOL_CALLS: Final = Spec(
    names.METRIC_CLIENT_TOOL_CALLS,
    COUNTER,
    names.UNIT_TOOL_CALL,
    "Tool calls the model made in provider answers to requests that offered tools, by mode and served model.",
)
CLIENT_TOOL_CALL_ERRORS: Final = Spec(
    names.METRIC_CLIENT_TOOL_CALL_ERRORS,
    COUNTER,
    names.UNIT_TOOL_CALL,
    "Tool calls the model got wrong: a tool not offered, or arguments that are not JSON or miss the tool's "
    "input schema.",
)
CLIENT_STRUCTURED_OUTPUT_REQUESTS: Final = Spec(
    names.METRIC_CLIENT_STRUCTURED_OUTPUT_REQUESTS,
    COUNTER,
    names.UNIT_CALL,
    "Provider calls that asked for structured output and whose answer was judged.",
)
CLIENT_STRUCTURED_OUTPUT_FAILURES: Final = Spec(
    names.METRIC_CLIENT_STRUCTURED_OUTPUT_FAILURES,
    COUNTER,
    names.UNIT_CALL,
    "Provider calls that asked for structured output and got an answer that is not JSON or misses the schema.",
)
CLIENT_TRUNCATIONS: Final = Spec(
    names.METRIC_CLIENT_TRUNCATIONS,
    COUNTER,
    names.UNIT_CALL,
    "Provider calls cut by the output token limit, or refused for a context that does not fit the window.",
)
CLIENT_CONTEXT_UTILIZATION: Final = Spec(
    names.METRIC_CLIENT_CONTEXT_UTILIZATION,
    HISTOGRAM,
    names.UNIT_ONE,
    "Input tokens of a provider call over the served model's context window (where the price source knows it).",
    names.CONTEXT_UTILIZATION_BUCKETS,
)
HOST_TOOL_CALLS: Final = Spec(
    names.METRIC_HOST_TOOL_CALLS,
    COUNTER,
    names.UNIT_TOOL_CALL,
    "MCP tools/call requests the host sent, by outcome and the mode of the run that sent them.",
)

#: Every instrument otel-sampling creates.
SPECS: Final = tuple(value for value in tuple(globals().values()) if isinstance(value, Spec))


Callback = Callable[[CallbackOptions], Iterable[Observation]]


def create(meter: metrics.Meter, spec: Spec, callbacks: Sequence[Callback] = ()) -> Any:
    """The instrument ``spec`` describes, on ``meter`` (observable kinds take ``callbacks``)."""
    if spec.kind == COUNTER:
        return meter.create_counter(spec.name, unit=spec.unit, description=spec.description)
    if spec.kind == HISTOGRAM:
        advisory = list(spec.buckets) if spec.buckets is not None else None
        return meter.create_histogram(
            spec.name, unit=spec.unit, description=spec.description, explicit_bucket_boundaries_advisory=advisory
        )
    if spec.kind == UP_DOWN_COUNTER:
        return meter.create_observable_up_down_counter(
            spec.name, callbacks=list(callbacks), unit=spec.unit, description=spec.description
        )
    return meter.create_observable_gauge(
        spec.name, callbacks=list(callbacks), unit=spec.unit, description=spec.description
    )


def recorded_in(span: trace.Span) -> Context:
    """The context to record the metric points of ``span``'s request, call or run in
    (``add(..., context=)`` / ``record(..., context=)``, OpenTelemetry metrics API).

    The SDK's exemplar filter (``OTEL_METRICS_EXEMPLAR_FILTER``, default ``trace_based``) reads the
    span of the context a measurement is recorded in. Ours are recorded once the span stopped being
    current (after the callback or the SDK call returned) or on the watchdog thread (stalls), where
    the current span is the parent or none: recorded in this context, an exemplar names ``span``.
    Build it once per ending, for all of its points.

    The context holds a ``NonRecordingSpan`` of ``span``'s own span context: the exemplar filter and
    reservoir read only that (its trace flags, trace and span ids), and read it from a
    ``NonRecordingSpan`` without the SDK span's two Python frames per read, twice per point. A span
    whose context is invalid (a no-op tracer's) is put there itself, as the SDK reads it (no ids).
    """
    span_context = span.get_span_context()
    return trace.set_span_in_context(trace.NonRecordingSpan(span_context) if span_context.is_valid else span, Context())


class Instruments:
    """Tracer, meter, metric instruments and bounded label sets for one instrumentor.

    Args:
        settings: the frozen settings (policy, label caps).
        tracer_provider: defaults to the global tracer provider.
        meter_provider: defaults to the global meter provider.
        logger_provider: for the content-capture events; defaults to the global logger provider.
        in_flight: a function ``(meter_provider, meter) -> InFlight`` giving the shared
            ``otel_sampling.sampling.in_flight`` counts (the instrumentors pass
            :func:`otel_sampling.state.in_flight_store`); by default a store of this set's own.
    """

    def __init__(
        self,
        settings: Settings,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        logger_provider: LoggerProvider | None = None,
        in_flight: Callable[[metrics.MeterProvider | None, metrics.Meter], InFlight] | None = None,
    ) -> None:
        self.settings = settings
        self.tracer = trace.get_tracer(names.SCOPE_NAME, __version__, tracer_provider, schema_url=names.SCHEMA_URL)
        # Events (GenAI content capture) are log records; the global logger provider by default.
        self.event_logger = get_logger(names.SCOPE_NAME, __version__, logger_provider, schema_url=names.SCHEMA_URL)
        # Its Logger.enabled (None where the API has none: every record is emitted), looked up once
        # and asked per record: a logger provider set later (behind the API's proxy) changes its answer.
        self.event_logger_enabled: Callable[..., bool] | None = getattr(self.event_logger, "enabled", None)
        meter = metrics.get_meter(names.SCOPE_NAME, __version__, meter_provider, schema_url=names.SCHEMA_URL)
        limit = settings.label_value_limit
        self.server_label = BoundedLabel(limit)
        self.model_label = BoundedLabel(limit)
        self.error_type_label = BoundedLabel(limit)  # provider error bodies choose their own type names
        # call_points' answers for labels admitted already (a label admitted stays admitted and a
        # full set never admits another, so an answer never changes); at most MAX_CACHED_CALL_POINTS.
        # Request models, server addresses and finish reasons met already that are span attribute values as they are
        # (printable, within settings.attribute_max_length): the provider calls' (records/provider_call.py).
        self.fitting_texts: set[str] = set()
        self._call_points: dict[tuple[str, str, str, str | None, str, str], CallPoints] = {}

        self.sampling_requests = create(meter, SAMPLING_REQUESTS)
        self.sampling_duration = create(meter, SAMPLING_DURATION)
        self.sampling_in_flight = (in_flight or _own_in_flight)(meter_provider, meter)
        # The inference instruments of the names OTEL_SEMCONV_STABILITY_OPT_IN selects (v1.41's, the
        # newest, or both); an instrument never created exports nothing.
        self.inference = InferenceInstruments(meter, settings.gen_ai_semconv)
        self.cost = create(meter, CLIENT_COST)
        self.unpriced = create(meter, CLIENT_UNPRICED)
        self.client_violations = create(meter, CLIENT_VIOLATIONS)
        self.scope_label = BoundedLabel(limit)  # otel_sampling.policy.scope (policy tables, and run names)
        self.signals = SignalInstruments(meter)
        self.sampling_stalls = create(meter, SAMPLING_STALLS)
        self.sampling_violations = create(meter, SAMPLING_VIOLATIONS)
        self.sampling_grants = create(meter, SAMPLING_GRANTS)
        self.sampling_granted_usd = create(meter, SAMPLING_GRANTED_USD)
        self.sampling_server_requests = create(meter, SAMPLING_SERVER_REQUESTS)
        self.sampling_rejected = create(meter, SAMPLING_REJECTED)
        self.rejection_reason_label = BoundedLabel(limit)
        self.repeated_tool_calls = create(meter, AGENT_RUN_REPEATED_TOOL_CALLS)
        self.tool_label = BoundedLabel(limit)  # tool names come from the servers' tools/list
        self.mcp_server_duration = create(meter, MCP_SERVER_OPERATION_DURATION)  # the host's sampling requests
        self.mcp_client_duration = create(meter, MCP_CLIENT_OPERATION_DURATION)  # the MCP server's

    def call_points(
        self,
        provider: str,
        request_model: object,
        response_model: object,
        server_address: object,
        error_type: str | None,
        mode: str,
        ending: str,
    ) -> CallPoints:
        """The attributes of every point of one provider call, every label from outside bounded
        (:class:`BoundedLabel`), with the ones derived from them (:class:`CallPoints`):
        ``gen_ai.operation.name`` (``chat``), ``gen_ai.provider.name``, ``gen_ai.request.model``,
        ``gen_ai.response.model``, ``server.address`` (when given), ``error.type`` (when the call
        failed), ``degradation.mode``. The dicts may be shared between calls: never change them
        (build new ones from them)."""
        # Plain strings compare as themselves: the answer for them may be kept (a label admitted
        # stays admitted and a full set admits no other, so it never changes).
        key: tuple[str, str, str, str | None, str, str] | None = None
        if (
            error_type is None
            and type(request_model) is str
            and type(response_model) is str
            and (server_address is None or type(server_address) is str)
        ):
            key = (provider, request_model, response_model, server_address, mode, ending)
            cached = self._call_points.get(key)
            if cached is not None:
                return cached
        # A value admitted already is its own label (BoundedLabel.value's first test, without its call).
        models = self.model_label
        seen = models._seen
        servers = self.server_label
        attributes = {
            names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT,
            names.GEN_AI_PROVIDER_NAME: provider,
            names.GEN_AI_REQUEST_MODEL: request_model
            if type(request_model) is str and request_model in seen
            else models.value(request_model),
            names.GEN_AI_RESPONSE_MODEL: response_model
            if type(response_model) is str and response_model in seen
            else models.value(response_model),
        }
        if server_address:
            attributes[names.SERVER_ADDRESS] = (
                server_address
                if type(server_address) is str and server_address in servers._seen
                else servers.value(server_address)
            )
        if error_type is not None:
            attributes[names.ERROR_TYPE] = self.error_type_label.value(error_type)
        attributes[names.DEGRADATION_MODE] = mode
        points = call_points_of(attributes, ending)
        # Only labels admitted already (bounded in number and length) are kept, and only so many.
        if (
            key is not None
            and len(self._call_points) < MAX_CACHED_CALL_POINTS
            and request_model in seen
            and response_model in seen
            and (server_address is None or server_address in servers._seen)
        ):
            self._call_points[key] = points
        return points


MAX_CACHED_CALL_POINTS: Final = 512  # Instruments.call_points' kept answers


class CallPoints(NamedTuple):
    """The attributes of one provider call's points (:meth:`Instruments.call_points`).

    ``attributes``: every inference point's; ``with_ending``:
    the duration's, with ``otel_sampling.ending``; ``input_tokens`` / ``output_tokens``: v1.41's
    ``gen_ai.client.token.usage`` points', with ``gen_ai.token.type``; ``labels``: the cost and
    signal points' (``gen_ai.provider.name``, ``gen_ai.response.model``, ``degradation.mode``).
    """

    attributes: dict[str, str]
    with_ending: dict[str, str]
    input_tokens: dict[str, str]
    output_tokens: dict[str, str]
    labels: dict[str, str]


def call_points_of(attributes: dict[str, str], ending: str, drill: Mapping[str, str] | None = None) -> CallPoints:
    """:class:`CallPoints` of a call's metric ``attributes`` (:attr:`CallPoints.attributes`)
    and its ``ending``; ``drill``: the drill labels every point adds (:func:`otel_sampling.state.drill_label`)."""
    if drill:
        attributes = {**attributes, **drill}
    return CallPoints(
        attributes,
        {**attributes, names.ENDING: ending},
        {**attributes, names.GEN_AI_TOKEN_TYPE: names.TOKEN_TYPE_INPUT},
        {**attributes, names.GEN_AI_TOKEN_TYPE: names.TOKEN_TYPE_OUTPUT},
        {
            names.GEN_AI_PROVIDER_NAME: attributes[names.GEN_AI_PROVIDER_NAME],
            names.GEN_AI_RESPONSE_MODEL: attributes[names.GEN_AI_RESPONSE_MODEL],
            names.DEGRADATION_MODE: attributes[names.DEGRADATION_MODE],
            **(drill or {}),
        },
    )


class SignalInstruments:
    """What the fallback breaks (``records/provider_call.py``): the tool calls and structured output of
    provider calls, their truncations and context utilization, and the host's MCP tool calls."""

    __slots__ = (
        "tool_calls",
        "tool_call_errors",
        "structured_requests",
        "structured_failures",
        "truncations",
        "context_utilization",
        "host_tool_calls",
    )

    def __init__(self, meter: metrics.Meter) -> None:
        self.tool_calls = create(meter, CLIENT_TOOL_CALLS)
        self.tool_call_errors = create(meter, CLIENT_TOOL_CALL_ERRORS)
        self.structured_requests = create(meter, CLIENT_STRUCTURED_OUTPUT_REQUESTS)
        self.structured_failures = create(meter, CLIENT_STRUCTURED_OUTPUT_FAILURES)
        self.truncations = create(meter, CLIENT_TRUNCATIONS)
        self.context_utilization = create(meter, CLIENT_CONTEXT_UTILIZATION)
        self.host_tool_calls = create(meter, HOST_TOOL_CALLS)


class InferenceInstruments:
    """The GenAI inference instruments of one :class:`~otel_sampling.semconv_mode.Emission`:
    v1.41's when ``emission.old`` (``operation_duration``, ``token_usage``, ``time_to_first_chunk``,
    ``operation_time_per_output_chunk``), the #521 / #374 ones when ``emission.new``, and ours of the
    prompt-cache read share (``share_input``, ``share_cache_read``) when not ``emission.new``; the
    others are None."""

    def __init__(self, meter: metrics.Meter, emission: Emission) -> None:
        self.emission = emission
        old, new = emission.old, emission.new
        self.operation_duration = create(meter, GEN_AI_OPERATION_DURATION) if old else None
        self.token_usage = create(meter, GEN_AI_TOKEN_USAGE) if old else None
        self.time_to_first_chunk = create(meter, GEN_AI_TIME_TO_FIRST_CHUNK) if old else None
        self.operation_time_per_output_chunk = create(meter, GEN_AI_TIME_PER_OUTPUT_CHUNK) if old else None
        self.inference_duration = create(meter, GEN_AI_INFERENCE_DURATION) if new else None
        self.inference_time_to_first_chunk = create(meter, GEN_AI_INFERENCE_TIME_TO_FIRST_CHUNK) if new else None
        self.time_per_output_chunk = create(meter, GEN_AI_INFERENCE_TIME_PER_OUTPUT_CHUNK) if new else None
        self.usage_input = create(meter, GEN_AI_USAGE_INPUT_TOKENS) if new else None
        self.usage_output = create(meter, GEN_AI_USAGE_OUTPUT_TOKENS) if new else None
        self.usage_cache_read = create(meter, GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS) if new else None
        self.usage_cache_write = create(meter, GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS) if new else None
        self.usage_reasoning = create(meter, GEN_AI_USAGE_REASONING_OUTPUT_TOKENS) if new else None
        self.operation_input_tokens = create(meter, GEN_AI_OPERATION_INPUT_TOKENS) if new else None
        self.operation_output_tokens = create(meter, GEN_AI_OPERATION_OUTPUT_TOKENS) if new else None
        self.share_input = None if new else create(meter, CLIENT_USAGE_INPUT_TOKENS)
        self.share_cache_read = None if new else create(meter, CLIENT_USAGE_CACHE_READ_INPUT_TOKENS)


class InFlight:
    """``otel_sampling.sampling.in_flight``: an asynchronous UpDownCounter over counts kept here.

    ``add(amount, attributes)`` as on a synchronous UpDownCounter; the SDK reads the counts at
    collection. The exported points are those of a synchronous UpDownCounter (a non-monotonic
    cumulative sum per attribute set, 0 once every request ended), but a request costs two dict
    updates instead of two SDK measurements (each one cleans and hashes its attributes). Memory:
    one count per attribute set, bounded like the ``mcp.server.name`` label.
    """

    def __init__(self) -> None:
        self._counts: dict[tuple[tuple[str, str], ...], int] = {}
        self._lock = locks.new()

    def add(self, amount: int, attributes: Mapping[str, str]) -> None:
        key = tuple(attributes.items())
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + amount

    def forget(self) -> None:
        """Every count 0 (a forked child: the requests in flight are the parent's)."""
        with self._lock:
            self._counts = dict.fromkeys(self._counts, 0)

    def observe(self, options: CallbackOptions) -> Iterable[Observation]:
        with self._lock:
            counts = list(self._counts.items())
        return [Observation(count, dict(key)) for key, count in counts]


def _own_in_flight(meter_provider: metrics.MeterProvider | None, meter: metrics.Meter) -> InFlight:
    store = InFlight()
    create(meter, SAMPLING_IN_FLIGHT, [store.observe])
    return store


Counts = dict[tuple[str, str], int]


class ApiInstruments:
    """Tracer, bounded label sets and the instruments the public API records into.

    Args:
        settings: label caps and the policy (cache provenance reads its identity).
        degradation_counts: ``() -> (active, expired)``, each ``(component, reason) -> count``
            (:func:`otel_sampling.state.degradation_counts`), read by the two gauges.
        tracer_provider: defaults to the global tracer provider.
        meter_provider: defaults to the global meter provider.
        logger_provider: for the evaluation events; defaults to the global logger provider.
    """

    def __init__(
        self,
        settings: Settings,
        degradation_counts: Callable[[], tuple[Counts, Counts]],
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        logger_provider: LoggerProvider | None = None,
    ) -> None:
        self._degradation_counts = degradation_counts
        self.settings = settings
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.logger_provider = logger_provider
        self.event_logger = get_logger(names.SCOPE_NAME, __version__, logger_provider, schema_url=names.SCHEMA_URL)
        self.tracer = trace.get_tracer(names.SCOPE_NAME, __version__, tracer_provider, schema_url=names.SCHEMA_URL)
        meter = metrics.get_meter(names.SCOPE_NAME, __version__, meter_provider, schema_url=names.SCHEMA_URL)
        limit = settings.label_value_limit
        # Host code names these; a host that puts ids in them must not grow cardinality.
        self.component_label = BoundedLabel(limit)
        self.reason_label = BoundedLabel(limit, always=names.DEGRADATION_REASONS)
        self.run_name_label = BoundedLabel(limit)
        self.outcome_label = BoundedLabel(limit)
        self.evaluation_name_label = BoundedLabel(limit)

        create(meter, DEGRADATION_ACTIVE, [self._observe_active])
        create(meter, DEGRADATION_EXPIRED, [self._observe_expired])
        self.degradation_transitions = create(meter, DEGRADATION_TRANSITIONS)
        self.silent_incidents = create(meter, SILENT_INCIDENTS)
        self.agent_runs = create(meter, AGENT_RUNS)
        self.run_cost = create(meter, AGENT_RUN_COST)
        self.run_duration = create(meter, AGENT_RUN_DURATION)
        self.run_steps = create(meter, AGENT_RUN_STEPS)
        self.run_tokens = create(meter, AGENT_RUN_TOKENS)
        self.evaluation_score = create(meter, EVALUATION_SCORE)
        self.cache_lookups = create(meter, CACHE_LOOKUPS)
        self.drills = create(meter, DRILLS)
        self.drill_name_label = BoundedLabel(limit)

    def _observe(self, expired: bool) -> Iterable[Observation]:

        counts = self._degradation_counts()[1 if expired else 0]
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


# ------------------------------------ bounded label values, and outside values made fit for a span
# Bounded metric label values and capped span attribute strings.
#
# Label values that come from outside (server names, model names, hints) are attacker-controlled
# from the host's point of view: a hostile MCP server can send a new model hint per request. Each
# such label gets a :class:`BoundedLabel` that admits the first ``limit`` distinct values and maps
# every later one to ``_OTHER`` (``names.OVERFLOW_LABEL``), so metric cardinality has a fixed ceiling.

# Longest label value kept; longer ones are cut (a 1 MB server name must not reach a metric).
LABEL_MAX_LENGTH = 128
INT64 = range(-(2**63), 2**63)  # OTLP AnyValue.int_value: the ints an OTLP exporter can carry


def otlp_int(value: object) -> int | None:
    """``value`` when an OTLP exporter can carry it as an int attribute, else None (also for a
    bool or a non-int). JSON has no integer bound, but one attribute beyond int64 fails every OTLP
    export of the span it is on."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value in INT64 else None


def finite(number: float) -> bool:
    """``math.isfinite`` for a number already checked to be an int or a float: False, not
    ``OverflowError``, for an int beyond float range (host APIs raise ValueError for it)."""
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def clean(value: object, max_length: int) -> str:
    """Return ``value`` as a printable string of at most ``max_length`` characters.

    Every character Python does not consider printable is dropped: C0 and C1 controls, format
    characters such as bidirectional overrides, line and paragraph separators, and lone
    surrogates (invalid UTF-8 on the wire). Nothing else is changed, so the value exports cleanly.
    """
    text = value if isinstance(value, str) else str(value)
    if len(text) > max_length:
        text = text[:max_length]
    if not text.isprintable():  # the common case is printable: one C-level scan, no copy
        text = "".join(ch for ch in text if ch.isprintable())
    return text


def clean_texts(values: Mapping[str, object], max_length: int) -> dict[str, str | list[str]]:
    """Every value from outside of one span update, each made fit for the span in one pass.

    A list or tuple becomes a list of :func:`clean` strings; any other value becomes one
    :func:`clean` string. ``None``, ``""`` and an empty list or tuple are left out, so a caller
    passes every optional value as it is.
    """
    cleaned: dict[str, str | list[str]] = {}
    for key, value in values.items():
        if value is None:
            continue
        if type(value) is str:
            if len(value) <= max_length and value.isprintable():  # the common case: fit already, no copy
                if value:
                    cleaned[key] = value
            elif value:
                cleaned[key] = clean(value, max_length)
        elif isinstance(value, (list, tuple)):
            if value:
                cleaned[key] = [clean(item, max_length) for item in value]
        elif value != "":
            cleaned[key] = clean(value, max_length)
    return cleaned


def bound(values: Iterable[tuple[str, BoundedLabel, object]]) -> dict[str, str]:
    """The metric attributes ``{key: label.value(raw)}`` of one point, every label bounded in one call."""
    return {key: label.value(raw) for key, label, raw in values}


def host_text(what: str, value: object) -> str:
    """A string the host passes to name something stamped on every span (a degradation's
    component, a drill's name): :func:`clean` at ``LABEL_MAX_LENGTH``.

    Raises:
        TypeError: ``value`` is not a string (the message names ``what``).
        ValueError: nothing printable but blanks is left of it.
    """
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__}")
    text = clean(value, LABEL_MAX_LENGTH)
    if not text.strip():
        raise ValueError(f"{what} must not be empty")
    return text


class BoundedLabel:
    """The set of values one metric label may take: the first ``limit`` seen, then ``_OTHER``.

    Args:
        limit: how many distinct values are admitted (>= 1); default from
            ``OTEL_SAMPLING_LABEL_VALUE_LIMIT`` via :class:`otel_sampling.settings.Settings`.
        always: a fixed vocabulary that always passes and takes no slot (host-named values
            mixed with ours must not push ours into ``_OTHER``).

    ``value(None)``, ``value("")`` and a value with nothing printable give ``_unknown``.
    Thread-safe; memory is bounded by ``limit`` values of at most ``LABEL_MAX_LENGTH`` characters.
    """

    __slots__ = ("_limit", "_seen", "_lock", "_always")

    def __init__(self, limit: int, always: Iterable[str] = ()) -> None:
        self._limit = max(1, limit)
        self._seen: set[str] = set()
        self._lock = locks.new()
        self._always = frozenset(always)

    def value(self, raw: object) -> str:
        if type(raw) is str and raw in self._seen:  # hot path: a value admitted already (never "")
            return raw
        if raw is None or raw == "":
            return UNKNOWN_LABEL
        if isinstance(raw, str) and (raw in self._seen or raw in self._always):  # already clean
            return raw
        text = clean(raw, LABEL_MAX_LENGTH)
        if not text:  # nothing printable (controls, lone surrogates): an empty label is no label
            return UNKNOWN_LABEL
        if text in self._seen:
            return text
        with self._lock:
            if len(self._seen) < self._limit:
                self._seen.add(text)
                return text
        return OVERFLOW_LABEL


# -------------------------------------------------------------- the MCP operation duration of a sampling request
# The operation duration (:func:`operation_attributes`, :func:`record_operation_duration`):
# ``mcp.server.operation.duration`` on the host (the receiver of the request) and
# ``mcp.client.operation.duration`` in the MCP server's process (its sender), as
# semantic-conventions-genai ``model/mcp/metrics.yaml`` defines them: ``mcp.method.name``;
# ``mcp.protocol.version`` and ``network.transport`` when known; ``error.type`` when the request
# failed and ``rpc.response.status_code`` when its answer carried an error code (both bounded like
# every label that comes from outside); the MCP semconv buckets (``names.MCP_DURATION_BUCKETS``).
# Not ``gen_ai.tool.name``: a sampling request is not an operation on a tool, and the conventions
# ask for it only then.
_VERSION_MAX_LENGTH = 64  # a protocol version is a date ("2026-07-28")


def operation_attributes(protocol_version: str | None, transport: str | None = None) -> dict[str, str]:
    """The operation duration's attributes known when the request starts."""
    attributes = {names.MCP_METHOD_NAME: names.METHOD_SAMPLING}
    if isinstance(protocol_version, str) and protocol_version:
        attributes[names.MCP_PROTOCOL_VERSION] = clean(protocol_version, _VERSION_MAX_LENGTH)
    if transport:
        attributes[names.NETWORK_TRANSPORT] = transport
    return attributes


def record_operation_duration(
    histogram: Any,
    duration_s: float,
    started: dict[str, str],
    error_type: str | None,
    status_code: str | None,
    error_label: BoundedLabel,
    context: Context,
) -> None:
    """One point of ``histogram`` (seconds) for a request that started with ``started`` and ended so."""
    labelled = ((names.ERROR_TYPE, error_type), (names.RPC_RESPONSE_STATUS_CODE, status_code))
    attributes = {**started, **bound([(key, error_label, raw) for key, raw in labelled if raw is not None])}
    histogram.record(duration_s, attributes, context=context)
