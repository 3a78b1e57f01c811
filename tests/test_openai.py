"""openai ``chat.completions.create`` (sync/async, plain/stream) against the fake provider over real HTTP.

Expected numbers come from the fake provider's fixed bodies: prompt 25 and completion 5 tokens;
with ``cache``, prompt 425 of which 400 cached (openai's prompt_tokens includes cached_tokens).
"""

from __future__ import annotations

import asyncio

import openai
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from otel_sampling import names
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

MESSAGES = [{"role": "user", "content": "Summarise: printer on fire"}]


@pytest.fixture
def openai_instrumented(telemetry):
    from conftest import _instrumented

    yield from _instrumented(telemetry, OpenAIInstrumentor)


def client(fp, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0, **kw)


def scenario(value: str) -> dict:
    return {"extra_headers": {"x-fake-scenario": value}}


def chat_spans(telemetry):
    return telemetry.spans("chat gpt-req")


def test_create_span_attributes_and_metrics(openai_instrumented, fake_provider):
    completion = client(fake_provider).chat.completions.create(
        model="gpt-req", max_completion_tokens=64, messages=MESSAGES, **scenario("cache,served_model=gpt-served"))
    assert isinstance(completion, openai.types.chat.ChatCompletion)
    (span,) = chat_spans(openai_instrumented)
    assert span.kind is SpanKind.CLIENT
    a = span.attributes
    assert (a[names.GEN_AI_PROVIDER_NAME], a[names.GEN_AI_REQUEST_MODEL], a[names.GEN_AI_RESPONSE_MODEL]) == (
        "openai", "gpt-req", "gpt-served")
    assert a[names.GEN_AI_REQUEST_MAX_TOKENS] == 64
    assert a[names.GEN_AI_RESPONSE_ID] == completion.id
    assert a[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    assert a[names.GEN_AI_USAGE_INPUT_TOKENS] == 425  # already includes the cached tokens
    assert a[names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 400
    assert a[names.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
    assert openai_instrumented.counts(names.METRIC_GEN_AI_TOKEN_USAGE, names.GEN_AI_TOKEN_TYPE) == {
        ("input",): 1, ("output",): 1, ("cache_read",): 1}


@pytest.mark.parametrize(("include_usage", "usage"), [(True, (25, 5)), (False, None)])
def test_stream_usage_only_with_include_usage(openai_instrumented, fake_provider, include_usage, usage):
    stream = client(fake_provider).chat.completions.create(
        model="gpt-req", messages=MESSAGES, stream=True, stream_options={"include_usage": include_usage})
    assert isinstance(stream, openai.Stream)
    chunks = list(stream)
    assert chunks
    (span,) = chat_spans(openai_instrumented)
    assert span.status.status_code is StatusCode.UNSET
    assert span.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    got = (span.attributes.get(names.GEN_AI_USAGE_INPUT_TOKENS), span.attributes.get(names.GEN_AI_USAGE_OUTPUT_TOKENS))
    assert got == (usage or (None, None))
    assert bool(openai_instrumented.points(names.METRIC_GEN_AI_TOKEN_USAGE)) is include_usage


def test_stream_cut_before_its_end_is_an_error(openai_instrumented, fake_provider):
    list(client(fake_provider).chat.completions.create(model="gpt-req", messages=MESSAGES, stream=True,
                                                         **scenario("truncate")))
    (span,) = chat_spans(openai_instrumented)
    assert span.attributes[names.ERROR_TYPE] == "incomplete_stream"


@pytest.mark.parametrize(("fault", "exc", "error_type"), [
    ("status=429", openai.RateLimitError, "rate_limit_exceeded"),  # the error body's code
    ("status=503", openai.InternalServerError, "service_unavailable"),  # body: code, then type server_error
])
def test_errors_pass_through_with_their_code(openai_instrumented, fake_provider, fault, exc, error_type):
    with pytest.raises(exc):
        client(fake_provider).chat.completions.create(model="gpt-req", messages=MESSAGES, **scenario(fault))
    (span,) = chat_spans(openai_instrumented)
    assert span.attributes[names.ERROR_TYPE] == error_type


def test_dropped_stream_is_a_connection_error(openai_instrumented, fake_provider):
    stream = client(fake_provider).chat.completions.create(model="gpt-req", messages=MESSAGES, stream=True,
                                                           **scenario("drop"))
    with pytest.raises(openai.APIConnectionError):
        list(stream)
    assert chat_spans(openai_instrumented)[0].attributes[names.ERROR_TYPE] == "connection_error"


def test_async_create(openai_instrumented, fake_provider):
    async def main():
        c = openai.AsyncOpenAI(base_url=fake_provider.url + "/v1", api_key="sk-fake", max_retries=0)
        try:
            completion = await c.chat.completions.create(model="gpt-req", messages=MESSAGES)
            stream = await c.chat.completions.create(model="gpt-req", messages=MESSAGES, stream=True)
            return completion, [chunk async for chunk in stream]
        finally:
            await c.close()

    completion, chunks = asyncio.run(main())
    assert completion.model == "gpt-req" and chunks
    assert len(chat_spans(openai_instrumented)) == 2
