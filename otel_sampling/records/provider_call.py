"""One provider SDK call: owns its GenAI inference span and metric points.

Span: ``chat {gen_ai.request.model}``, kind CLIENT (GenAI semantic conventions, inference span).
Metrics: ``gen_ai.client.operation.duration`` (with the call's ``otel_sampling.ending``),
``gen_ai.client.token.usage`` (input, output, cache_read, cache_creation),
``gen_ai.client.operation.time_to_first_chunk`` (streams) and ``gen_ai.client.cost.usd`` (when
the policy prices the served model). When the call runs inside a host's sampling callback, the
sampling record is told the models, usage and cost it saw. Every method is called from guarded
wrapper code and ends the span at most once.

Everything here is provider-independent: an SDK module only turns its responses into
:class:`Response` and its exceptions into :class:`Failure`.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, NamedTuple

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_sampling import automatic, names, runs
from otel_sampling.content import NO_CAPTURE, CaptureMode, Content
from otel_sampling.labels import clean, otlp_int
from otel_sampling.metrics import Instruments
from otel_sampling.records.sampling import current_sampling
from otel_sampling.rules import cost, substitution
from otel_sampling.rules import endings as classify


class Usage(NamedTuple):
    """Token counts in semantic-convention terms: ``input_tokens`` includes cache reads and writes."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class Response(NamedTuple):
    """What a finished call reported: served model, response id, finish reasons, usage.

    ``provider_fallback``: the provider served the request with another model server-side
    (anthropic's ``fallback`` content block / ``fallback_message`` iteration). ``output``: the
    output messages in the GenAI semconv shape, only filled when content capture is on.
    ``error_type``: the answer itself reports a failure, without an exception (openai's Responses
    ``status="failed"``, or its ``error`` / ``response.failed`` stream events): the call ends with
    that ``error.type``.
    """

    model: str | None
    response_id: str | None
    finish_reasons: tuple[str, ...]
    usage: Usage
    provider_fallback: bool = False
    output: list[Any] | None = None
    error_type: str | None = None


class Failure(NamedTuple):
    """A failed call: low-cardinality ``error.type`` and its ending (``names.ENDINGS``)."""

    error_type: str
    ending: str


# Endings of failed provider calls (docs/telemetry.md "Provider call endings").
_UNAVAILABLE_ERROR_TYPES = frozenset({"overloaded_error", "rate_limit_error", "api_error", "server_error",
                                      "rate_limit_exceeded", "insufficient_quota"})
_TIMEOUT_ERROR_TYPES = frozenset({"timeout_error"})
_REFUSAL_FINISH_REASONS = frozenset({"refusal", "content_filter"})
MAX_FAILOVER_PARENTS = 1024  # parent spans whose failed models are remembered (oldest forgotten first)
MAX_FAILED_MODELS = 16  # failed models remembered per parent span
_unpriced = cost.UnpricedModels()


class FailoverTracker:
    """Which models failed under which parent span, to spot a failover (an error on one model,
    then a success on another, under the same parent). Bounded: at most ``MAX_FAILOVER_PARENTS``
    parents (least recently used forgotten first), ``MAX_FAILED_MODELS`` models each."""

    def __init__(self) -> None:
        self._failed: OrderedDict[tuple[int, int], set[str]] = OrderedDict()
        self._lock = threading.Lock()

    def observe(self, parent: tuple[int, int] | None, model: str | None, failed: bool) -> bool:
        """Record one ended call; True when it succeeded after another model failed under ``parent``."""
        if parent is None or not model:
            return False
        with self._lock:
            models = self._failed.get(parent)
            if failed:
                if models is None:
                    models = self._failed[parent] = set()
                    if len(self._failed) > MAX_FAILOVER_PARENTS:
                        self._failed.popitem(last=False)
                else:
                    self._failed.move_to_end(parent)
                if len(models) < MAX_FAILED_MODELS:
                    models.add(model)
                return False
            return bool(models and models - {model})


