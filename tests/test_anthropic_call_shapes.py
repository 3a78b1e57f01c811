"""Every anthropic Messages call shape, sync and async, against the fake provider over real HTTP.

For each shape exactly one span of ours is exported per call, with anthropic's own tracing on
(its span is our child) and off; the served model, finish reason and usage are the fake
provider's fixed answer (model echoes the request, ``end_turn``, 25 input and 5 output tokens);
what the caller gets is the SDK's own object (raw responses untouched).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc

import anthropic
import pydantic
import pytest
from opentelemetry.trace import StatusCode

from drivers import SpanBalance, add_span_processor
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor

MODEL = "claude-req"
MESSAGES = [{"role": "user", "content": "Where is it?"}]
KW = {"model": MODEL, "max_tokens": 64, "messages": MESSAGES}
JSON_TEXT = {"extra_headers": {"x-fake-scenario": 'text={"city":"Paris"}'}}  # the reply parse() reads: one word,
# so the fake provider reports 1 output token
NATIVE_SCOPE = "com.anthropic.sdk.python"


class City(pydantic.BaseModel):
    city: str


def client(fp, native: bool) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=fp.url, api_key="sk-fake", max_retries=0, open_telemetry=None if native else False
    )


def aclient(fp, native: bool) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        base_url=fp.url, api_key="sk-fake", max_retries=0, open_telemetry=None if native else False
    )


# ---------------------------------------------------------------- sync shapes: each returns what the caller got
def create(c):
    message = c.messages.create(**KW)
    assert isinstance(message, anthropic.types.Message)
    return message


def create_stream(c):
    stream = c.messages.create(**KW, stream=True)
    assert isinstance(stream, anthropic.Stream)
    return [e.type for e in stream]


def stream_manager(c):
    with c.messages.stream(**KW) as stream:
        assert isinstance(stream, anthropic.lib.streaming.MessageStream)
        return stream.get_final_message()


def stream_manager_text(c):
    with c.messages.stream(**KW) as stream:
        return "".join(stream.text_stream)


def parse(c):
    parsed = c.messages.parse(**KW, output_format=City, **JSON_TEXT)
    assert parsed.parsed_output == City(city="Paris")
    return parsed


def beta_create(c):
    message = c.beta.messages.create(**KW, betas=["server-side-fallback-2026-07-01"])
    assert isinstance(message, anthropic.types.beta.BetaMessage)
    return message


def beta_stream(c):
    with c.beta.messages.stream(**KW) as stream:
        return stream.get_final_message()


def beta_parse(c):
    parsed = c.beta.messages.parse(**KW, output_format=City, **JSON_TEXT)
    assert parsed.parsed_output == City(city="Paris")
    return parsed


def raw_response(c):
    raw = c.messages.with_raw_response.create(**KW)
    assert raw.status_code == 200 and raw.headers["request-id"].startswith("req_")
    assert raw.parse().model == MODEL  # telemetry did not consume the body
    return raw


def raw_response_stream(c):
    raw = c.messages.with_raw_response.create(**KW, stream=True)
    return [e.type for e in raw.parse()]


def streaming_response(c):
    with c.messages.with_streaming_response.create(**KW) as response:
        assert response.parse().model == MODEL
        return response


def beta_streaming_response(c):
    with c.beta.messages.with_streaming_response.create(**KW) as response:
        return response.parse()


SYNC_SHAPES = [
    create,
    create_stream,
    stream_manager,
    stream_manager_text,
    parse,
    beta_create,
    beta_stream,
    beta_parse,
    raw_response,
    raw_response_stream,
    streaming_response,
    beta_streaming_response,
]


# ---------------------------------------------------------------- async shapes
async def acreate(c):
    return await c.messages.create(**KW)


async def acreate_stream(c):
    stream = await c.messages.create(**KW, stream=True)
    assert isinstance(stream, anthropic.AsyncStream)
    return [e.type async for e in stream]


async def astream_manager(c):
    async with c.messages.stream(**KW) as stream:
        return await stream.get_final_message()


async def aparse(c):
    parsed = await c.messages.parse(**KW, output_format=City, **JSON_TEXT)
    assert parsed.parsed_output == City(city="Paris")
    return parsed


async def abeta_create(c):
    return await c.beta.messages.create(**KW, betas=["server-side-fallback-2026-07-01"])


async def abeta_stream(c):
    async with c.beta.messages.stream(**KW) as stream:
        return await stream.get_final_message()


async def araw_response(c):
    raw = await c.messages.with_raw_response.create(**KW)
    assert (await raw.parse()).model == MODEL
    return raw


async def araw_response_stream(c):
    raw = await c.messages.with_raw_response.create(**KW, stream=True)
    return [e.type async for e in await raw.parse()]


async def astreaming_response(c):
    async with c.messages.with_streaming_response.create(**KW) as response:
        return await response.parse()


ASYNC_SHAPES = [
    acreate,
    acreate_stream,
    astream_manager,
    aparse,
    abeta_create,
    abeta_stream,
    araw_response,
    araw_response_stream,
    astreaming_response,
]


def check_one_call(telemetry, native: bool, stream: bool, output_tokens: int = 5) -> None:
    ours = telemetry.spans()
    assert len(ours) == 1, [s.name for s in ours]
    (span,) = ours
    a = span.attributes
    assert span.name == f"chat {MODEL}"
    assert a[names.GEN_AI_RESPONSE_MODEL] == MODEL
    assert a[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("end_turn",)
    assert (a[names.GEN_AI_USAGE_INPUT_TOKENS], a[names.GEN_AI_USAGE_OUTPUT_TOKENS]) == (25, output_tokens)
    assert a[names.ENDING] == names.ENDING_COMPLETED
    assert a.get(names.GEN_AI_REQUEST_STREAM, False) is stream
    assert span.status.status_code is StatusCode.UNSET
    native_spans = telemetry.spans(scope=NATIVE_SCOPE)
    assert len(native_spans) == (1 if native else 0)
    assert all(s.parent.span_id == span.context.span_id for s in native_spans)  # a child, never a sibling
    assert telemetry.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ENDING) == {("completed",): 1}


STREAMED = {
    "create_stream",
    "stream_manager",
    "stream_manager_text",
    "beta_stream",
    "raw_response_stream",
    "acreate_stream",
    "astream_manager",
    "abeta_stream",
    "araw_response_stream",
}


def _output_tokens(shape) -> int:
    return 1 if "parse" in shape.__name__ else 5


@pytest.mark.parametrize("native", [True, False], ids=["native-on", "native-off"])
@pytest.mark.parametrize("shape", SYNC_SHAPES, ids=lambda f: f.__name__)
def test_sync_shape(anthropic_instrumented, fake_provider, shape, native):
    shape(client(fake_provider, native))
    check_one_call(anthropic_instrumented, native, shape.__name__ in STREAMED, _output_tokens(shape))


@pytest.mark.parametrize("native", [True, False], ids=["native-on", "native-off"])
@pytest.mark.parametrize("shape", ASYNC_SHAPES, ids=lambda f: f.__name__)
def test_async_shape(anthropic_instrumented, fake_provider, shape, native):
    async def main():
        c = aclient(fake_provider, native)
        try:
            return await shape(c)
        finally:
            await c.close()

    asyncio.run(main())
    check_one_call(anthropic_instrumented, native, shape.__name__ in STREAMED, _output_tokens(shape))


def test_every_call_shape_and_stream_fault_starts_and_ends_its_spans_once(
    anthropic_instrumented, fake_provider, monkeypatch, caplog
):
    """As many of our spans end as start, each once: every shape (anthropic's own tracing on and
    off) and every stream fault, read to its error or left mid-way and collected. The SDK warns
    when an ended span is ended again; it never does here. (openai: test_openai.py.)"""
    balance = SpanBalance()
    add_span_processor(monkeypatch, balance)
    caplog.set_level("WARNING", logger="opentelemetry.sdk.trace")
    calls = 0
    for native in (True, False):
        for shape in SYNC_SHAPES:
            shape(client(fake_provider, native))
            calls += 1

        async def run_async(native=native):
            c = aclient(fake_provider, native)
            try:
                for shape in ASYNC_SHAPES:
                    await shape(c)
            finally:
                await c.close()

        asyncio.run(run_async())
        calls += len(ASYNC_SHAPES)
    c = client(fake_provider, native=False)
    for fault in ("midstream_error", "drop", "truncate"):
        with contextlib.suppress(Exception):  # the fault's own error, tested elsewhere
            list(c.messages.create(**KW, stream=True, extra_headers={"x-fake-scenario": fault}))
        stream = c.messages.create(**KW, stream=True, extra_headers={"x-fake-scenario": fault})
        next(stream)
        del stream  # left mid-way, then collected
        calls += 2
    gc.collect()
    assert (balance.started, balance.ended) == (calls, calls)
    assert not [r for r in caplog.records if "ended span" in r.getMessage()]


def test_raw_response_touched_before_instrument(telemetry, fake_provider):
    c = client(fake_provider, native=False)
    raw_create = c.messages.with_raw_response.create  # cached_property: binds messages.create now
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    try:
        raw = raw_create(**KW)
    finally:
        instrumentor.uninstrument()
    assert raw.parse().model == MODEL
    check_one_call(telemetry, native=False, stream=False)


def test_unparsed_streaming_response_ends_when_closed(anthropic_instrumented, fake_provider):
    with client(fake_provider, native=False).messages.with_streaming_response.create(**KW) as response:
        assert b"message" in response.read()  # the caller reads the bytes itself, no parse
        assert anthropic_instrumented.spans() == []  # still open: it may parse yet
    (span,) = anthropic_instrumented.spans()
    assert names.GEN_AI_RESPONSE_MODEL not in span.attributes  # nothing was read
    assert span.status.status_code is StatusCode.UNSET


def test_unparsed_streaming_response_ends_when_dropped(anthropic_instrumented, fake_provider):
    import gc

    response = client(fake_provider, native=False).messages.with_raw_response.create(**KW, stream=True)
    assert response.http_response.status_code == 200  # neither parsed nor closed
    assert anthropic_instrumented.spans() == []
    del response
    gc.collect()
    (span,) = anthropic_instrumented.spans()
    assert span.status.status_code is StatusCode.UNSET


def test_vertex_beta_messages_copy_is_instrumented(anthropic_instrumented, fake_provider):
    """anthropic.lib.vertex's beta Messages copies ``create`` at import; it still reaches ``request``."""
    vertex = anthropic.AnthropicVertex(
        region="us-east5",
        project_id="p",
        access_token="t",
        base_url=fake_provider.url,
        max_retries=0,
        open_telemetry=False,
    )
    message = vertex.beta.messages.create(**KW)
    assert message.model == MODEL
    assert fake_provider.requests[-1]["path"].endswith(f"/models/{MODEL}:rawPredict")
    check_one_call(anthropic_instrumented, native=False, stream=False)
    assert anthropic_instrumented.spans()[0].attributes[names.GEN_AI_PROVIDER_NAME] == "gcp.vertex_ai"


