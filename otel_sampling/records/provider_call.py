"""One provider SDK call: owns its GenAI inference span and metric points.

Span: ``chat {gen_ai.request.model}``, kind CLIENT (GenAI semantic conventions, inference span).
Metrics: the GenAI inference metrics of the names ``OTEL_SEMCONV_STABILITY_OPT_IN`` selects
(:func:`record_inference`: duration with the call's ``otel_sampling.ending``, token
usage, time to first chunk and per output chunk for streams) and ``otel_sampling.client.cost.usd`` (when
the policy's table or the price source prices the model, :mod:`otel_sampling.rules.verdict`).
Event: ``gen_ai.client.inference.operation.details`` (:func:`emit_inference_details`).
What the fallback breaks (:func:`record_signals`): the call's tool calls and structured output
checked against what it asked for (:class:`~otel_sampling.records.call_signals.CallChecks`), its
truncation, and its context utilization against the served model's context window, which the price
source's look-up gives with the price (:mod:`otel_sampling.rules.call_checks` decides).

As it ends, the call publishes one immutable :class:`~otel_sampling.rules.verdict.CallSummary` to
its scope with one call: the sampling request whose callback it runs in (``request.on_call``,
judged against the request's hints and server policy), else the run it is made in
(``run.on_call``), else nothing. Outside a sampling request the call is judged
(:func:`~otel_sampling.rules.verdict.judge_call`) against the policy scope
:func:`otel_sampling.records.run.policy_scope` picks (:mod:`otel_sampling.rules.scopes`: the run's
tool, server or run table, walking outward, else ``[default]``, else no policy), its failover
memory keyed by the run, else by its parent span; the violations it shows against that scope
(:func:`otel_sampling.rules.scopes.violations`) are counted as
``otel_sampling.client.violations`` and an ``otel_sampling.violation`` event on its span. The
span and the metric points carry the one verdict. Every method is called from guarded wrapper
code and ends the span at most once.

Everything here is provider-independent: an SDK module only turns its responses into
:class:`Response` and its exceptions into :class:`Failure`.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Mapping, Sequence
from contextvars import Token
from typing import Any, Final, Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry._logs import Logger, SeverityNumber
from opentelemetry.context import Context
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode

from otel_sampling import locks, names, state
from otel_sampling.content import NO_CAPTURE, CaptureMode, Content
from otel_sampling.metrics import (
    CallPoints,
    InferenceInstruments,
    Instruments,
    SignalInstruments,
    call_points_of,
    clean,
    clean_texts,
    otlp_int,
    recorded_in,
)
from otel_sampling.price_source import MAX_MODEL_LENGTH, UNLISTED, PriceSource
from otel_sampling.records import run as run_records
from otel_sampling.records.call_signals import CallChecks
from otel_sampling.records.failover import FailoverTracker
from otel_sampling.rules import call_checks, endings, scopes, verdict
from otel_sampling.rules.call_checks import NO_SIGNALS, TRUNCATING_REASONS, Signals
from otel_sampling.rules.endings import answer_ending
from otel_sampling.rules.values import Ending, Response, Usage, clean_usage
from otel_sampling.rules.verdict import NO_POLICY, CallSummary, CallVerdict

logger = logging.getLogger(__name__)

MAX_REPORTED_UNPRICED = 256  # distinct unpriced models logged once each; later ones are not logged
MAX_FITTING_TEXTS: Final = 1024  # request models, addresses, finish reasons remembered to fit as attribute values


_UNKNOWN: Final = object()  # a span that does not name its parent
_CHAT_PREFIX: Final = f"{names.OPERATION_CHAT} "  # the span name's operation, before its model
_NO_USAGE: Final = Usage()  # a call that brought no response
_PRIMARY: Final = CallVerdict(names.MODE_PRIMARY, ())  # the verdict of a call whose judging failed


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
        effort: the reasoning effort it asked for (``CallSummary.effort``: a level, or a thinking
            budget in tokens, which the span carries as ``otel_sampling.request.thinking.budget_tokens``),
            or None.
    """

    __slots__ = (
        "_instruments",
        "_provider",
        "_request_model",
        "_span",
        "_start",
        "_ended",
        "_attached",
        "_context",
        "_call_token",
        "_server_address",
        "chunk_times",
        "_stream",
        "_capture",
        "_input_content",
        "_failovers",
        "_parent",
        "_compare_models",
        "_request",
        "_run",
        "_served_model",
        "_named",
        "_client_fallback",
        "_effort",
        "checks",
        "handles_upstream",
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
        effort: str | int | None = None,
    ) -> None:
        self._instruments = instruments
        self._client_fallback = client_fallback
        self._effort = effort
        # What the request asked for and its answer held (records/call_signals.py): set by the
        # wrappers for a call that offered tools or asked for structured output, else None.
        self.checks: CallChecks | None = None
        # Its adapter puts the trace context on the upstream SDK request and reads the served model
        # itself (LiteLLM over the openai SDK): set by the wrappers; the SDK's own hooks leave both.
        self.handles_upstream = False
        self._provider = provider
        self._request_model = model = request_model if isinstance(request_model, str) else None
        # time.perf_counter() of each stream event, appended by the stream's reader while it holds
        # fewer than MAX_CHUNK_TIMES (a list append: no Python frame per event); the first fixes the
        # time to first chunk, the gaps between them are time_per_output_chunk.
        self.chunk_times: list[float] = []
        self._stream = stream
        self._ended = False
        # The context token while the call is active (activate); _call_token is set with it.
        self._attached: Token[Context] | None = None
        # The context its span is current in (activate), where its points are recorded too.
        self._context: Context | None = None
        self._served_model: str | None = None  # named by a gateway's response header
        address, port = server if server else (None, None)
        self._server_address = address
        self._capture = capture
        self._input_content = input_content
        self._failovers = failovers
        self._compare_models = compare_models
        # Its scope is the sampling request current when it starts (a stream may end inside another
        # request's callback), else the run it is made in (the key of its failover memory).
        request: _Scope | None = state.current_request.get()
        self._request = request
        self._run = run_records.current_run() if request is None else None
        # The named degradations around it as it starts (none, the common case, asks for nothing).
        self._named = state.active_reasons() if not state.calm or state.canary.get() else ()
        # The request model may come from a server's hint, the address from the host: both cleaned
        # and cut like any attribute, in one pass. What is known at the start is given to start_span
        # (samplers see it, as the GenAI conventions ask of gen_ai.operation.name, the provider, the
        # model and the server).
        fitting = instruments.fitting_texts
        if (
            type(model) is str
            and (model in fitting or (model and _fits(model, fitting, instruments.settings.attribute_max_length)))
            and (
                address is None
                or (
                    type(address) is str
                    and (address in fitting or _fits(address, fitting, instruments.settings.attribute_max_length))
                )
            )
        ):  # the common case: what is given fits as it is
            attributes: dict[str, Any] = {
                names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT,
                names.GEN_AI_PROVIDER_NAME: provider,
                names.GEN_AI_REQUEST_MODEL: model,
            }
            if address:
                attributes[names.SERVER_ADDRESS] = address
        else:
            attributes = {
                names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT,
                names.GEN_AI_PROVIDER_NAME: provider,
                **clean_texts(
                    {names.GEN_AI_REQUEST_MODEL: model, names.SERVER_ADDRESS: address},
                    instruments.settings.attribute_max_length,
                ),
            }
            model = attributes.get(names.GEN_AI_REQUEST_MODEL)
            if not model:  # nothing printable in it: no model to name
                attributes.pop(names.GEN_AI_REQUEST_MODEL, None)
        if type(max_tokens) is int or (isinstance(max_tokens, int) and not isinstance(max_tokens, bool)):
            attributes[names.GEN_AI_REQUEST_MAX_TOKENS] = max_tokens
        if stream:
            attributes[names.GEN_AI_REQUEST_STREAM] = True
        if extra_attributes:
            attributes.update(extra_attributes)
        if effort and type(effort) is int and effort > 0 and otlp_int(effort) is not None:  # thinking enabled
            attributes[names.REQUEST_THINKING_BUDGET] = effort
        if port is not None:
            attributes[names.SERVER_PORT] = port
        self._span = instruments.tracer.start_span(
            _CHAT_PREFIX + model if model else names.OPERATION_CHAT,
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )
        # Timed from the span's start (not before it), so that the time to first chunk and the
        # duration never exceed the span's own duration.
        self._start = time.perf_counter()
        # Its parent span (the key of its failover memory): the one an SDK span names (None: a root
        # span), else (a span that names none: not recorded, another API) the current span's.
        parent = getattr(self._span, "parent", _UNKNOWN)
        if parent is None:
            self._parent = None
        else:
            if type(parent) is not SpanContext:
                parent = trace.get_current_span().get_span_context()
            self._parent = (parent.trace_id, parent.span_id) if parent.is_valid else None

    @property
    def request_model(self) -> str | None:
        """``gen_ai.request.model`` as asked (None when not given or not a string)."""
        return self._request_model

    def activate(self) -> None:
        """Make the span current, so spans the SDK itself starts (anthropic's own) become children,
        and this call ``state.current_call`` while the SDK sends it (its response is parsed then)."""
        self._context = context = trace.set_span_in_context(self._span)
        self._attached = otel_context.attach(context)
        self._call_token: Token[Any] = state.current_call.set(self)

    def deactivate(self) -> None:
        otel_token = self._attached
        if otel_token is not None:
            self._attached = None
            state.current_call.reset(self._call_token)
            otel_context.detach(otel_token)

    def note_served_model(self, model: str) -> None:
        """A gateway's response header names the model that served this call (its body echoes the
        request): the call's served model, whatever the body says."""
        if not self._ended:
            self._served_model = model

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
        if response is not None:
            if self._served_model is not None:
                response = response._replace(model=self._served_model)
            # Its fields read once (a tuple's unpacking, cheaper than a read of each field by name).
            response_model, response_id, finish_reasons, reported_usage, provider_fallback, _, _, _, _ = response
            usage = clean_usage(reported_usage)
        else:
            response_model = response_id = None
            finish_reasons = ()
            provider_fallback = False
            usage = _NO_USAGE
        if ending is None:
            decided = answer_ending(response, error_type)
            ending, error_type, _ = decided
        else:
            decided = Ending(ending, error_type)
        times = self.chunk_times
        first_chunk = times[0] - self._start if self._stream and times else None

        judged = _PRIMARY
        violations: tuple[str, ...] = ()
        priced = None
        signal_attributes: dict[str, Any] | None = None
        # The state around it as it ends (state.around's reasons and drill; the common case, nothing
        # degraded, no canary block and no drill, asks for nothing).
        named = self._named
        if not state.calm or state.canary.get():
            around = state.active_reasons()
            if around:
                named = tuple(dict.fromkeys((*named, *around)))  # distinct, first seen first
        instruments = self._instruments
        try:
            priced, window = self._cost(response_model, usage)
            address = self._server_address
            endpoint = instruments.settings.policy.endpoints.get(address) if address else None
            summary = CallSummary(
                self._provider,
                address,
                endpoint.region if endpoint is not None else None,  # the policy's [endpoints]
                self._request_model,
                response_model,
                decided,
                usage,
                priced.usd if priced is not None else None,
                provider_fallback,
                self._compare_models,
                named,
                self._client_fallback,
                self._effort,
            )
            judged, violations = self._publish(summary)
            # The call's points: the inference metrics (record_inference), then its cost, or the
            # unpriced call, by provider, served model, mode and drill (the labels of its signals).
            # Recorded in a context whose span is this call's, so that an exemplar names it (recorded_in):
            # the one it was made current in, else (never activated) one of its own.
            context = self._context
            if context is None:
                context = recorded_in(self._span)
            points = instruments.call_points(
                self._provider, self._request_model, response_model, address, error_type, judged.mode, ending
            )
            if state.drills.running:
                points = call_points_of(points.attributes, ending, state.drill_label())
            labels = points.labels
            input_tokens, output_tokens, _, _, _ = usage
            record_inference(
                instruments.inference,
                points,
                duration=duration,
                first_chunk=first_chunk,
                chunk_gaps=[b - a for a, b in itertools.pairwise(times)] if times and len(times) > 1 else (),
                usage=usage,
                context=context,
            )
            if priced is not None:
                instruments.cost.add(priced.usd, labels, context=context)
            elif input_tokens is not None or output_tokens is not None:
                # token counts and no price: the model the operator has to price (the policy's [prices])
                instruments.unpriced.add(1, labels, context=context)
            if violations:
                self._record_violations(violations, judged.scope)
            # Nothing asked, no window to measure against, no finish reason that cuts: no signals
            # (call_checks.judge would find none), and the call pays these few checks only.
            if (
                self.checks is not None
                or window is not None
                or (response is not None and not TRUNCATING_REASONS.isdisjoint(finish_reasons))
            ):
                signal_attributes = {}
                self._record_signals(response, input_tokens, window, labels, context, signal_attributes)
        finally:  # the span ends even when a metric call fails, with the verdict and what the call reported
            span = self._span
            try:
                recording = span.is_recording()
                if recording:
                    max_length = instruments.settings.attribute_max_length
                    mode, reasons, substitution, scope = judged
                    attributes: dict[str, Any] = {
                        names.ENDING: ending,
                        names.DEGRADATION_MODE: mode,
                        names.SUBSTITUTION: substitution,
                    }
                    if scope is not None:  # built from the policy file's table names
                        attributes[names.POLICY_SCOPE] = scope
                    for kind in violations:
                        span.add_event(names.EVENT_VIOLATION, {names.VIOLATION_KIND: kind})
                    # Values from outside, cleaned and cut as clean_texts does (a printable string that
                    # fits, the common case, is kept as it is without a call).
                    if reasons:
                        attributes[names.DEGRADATION_REASON] = [clean(reason, max_length) for reason in reasons]
                    reported = finish_reasons
                    fitting = instruments.fitting_texts
                    if (
                        type(reported) is tuple
                        and len(reported) == 1
                        and type(first := reported[0]) is str
                        and (first in fitting or _fits(first, fitting, max_length))
                    ):  # one reported that fits (the common case): inference_finish_reasons keeps it as it is
                        attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] = [first]
                    elif type(finish_reasons := endings.inference_finish_reasons(reported, ending)) is tuple:
                        only = finish_reasons[0] if len(finish_reasons) == 1 else None
                        if type(only) is str and len(only) <= max_length and only.isprintable():
                            attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] = [only]  # one that fits
                        elif finish_reasons:
                            attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] = [
                                clean(reason, max_length) for reason in finish_reasons
                            ]
                    elif finish_reasons is not None:
                        attributes.update(
                            clean_texts({names.GEN_AI_RESPONSE_FINISH_REASONS: finish_reasons}, max_length)
                        )
                    if error_type is not None:
                        attributes.update(clean_texts({names.ERROR_TYPE: error_type}, max_length))
                    if response is not None:
                        model = response_model
                        if (
                            type(model) is str
                            and type(response_id) is str
                            and len(model) <= max_length
                            and len(response_id) <= max_length
                            and (model + response_id).isprintable()
                        ):
                            if model:
                                attributes[names.GEN_AI_RESPONSE_MODEL] = model
                            if response_id:
                                attributes[names.GEN_AI_RESPONSE_ID] = response_id
                        else:
                            outside = {names.GEN_AI_RESPONSE_MODEL: model, names.GEN_AI_RESPONSE_ID: response_id}
                            attributes.update(clean_texts(outside, max_length))
                    input_tokens, output_tokens, cache_read, cache_write, reasoning = usage
                    # each a count (clean_usage): within int64, as OTLP carries it
                    if input_tokens is not None:
                        attributes[names.GEN_AI_USAGE_INPUT_TOKENS] = input_tokens
                    if output_tokens is not None:
                        attributes[names.GEN_AI_USAGE_OUTPUT_TOKENS] = output_tokens
                    if cache_read is not None:
                        attributes[names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = cache_read
                    if cache_write is not None:
                        attributes[names.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS] = cache_write
                    if reasoning is not None:
                        attributes[names.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = reasoning
                    if first_chunk is not None:
                        attributes[names.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] = first_chunk
                    if priced is not None:
                        attributes[names.GEN_AI_USAGE_COST_AMOUNT] = priced.usd
                        attributes[names.GEN_AI_USAGE_COST_CURRENCY] = names.CURRENCY_USD
                        attributes[names.GEN_AI_USAGE_COST_SOURCE] = names.COST_SOURCE_LOCAL
                        attributes[names.COST_PRICE_SOURCE] = priced.source
                    if signal_attributes:
                        attributes.update(signal_attributes)
                    if error_type is not None:
                        span.set_status(Status(StatusCode.ERROR))
                    span.set_attributes(attributes)
                capture = self._capture
                content = self._capture_content(span, response) if capture.span or capture.event else None
                # Asked first: a log pipeline that drops the event costs no read of the span.
                enabled = instruments.event_logger_enabled
                if enabled is None or enabled(
                    severity_number=SeverityNumber.DEBUG, event_name=names.EVENT_INFERENCE_DETAILS
                ):
                    emit_inference_details(
                        instruments.event_logger, span, content if capture.event else None, recording
                    )
            finally:
                span.end()

    def _record_signals(
        self,
        response: Response | None,
        input_tokens: int | None,
        window: int | None,
        labels: dict[str, Any],
        context: Context,
        span_attributes: dict[str, Any],
    ) -> None:
        """What the fallback breaks: the call's signals (:func:`otel_sampling.rules.call_checks.judge`:
        its checks against what it asked, its truncation, its context utilization against the served
        model's ``window``), their points (:func:`record_signals`), and their span attributes put in
        ``span_attributes``. A failure here is logged at DEBUG: the call's verdict and other points are
        recorded already, and its span still ends."""
        try:
            checks = self.checks
            readable = response is not None and response.error_type is None and not response.refusal
            signals = call_checks.judge(
                checks.asked if checks is not None else None,
                checks.answer if checks is not None and readable else None,
                checks is not None and checks.context_length,
                response.finish_reasons if response is not None else (),
                input_tokens,
                window,
            )
            if signals is not NO_SIGNALS:
                record_signals(self._instruments.signals, signals, labels, context, span_attributes)
        except Exception:
            logger.debug("otel-sampling: could not record what a provider call's answer shows", exc_info=True)

    def _publish(self, summary: CallSummary) -> tuple[CallVerdict, tuple[str, ...]]:
        """Tell the call's scope what it did, in one call; its verdict comes back, with the
        violations a call outside a sampling request shows against its policy scope."""
        request = self._request
        if request is not None:
            return request.on_call(summary), ()
        run = self._run
        policy = self._instruments.settings.policy
        if policy.scoped and (run is not None or policy.default is not None):
            scope = run_records.policy_scope(policy, run)
            reference = scope.reference if scope is not None else NO_POLICY
        else:  # no scope table, or no run and no [default] (the common direct call): no scope to look for
            scope, reference = None, NO_POLICY
        if run is not None:
            judged = run.on_call(summary, reference)
        else:
            failed_over = (  # no parent span: no failover memory to ask (FailoverTracker.observe)
                self._parent is not None
                and self._failovers is not None
                and self._failovers.observe(self._parent, summary.requested, summary.ending.error_type is not None)
            )
            judged = verdict.judge_call(summary, reference, failed_over)
        return judged, scopes.violations(scope.policy, summary, judged) if scope is not None else ()

    def _record_violations(self, violations: tuple[str, ...], scope: str | None) -> None:
        """``otel_sampling.client.violations`` +1 per violation (its exemplar names this call's span)."""
        instruments = self._instruments
        context = recorded_in(self._span)
        scope_label = instruments.scope_label.value(scope)
        for kind in violations:
            instruments.client_violations.add(
                1,
                {
                    names.POLICY_SCOPE: scope_label,
                    names.VIOLATION_KIND: kind,
                    names.GEN_AI_PROVIDER_NAME: self._provider,
                },
                context=context,
            )

    def _cost(self, response_model: str | None, usage: Usage) -> tuple[verdict.Cost | None, int | None]:
        """The call's cost (:mod:`otel_sampling.rules.verdict`: None without token counts or a price)
        and the served model's context window (None: unknown), from one look-up in the price source."""
        input_tokens, output_tokens, _, _, _ = usage
        if input_tokens is None and output_tokens is None:
            return None, None
        settings = self._instruments.settings
        requested = self._request_model if self._compare_models else None
        source = settings.price_source
        prices = settings.policy.prices
        if source is None and not prices:  # nothing prices any model (an empty table prices nothing)
            _unpriced.report(verdict.priced_model(response_model, requested), None)
            return None, None
        model, quoted = verdict.policy_price(prices, response_model, requested)
        # The look-up (an LRU over genai-prices) is ours; the rule only picks the price. Its window is
        # the served model's only when the call is priced at the served model (not at the requested one).
        listed = source.look_up(self._provider, model, input_tokens or 0) if source is not None and model else UNLISTED
        window = listed.context_window if response_model else None
        if quoted is not None:
            return verdict.cost_of(quoted, usage), window
        if source is None or listed.price is None:
            _unpriced.report(model, source)
            return None, window
        return verdict.source_cost(source.name, listed.price, usage), window

    def _capture_content(self, span: trace.Span, response: Response | None) -> dict[str, Any]:
        """The content attributes (set on the span when capture puts content there)."""
        given = self._input_content or Content()
        content = given._replace(output_messages=response.output if response is not None else None)
        attributes = content.attributes(self._instruments.settings.attribute_max_length)
        if attributes and self._capture.span and span.is_recording():
            span.set_attributes(attributes)
        return attributes


def _fits(text: str, fitting: set[str], max_length: int) -> bool:
    """Whether ``text`` is an attribute value as it is (printable, at most ``max_length`` long);
    one that is and is not empty is remembered in ``fitting`` (at most ``MAX_FITTING_TEXTS``)."""
    if len(text) <= max_length and text.isprintable():
        if text and len(fitting) < MAX_FITTING_TEXTS:
            fitting.add(text)
        return True
    return False


class _Scope(Protocol):
    """Where a call made in a sampling request's callback publishes its summary: the request."""

    def on_call(self, call: CallSummary) -> CallVerdict: ...


# --------------------------------------------------------- the GenAI inference metrics of one call
# Which GenAI inference metric names we emit, and the recording of one inference call into them.
#
# semantic-conventions-genai renamed the inference metrics after v1.41 (the last release that
# carried them): #521 moved ``gen_ai.client.operation.duration`` (for inference) and
# ``gen_ai.client.operation.time_to_first_chunk`` to ``gen_ai.client.inference.duration`` and
# ``gen_ai.client.inference.time_to_first_chunk`` and added ``…time_per_output_chunk``; #374
# removed ``gen_ai.client.token.usage`` and ``gen_ai.token.type`` for the counters
# ``gen_ai.client.inference.usage.{input_tokens,output_tokens,cache_read.input_tokens,
# cache_write.input_tokens,reasoning.output_tokens}`` (attribute ``gen_ai.token.modality``,
# required) and the histograms ``gen_ai.client.inference.operation.{input,output}_tokens``
# (``docs/telemetry.md``, "Semantic-conventions version", says what was read at which commit).
#
# The choice follows OpenTelemetry's transition switch, ``OTEL_SEMCONV_STABILITY_OPT_IN`` (a
# comma-separated list, as opentelemetry-instrumentation's ``_semconv`` reads it):
#
# =================================  ================================================
# value in the list                  names emitted
# =================================  ================================================
# ``gen_ai/dup``                     both (v1.41's and the newest); wins over the next
# ``gen_ai_latest_experimental``     the newest only
# neither (the default)              :data:`otel_sampling.semconv_mode.DEFAULT`
# =================================  ================================================
#
# Never emitted in any mode: ``gen_ai.token.type`` values other than ``input`` / ``output`` (cache
# parts are inside ``input`` and have their own counters in the newest names).

MAX_CHUNK_GAPS: Final = 4096  # inter-chunk gaps kept per stream (time_per_output_chunk); later ones are dropped
MAX_CHUNK_TIMES: Final = MAX_CHUNK_GAPS + 1  # event times a stream's reader appends to ProviderCall.chunk_times


def record_inference(
    instruments: InferenceInstruments,
    points: CallPoints,
    *,
    duration: float,
    first_chunk: float | None,
    chunk_gaps: Sequence[float],
    usage: Usage,
    context: Context,
) -> None:
    """Record one inference call.

    Args:
        points: the attributes of its points (:meth:`otel_sampling.metrics.Instruments.call_points`:
            every point's, ``error.type`` included when it failed; the duration's, with
            ``otel_sampling.ending``; v1.41's token usage's, with ``gen_ai.token.type``).
        duration: seconds from the request to the call's end.
        first_chunk: seconds from the request to a stream's first chunk; None: not a stream, or no chunk.
        chunk_gaps: seconds between consecutive chunks after the first (``time_per_output_chunk``).
        usage: the cleaned counts (:func:`~otel_sampling.rules.values.clean_usage`); None parts were not reported.
        context: the context to record in (:func:`otel_sampling.metrics.recorded_in`).

    v1.41 names: ``gen_ai.client.token.usage`` gets ``input`` and ``output`` when reported. Newest
    names (token-metrics.yaml: "SHOULD record this metric for each inference operation, including
    failed ones … or ``0`` if the response was not received or did not contain token usage"):
    input and output on every call (0 when not reported); a cache or reasoning part when the
    answer reported it (0 included), and as 0 when the call brought no usage at all; modality
    ``unknown`` everywhere (the text's value for no usage; otherwise our providers report totals,
    not a count per modality). A part the answer left out while reporting other usage is not
    recorded, so a (mode, model) whose provider never reported a cache part has no cache-read
    series to read a 0 % share from. Without the newest names, ours of the share
    (``otel_sampling.client.usage.input_tokens`` and ``….cache_read.input_tokens``) get the input
    and cache-read counts as the newest two would, without modality.
    """
    # (the dicts may be shared between calls: never changed)
    attributes, with_ending, input_attributes, output_attributes, _ = points
    if instruments.operation_duration is not None:
        instruments.operation_duration.record(duration, with_ending, context=context)
    if instruments.inference_duration is not None:
        instruments.inference_duration.record(duration, with_ending, context=context)
    if first_chunk is not None:
        if instruments.time_to_first_chunk is not None:
            instruments.time_to_first_chunk.record(first_chunk, attributes, context=context)
        if instruments.inference_time_to_first_chunk is not None:
            instruments.inference_time_to_first_chunk.record(first_chunk, attributes, context=context)
    if chunk_gaps:
        for per_chunk in (instruments.operation_time_per_output_chunk, instruments.time_per_output_chunk):
            if per_chunk is not None:
                for gap in chunk_gaps:
                    per_chunk.record(gap, attributes, context=context)
    input_tokens, output_tokens, cache_read, _, _ = usage
    token_usage = instruments.token_usage
    if token_usage is not None:
        if input_tokens is not None:
            token_usage.record(input_tokens, input_attributes, context=context)
        if output_tokens is not None:
            token_usage.record(output_tokens, output_attributes, context=context)
    if instruments.emission.new:
        _record_usage(instruments, attributes, usage, context)
        return
    # Ours of the share: the input count on every call (0 when not reported), the cache-read count
    # when reported, and as 0 when the call brought no usage at all (_add_counts' rule).
    if instruments.share_input is not None:
        instruments.share_input.add(input_tokens or 0, attributes, context=context)
    if instruments.share_cache_read is not None and (
        cache_read is not None or (input_tokens is None and output_tokens is None)
    ):
        instruments.share_cache_read.add(cache_read or 0, attributes, context=context)


def _record_usage(
    instruments: InferenceInstruments,
    attributes: Mapping[str, Any],
    usage: Usage,
    context: Context,
) -> None:
    no_usage = usage.input_tokens is None and usage.output_tokens is None
    _add_counts(
        (
            (instruments.usage_input, usage.input_tokens, True),
            (instruments.usage_output, usage.output_tokens, True),
            (instruments.usage_cache_read, usage.cache_read_input_tokens, no_usage),
            (instruments.usage_cache_write, usage.cache_creation_input_tokens, no_usage),
            (instruments.usage_reasoning, usage.reasoning_output_tokens, no_usage),
        ),
        {**attributes, names.GEN_AI_TOKEN_MODALITY: names.TOKEN_MODALITY_UNKNOWN},
        context,
    )
    # The per-operation histograms carry the error attributes but no modality (token-metrics.yaml).
    for histogram, count in (
        (instruments.operation_input_tokens, usage.input_tokens),
        (instruments.operation_output_tokens, usage.output_tokens),
    ):
        if histogram is not None:
            histogram.record(count or 0, attributes, context=context)


def _add_counts(
    counters: Sequence[tuple[Any, int | None, bool]], attributes: Mapping[str, Any], context: Context
) -> None:
    """Add each ``(counter, count, zero_when_absent)``: the count when reported (0 included), 0 when
    absent and ``zero_when_absent``. A part the answer left out while reporting other usage is not a
    0 it reported: skipped, so that a cache-read share of 0 means "reported 0", never "not reported"."""
    for counter, count, zero_when_absent in counters:
        if counter is not None and (count is not None or zero_when_absent):
            counter.add(count or 0, attributes, context=context)


# --------------------------------------------------------- what the fallback breaks, of one call
# The points and span attributes of a call's :class:`~otel_sampling.rules.call_checks.Signals`
# (``docs/telemetry.md``, "What the fallback breaks"): counts and closed values only, never
# arguments or text. Each point carries the call's ``gen_ai.provider.name``,
# ``gen_ai.response.model`` (bounded), ``degradation.mode`` and drill labels:
#
# * ``otel_sampling.client.tool_calls``: the answer's tool calls (a request that offered tools);
# * ``otel_sampling.client.tool_call.errors``: by ``otel_sampling.tool_call.error``;
# * ``otel_sampling.client.structured_output.requests`` / ``.failures`` (by
#   ``otel_sampling.structured_output.failure``): a call that asked for structured output and whose
#   answer was judged;
# * ``otel_sampling.client.truncations``: by ``otel_sampling.truncation.kind``, every call;
# * ``otel_sampling.client.context.utilization``: input tokens over the served model's context
#   window, every call whose input tokens and window (the price source's) are known.


def record_signals(
    instruments: SignalInstruments,
    signals: Signals,
    labels: dict[str, Any],
    context: Context,
    span_attributes_into: dict[str, Any],
) -> None:
    """Put the chat span's attributes of ``signals`` in ``span_attributes_into`` (the tool-call
    counts where tools were offered, whether structured output was asked for and how it failed, the
    truncation kind, the utilization), and add the call's points (the section's comment), in one
    pass; ``labels``: the call's metric labels."""
    attributes = span_attributes_into
    tool_calls, not_offered, invalid_arguments, structured, structured_failure = signals.checked
    if signals.asked.tools:
        attributes[names.TOOL_CALL_COUNT] = tool_calls
        attributes[names.TOOL_CALL_NOT_OFFERED_COUNT] = not_offered
        attributes[names.TOOL_CALL_INVALID_ARGUMENTS_COUNT] = invalid_arguments
    if tool_calls:
        instruments.tool_calls.add(tool_calls, labels, context=context)
        if not_offered:
            instruments.tool_call_errors.add(
                not_offered, {**labels, names.TOOL_CALL_ERROR: names.TOOL_CALL_ERROR_NOT_OFFERED}, context=context
            )
        if invalid_arguments:
            instruments.tool_call_errors.add(
                invalid_arguments,
                {**labels, names.TOOL_CALL_ERROR: names.TOOL_CALL_ERROR_INVALID_ARGUMENTS},
                context=context,
            )
    if structured:
        attributes[names.STRUCTURED_OUTPUT_REQUESTED] = True
        instruments.structured_requests.add(1, labels, context=context)
        if structured_failure is not None:
            attributes[names.STRUCTURED_OUTPUT_FAILURE] = structured_failure
            instruments.structured_failures.add(
                1, {**labels, names.STRUCTURED_OUTPUT_FAILURE: structured_failure}, context=context
            )
    truncation = signals.truncation
    if truncation is not None:
        attributes[names.TRUNCATION_KIND] = truncation
        instruments.truncations.add(1, {**labels, names.TRUNCATION_KIND: truncation}, context=context)
    utilization = signals.utilization
    if utilization is not None:
        attributes[names.CONTEXT_UTILIZATION] = utilization
        instruments.context_utilization.record(utilization, labels, context=context)


# --------------------------------------------------------- the inference details event of one call
# The ``gen_ai.client.inference.operation.details`` event of one provider call (a log record).
#
# semantic-conventions-genai #579 made the event Recommended, no longer opt-in, and #520 has it
# recorded at ``DEBUG`` severity: every inference call emits it, with the inference span's GenAI
# attributes (``gen_ai.*``, ``server.*``, ``error.type``: the names the span carries, never our own)
# and no content. Content (``gen_ai.input.messages``, ``gen_ai.output.messages``,
# ``gen_ai.system_instructions``) is added only when
# ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` puts it on the event (``EVENT_ONLY``,
# ``SPAN_AND_EVENT``). A log pipeline at INFO or above drops it; a span that is not recorded (sampled
# out) has no attributes to give, and no event is emitted.

# The conventions' namespaces the event repeats from the span (the span's own names; ours stay on the span).
_SPAN_NAMESPACES: Final = ("gen_ai.", "server.", "error.")
_CONTENT: Final = frozenset(
    {names.GEN_AI_INPUT_MESSAGES, names.GEN_AI_OUTPUT_MESSAGES, names.GEN_AI_SYSTEM_INSTRUCTIONS}
)


def emit_inference_details(
    event_logger: Logger, span: trace.Span, content: Mapping[str, Any] | None, recording: bool | None = None
) -> None:
    """Emit the event for ``span`` (ended or about to end), with ``content`` when given; the caller
    asks first whether the logger would drop a DEBUG record of this name (``Logger.enabled``, where
    the API has it: :attr:`otel_sampling.metrics.Instruments.event_logger_enabled`). ``recording``:
    ``span.is_recording()`` when the caller knows it already (None: asked here)."""
    if not (span.is_recording() if recording is None else recording):
        return
    recorded = getattr(span, "attributes", None)
    if not isinstance(recorded, Mapping):
        return
    attributes = {
        key: value for key, value in recorded.items() if key.startswith(_SPAN_NAMESPACES) and key not in _CONTENT
    }
    if content:
        attributes.update(content)
    event_logger.emit(
        event_name=names.EVENT_INFERENCE_DETAILS,
        attributes=attributes,
        severity_number=SeverityNumber.DEBUG,
        severity_text="DEBUG",
        context=trace.set_span_in_context(span),
    )
