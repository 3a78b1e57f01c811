"""One provider SDK call: owns its GenAI inference span and metric points.

Span: ``chat {gen_ai.request.model}``, kind CLIENT (GenAI semantic conventions, inference span).
Metrics: the GenAI inference metrics of the names ``OTEL_SEMCONV_STABILITY_OPT_IN`` selects
(:mod:`otel_sampling.semconv_metrics`: duration with the call's ``otel_sampling.ending``, token
usage, time to first chunk and per output chunk for streams) and ``otel_sampling.client.cost.usd`` (when
the policy's table or the price source prices the model, :mod:`otel_sampling.rules.cost`).

As it ends, the call publishes one immutable :class:`~otel_sampling.rules.verdict.CallSummary` to
its scope with one call (``scope.on_call(summary)``): the sampling request whose callback it runs
in, else the run it is made in. The scope folds it in and returns the call's verdict
(:func:`~otel_sampling.rules.verdict.judge_call`, against the request's hints and policy), which
the span and the metric points carry. A call with neither scope is judged against no policy, its
failover memory keyed by its parent span. Every method is called from guarded wrapper code and
ends the span at most once.

Everything here is provider-independent: an SDK module only turns its responses into
:class:`Response` and its exceptions into :class:`Failure`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from otel_sampling import inference_details, locks, names, semconv_metrics, state
from otel_sampling.content import NO_CAPTURE, CaptureMode, Content
from otel_sampling.labels import BoundedLabel, bound, clean, clean_texts
from otel_sampling.metrics import Instruments, recorded_in
from otel_sampling.price_source import MAX_MODEL_LENGTH, PriceSource
from otel_sampling.records import run as run_records
from otel_sampling.records.failover import FailoverTracker
from otel_sampling.rules import cost, endings, verdict
from otel_sampling.rules.endings import answer_ending
from otel_sampling.rules.values import Ending, Response, Usage, clean_usage
from otel_sampling.rules.verdict import NO_POLICY, CallSummary, CallVerdict, named_union

logger = logging.getLogger(__name__)

MAX_REPORTED_UNPRICED = 256  # distinct unpriced models logged once each; later ones are not logged


class UnpricedModels:
    """Reports each model without a price once, at DEBUG (a bounded set: a hostile provider
    cannot grow it past ``MAX_REPORTED_UNPRICED``)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = locks.new()

    def report(self, model: str | None, source: PriceSource | None) -> None:
        key = (model or "")[:MAX_MODEL_LENGTH]
        if key in self._seen:
            return
        with self._lock:
            if key in self._seen or len(self._seen) >= MAX_REPORTED_UNPRICED:
                return
            self._seen.add(key)
        where = (
            source.name
            if source is not None
            else (f"no price source ({names.ENV_PRICE_SOURCE}=none, or genai-prices not installed: the 'prices' extra)")
        )
        logger.debug(
            "otel-sampling: no price for model %r in the policy's price table nor in %s; its cost is not recorded",
            key or None,
            where,
        )


