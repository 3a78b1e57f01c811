"""One provider SDK call: owns its GenAI inference span and metric points.

Span: ``chat {gen_ai.request.model}``, kind CLIENT (GenAI semantic conventions, inference span).
Metrics: ``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage``. When the call runs
inside a host's sampling callback, the sampling record is told the models and usage it saw.
Every method is called from guarded wrapper code and ends the span at most once.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_sampling import automatic, classify, names
from otel_sampling.instruments import Instruments
from otel_sampling.labels import clean
from otel_sampling.sampling_record import current_sampling


class Usage(NamedTuple):
    """Token counts in semantic-convention terms: ``input_tokens`` includes cache reads and writes."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


class Response(NamedTuple):
    """What a finished call reported: served model, response id, finish reasons, usage."""

    model: str | None
    response_id: str | None
    finish_reasons: tuple[str, ...]
    usage: Usage


class ProviderCall:
    """Span and metrics of one inference call.

    Args:
        instruments: tracer, meter and label sets of the provider instrumentor.
        provider: ``gen_ai.provider.name`` (``anthropic``, ``openai``).
        request_model: ``gen_ai.request.model`` (None when not given).
        max_tokens: ``gen_ai.request.max_tokens`` when an int.
        stream: whether the response is streamed.
        server: ``(server.address, server.port)`` of the API endpoint, or None.
    """

    __slots__ = ("_instruments", "_provider", "_request_model", "_span", "_start", "_ended", "_attached",
                 "_server_address", "_sampling")

    def __init__(
        self, instruments: Instruments, provider: str, request_model: str | None,
        max_tokens: Any, stream: bool, server: tuple[str, int | None] | None,
    ) -> None:
        self._instruments = instruments
        self._provider = provider
        self._request_model = request_model if isinstance(request_model, str) else None
        self._start = time.perf_counter()
        self._ended = False
        self._attached: object | None = None
        self._server_address = server[0] if server else None
        # The sampling request this call serves is the one current when it starts (a stream may
        # end inside another request's callback).
        self._sampling = current_sampling()
        max_length = instruments.settings.attribute_max_length
        model = clean(self._request_model, max_length) if self._request_model else None
        # The request model may come from a server's hint: cleaned and cut like any attribute.
        span = instruments.tracer.start_span(f"{names.OPERATION_CHAT} {model}" if model else names.OPERATION_CHAT,
                                             kind=SpanKind.CLIENT)
        self._span = span
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

    def end(self, response: Response | None, error_type: str | None = None) -> None:
        """End the call once: ``response`` is what was seen (may be partial); ``error_type`` when it failed."""
        if self._ended:
            return
        self._ended = True
        duration = time.perf_counter() - self._start
        response_model = response.model if response else None
        usage = response.usage if response else Usage()

        mode = automatic.call_mode(self._span)  # named degradations and canary blocks
        try:
            record = self._sampling
            automatic.observe_call(record, self._provider, self._server_address, self._request_model,
                                   response_model, error_type is not None)
            if record is not None:
                record.observe_provider_call(self._request_model, response_model, usage.input_tokens,
                                             usage.output_tokens, failed=error_type is not None)
                if record.failed_over():
                    mode = names.MODE_DEGRADED
            self._record_metrics(duration, response_model, usage, mode, error_type)
        finally:  # the span ends even when a metric call fails
            self._end_span(response, usage, mode, error_type)

    def _end_span(self, response: Response | None, usage: Usage, mode: str, error_type: str | None) -> None:
        instruments = self._instruments
        span = self._span
        try:
            if span.is_recording():
                max_length = instruments.settings.attribute_max_length
                attributes: dict[str, Any] = {names.DEGRADATION_MODE: mode}
                if response is not None:
                    if response.model:
                        attributes[names.GEN_AI_RESPONSE_MODEL] = clean(response.model, max_length)
                    if response.response_id:
                        attributes[names.GEN_AI_RESPONSE_ID] = clean(response.response_id, max_length)
                    if response.finish_reasons:
                        reasons = [clean(r, max_length) for r in response.finish_reasons]
                        attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] = reasons
                for key, value in zip(_USAGE_ATTRIBUTES, usage, strict=True):
                    if value is not None:
                        attributes[key] = value
                if error_type is not None:
                    attributes[names.ERROR_TYPE] = clean(error_type, max_length)
                    span.set_status(Status(StatusCode.ERROR))
                span.set_attributes(attributes)
        finally:
            span.end()

    def _record_metrics(self, duration: float, response_model: str | None, usage: Usage, mode: str,
                        error_type: str | None) -> None:
        instruments = self._instruments
        metric_attributes = {
            names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT,
            names.GEN_AI_PROVIDER_NAME: self._provider,
            names.GEN_AI_REQUEST_MODEL: instruments.model_label.value(self._request_model),
            names.GEN_AI_RESPONSE_MODEL: instruments.model_label.value(response_model),
            names.DEGRADATION_MODE: mode,
        }
        if self._server_address:
            metric_attributes[names.SERVER_ADDRESS] = instruments.server_label.value(self._server_address)
        if error_type is not None:
            metric_attributes[names.ERROR_TYPE] = instruments.error_type_label.value(error_type)
        instruments.operation_duration.record(duration, metric_attributes)
        for count, token_type in ((usage.input_tokens, names.TOKEN_TYPE_INPUT),
                                  (usage.output_tokens, names.TOKEN_TYPE_OUTPUT)):
            if count is not None:
                instruments.token_usage.record(count, {**metric_attributes, names.GEN_AI_TOKEN_TYPE: token_type})


_USAGE_ATTRIBUTES = (
    names.GEN_AI_USAGE_INPUT_TOKENS,
    names.GEN_AI_USAGE_OUTPUT_TOKENS,
    names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    names.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
)


def error_type_of(exc: BaseException, timeout_types: tuple[type, ...], connection_types: tuple[type, ...],
                  envelope_fields: tuple[str, ...] = ("type",)) -> str:
    """Low-cardinality ``error.type`` for a provider SDK exception.

    ``cancelled`` for a cancellation; the first of ``envelope_fields`` the provider's error body
    set (anthropic ``type``: ``overloaded_error``; openai ``code``, then ``type``); else the HTTP status code; else ``timeout`` / ``connection_error`` for
    transport failures (including raw ``httpx2`` errors raised mid-stream); else the exception's
    qualified class name. Metric labels pass it through a bounded label set.
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
