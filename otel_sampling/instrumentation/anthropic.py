"""anthropic SDK instrumentation (entry point ``otel_sampling_anthropic``).

Wraps ``Messages.create`` and ``AsyncMessages.create`` (non-stream and ``stream=True``): one GenAI
inference span ``chat {model}`` (kind CLIENT) per call, ``gen_ai.client.operation.duration`` and
``gen_ai.client.token.usage``. Our span is current while the SDK sends the request, so the span
anthropic 2.x emits itself (``anthropic.messages.create``, on by default) is its child, never a
sibling; anthropic records no metrics, so nothing is counted twice.

Usage follows the semantic conventions: ``gen_ai.usage.input_tokens`` is anthropic's
``input_tokens`` plus ``cache_read_input_tokens`` plus ``cache_creation_input_tokens`` (anthropic's
``input_tokens`` excludes cache tokens). A stream's final usage is the ``message_start`` usage
overwritten field by field by the ``message_delta`` usage, never their sum.
"""

from __future__ import annotations

from typing import Any

from otel_sampling.instrumentation._provider import ProviderState, async_create_wrapper, create_wrapper
from otel_sampling.instrumentation._targets import Target, TargetTableInstrumentor
from otel_sampling.provider_call import Response, Usage

PROVIDER = "anthropic"  # gen_ai.provider.name well-known value
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def to_usage(fields: dict[str, int | None]) -> Usage:
    """Semantic-convention usage from anthropic usage fields (cache tokens added to input)."""
    base = fields.get("input_tokens")
    cache_read = fields.get("cache_read_input_tokens")
    cache_creation = fields.get("cache_creation_input_tokens")
    total_input = None if base is None else base + (cache_read or 0) + (cache_creation or 0)
    return Usage(total_input, fields.get("output_tokens"), cache_read, cache_creation)


def _usage_fields(usage: Any, into: dict[str, int | None]) -> None:
    """Copy the int usage fields present on ``usage`` into ``into`` (later values overwrite)."""
    if usage is None:
        return
    for field in _USAGE_FIELDS:
        value = getattr(usage, field, None)
        if isinstance(value, int):
            into[field] = value


def response_of(message: Any) -> Response:
    """What a non-streamed ``anthropic.types.Message`` reports."""
    fields: dict[str, int | None] = {}
    _usage_fields(getattr(message, "usage", None), fields)
    model = getattr(message, "model", None)
    response_id = getattr(message, "id", None)
    stop_reason = getattr(message, "stop_reason", None)
    return Response(
        model if isinstance(model, str) and model else None,
        response_id if isinstance(response_id, str) else None,
        (stop_reason,) if isinstance(stop_reason, str) else (),
        to_usage(fields),
    )


class StreamAccumulator:
    """Reads ``RawMessageStreamEvent``s: model and usage from ``message_start``, stop reason and
    final usage from ``message_delta``, completion from ``message_stop``."""

    __slots__ = ("complete", "_model", "_id", "_stop_reason", "_usage")

    def __init__(self) -> None:
        self.complete = False
        self._model: str | None = None
        self._id: str | None = None
        self._stop_reason: str | None = None
        self._usage: dict[str, int | None] = {}

    def observe(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            message = event.message
            self._model = getattr(message, "model", None) or None
            self._id = getattr(message, "id", None)
            _usage_fields(getattr(message, "usage", None), self._usage)
        elif kind == "message_delta":
            self._stop_reason = getattr(event.delta, "stop_reason", None) or self._stop_reason
            _usage_fields(getattr(event, "usage", None), self._usage)
        elif kind == "message_stop":
            self.complete = True

    def response(self) -> Response:
        reasons = (self._stop_reason,) if isinstance(self._stop_reason, str) else ()
        model = self._model if isinstance(self._model, str) else None
        response_id = self._id if isinstance(self._id, str) else None
        return Response(model, response_id, reasons, to_usage(self._usage))


class _State(ProviderState):
    provider = PROVIDER
    max_tokens_keys = ("max_tokens",)
    accumulator = StreamAccumulator
    response_of = staticmethod(response_of)
    response_type = "types.Message"


_TARGETS = (
    Target("anthropic.resources.messages.messages", "Messages.create", create_wrapper),
    Target("anthropic.resources.messages.messages", "AsyncMessages.create", async_create_wrapper),
)


class AnthropicInstrumentor(TargetTableInstrumentor):
    """Instruments the anthropic SDK's ``messages.create`` (sync and async, plain and ``stream=True``).

    ``instrument(tracer_provider=None, meter_provider=None)``; providers default to the global ones.
    """

    targets = _TARGETS
    dependencies = ("anthropic >= 2.14, < 3",)
    state_class = _State
