"""openai SDK instrumentation (entry point ``otel_sampling_openai``).

One GenAI inference span ``chat {model}`` (kind CLIENT) per Chat Completions or Responses API call,
``gen_ai.client.operation.duration`` and ``gen_ai.client.token.usage``, for every call shape, sync
and async: ``chat.completions.create`` (plain, ``stream=True``), ``chat.completions.stream()`` /
``.parse()``, ``responses.create`` / ``.stream()`` / ``.parse()``, and each of them through
``with_raw_response`` / ``with_streaming_response``.

Wrap point: ``openai._base_client.SyncAPIClient.request`` / ``AsyncAPIClient.request`` for
``POST /chat/completions`` and ``POST /responses``. Every shape above ends there exactly once per
call (the SDK's retries run inside it), including ``parse()`` (which posts directly, not through
``create``) and a ``with_raw_response`` namespace touched before ``instrument()`` (it captured the
unwrapped bound ``create``). The request body (``options.json_data``) gives the request model,
token limit and ``stream``.

Chat usage follows the semantic conventions: ``gen_ai.usage.input_tokens`` is ``prompt_tokens``,
which already includes ``prompt_tokens_details.cached_tokens`` (reported as
``gen_ai.usage.cache_read.input_tokens``). A chat stream carries usage only when the request set
``stream_options={"include_usage": True}``, and counts as complete once a choice has a
``finish_reason`` (the SDK consumes ``[DONE]`` itself, and a stream cut before it ends silently).
Responses API: :mod:`otel_sampling.instrumentation.openai_responses`.

A ``with_raw_response`` call's JSON body, already read by the SDK, is read for the response
attributes; a streamed raw body (``stream=True``, ``with_streaming_response``) belongs to the caller
and is not read: those spans end when the SDK returns, without response attributes.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from otel_sampling.instrumentation._provider import ProviderState, async_create_wrapper, create_wrapper
from otel_sampling.instrumentation._targets import Target, TargetTableInstrumentor
from otel_sampling.instrumentation.openai_fields import as_int, as_str, field
from otel_sampling.instrumentation.openai_responses import ResponsesStreamAccumulator
from otel_sampling.instrumentation.openai_responses import response_of as responses_response_of
from otel_sampling.instrumentation.streams import AsyncStreamProxy, StreamProxy
from otel_sampling.instruments import Instruments
from otel_sampling.provider_call import Response, Usage

logger = logging.getLogger(__name__)

PROVIDER = "openai"  # gen_ai.provider.name well-known value
CHAT_PATH = "/chat/completions"
RESPONSES_PATH = "/responses"


def to_usage(usage: Any) -> Usage:
    """Semantic-convention usage from an openai ``CompletionUsage`` (or its JSON); None: nothing reported."""
    if usage is None:
        return Usage()
    details = field(usage, "prompt_tokens_details")
    return Usage(as_int(field(usage, "prompt_tokens")), as_int(field(usage, "completion_tokens")),
                 as_int(field(details, "cached_tokens")), as_int(field(details, "cache_write_tokens")))


def _finish_reasons(choices: Any) -> tuple[str, ...]:
    return tuple(r for c in choices or () if isinstance(r := field(c, "finish_reason"), str))


def response_of(completion: Any) -> Response:
    """What a non-streamed ``ChatCompletion`` (or its JSON body) reports."""
    return Response(as_str(field(completion, "model")) or None, as_str(field(completion, "id")),
                    _finish_reasons(field(completion, "choices")), to_usage(field(completion, "usage")))


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


def read_body(raw: Any) -> Any:
    """The JSON body of a raw response the SDK has already read, else None (never reads it)."""
    http = getattr(raw, "http_response", None)
    if http is None or not http.headers.get("content-type", "").startswith("application/json"):
        return None
    try:
        return json.loads(http.content)  # httpx2 raises ResponseNotRead for a body still on the wire
    except Exception:
        return None


def _parsed_or_raw(extract):
    """``extract`` for a parsed model, or for the read JSON body of a ``with_raw_response`` result."""

    def response_of_result(result: Any) -> Response:
        body = read_body(result) if hasattr(result, "http_response") else result
        return extract(body) if body is not None else Response(None, None, (), Usage())

    return staticmethod(response_of_result)


class _ChatState(ProviderState):
    provider = PROVIDER
    max_tokens_keys = ("max_completion_tokens", "max_tokens")
    accumulator = StreamAccumulator
    response_of = _parsed_or_raw(response_of)
    response_type = "types.chat.ChatCompletion"
    envelope_fields = ("code", "type")

    def __init__(self, instruments: Instruments) -> None:
        super().__init__(instruments)
        from openai._legacy_response import LegacyAPIResponse  # what with_raw_response returns

        self.response_class = (self.response_class, LegacyAPIResponse)  # type: ignore[assignment]


class _ResponsesState(_ChatState):
    max_tokens_keys = ("max_output_tokens",)
    accumulator = ResponsesStreamAccumulator
    response_of = _parsed_or_raw(responses_response_of)
    response_type = "types.responses.Response"


class _State(_ChatState):
    """The chat state, holding the Responses API state beside it."""

    def __init__(self, instruments: Instruments) -> None:
        super().__init__(instruments)
        self.responses = _ResponsesState(instruments)


class _ClientOwner:
    """Stands in for an SDK resource: the shared wrappers read the endpoint from ``resource._client``."""

    __slots__ = ("_client",)

    def __init__(self, client: Any) -> None:
        self._client = client


def _request_wrapper(make):
    """wrapt wrapper factory for ``request(cast_to, options, *, stream, stream_cls)``: an inference
    request (``POST /chat/completions`` or ``/responses``) goes through the shared create wrapper
    ``make`` builds, with its JSON body as the call's keywords; every other request passes."""

    def factory(state: _State):
        by_path = {CHAT_PATH: make(state), RESPONSES_PATH: make(state.responses)}

        def wrapper(wrapped, instance, args, kwargs):
            try:
                options = args[1] if len(args) > 1 else kwargs.get("options")
                body = options.json_data
                inner = by_path.get(options.url) if options.method == "post" and isinstance(body, dict) else None
            except Exception:
                logger.debug("otel-sampling: could not read an openai request", exc_info=True)
                inner = None
            if inner is None:
                return wrapped(*args, **kwargs)
            return inner(lambda **_: wrapped(*args, **kwargs), _ClientOwner(instance), (), body)

        return wrapper

    return factory


