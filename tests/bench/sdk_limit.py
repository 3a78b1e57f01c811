"""The SDK limit: what the OpenTelemetry SDK alone charges for the floor's span and metric points.

The floor's telemetry (``floor.py``) with none of its work: the first call of each provider, model
and shape runs the floor, and what the floor's end recorded (span name, attributes, each point's
value and attributes) is kept as a plan; every later call runs the SDK's own call untouched and
then replays the plan: one span started, its attributes set in one call, ended, and the same points
recorded in its context (so the exemplars name it, as the floor's do). No request or answer is
read, no stream wrapped: a stream's time to first chunk and its gaps are the first call's, recorded
when the call returns. Its added instructions over bare are the practical least for this telemetry
through the SDK; the floor's excess over it is the reading of requests and answers and, on the
SDKs that send no trace context of their own, the propagator's headers it sends.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import floor
import wrapt
from opentelemetry import trace
from opentelemetry.trace import SpanKind

SCOPE = "bench.sdk_limit"


class _Plan(NamedTuple):
    name: str
    attributes: dict[str, Any]
    points: tuple[tuple[Any, float, dict[str, Any]], ...]  # (instrument's record or add, value, attributes)


def _plan(
    end: float,
    instruments: floor._Instruments,
    span: Any,
    start: float,
    first_chunk: float | None,
    request: dict[str, Any],
    response: dict[str, Any],
    gaps: list[float] | None = None,
    checks: dict[str, Any] | None = None,
) -> _Plan:
    """What ``floor._end`` records when called with these arguments after ``end``, as a plan (the
    same keys, values and points)."""
    attributes = {**request, **response, **(checks or {})}
    metric_attributes = floor.metric_attributes_of(request, response)
    points: list[tuple[Any, float, dict[str, Any]]] = []
    if first_chunk is not None:
        attributes["gen_ai.response.time_to_first_chunk"] = first_chunk - start
        points.append((instruments.first_chunk.record, first_chunk - start, metric_attributes))
        points += [(instruments.per_chunk.record, gap, metric_attributes) for gap in gaps or ()]
    points.append(
        (instruments.duration.record, end - start, {**metric_attributes, "otel_sampling.ending": "completed"})
    )
    for token_type, key in (("input", "gen_ai.usage.input_tokens"), ("output", "gen_ai.usage.output_tokens")):
        points.append(
            (instruments.tokens.record, response[key], {**metric_attributes, "gen_ai.token.type": token_type})
        )
    points.append((instruments.share_input.add, response["gen_ai.usage.input_tokens"], metric_attributes))
    if "gen_ai.usage.cache_read.input_tokens" in response:
        points.append(
            (instruments.share_cache_read.add, response["gen_ai.usage.cache_read.input_tokens"], metric_attributes)
        )
    priced_by = {k: metric_attributes[k] for k in ("gen_ai.provider.name", "gen_ai.response.model", "degradation.mode")}
    points.append((instruments.unpriced.add, 1, priced_by))
    points += floor.check_points(instruments, checks, priced_by)
    return _Plan(f"chat {request['gen_ai.request.model']}", attributes, tuple(points))


def _key(request: dict[str, Any], checks: dict[str, Any] | None) -> tuple[Any, ...]:
    """Provider, model, shape, whether the request names its server (an SDK's entry point does, a
    LiteLLM call does not: its openai route and the openai SDK's calls keep plans of their own), and
    whether it offered tools (the tools kinds ask the plain kinds' models)."""
    provider, model = request["gen_ai.provider.name"], request["gen_ai.request.model"]
    return provider, model, "gen_ai.request.stream" in request, "server.address" in request, checks is not None


def install() -> None:
    """Wrap the entry points the floor wraps, with the floor for each first call and the plan after."""
    import time

    instruments = floor._Instruments(SCOPE)
    plans: dict[tuple[Any, ...], _Plan] = {}
    floor_end = floor._end

    def end_and_keep(*args: Any, checks: dict[str, Any] | None = None) -> None:  # floor._end's arguments
        plan = _plan(time.perf_counter(), *args, checks=checks)
        plans[_key(args[4], checks)] = plan  # args[4]: the request's attributes
        floor_end(*args, checks=checks)

    floor._end = end_and_keep  # this process measures the SDK limit only: the floor is not installed beside

    def replaying(first: Any, provider: str, stream: bool | None, sdk: bool = True) -> Any:
        """``first``: the floor's wrapper; ``stream``: the entry point's shape (None: the call's
        ``stream``); ``sdk``: an SDK's entry point (False: LiteLLM's, whose SDK call underneath
        passes straight through, as the floor's)."""

        def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if floor._sending.get():
                return wrapped(*args, **kwargs)
            streams = bool(kwargs.get("stream")) if stream is None else stream
            plan = plans.get((provider, kwargs["model"], streams, sdk, bool(kwargs.get("tools"))))
            if plan is None:
                return first(wrapped, instance, args, kwargs)
            sending = floor._sending.set(not sdk)
            try:
                result = wrapped(*args, **kwargs)
            finally:
                floor._sending.reset(sending)
            span = instruments.tracer.start_span(plan.name, kind=SpanKind.CLIENT)
            span.set_attributes(plan.attributes)
            span.end()
            context = trace.set_span_in_context(span)
            for record, value, attributes in plan.points:
                record(value, attributes, context=context)
            return result

        return wrapper

    for module, name, provider, stream, first in (
        (
            "anthropic.resources.messages.messages",
            "Messages.create",
            "anthropic",
            None,
            floor._wrapper(instruments, "anthropic"),
        ),
        (
            "openai.resources.chat.completions.completions",
            "Completions.create",
            "openai",
            None,
            floor._wrapper(instruments, "openai"),
        ),
        (
            "google.genai.models",
            "Models.generate_content",
            "gcp.gemini",
            False,
            floor._gemini_wrapper(instruments, False),
        ),
        (
            "google.genai.models",
            "Models.generate_content_stream",
            "gcp.gemini",
            True,
            floor._gemini_wrapper(instruments, True),
        ),
    ):
        if module.startswith("google.") and not floor.has_gemini():
            continue
        wrapt.wrap_function_wrapper(module, name, replaying(first, provider, stream))
    # LiteLLM on its openai route (the bench's calls), wrapped once a call kind imports it, as the floor.
    litellm_first = floor._litellm_wrapper(instruments)
    wrapt.register_post_import_hook(
        lambda module: wrapt.wrap_function_wrapper(
            module, "completion", replaying(litellm_first, "openai", None, sdk=False)
        ),
        "litellm",
    )