class ProviderCall:
    """Span and metrics of one inference call.

    Args:
        instruments: tracer, meter and label sets of the provider instrumentor.
        provider: ``gen_ai.provider.name`` (``anthropic``, ``openai``).
        request_model: ``gen_ai.request.model`` (None when not given).
        max_tokens: ``gen_ai.request.max_tokens`` when an int.
        stream: whether the response is streamed.
        server: ``(server.address, server.port)`` of the API endpoint, or None.
        capture: where content goes (:mod:`otel_sampling.content`); off by default.
        input_content: system instructions and input messages, only built when capture is on.
        failovers: the instrumentor's :class:`FailoverTracker` (None: failover outside a sampling
            callback is not detected).
        extra_attributes: further span attributes known at the start (openai's ``openai.api.type``);
            span only, never metric labels.
        compare_models: whether a served model other than ``request_model`` is a substitution or a
            fallback (False when ``request_model`` names a deployment, as on Azure OpenAI).
    """

    __slots__ = ("_instruments", "_provider", "_request_model", "_span", "_start", "_ended", "_attached",
                 "_server_address", "_sampling", "_first_chunk", "_stream", "_capture", "_input_content",
                 "_failovers", "_parent", "_compare_models")

    def __init__(
        self, instruments: Instruments, provider: str, request_model: str | None,
        max_tokens: Any, stream: bool, server: tuple[str, int | None] | None, *,
        capture: CaptureMode = NO_CAPTURE, input_content: Content | None = None,
        failovers: FailoverTracker | None = None, extra_attributes: Mapping[str, Any] | None = None,
        compare_models: bool = True,
    ) -> None:
        self._instruments = instruments
        self._provider = provider
        self._request_model = request_model if isinstance(request_model, str) else None
        self._first_chunk: float | None = None
        self._stream = stream
        self._ended = False
        self._attached: object | None = None
        self._server_address = server[0] if server else None
        self._capture = capture
        self._input_content = input_content
        self._failovers = failovers
        self._compare_models = compare_models
        parent = trace.get_current_span().get_span_context()
        self._parent = (parent.trace_id, parent.span_id) if parent.is_valid else None
        # The sampling request this call serves is the one current when it starts (a stream may
        # end inside another request's callback).
        self._sampling = current_sampling()
        max_length = instruments.settings.attribute_max_length
        model = clean(self._request_model, max_length) if self._request_model else None
        # The request model may come from a server's hint: cleaned and cut like any attribute.
        span = instruments.tracer.start_span(f"{names.OPERATION_CHAT} {model}" if model else names.OPERATION_CHAT,
                                             kind=SpanKind.CLIENT)
        self._span = span
        # Timed from the span's start (not before it), so that the time to first chunk and the
        # duration never exceed the span's own duration.
        self._start = time.perf_counter()
        if span.is_recording():
            attributes: dict[str, Any] = {
                names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT,
                names.GEN_AI_PROVIDER_NAME: provider,
            }
            if model:
                attributes[names.GEN_AI_REQUEST_MODEL] = model
            if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
                attributes[names.GEN_AI_REQUEST_MAX_TOKENS] = max_tokens
            if stream:
                attributes[names.GEN_AI_REQUEST_STREAM] = True
            if extra_attributes:
                attributes.update(extra_attributes)
            if server:
                attributes[names.SERVER_ADDRESS] = clean(server[0], max_length)
                if server[1] is not None:
                    attributes[names.SERVER_PORT] = server[1]
            span.set_attributes(attributes)

    def activate(self) -> None:
        """Make the span current, so spans the SDK itself starts (anthropic's own) become children."""
        self._attached = otel_context.attach(trace.set_span_in_context(self._span))

    def deactivate(self) -> None:
        if self._attached is not None:
            token, self._attached = self._attached, None
            otel_context.detach(token)  # type: ignore[arg-type]

    def first_chunk(self) -> None:
        """A stream delivered an event: the first call fixes the time to first chunk."""
        if self._first_chunk is None:
            self._first_chunk = time.perf_counter()

    def end(self, response: Response | None, error_type: str | None = None, ending: str | None = None) -> None:
        """End the call once.

        Args:
            response: what was seen (may be partial, None when nothing was).
            error_type: ``error.type`` when the call failed.
            ending: the ending (``names.ENDINGS``); by default :func:`ending_of`.

        A response that reports its own failure (``Response.error_type``) ends as that failure,
        unless ``error_type`` names another.
        """
        if self._ended:
            return
        self._ended = True
        if error_type is None and response is not None and response.error_type is not None:
            error_type, ending = response.error_type, None
        duration = time.perf_counter() - self._start
        response_model = response.model if response else None
        usage = response.usage if response else Usage()
        if ending is None:
            ending = ending_of(response, error_type)

        failed = error_type is not None
        reason = None
        usd = None
        stamped = automatic.stamped_reasons(self._span)  # read once: the mode and the span's reasons
        named = automatic.call_mode(stamped)  # named degradations and canary blocks
        try:
            failed_over = self._failovers is not None and self._failovers.observe(
                self._parent, self._request_model, failed)
            record = self._sampling
            automatic.observe_call(record, self._provider, self._server_address, self._request_model,
                                   response_model, failed)
            if record is not None:
                record.observe_provider_call(self._request_model, response_model, usage.input_tokens,
                                             usage.output_tokens, failed=failed)
                failed_over = failed_over or record.failed_over()
            reason = self._degradation_reason(response, failed, failed_over)
            mode = names.MODE_DEGRADED if reason else named
            usd = self._cost(response_model, usage)
            if usd is not None:
                if record is not None:
                    record.add_cost(usd)
                runs.add_cost(usd, span=self._span)
            self._record_metrics(duration, response_model, usage, mode, error_type, ending, usd)
        finally:  # the span ends even when a metric call fails
            self._end_span(response, usage, reason, stamped, error_type, ending, usd)

    def _degradation_reason(self, response: Response | None, failed: bool, failed_over: bool) -> str | None:
        """``names.DEGRADATION_REASONS`` value when this call ran degraded, else None."""
        if response is not None and response.provider_fallback:
            return names.REASON_PROVIDER_FALLBACK
        if failed_over and not failed:
            return names.REASON_FAILOVER
        served, requested = response.model if response else None, self._request_model
        if failed or not served or not requested or not self._compare_models or substitution.same_family(
                requested, served):
            return None
        # The provider served another model than asked for: permitted by the sampling server's
        # policy is a fallback, anything else a substitution.
        record = self._sampling
        permitted = record.permitted_models() if record is not None else None
        if permitted is not None and substitution.is_permitted(permitted, served):
            return names.REASON_FALLBACK
        return names.REASON_SUBSTITUTION

    def _cost(self, response_model: str | None, usage: Usage) -> float | None:
        if usage.input_tokens is None and usage.output_tokens is None:
            return None
        prices = self._instruments.settings.policy.prices
        if not prices:  # no price table (no policy): no model has a price, nothing to report
            return None
        price = cost.price_for(prices, response_model)
        if price is None:
            _unpriced.report(response_model)
            return None
        return cost.cost_usd(price, usage)

    def _end_span(self, response: Response | None, usage: Usage, reason: str | None, stamped: tuple[str, ...],
                  error_type: str | None, ending: str, usd: float | None) -> None:
        instruments = self._instruments
        span = self._span
        try:
            if span.is_recording():
                max_length = instruments.settings.attribute_max_length
                attributes: dict[str, Any] = {names.ENDING: ending}
                if reason:
                    attributes[names.DEGRADATION_MODE] = names.MODE_DEGRADED
                    attributes[names.DEGRADATION_REASON] = [reason, *(r for r in stamped if r != reason)]
                elif not stamped:
                    attributes[names.DEGRADATION_MODE] = names.MODE_PRIMARY
                if response is not None:
                    if response.model:
                        attributes[names.GEN_AI_RESPONSE_MODEL] = clean(response.model, max_length)
                    if response.response_id:
                        attributes[names.GEN_AI_RESPONSE_ID] = clean(response.response_id, max_length)
                    if response.finish_reasons:
                        reasons = [clean(r, max_length) for r in response.finish_reasons]
                        attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] = reasons
                for key, value in zip(_USAGE_ATTRIBUTES, usage, strict=True):
                    if value is not None and otlp_int(value) is not None:  # a hostile provider's counts can pass int64
                        attributes[key] = value
                if self._stream and self._first_chunk is not None:
                    attributes[names.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = self._first_chunk - self._start
                if usd is not None:
                    attributes[names.COST_USD] = usd
                if error_type is not None:
                    attributes[names.ERROR_TYPE] = clean(error_type, max_length)
                    span.set_status(Status(StatusCode.ERROR))
                span.set_attributes(attributes)
            if self._capture.enabled:
                self._capture_content(span, response)
        finally:
            span.end()

    def _capture_content(self, span: trace.Span, response: Response | None) -> None:
        given = self._input_content or Content()
        content = given._replace(output_messages=response.output if response is not None else None)
        attributes = content.attributes(self._instruments.settings.attribute_max_length)
        if not attributes:
            return
        if self._capture.span and span.is_recording():
            span.set_attributes(attributes)
        if self._capture.event:
            self._instruments.event_logger.emit(event_name=names.EVENT_INFERENCE_DETAILS, attributes=attributes,
                                                context=trace.set_span_in_context(span))

    def _record_metrics(self, duration: float, response_model: str | None, usage: Usage, mode: str,
                        error_type: str | None, ending: str, usd: float | None) -> None:
        instruments = self._instruments
        model_label = instruments.model_label.value(response_model)
        metric_attributes = {
            names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT,
            names.GEN_AI_PROVIDER_NAME: self._provider,
            names.GEN_AI_REQUEST_MODEL: instruments.model_label.value(self._request_model),
            names.GEN_AI_RESPONSE_MODEL: model_label,
            names.DEGRADATION_MODE: mode,
        }
        if self._server_address:
            metric_attributes[names.SERVER_ADDRESS] = instruments.server_label.value(self._server_address)
        if error_type is not None:
            metric_attributes[names.ERROR_TYPE] = instruments.error_type_label.value(error_type)
        instruments.operation_duration.record(duration, {**metric_attributes, names.ENDING: ending})
        if self._stream and self._first_chunk is not None:
            instruments.time_to_first_chunk.record(self._first_chunk - self._start, metric_attributes)
        for count, token_type in zip(usage, _TOKEN_TYPES, strict=True):
            if count is not None and (count or token_type in _ALWAYS_RECORDED):
                instruments.token_usage.record(count, {**metric_attributes, names.GEN_AI_TOKEN_TYPE: token_type})
        if usd is not None:
            instruments.cost.add(usd, {
                names.GEN_AI_PROVIDER_NAME: self._provider,
                names.GEN_AI_RESPONSE_MODEL: model_label,
                names.DEGRADATION_MODE: mode,
            })


_USAGE_ATTRIBUTES = (
    names.GEN_AI_USAGE_INPUT_TOKENS,
    names.GEN_AI_USAGE_OUTPUT_TOKENS,
    names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    names.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
)
_TOKEN_TYPES = (names.TOKEN_TYPE_INPUT, names.TOKEN_TYPE_OUTPUT, names.TOKEN_TYPE_CACHE_READ,
                names.TOKEN_TYPE_CACHE_CREATION)
# Input and output are recorded even when zero; cache parts only when the call used the cache.
_ALWAYS_RECORDED = frozenset({names.TOKEN_TYPE_INPUT, names.TOKEN_TYPE_OUTPUT})


def ending_of(response: Response | None, error_type: str | None) -> str:
    """The ending of a call that raised nothing (``error_type`` None) or failed without an
    exception (a failure the answer reports: by its envelope type as in :func:`failure_of`, else
    ``error``; an incomplete stream: ``error``)."""
    if error_type is not None:
        if error_type in _TIMEOUT_ERROR_TYPES:
            return names.ENDING_TIMEOUT
        if error_type in _UNAVAILABLE_ERROR_TYPES:
            return names.ENDING_MODEL_UNAVAILABLE
        return names.ENDING_ERROR
    if response is not None and any(r in _REFUSAL_FINISH_REASONS for r in response.finish_reasons):
        return names.ENDING_REFUSED
    return names.ENDING_COMPLETED


def failure_of(exc: BaseException, timeout_types: tuple[type, ...], connection_types: tuple[type, ...],
               envelope_fields: tuple[str, ...] = ("type",)) -> Failure:
    """``error.type`` and ending of a provider SDK exception.

    Endings: ``cancelled`` for a cancellation (``asyncio.CancelledError``); ``timeout`` for a
    client timeout, HTTP 408 or 504, or an envelope ``timeout_error``; ``model.unavailable`` for
    a connection failure (including a raw ``httpx2`` transport error mid-stream), HTTP 429 or
    any 5xx (529 overloaded included), or an envelope that says overloaded / rate limited /
    server error (anthropic's mid-stream ``event: error`` arrives with status 200); else ``error``.
    """
    error_type = error_type_of(exc, timeout_types, connection_types, envelope_fields)
    if not isinstance(exc, Exception):
        return Failure(error_type, names.ENDING_CANCELLED)
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    if (isinstance(exc, timeout_types) or status in (408, 504) or error_type in _TIMEOUT_ERROR_TYPES):
        return Failure(error_type, names.ENDING_TIMEOUT)
    if (isinstance(exc, connection_types) or status == 429 or (status is not None and status >= 500)
            or error_type in _UNAVAILABLE_ERROR_TYPES):
        return Failure(error_type, names.ENDING_MODEL_UNAVAILABLE)
    return Failure(error_type, names.ENDING_ERROR)


def fallback_failure(exc: BaseException) -> Failure:
    """What a call ends with when classifying its error failed (our bug, not the host's)."""
    if not isinstance(exc, Exception):
        return Failure(names.ERROR_TYPE_CANCELLED, names.ENDING_CANCELLED)
    return Failure(classify.qualified_name(type(exc)), names.ENDING_ERROR)


def error_type_of(exc: BaseException, timeout_types: tuple[type, ...], connection_types: tuple[type, ...],
                  envelope_fields: tuple[str, ...] = ("type",)) -> str:
    """Low-cardinality ``error.type`` for a provider SDK exception.

    ``cancelled`` for a cancellation; the first of ``envelope_fields`` the provider's error body
    set (anthropic ``type``: ``overloaded_error``; openai ``code``, then ``type``); else the HTTP
    status code; else ``timeout`` / ``connection_error`` for transport failures (including raw
    ``httpx2`` errors raised mid-stream); else the exception's qualified class name. Metric labels
    pass it through a bounded label set.
    """
    if not isinstance(exc, Exception):  # asyncio.CancelledError and other BaseExceptions
        return names.ERROR_TYPE_CANCELLED
    for field in envelope_fields:
        value = getattr(exc, field, None)
        if isinstance(value, str) and value:
            return value
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return str(status)
    if isinstance(exc, timeout_types):  # before connection: APITimeoutError subclasses APIConnectionError
        return names.ERROR_TYPE_TIMEOUT
    if isinstance(exc, connection_types):
        return names.ERROR_TYPE_CONNECTION
    return classify.qualified_name(type(exc))
