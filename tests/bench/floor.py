"""The floor: the least any instrumentation must do to report what otel-sampling reports per call.

A hand-written wrapper (``wrapt``) around ``Messages.create`` (anthropic),
``Completions.create`` (openai chat), ``Models.generate_content`` / ``generate_content_stream``
(google-genai) and ``litellm.completion`` (LiteLLM; the openai SDK call it makes underneath is not
traced again, as ours does not): one CLIENT span carrying the same attributes otel-sampling
puts on its span for the bench's calls (same keys, same count: request, server, ending, mode,
response, usage, time to first chunk on streams), and the same measurements (operation duration;
input and output token usage; the prompt-cache share's input and cache-read counters (the
default emits v1.41's names); time to first chunk and per output chunk on streams; the unpriced
call, the bench running without a price source), with the same bucket
boundaries, each recorded in the context of the call's span (so that, under the SDK's default
``trace_based`` exemplar filter, its exemplar names that span, as the contract says). No
classification, no label bounding, no error handling, no content capture: nothing the bench's
successful calls do not need. A stream is wrapped in a generator that reads each event and ends
the span after the last one.

On the wire it sends what ours sends: the SDKs that send no trace context of their own (openai,
google-genai, LiteLLM's openai route) carry the global propagator's headers for the floor's span
(``extra_headers`` on openai and LiteLLM, the request ``_build_request`` builds on google-genai);
anthropic's SDK sends its own span's ``traceparent`` in every configuration.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import wrapt
from opentelemetry import metrics, propagate, trace
from opentelemetry.trace import SpanKind

from otel_sampling import names

SCOPE = "bench.floor"
# A LiteLLM call being sent: the openai SDK call it makes underneath passes straight through (one
# call, one span, as ours: the same one check on every SDK call).
_sending: ContextVar[bool] = ContextVar("bench_floor_sending", default=False)
_SERVERS = {"gcp.gemini": "generativelanguage.googleapis.com"}  # else api.<provider>.com
# A snapshot of the requested model, as the contract reads one: a date (YYYYMMDD, YYYY-MM-DD), four
# digits (gpt-4-0613) or ``-latest`` after the requested name is no substitution.
_SNAPSHOT = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|\d{4}|latest)")


class _Instruments:
    def __init__(self, scope: str = SCOPE) -> None:
        self.tracer = trace.get_tracer(scope)
        meter = metrics.get_meter(scope)
        self.duration = meter.create_histogram(
            names.METRIC_GEN_AI_OPERATION_DURATION,
            unit="s",
            explicit_bucket_boundaries_advisory=list(names.GEN_AI_DURATION_BUCKETS),
        )
        self.tokens = meter.create_histogram(
            names.METRIC_GEN_AI_TOKEN_USAGE,
            unit="{token}",
            explicit_bucket_boundaries_advisory=list(names.GEN_AI_TOKEN_BUCKETS),
        )
        self.first_chunk = meter.create_histogram(
            names.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK,
            unit="s",
            explicit_bucket_boundaries_advisory=list(names.GEN_AI_DURATION_BUCKETS),
        )
        self.per_chunk = meter.create_histogram(
            names.METRIC_GEN_AI_TIME_PER_OUTPUT_CHUNK,
            unit="s",
            explicit_bucket_boundaries_advisory=list(names.GEN_AI_CHUNK_BUCKETS),
        )
        self.unpriced = meter.create_counter(names.METRIC_CLIENT_UNPRICED, unit="{call}")
        self.share_input = meter.create_counter(names.METRIC_CLIENT_USAGE_INPUT_TOKENS, unit="{token}")
        self.share_cache_read = meter.create_counter(names.METRIC_CLIENT_USAGE_CACHE_READ_INPUT_TOKENS, unit="{token}")
        self.tool_calls = meter.create_counter(names.METRIC_CLIENT_TOOL_CALLS, unit=names.UNIT_TOOL_CALL)
        self.tool_call_errors = meter.create_counter(names.METRIC_CLIENT_TOOL_CALL_ERRORS, unit=names.UNIT_TOOL_CALL)
        self.structured = meter.create_counter(names.METRIC_CLIENT_STRUCTURED_OUTPUT_REQUESTS, unit="{call}")


def metric_attributes_of(request: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    """The metric points' attributes (the duration adds the ending, the tokens the token type; a
    LiteLLM call's request names no server)."""
    metric_attributes = {
        k: request[k]
        for k in ("gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "server.address")
        if k in request
    }
    metric_attributes["gen_ai.response.model"] = response["gen_ai.response.model"]
    metric_attributes["degradation.mode"] = response["degradation.mode"]
    return metric_attributes


def _end(
    instruments: _Instruments,
    span: Any,
    start: float,
    first_chunk: float | None,
    request: dict[str, Any],
    response: dict[str, Any],
    gaps: list[float] | None = None,
    checks: dict[str, Any] | None = None,
) -> None:
    duration = time.perf_counter() - start
    attributes = {**request, **response, **(checks or {})}
    metric_attributes = metric_attributes_of(request, response)
    context = trace.set_span_in_context(span)  # each point's exemplar names the call's span, as ours
    if first_chunk is not None:
        attributes["gen_ai.response.time_to_first_chunk"] = first_chunk - start
        instruments.first_chunk.record(first_chunk - start, metric_attributes, context=context)
        for gap in gaps or ():
            instruments.per_chunk.record(gap, metric_attributes, context=context)
    span.set_attributes(attributes)
    span.end()
    instruments.duration.record(duration, {**metric_attributes, "otel_sampling.ending": "completed"}, context=context)
    instruments.tokens.record(
        response["gen_ai.usage.input_tokens"], {**metric_attributes, "gen_ai.token.type": "input"}, context=context
    )
    instruments.tokens.record(
        response["gen_ai.usage.output_tokens"], {**metric_attributes, "gen_ai.token.type": "output"}, context=context
    )
    instruments.share_input.add(response["gen_ai.usage.input_tokens"], metric_attributes, context=context)
    if "gen_ai.usage.cache_read.input_tokens" in response:  # a part the answer left out is not a 0
        instruments.share_cache_read.add(
            response["gen_ai.usage.cache_read.input_tokens"], metric_attributes, context=context
        )
    priced_by = {k: metric_attributes[k] for k in ("gen_ai.provider.name", "gen_ai.response.model", "degradation.mode")}
    instruments.unpriced.add(1, priced_by, context=context)
    for record, value, point_attributes in check_points(instruments, checks, priced_by):
        record(value, point_attributes, context=context)


def check_points(
    instruments: _Instruments, checks: dict[str, Any] | None, priced_by: dict[str, Any]
) -> list[tuple[Any, int, dict[str, Any]]]:
    """The points of a call's tool checks (:func:`_tool_checks`): (instrument's add, value, attributes)."""
    if not checks:
        return []
    points: list[tuple[Any, int, dict[str, Any]]] = [
        (instruments.tool_calls.add, checks[names.TOOL_CALL_COUNT], priced_by)
    ]
    for kind, key in (
        (names.TOOL_CALL_ERROR_NOT_OFFERED, names.TOOL_CALL_NOT_OFFERED_COUNT),
        (names.TOOL_CALL_ERROR_INVALID_ARGUMENTS, names.TOOL_CALL_INVALID_ARGUMENTS_COUNT),
    ):
        if checks[key]:
            points.append((instruments.tool_call_errors.add, checks[key], {**priced_by, names.TOOL_CALL_ERROR: kind}))
    if checks.get(names.STRUCTURED_OUTPUT_REQUESTED):
        points.append((instruments.structured.add, 1, priced_by))
    return points


_JSON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _fits(arguments: Any, schema: dict[str, Any]) -> bool:
    """The least schema check: an object with the required properties, each top-level one of its type."""
    if not isinstance(arguments, dict) or any(key not in arguments for key in schema.get("required", ())):
        return False
    for key, value in arguments.items():
        kind = schema.get("properties", {}).get(key, {}).get("type")
        if kind in ("integer", "number"):
            if isinstance(value, bool) or not isinstance(value, int if kind == "integer" else (int, float)):
                return False
        elif kind in _JSON_TYPES and not isinstance(value, _JSON_TYPES[kind]):
            return False
    return True


def _tool_checks(provider: str, kwargs: dict[str, Any], result: Any) -> dict[str, Any] | None:
    """The tool calls of an answer against the tools offered (None: none offered); anthropic's forced
    tool is a request for structured output, answered by that tool's input."""
    tools = kwargs.get("tools")
    if not tools:
        return None
    if provider == "anthropic":
        offered = {tool["name"]: tool.get("input_schema", {}) for tool in tools}
        calls = [(block.name, block.input) for block in result.content if block.type == "tool_use"]
    else:
        offered = {tool["function"]["name"]: tool["function"].get("parameters", {}) for tool in tools}
        calls = [
            (c.function.name, json.loads(c.function.arguments)) for c in result.choices[0].message.tool_calls or ()
        ]
    checks: dict[str, Any] = {
        names.TOOL_CALL_COUNT: len(calls),
        names.TOOL_CALL_NOT_OFFERED_COUNT: sum(name not in offered for name, _ in calls),
        names.TOOL_CALL_INVALID_ARGUMENTS_COUNT: sum(
            name in offered and not _fits(arguments, offered[name]) for name, arguments in calls
        ),
    }
    choice = kwargs.get("tool_choice")
    if provider == "anthropic" and isinstance(choice, dict) and choice.get("type") == "tool":
        checks[names.STRUCTURED_OUTPUT_REQUESTED] = True
    return checks


def _outcome(model: str, response_id: str, reason: str, usage: dict[str, int], requested: str) -> dict[str, Any]:
    outcome: dict[str, Any] = {
        "otel_sampling.ending": "completed",
        "degradation.mode": "primary",
        "otel_sampling.substitution": "none",
        "gen_ai.response.model": model,
        "gen_ai.response.id": response_id,
        "gen_ai.response.finish_reasons": (reason,),
        **usage,
    }
    if model != requested and not (model.startswith(requested) and _SNAPSHOT.fullmatch(model, len(requested))):
        outcome["degradation.mode"] = "degraded"
        outcome["degradation.reason"] = ("substitution",)
        outcome["otel_sampling.substitution"] = "without_policy"
    return outcome


def _anthropic_usage(usage: Any) -> dict[str, int]:
    cache_read = usage.cache_read_input_tokens or 0
    cache_creation = usage.cache_creation_input_tokens or 0
    return {
        "gen_ai.usage.input_tokens": usage.input_tokens + cache_read + cache_creation,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": cache_read,
        "gen_ai.usage.cache_write.input_tokens": cache_creation,
        **_reasoning(getattr(usage, "output_tokens_details", None), "thinking_tokens"),
    }


def _reasoning(details: Any, field: str) -> dict[str, int]:
    """``gen_ai.usage.reasoning.output_tokens`` when the answer reports it (a dict or a model)."""
    count = details.get(field) if isinstance(details, dict) else getattr(details, field, None)
    return {"gen_ai.usage.reasoning.output_tokens": count} if isinstance(count, int) else {}


def _openai_usage(usage: Any) -> dict[str, int]:
    details = usage.prompt_tokens_details
    return {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "gen_ai.usage.cache_read.input_tokens": (details.cached_tokens if details else 0) or 0,
        **_reasoning(usage.completion_tokens_details, "reasoning_tokens"),
    }


def _request(provider: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    model = kwargs["model"]
    request: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
    }
    if "max_tokens" in kwargs:
        request["gen_ai.request.max_tokens"] = kwargs["max_tokens"]
    if kwargs.get("stream"):
        request["gen_ai.request.stream"] = True
    if provider == "openai":
        request["openai.api.type"] = "chat_completions"
    request["server.address"] = _SERVERS.get(provider, f"api.{provider}.com")
    request["server.port"] = 443
    return request


def _anthropic_stream(
    instruments: _Instruments, span: Any, start: float, request: dict[str, Any], stream: Any
) -> Iterator[Any]:
    first_chunk = None
    model = response_id = reason = ""
    usage: Any = None
    gaps: list[float] = []
    last = 0.0
    for event in stream:
        now = time.perf_counter()
        if first_chunk is None:
            first_chunk = now
        else:
            gaps.append(now - last)
        last = now
        if event.type == "message_start":
            model, response_id, usage = event.message.model, event.message.id, event.message.usage
        elif event.type == "message_delta":
            reason, usage = event.delta.stop_reason, event.usage
        yield event
    _end(
        instruments,
        span,
        start,
        first_chunk,
        request,
        _outcome(model, response_id, reason, _anthropic_usage(usage), request["gen_ai.request.model"]),
        gaps,
    )


def _openai_stream(
    instruments: _Instruments, span: Any, start: float, request: dict[str, Any], stream: Any
) -> Iterator[Any]:
    first_chunk = None
    model = response_id = reason = ""
    usage: Any = None
    gaps: list[float] = []
    last = 0.0
    for chunk in stream:
        now = time.perf_counter()
        if first_chunk is None:
            first_chunk = now
            model, response_id = chunk.model, chunk.id
        else:
            gaps.append(now - last)
        last = now
        if chunk.choices and chunk.choices[0].finish_reason:
            reason = chunk.choices[0].finish_reason
        if chunk.usage is not None:
            usage = chunk.usage
        yield chunk
    _end(
        instruments,
        span,
        start,
        first_chunk,
        request,
        _outcome(model, response_id, reason, _openai_usage(usage), request["gen_ai.request.model"]),
        gaps,
    )


def _gemini_usage(usage: Any) -> dict[str, int]:
    """Gemini's usageMetadata as ours reads it: thoughts are output (and reasoning) tokens."""
    thoughts = usage.thoughts_token_count
    counts = {
        "gen_ai.usage.input_tokens": usage.prompt_token_count + (usage.tool_use_prompt_token_count or 0),
        "gen_ai.usage.output_tokens": (usage.candidates_token_count or 0) + (thoughts or 0),
    }
    if usage.cached_content_token_count is not None:
        counts["gen_ai.usage.cache_read.input_tokens"] = usage.cached_content_token_count
    if thoughts is not None:
        counts["gen_ai.usage.reasoning.output_tokens"] = thoughts
    return counts


def _gemini_outcome(answer: Any, reason: str, requested: str) -> dict[str, Any]:
    return _outcome(answer.model_version, answer.response_id, reason, _gemini_usage(answer.usage_metadata), requested)


def _gemini_stream(
    instruments: _Instruments, span: Any, start: float, request: dict[str, Any], stream: Any
) -> Iterator[Any]:
    first_chunk = None
    reason = ""
    last_answer: Any = None
    gaps: list[float] = []
    last = 0.0
    chunks = iter(stream)
    with trace.use_span(span, end_on_exit=False):  # the SDK's generator sends the request on the first read
        first = next(chunks, None)
    for chunk in itertools.chain((first,), chunks) if first is not None else ():
        now = time.perf_counter()
        if first_chunk is None:
            first_chunk = now
        else:
            gaps.append(now - last)
        last = now
        if chunk.candidates and chunk.candidates[0].finish_reason:
            reason = chunk.candidates[0].finish_reason.value
        last_answer = chunk  # model, id and usage: the last chunk's
        yield chunk
    outcome = _gemini_outcome(last_answer, reason, request["gen_ai.request.model"])
    _end(instruments, span, start, first_chunk, request, outcome, gaps)


def _gemini_wrapper(instruments: _Instruments, stream: bool) -> Any:
    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        request = _request("gcp.gemini", kwargs)
        if stream:
            request["gen_ai.request.stream"] = True
        span = instruments.tracer.start_span(f"chat {request['gen_ai.request.model']}", kind=SpanKind.CLIENT)
        start = time.perf_counter()
        with trace.use_span(span, end_on_exit=False):
            result = wrapped(*args, **kwargs)
        if stream:
            return _gemini_stream(instruments, span, start, request, result)
        reason = result.candidates[0].finish_reason.value
        _end(instruments, span, start, None, request, _gemini_outcome(result, reason, request["gen_ai.request.model"]))
        return result

    return wrapper


def _litellm_request(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The request as ours reads a LiteLLM call: the provider LiteLLM routes to (the bench names it
    with ``custom_llm_provider``), the model sent upstream; no server (the call names no ``api_base``)."""
    request: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": kwargs["custom_llm_provider"],
        "gen_ai.request.model": kwargs["model"],
    }
    if kwargs.get("stream"):
        request["gen_ai.request.stream"] = True
    return request


def _litellm_stream(
    instruments: _Instruments, span: Any, start: float, request: dict[str, Any], stream: Any
) -> Iterator[Any]:
    """LiteLLM's chunks: the served model is the provider's, kept in each chunk's ``_hidden_params``
    (a chunk's ``model`` is the model asked for)."""
    first_chunk = None
    model = response_id = reason = ""
    usage: Any = None
    gaps: list[float] = []
    last = 0.0
    for chunk in stream:
        now = time.perf_counter()
        if first_chunk is None:
            first_chunk = now
            response_id = chunk.id
        else:
            gaps.append(now - last)
        last = now
        model = chunk._hidden_params.get("provider_response_model") or model
        if chunk.choices and chunk.choices[0].finish_reason:
            reason = chunk.choices[0].finish_reason
        if getattr(chunk, "usage", None) is not None:
            usage = chunk.usage
        yield chunk
    outcome = _outcome(model, response_id, reason, _openai_usage(usage), request["gen_ai.request.model"])
    _end(instruments, span, start, first_chunk, request, outcome, gaps)


def _litellm_wrapper(instruments: _Instruments) -> Any:
    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        request = _litellm_request(kwargs)
        span = instruments.tracer.start_span(f"chat {request['gen_ai.request.model']}", kind=SpanKind.CLIENT)
        start = time.perf_counter()
        sending = _sending.set(True)
        try:
            with trace.use_span(span, end_on_exit=False):
                result = wrapped(*args, **_traced(kwargs))
        finally:
            _sending.reset(sending)
        if kwargs.get("stream"):
            return _litellm_stream(instruments, span, start, request, result)
        usage = _openai_usage(result.usage)
        outcome = _outcome(result.model, result.id, result.choices[0].finish_reason, usage, kwargs["model"])
        _end(instruments, span, start, None, request, outcome)
        return result

    return wrapper


def _traced(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's keyword arguments with the propagator's headers for the current span (the floor's)
    as ``extra_headers``, under any the caller gave."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    given = kwargs.get("extra_headers")
    return {**kwargs, "extra_headers": {**carrier, **given} if given else carrier}


def _gemini_request(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``BaseApiClient._build_request``: the request it builds carries the propagator's headers for
    the current span, under the client's (a new dict: the SDK may hand a request the client's own)."""
    request = wrapped(*args, **kwargs)
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    request.headers = {**carrier, **request.headers}
    return request


def _wrapper(instruments: _Instruments, provider: str) -> Any:
    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if _sending.get():
            return wrapped(*args, **kwargs)
        request = _request(provider, kwargs)
        span = instruments.tracer.start_span(f"chat {request['gen_ai.request.model']}", kind=SpanKind.CLIENT)
        start = time.perf_counter()
        with trace.use_span(span, end_on_exit=False):
            result = wrapped(*args, **(kwargs if provider == "anthropic" else _traced(kwargs)))
        if kwargs.get("stream"):
            follow = _anthropic_stream if provider == "anthropic" else _openai_stream
            return follow(instruments, span, start, request, result)
        if provider == "anthropic":
            outcome = _outcome(
                result.model,
                result.id,
                result.stop_reason,
                _anthropic_usage(result.usage),
                request["gen_ai.request.model"],
            )
        else:
            outcome = _outcome(
                result.model,
                result.id,
                result.choices[0].finish_reason,
                _openai_usage(result.usage),
                request["gen_ai.request.model"],
            )
        _end(instruments, span, start, None, request, outcome, checks=_tool_checks(provider, kwargs, result))
        return result

    return wrapper


def install() -> None:
    """Wrap the SDKs' chat entry points and LiteLLM's ``completion`` (global tracer and meter providers)."""
    instruments = _Instruments()
    wrapt.wrap_function_wrapper(
        "anthropic.resources.messages.messages", "Messages.create", _wrapper(instruments, "anthropic")
    )
    wrapt.wrap_function_wrapper(
        "openai.resources.chat.completions.completions", "Completions.create", _wrapper(instruments, "openai")
    )
    if has_gemini():
        wrapt.wrap_function_wrapper(
            "google.genai.models", "Models.generate_content", _gemini_wrapper(instruments, False)
        )
        wrapt.wrap_function_wrapper(
            "google.genai.models", "Models.generate_content_stream", _gemini_wrapper(instruments, True)
        )
        wrapt.wrap_function_wrapper("google.genai._api_client", "BaseApiClient._build_request", _gemini_request)
    # Wrapped once a call kind imports LiteLLM, as ours (importing it takes seconds).
    wrapt.register_post_import_hook(
        lambda module: wrapt.wrap_function_wrapper(module, "completion", _litellm_wrapper(instruments)), "litellm"
    )


def has_gemini() -> bool:
    """Whether google-genai is installed (a matrix venv may have only the anthropic and openai SDKs)."""
    try:
        return importlib.util.find_spec("google.genai") is not None
    except ModuleNotFoundError:  # no ``google`` namespace at all
        return False