def _close_wrapper(_state: _State):
    """``close()`` of the ``stream()`` helpers' streams closes the HTTP response directly, past our
    proxy; close the proxy too, so the span ends when the caller leaves the ``with`` block."""

    def wrapper(wrapped, instance, args, kwargs):
        try:
            return wrapped(*args, **kwargs)
        finally:
            raw = getattr(instance, "_raw_stream", None)
            if isinstance(raw, StreamProxy):
                try:
                    raw.close()  # the response is closed already: this only ends the span
                except Exception:
                    logger.debug("otel-sampling: could not end an openai stream's span", exc_info=True)

    return wrapper


def _aclose_wrapper(_state: _State):
    async def wrapper(wrapped, instance, args, kwargs):
        try:
            return await wrapped(*args, **kwargs)
        finally:
            raw = getattr(instance, "_raw_stream", None)
            if isinstance(raw, AsyncStreamProxy):
                try:
                    await raw.close()
                except Exception:
                    logger.debug("otel-sampling: could not end an openai stream's span", exc_info=True)

    return wrapper


_CHAT_STREAMS = "openai.lib.streaming.chat._completions"
_RESPONSE_STREAMS = "openai.lib.streaming.responses._responses"
_TARGETS = (
    Target("openai._base_client", "SyncAPIClient.request", _request_wrapper(create_wrapper)),
    Target("openai._base_client", "AsyncAPIClient.request", _request_wrapper(async_create_wrapper)),
    Target(_CHAT_STREAMS, "ChatCompletionStream.close", _close_wrapper),
    Target(_CHAT_STREAMS, "AsyncChatCompletionStream.close", _aclose_wrapper),
    Target(_RESPONSE_STREAMS, "ResponseStream.close", _close_wrapper),
    Target(_RESPONSE_STREAMS, "AsyncResponseStream.close", _aclose_wrapper),
)


class OpenAIInstrumentor(TargetTableInstrumentor):
    """Instruments the openai SDK's Chat Completions and Responses API calls, every call shape.

    ``instrument(tracer_provider=None, meter_provider=None)``; providers default to the global ones.
    Supported range: ``openai >= 3.57, < 4`` (``instrumentation_dependencies``).
    """

    targets = _TARGETS
    dependencies = ("openai >= 3.57, < 4",)
    state_class = _State
