"""openai SDK instrumentation (entry point ``otel_sampling_openai``).

Wraps ``chat.completions.create`` (``Completions.create`` and ``AsyncCompletions.create``,
non-stream and ``stream=True``; ``chat.completions.stream()`` goes through ``create`` too): one
GenAI inference span ``chat {model}`` (kind CLIENT) per call, ``gen_ai.client.operation.duration``
and ``gen_ai.client.token.usage``.

Usage follows the semantic conventions: ``gen_ai.usage.input_tokens`` is openai's
``prompt_tokens``, which already includes ``prompt_tokens_details.cached_tokens`` (reported as
``gen_ai.usage.cache_read.input_tokens``). A stream carries usage only when the request set
``stream_options={"include_usage": True}``; without it no usage is recorded. A stream counts as
complete once a choice has a ``finish_reason`` (the SDK consumes ``[DONE]`` itself, and a stream
cut before it ends silently).
"""

from __future__ import annotations

from typing import Any

from otel_sampling.instrumentation._provider import ProviderState, async_create_wrapper, create_wrapper
from otel_sampling.instrumentation._targets import Target, TargetTableInstrumentor
from otel_sampling.provider_call import Response, Usage

PROVIDER = "openai"  # gen_ai.provider.name well-known value


def to_usage(usage: Any) -> Usage:
    """Semantic-convention usage from an openai ``CompletionUsage`` (None: nothing reported)."""
    if usage is None:
        return Usage()
    details = getattr(usage, "prompt_tokens_details", None)
    return Usage(
        _int(getattr(usage, "prompt_tokens", None)),
        _int(getattr(usage, "completion_tokens", None)),
        _int(getattr(details, "cached_tokens", None)),
        _int(getattr(details, "cache_write_tokens", None)),
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _finish_reasons(choices: Any) -> tuple[str, ...]:
    return tuple(r for c in choices or () if isinstance(r := getattr(c, "finish_reason", None), str))


def response_of(completion: Any) -> Response:
    """What a non-streamed ``ChatCompletion`` reports."""
    model = getattr(completion, "model", None)
    response_id = getattr(completion, "id", None)
    return Response(
        model if isinstance(model, str) and model else None,
        response_id if isinstance(response_id, str) else None,
        _finish_reasons(getattr(completion, "choices", None)),
        to_usage(getattr(completion, "usage", None)),
    )


class StreamAccumulator:
    """Reads ``ChatCompletionChunk``s: model and id from any chunk, finish reasons per choice,
    usage from the final chunk when ``include_usage`` was asked for."""

    __slots__ = ("complete", "_model", "_id", "_finish_reasons", "_usage")

    def __init__(self) -> None:
        self.complete = False
        self._model: str | None = None
        self._id: str | None = None
        self._finish_reasons: dict[int, str] = {}
        self._usage: Any = None

    def observe(self, chunk: Any) -> None:
        if self._model is None and isinstance(model := getattr(chunk, "model", None), str) and model:
            self._model = model
        if self._id is None and isinstance(chunk_id := getattr(chunk, "id", None), str):
            self._id = chunk_id
        for choice in getattr(chunk, "choices", None) or ():
            reason = getattr(choice, "finish_reason", None)
            if isinstance(reason, str):
                self._finish_reasons[getattr(choice, "index", 0)] = reason
                self.complete = True
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._usage = usage

    def response(self) -> Response:
        reasons = tuple(self._finish_reasons[i] for i in sorted(self._finish_reasons))
        return Response(self._model, self._id, reasons, to_usage(self._usage))


class _State(ProviderState):
    provider = PROVIDER
    max_tokens_keys = ("max_completion_tokens", "max_tokens")
    accumulator = StreamAccumulator
    response_of = staticmethod(response_of)
    response_type = "types.chat.ChatCompletion"
    envelope_fields = ("code", "type")


_TARGETS = (
    Target("openai.resources.chat.completions.completions", "Completions.create", create_wrapper),
    Target("openai.resources.chat.completions.completions", "AsyncCompletions.create", async_create_wrapper),
)


class OpenAIInstrumentor(TargetTableInstrumentor):
    """Instruments the openai SDK's ``chat.completions.create`` (sync and async, plain and ``stream=True``).

    ``instrument(tracer_provider=None, meter_provider=None)``; providers default to the global ones.
    """

    targets = _TARGETS
    dependencies = ("openai >= 3.57, < 4",)
    state_class = _State
