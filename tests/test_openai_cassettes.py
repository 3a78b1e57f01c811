"""Real recorded openai exchanges (``tests/data/cassettes/openai``) through the instrumented SDK.

Each expectation is what the recording itself says: the served ``model``, each choice's
``finish_reason`` (Responses API: ``status`` and output items, mapped as
``otel_sampling.instrumentation.openai_responses`` documents), ``usage`` (``prompt_tokens`` /
``input_tokens`` include ``cached_tokens``), or the error body's ``code``.
"""

from __future__ import annotations

import asyncio

import openai
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from cassette_replay import OPENAI_HTTP, base_url, call_kwargs, load, transport
from otel_sampling import names

# file: (served model, finish reasons, (input, output, cache read) or None)
SUCCESSES = {
    "chat_basic": ("gpt-4o-mini-2024-07-18", ("stop",), (12, 5, 0)),
    "chat_cached_tokens": ("gpt-4o-mini-2024-07-18", ("stop",), (1149, 353, 1024)),
    "chat_extra_params": ("gpt-4o-mini-2024-07-18", ("stop",), (12, 12, 0)),
    "chat_multiple_choices": ("gpt-4o-mini-2024-07-18", ("stop", "stop"), (12, 24, 0)),
    "chat_parallel_tool_calls": ("gpt-3.5-turbo-0125", ("tool_calls",), (70, 46, 0)),
    "chat_reasoning_tokens": ("gpt-5-nano-2025-08-07", ("stop",), (11, 228, 0)),
    "chat_tool_calls": ("gpt-4o-mini-2024-07-18", ("tool_calls",), (75, 51, 0)),
    "chat_tool_result_followup": ("gpt-4o-mini-2024-07-18", ("stop",), (99, 25, 0)),
    "chat_stream_include_usage": ("gpt-4-0613", ("stop",), (12, 5, 0)),
    "chat_stream_multiple_choices": ("gpt-4o-mini-2024-07-18", ("stop", "stop"), (26, 104, 0)),
    "chat_stream_no_usage": ("gpt-4-0613", ("stop",), None),
    "chat_stream_tool_calls": ("gpt-4o-mini-2024-07-18", ("tool_calls",), (75, 51, 0)),
    "responses_basic": ("gpt-4o-mini-2024-07-18", ("stop",), (22, 6, 0)),
    "responses_function_call": ("gpt-4o-mini-2024-07-18", ("tool_calls",), (72, 8, 0)),
    "responses_reasoning": ("gpt-5.4-2026-03-05", ("stop",), (44, 288, 0)),
    "responses_stream": ("gpt-4o-mini-2024-07-18", ("stop",), (22, 6, 0)),
}
# file: (exception class, error.type: the error body's code)
ERRORS = {
    "chat_error_400_invalid_image": (openai.BadRequestError, "invalid_image_url"),
    "chat_error_404_model": (openai.NotFoundError, "model_not_found"),
    "responses_error_400_model": (openai.BadRequestError, "model_not_found"),
}


def _method(client, cassette):
    return client.responses.create if cassette["api"] == "responses" else client.chat.completions.create


def replay_sync(cassette):
    http = OPENAI_HTTP.Client(transport=transport(cassette, http=OPENAI_HTTP))
    client = openai.OpenAI(api_key="test", base_url=base_url(cassette), http_client=http, max_retries=0)
    method = _method(client, cassette)
    result = method(**call_kwargs(method, cassette["request"]["body"]))
    return list(result) if cassette["stream"] else result


def replay_async(cassette):
    async def main():
        http = OPENAI_HTTP.AsyncClient(transport=transport(cassette, asynchronous=True, http=OPENAI_HTTP))
        client = openai.AsyncOpenAI(api_key="test", base_url=base_url(cassette), http_client=http, max_retries=0)
        method = _method(client, cassette)
        result = await method(**call_kwargs(method, cassette["request"]["body"]))
        return [event async for event in result] if cassette["stream"] else result

    return asyncio.run(main())


@pytest.mark.parametrize("replay", [replay_sync, replay_async])
@pytest.mark.parametrize("name", sorted(SUCCESSES))
def test_recorded_success(openai_instrumented, name, replay):
    cassette = load(f"openai/{name}.json")
    model, reasons, usage = SUCCESSES[name]
    replay(cassette)
    (span,) = openai_instrumented.spans(scope=None)  # every span exported: ours only, one
    assert span.kind is SpanKind.CLIENT and span.status.status_code is StatusCode.UNSET
    a = span.attributes
    assert a[names.GEN_AI_REQUEST_MODEL] == cassette["request"]["body"]["model"]
    assert a[names.GEN_AI_RESPONSE_MODEL] == model
    assert a[names.GEN_AI_RESPONSE_FINISH_REASONS] == reasons
    got = tuple(
        a.get(k)
        for k in (
            names.GEN_AI_USAGE_INPUT_TOKENS,
            names.GEN_AI_USAGE_OUTPUT_TOKENS,
            names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        )
    )
    assert got == (usage or (None, None, None))
    assert (a[names.SERVER_ADDRESS], a[names.SERVER_PORT]) == ("api.openai.com", 443)
    assert names.ERROR_TYPE not in a


@pytest.mark.parametrize("replay", [replay_sync, replay_async])
@pytest.mark.parametrize("name", sorted(ERRORS))
def test_recorded_error(openai_instrumented, name, replay):
    exc_type, error_type = ERRORS[name]
    with pytest.raises(exc_type):
        replay(load(f"openai/{name}.json"))
    (span,) = openai_instrumented.spans(scope=None)
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes[names.ERROR_TYPE] == error_type
    assert names.GEN_AI_RESPONSE_MODEL not in span.attributes


def test_every_copied_cassette_is_replayed_and_keeps_its_provenance():
    from cassette_replay import CASSETTES

    files = {p.stem for p in (CASSETTES / "openai").glob("*.json")}
    assert files == set(SUCCESSES) | set(ERRORS)
    for name in files:
        cassette = load(f"openai/{name}.json")
        assert cassette["source"] and cassette["license"] == "Apache-2.0"