_unpriced = UnpricedModels()


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
        failovers: the instrumentor's :class:`FailoverTracker`, the failover memory of calls made
            outside a sampling callback and a run (None: failover there is not detected).
        extra_attributes: further span attributes known at the start (openai's ``openai.api.type``);
            span only, never metric labels.
        compare_models: whether a served model other than ``request_model`` is a substitution or a
            fallback (False when ``request_model`` names a deployment, as on Azure OpenAI).
        client_fallback: the reason a client library's router made this call on a fallback model
            (``CallSummary.client_fallback``), or None.
    """

    __slots__ = (
        "_instruments",
        "_provider",
        "_request_model",
        "_span",
        "_start",
        "_ended",
        "_attached",
        "_server_address",
        "_first_chunk",
        "_last_chunk",
        "_chunk_gaps",
        "_stream",
        "_capture",
        "_input_content",
        "_failovers",
        "_parent",
        "_compare_models",
        "_scope",
        "_served_model",
        "_named",
        "_client_fallback",
    )

    def __init__(
        self,
        instruments: Instruments,
        provider: str,
        request_model: str | None,
        max_tokens: Any,
        stream: bool,
        server: tuple[str, int | None] | None,
        *,
        capture: CaptureMode = NO_CAPTURE,
        input_content: Content | None = None,
        failovers: FailoverTracker | None = None,
        extra_attributes: Mapping[str, Any] | None = None,
        compare_models: bool = True,
        client_fallback: str | None = None,
    ) -> None:
        self._instruments = instruments
        self._client_fallback = client_fallback
        self._provider = provider
        self._request_model = request_model if isinstance(request_model, str) else None
        self._first_chunk: float | None = None
        self._last_chunk = 0.0
        self._chunk_gaps: list[float] = []  # time_per_output_chunk, when emitted
        self._stream = stream
        self._ended = False
        self._attached: tuple[object, object] | None = None
        self._served_model: str | None = None  # named by a gateway's response header
        self._server_address = server[0] if server else None
        self._capture = capture
        self._input_content = input_content
        self._failovers = failovers
        self._compare_models = compare_models
        parent = trace.get_current_span().get_span_context()
        self._parent = (parent.trace_id, parent.span_id) if parent.is_valid else None
        # Its scope is the sampling request current when it starts (a stream may end inside another
        # request's callback), else the run it is made in (the key of its failover memory).
        self._scope: _Scope | None = state.current_request.get() or run_records.current_run()
        self._named = state.active_reasons()  # the named degradations around it as it starts
        max_length = instruments.settings.attribute_max_length
        model = clean(self._request_model, max_length) if self._request_model else None
        # The request model may come from a server's hint: cleaned and cut like any attribute.
        span = instruments.tracer.start_span(
            f"{names.OPERATION_CHAT} {model}" if model else names.OPERATION_CHAT, kind=SpanKind.CLIENT
        )
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

    @property
    def request_model(self) -> str | None:
        """``gen_ai.request.model`` as asked (None when not given or not a string)."""
        return self._request_model

    def activate(self) -> None:
        """Make the span current, so spans the SDK itself starts (anthropic's own) become children,
        and this call ``state.current_call`` while the SDK sends it (its response is parsed then)."""
        self._attached = (otel_context.attach(trace.set_span_in_context(self._span)), state.current_call.set(self))

    def deactivate(self) -> None:
        if self._attached is not None:
            (otel_token, call_token), self._attached = self._attached, None
            state.current_call.reset(call_token)  # type: ignore[arg-type]
            otel_context.detach(otel_token)  # type: ignore[arg-type]

    def note_served_model(self, model: str) -> None:
        """A gateway's response header names the model that served this call (its body echoes the
        request): the call's served model, whatever the body says."""
        if not self._ended:
            self._served_model = model

    def first_chunk(self) -> None:
        """A stream delivered its first event: fixes the time to first chunk."""
        if self._first_chunk is None:
            self._first_chunk = self._last_chunk = time.perf_counter()

    def chunk(self) -> None:
        """A stream delivered an event after its first: the gap since the previous one is kept for
        ``…time_per_output_chunk`` (at most ``semconv_metrics.MAX_CHUNK_GAPS`` per call)."""
        if self._first_chunk is None:
            self.first_chunk()
            return
        if len(self._chunk_gaps) >= semconv_metrics.MAX_CHUNK_GAPS:
            return
        now = time.perf_counter()
        self._chunk_gaps.append(now - self._last_chunk)
        self._last_chunk = now

    def end(self, response: Response | None, error_type: str | None = None, ending: str | None = None) -> None:
        """End the call once.

        Args:
            response: what was seen (may be partial, None when nothing was).
            error_type: ``error.type`` when the call failed.
            ending: the ending (``names.ENDINGS``); by default, and then its ``error.type`` too,
                the answer's (:func:`~otel_sampling.rules.endings.answer_ending`: a response that
                reports its own failure ends as that failure, unless ``error_type`` names another).

        Token counts that are none (:func:`~otel_sampling.rules.values.clean_usage`) are left off
        everywhere: span, metrics, cost, the request and the run.
        """
        if self._ended:
            return
        self._ended = True
        duration = time.perf_counter() - self._start
        if self._served_model is not None and response is not None:
            response = response._replace(model=self._served_model)
        response_model = response.model if response else None
        usage = clean_usage(response.usage) if response else Usage()
        if ending is None:
            decided = answer_ending(response, error_type)
            error_type, ending = decided.error_type, decided.ending

        judged = CallVerdict(names.MODE_PRIMARY, ())
        priced = None
        now = state.around()
        try:
            priced = self._cost(response_model, usage)
            settings = self._instruments.settings
            summary = CallSummary(
                provider=self._provider,
                address=self._server_address,
                region=settings.policy.region_of(self._server_address),
                requested=self._request_model,
                served=response_model,
                ending=Ending(ending, error_type),
                usage=usage,
                usd=priced.usd if priced is not None else None,
                provider_fallback=response is not None and response.provider_fallback,
                compare_models=self._compare_models,
                named=named_union(self._named, now.reasons),
                client_fallback=self._client_fallback,
            )
            judged = self._publish(summary)
            self._record_metrics(
                duration, response_model, usage, judged.mode, error_type, ending, summary.usd, now.drill
            )
        finally:  # the span ends even when a metric call fails
            self._end_span(response, usage, judged, error_type, ending, priced)

    def _publish(self, summary: CallSummary) -> CallVerdict:
        """Tell the call's scope what it did, in one call; its verdict comes back."""
        scope = self._scope
        if scope is not None:
            return scope.on_call(summary)
        failed_over = self._failovers is not None and self._failovers.observe(
            self._parent, summary.requested, summary.failed
        )
        return verdict.judge_call(summary, NO_POLICY, failed_over)

    def _cost(self, response_model: str | None, usage: Usage) -> cost.Cost | None:
        """The call's cost (:mod:`otel_sampling.rules.cost`): None without token counts or a price."""
        if usage.input_tokens is None and usage.output_tokens is None:
            return None
        settings = self._instruments.settings
        model = cost.priced_model(response_model, self._request_model if self._compare_models else None)
        quoted = cost.policy_quote(settings.policy.prices, model)
        source = settings.price_source
        if quoted is None and source is not None and model:
            # The price look-up (an LRU over genai-prices) is ours; the rule only picks the price.
            quoted = cost.source_quote(source.name, source.price(self._provider, model, usage.input_tokens or 0))
        if quoted is None:
            _unpriced.report(model, settings.price_source)
            return None
        return cost.cost_of(quoted, usage)

    def _end_span(
        self,
        response: Response | None,
        usage: Usage,
        judged: CallVerdict,
        error_type: str | None,
        ending: str,
        priced: cost.Cost | None,
    ) -> None:
        instruments = self._instruments
        span = self._span
        try:
            if span.is_recording():
                max_length = instruments.settings.attribute_max_length
                attributes: dict[str, Any] = {names.ENDING: ending, names.DEGRADATION_MODE: judged.mode}
                reported = response.finish_reasons if response is not None else ()
                outside: dict[str, object] = {
                    names.DEGRADATION_REASON: judged.reasons,
                    names.GEN_AI_RESPONSE_FINISH_REASONS: endings.inference_finish_reasons(reported, ending),
                    names.ERROR_TYPE: error_type,
                }
                if response is not None:
                    outside[names.GEN_AI_RESPONSE_MODEL] = response.model
                    outside[names.GEN_AI_RESPONSE_ID] = response.response_id
                attributes.update(clean_texts(outside, max_length))
                for key, value in zip(_USAGE_ATTRIBUTES, usage, strict=True):
                    if value is not None:  # a count (clean_usage): within int64, as OTLP carries it
                        attributes[key] = value
                if self._stream and self._first_chunk is not None:
                    attributes[names.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = self._first_chunk - self._start
                if priced is not None:
                    attributes[names.GEN_AI_USAGE_COST_AMOUNT] = priced.usd
                    attributes[names.GEN_AI_USAGE_COST_CURRENCY] = names.CURRENCY_USD
                    attributes[names.GEN_AI_USAGE_COST_SOURCE] = names.COST_SOURCE_LOCAL
                    attributes[names.COST_PRICE_SOURCE] = priced.source
                if error_type is not None:
                    span.set_status(Status(StatusCode.ERROR))
                span.set_attributes(attributes)
            content = self._capture_content(span, response) if self._capture.enabled else None
            inference_details.emit(instruments.event_logger, span, content if self._capture.event else None)
        finally:
            span.end()

    def _capture_content(self, span: trace.Span, response: Response | None) -> dict[str, Any]:
        """The content attributes (set on the span when capture puts content there)."""
        given = self._input_content or Content()
        content = given._replace(output_messages=response.output if response is not None else None)
        attributes = content.attributes(self._instruments.settings.attribute_max_length)
        if attributes and self._capture.span and span.is_recording():
            span.set_attributes(attributes)
        return attributes

    def _record_metrics(
        self,
        duration: float,
        response_model: str | None,
        usage: Usage,
        mode: str,
        error_type: str | None,
        ending: str,
        usd: float | None,
        drill: dict[str, str],
    ) -> None:
        instruments = self._instruments
        context = recorded_in(self._span)
        labelled: list[tuple[str, BoundedLabel, object]] = [
            (names.GEN_AI_REQUEST_MODEL, instruments.model_label, self._request_model),
            (names.GEN_AI_RESPONSE_MODEL, instruments.model_label, response_model),
        ]
        if self._server_address:
            labelled.append((names.SERVER_ADDRESS, instruments.server_label, self._server_address))
        if error_type is not None:
            labelled.append((names.ERROR_TYPE, instruments.error_type_label, error_type))
        bounded = bound(labelled)
        model_label = bounded[names.GEN_AI_RESPONSE_MODEL]
        metric_attributes = {
            names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT,
            names.GEN_AI_PROVIDER_NAME: self._provider,
            **bounded,
            names.DEGRADATION_MODE: mode,
            **drill,
        }
        first_chunk = self._first_chunk - self._start if self._stream and self._first_chunk is not None else None
        semconv_metrics.record_inference(
            instruments.inference,
            metric_attributes,
            ending=ending,
            duration=duration,
            first_chunk=first_chunk,
            chunk_gaps=self._chunk_gaps,
            usage=usage,
            context=context,
        )
        priced_by = {
            names.GEN_AI_PROVIDER_NAME: self._provider,
            names.GEN_AI_RESPONSE_MODEL: model_label,
            names.DEGRADATION_MODE: mode,
            **drill,
        }
        if usd is not None:
            instruments.cost.add(usd, priced_by, context=context)
        elif usage.input_tokens is not None or usage.output_tokens is not None:
            # token counts and no price: the model the operator has to price (the policy's [prices])
            instruments.unpriced.add(1, priced_by, context=context)


class _Scope(Protocol):
    """Where a call publishes its summary: a sampling request, or a run."""

    def on_call(self, call: CallSummary) -> CallVerdict: ...


_USAGE_ATTRIBUTES = (
    names.GEN_AI_USAGE_INPUT_TOKENS,
    names.GEN_AI_USAGE_OUTPUT_TOKENS,
    names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    names.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
    names.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
)
