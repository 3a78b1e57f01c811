"""Every google-genai ``generateContent`` call shape, sync and async, Gemini API and Vertex AI modes,
against the fake provider over real HTTP: a completed call, a failed one (HTTP 429), a stream the
caller leaves early.

For each exactly one span of ours is exported per request, with the fake provider's fixed answer
(``modelVersion`` echoes the requested model, ``finishReason`` ``STOP``, 25 prompt and 5 candidate
tokens: ``otel_sampling.testing.fake_gemini``), and the request carried our span's ``traceparent``
(the SDK sends none of its own).
"""

from __future__ import annotations

import asyncio
import gc

import pytest
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import GenAiProviderNameValues
from opentelemetry.trace import StatusCode

genai = pytest.importorskip("google.genai")
from google.genai import errors  # noqa: E402
from google.oauth2.credentials import Credentials  # noqa: E402

from conftest import _instrumented, traceparent_of  # noqa: E402
from otel_sampling import names  # noqa: E402
from otel_sampling.instrumentation.google_genai import GoogleGenAIInstrumentor  # noqa: E402

MODEL = "gemini-2.5-flash"
PROMPT = "Where is it?"
FAILING = {"http_options": {"headers": {"x-fake-scenario": "status=429"}}}
MODES = {  # gen_ai.provider.name well-known values (the GenAI semconv registry)
    "gemini": GenAiProviderNameValues.GCP_GEMINI.value,
    "vertex": GenAiProviderNameValues.GCP_VERTEX_AI.value,
}


@pytest.fixture
def genai_instrumented(telemetry):
    yield from _instrumented(telemetry, GoogleGenAIInstrumentor)


def client(fp, mode: str) -> genai.Client:
    if mode == "vertex":  # a token credential: nothing is fetched from Google
        return genai.Client(
            vertexai=True,
            project="p",
            location="us-central1",
            credentials=Credentials(token="t"),
            http_options={"base_url": fp.url},
        )
    return genai.Client(api_key="k-fake", http_options={"base_url": fp.url})


# ---------------------------------------------------------------- shapes: (call, streamed)
def generate(c, config=None):
    return c.models.generate_content(model=MODEL, contents=PROMPT, config=config).text


def generate_stream(c, config=None):
    return [r.text for r in c.models.generate_content_stream(model=MODEL, contents=PROMPT, config=config)]


def chat(c, config=None):
    return c.chats.create(model=MODEL, config=config).send_message(PROMPT).text


def chat_stream(c, config=None):
    return [r.text for r in c.chats.create(model=MODEL, config=config).send_message_stream(PROMPT)]


async def agenerate(c, config=None):
    return (await c.aio.models.generate_content(model=MODEL, contents=PROMPT, config=config)).text


async def agenerate_stream(c, config=None):
    stream = await c.aio.models.generate_content_stream(model=MODEL, contents=PROMPT, config=config)
    return [r.text async for r in stream]


async def achat(c, config=None):
    return (await c.aio.chats.create(model=MODEL, config=config).send_message(PROMPT)).text


async def achat_stream(c, config=None):
    stream = await c.aio.chats.create(model=MODEL, config=config).send_message_stream(PROMPT)
    return [r.text async for r in stream]


SHAPES = {
    generate: False,
    generate_stream: True,
    chat: False,
    chat_stream: True,
    agenerate: False,
    agenerate_stream: True,
    achat: False,
    achat_stream: True,
}


def run(shape, c, config=None):
    if asyncio.iscoroutinefunction(shape):
        return asyncio.run(shape(c, config))
    return shape(c, config)


def only_span(telemetry):
    ours = telemetry.spans()
    assert len(ours) == 1, [s.name for s in ours]
    return ours[0]


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("shape", list(SHAPES), ids=lambda f: f.__name__)
def test_a_completed_call_gives_one_span_with_the_served_model(genai_instrumented, fake_provider, shape, mode):
    fake_provider.reset()
    got = run(shape, client(fake_provider, mode))
    assert "".join(t or "" for t in got) == "Hello from the fake provider"  # the caller's answer, unchanged
    span = only_span(genai_instrumented)
    a = span.attributes
    assert span.name == f"chat {MODEL}"
    assert a[names.GEN_AI_PROVIDER_NAME] == MODES[mode]
    assert a[names.GEN_AI_REQUEST_MODEL] == MODEL
    assert a[names.GEN_AI_RESPONSE_MODEL] == MODEL
    assert a[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("STOP",)
    assert (a[names.GEN_AI_USAGE_INPUT_TOKENS], a[names.GEN_AI_USAGE_OUTPUT_TOKENS]) == (25, 5)
    assert a[names.ENDING] == names.ENDING_COMPLETED
    assert a.get(names.GEN_AI_REQUEST_STREAM, False) is SHAPES[shape]
    assert (names.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK in a) is SHAPES[shape]
    assert span.status.status_code is StatusCode.UNSET
    assert a[names.SERVER_ADDRESS] == "127.0.0.1"
    assert genai_instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ENDING) == {("completed",): 1}
    (request,) = fake_provider.requests
    assert request["headers"]["traceparent"] == traceparent_of(span)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("shape", list(SHAPES), ids=lambda f: f.__name__)
def test_a_rate_limited_call_gives_one_failed_span(genai_instrumented, fake_provider, shape, mode):
    with pytest.raises(errors.ClientError) as raised:
        run(shape, client(fake_provider, mode), FAILING)
    assert raised.value.code == 429
    span = only_span(genai_instrumented)
    a = span.attributes
    assert a[names.GEN_AI_REQUEST_MODEL] == MODEL
    assert names.GEN_AI_RESPONSE_MODEL not in a
    # Google's error body names the failure by its status; HTTP 429 is the model being unavailable.
    assert a[names.ERROR_TYPE] == "RESOURCE_EXHAUSTED"
    assert a[names.ENDING] == names.ENDING_MODEL_UNAVAILABLE
    assert span.status.status_code is StatusCode.ERROR


def leave_stream(c, config=None):
    stream = c.models.generate_content_stream(model=MODEL, contents=PROMPT)
    first = next(stream)
    stream.close()
    return first.text


async def aleave_stream(c, config=None):
    stream = await c.aio.models.generate_content_stream(model=MODEL, contents=PROMPT)
    first = await stream.__anext__()
    await stream.aclose()
    return first.text


def drop_stream(c, config=None):
    stream = c.models.generate_content_stream(model=MODEL, contents=PROMPT)
    first = next(stream)
    del stream
    gc.collect()
    return first.text


def leave_chat_stream(c, config=None):
    for chunk in c.chats.create(model=MODEL).send_message_stream(PROMPT):
        return chunk.text
    return None


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize(
    "shape", [leave_stream, aleave_stream, drop_stream, leave_chat_stream], ids=lambda f: f.__name__
)
def test_a_stream_left_early_ends_cancelled_with_what_it_saw(genai_instrumented, fake_provider, shape, mode):
    assert run(shape, client(fake_provider, mode)) == "Hello"
    gc.collect()
    span = only_span(genai_instrumented)
    a = span.attributes
    assert a[names.ENDING] == names.ENDING_CANCELLED
    assert a[names.GEN_AI_RESPONSE_MODEL] == MODEL  # the first chunk named it
    assert names.ERROR_TYPE not in a
    assert span.status.status_code is StatusCode.UNSET