def test_bedrock_beta_messages_copy_is_instrumented(anthropic_instrumented, fake_provider):
    """anthropic.lib.bedrock's beta Messages copies ``create`` at import; it still reaches ``request``."""
    bedrock = anthropic.AnthropicBedrock(
        api_key="k", aws_region="us-east-1", base_url=fake_provider.url, max_retries=0, open_telemetry=False
    )
    message = bedrock.beta.messages.create(**KW)
    assert message.model == MODEL
    assert fake_provider.requests[-1]["path"] == f"/model/{MODEL}/invoke"
    check_one_call(anthropic_instrumented, native=False, stream=False)
    assert anthropic_instrumented.spans()[0].attributes[names.GEN_AI_PROVIDER_NAME] == "aws.bedrock"


def test_stream_proxy_keeps_the_sdk_surface(anthropic_instrumented, fake_provider):
    """What ``__enter__`` returns is still instrumented, ``isinstance`` holds, attributes pass through."""
    with client(fake_provider, native=False).messages.create(**KW, stream=True) as stream:
        assert isinstance(stream, anthropic.Stream)
        assert stream.response.status_code == 200 and stream.response.headers["request-id"].startswith("req_")
        events = [e.type for e in stream]
    assert events[-1] == "message_stop"
    check_one_call(anthropic_instrumented, native=False, stream=True)


def test_count_tokens_and_other_endpoints_are_not_inference(anthropic_instrumented, fake_provider):
    assert client(fake_provider, native=False).messages.count_tokens(model=MODEL, messages=MESSAGES).input_tokens == 25
    assert anthropic_instrumented.spans() == []
