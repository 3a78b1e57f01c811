"""openai: every call shape, sync and async, against the fake provider over real HTTP.

Expected numbers come from the fake provider's fixed bodies: with ``cache``, prompt 425 tokens of
which 400 cached (openai's ``prompt_tokens`` / ``input_tokens`` include ``cached_tokens``); one
output token per word of ``text=``. Error codes are the fake's openai error bodies
(``OPENAI_ERRORS``, shaped like openai's own).
"""

from __future__ import annotations

import asyncio
import copy
import gc
import socket
from typing import Any

import openai
import pydantic
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from openai._legacy_response import LegacyAPIResponse
from openai._models import construct_type
from opentelemetry.trace import SpanKind, StatusCode

from cassette_replay import OPENAI_HTTP
from conftest import TRACER_PROVIDER, json_value, traceparent_of
from drivers import SpanBalance, add_span_processor
from otel_sampling import names
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

MESSAGES = [{"role": "user", "content": "Summarise: printer on fire"}]
SCENARIO = 'served_model=gpt-served,cache,text={"answer":"hi"}'  # one output word
CHAT = {
    "model": "gpt-req",
    "messages": MESSAGES,
    "max_completion_tokens": 64,
    "extra_headers": {"x-fake-scenario": SCENARIO},
}
RESP = {
    "model": "gpt-req",
    "input": "Summarise: printer on fire",
    "max_output_tokens": 64,
    "extra_headers": {"x-fake-scenario": SCENARIO},
}
USAGE = {"include_usage": True}
FULL = (425, 1, 400)  # input (cached included), output, cache read


class Answer(pydantic.BaseModel):
    answer: str


def client(fp, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", **{"max_retries": 0, **kw})


def async_client(fp, **kw) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=fp.url + "/v1", api_key="sk-fake", **{"max_retries": 0, **kw})


def scenario(value: str) -> dict:
    return {"extra_headers": {"x-fake-scenario": value}}


# ---------------------------------------------------------------- call shapes
# Each shape makes one call, consumes what it returns the way a caller would, checks the caller got
# the SDK's own object, and names the usage the span must carry (None: no usage reported).


def _check_raw(raw, parsed_type):
    assert type(raw) is LegacyAPIResponse and raw.headers["x-request-id"].startswith("req_")
    assert isinstance(raw.parse(), parsed_type) and raw.parse().model == "gpt-served"


def sync_shapes():
    def create(c):
        completion = c.chat.completions.create(**CHAT)
        assert type(completion) is openai.types.chat.ChatCompletion and completion.model == "gpt-served"
        return FULL

    def create_stream(c):
        stream = c.chat.completions.create(**CHAT, stream=True, stream_options=USAGE)
        assert isinstance(stream, openai.Stream) and [ch.model for ch in stream][0] == "gpt-served"
        return FULL

    def create_stream_without_usage(c):
        assert len(list(c.chat.completions.create(**CHAT, stream=True))) == 3  # role, one word, finish
        return

    def chat_stream_helper(c):
        with c.chat.completions.stream(**CHAT, response_format=Answer, stream_options=USAGE) as stream:
            assert stream.get_final_completion().choices[0].message.parsed == Answer(answer="hi")
        return FULL

    def chat_parse(c):
        assert c.chat.completions.parse(**CHAT, response_format=Answer).choices[0].message.parsed.answer == "hi"
        return FULL

    def chat_raw(c):
        _check_raw(c.chat.completions.with_raw_response.create(**CHAT), openai.types.chat.ChatCompletion)
        return FULL

    def responses_create(c):
        response = c.responses.create(**RESP)
        assert type(response) is openai.types.responses.Response and response.output_text == '{"answer":"hi"}'
        return FULL

    def responses_create_stream(c):
        events = list(c.responses.create(**RESP, stream=True))
        assert events[-1].type == "response.completed"
        return FULL

    def responses_stream_helper(c):
        with c.responses.stream(**RESP, text_format=Answer) as stream:
            assert stream.get_final_response().output_parsed == Answer(answer="hi")
        return FULL

    def responses_parse(c):
        assert c.responses.parse(**RESP, text_format=Answer).output_parsed == Answer(answer="hi")
        return FULL

    def responses_raw(c):
        _check_raw(c.responses.with_raw_response.create(**RESP), openai.types.responses.Response)
        return FULL

    def chat_raw_stream(c):  # the body is still on the wire: read when the caller parses it
        raw = c.chat.completions.with_raw_response.create(**CHAT, stream=True, stream_options=USAGE)
        assert type(raw) is LegacyAPIResponse
        assert [ch.model for ch in raw.parse()][0] == "gpt-served"
        return FULL

    def chat_unread_body(c):  # with_streaming_response: the body is read by the caller's parse()
        with c.chat.completions.with_streaming_response.create(**CHAT) as response:
            assert type(response) is openai._response.APIResponse
            assert response.parse().model == "gpt-served"
        return FULL

    def responses_unread_stream(c):
        with c.responses.with_streaming_response.create(**RESP, stream=True) as response:
            assert type(response) is openai._response.APIResponse
            assert list(response.parse())[-1].type == "response.completed"
        return FULL

    return {
        f.__name__: f
        for f in (
            create,
            create_stream,
            create_stream_without_usage,
            chat_stream_helper,
            chat_parse,
            chat_raw,
            responses_create,
            responses_create_stream,
            responses_stream_helper,
            responses_parse,
            responses_raw,
            chat_raw_stream,
            chat_unread_body,
            responses_unread_stream,
        )
    }


def async_shapes():
    async def create(c):
        completion = await c.chat.completions.create(**CHAT)
        assert type(completion) is openai.types.chat.ChatCompletion and completion.model == "gpt-served"
        return FULL

    async def create_stream(c):
        stream = await c.chat.completions.create(**CHAT, stream=True, stream_options=USAGE)
        assert isinstance(stream, openai.AsyncStream) and [ch.model async for ch in stream][0] == "gpt-served"
        return FULL

    async def create_stream_without_usage(c):
        assert len([ch async for ch in await c.chat.completions.create(**CHAT, stream=True)]) == 3
        return

    async def chat_stream_helper(c):
        async with c.chat.completions.stream(**CHAT, response_format=Answer, stream_options=USAGE) as stream:
            assert (await stream.get_final_completion()).choices[0].message.parsed == Answer(answer="hi")
        return FULL

    async def chat_parse(c):
        completion = await c.chat.completions.parse(**CHAT, response_format=Answer)
        assert completion.choices[0].message.parsed.answer == "hi"
        return FULL

    async def chat_raw(c):
        _check_raw(await c.chat.completions.with_raw_response.create(**CHAT), openai.types.chat.ChatCompletion)
        return FULL

    async def responses_create(c):
        response = await c.responses.create(**RESP)
        assert type(response) is openai.types.responses.Response and response.output_text == '{"answer":"hi"}'
        return FULL

    async def responses_create_stream(c):
        events = [e async for e in await c.responses.create(**RESP, stream=True)]
        assert events[-1].type == "response.completed"
        return FULL

    async def responses_stream_helper(c):
        async with c.responses.stream(**RESP, text_format=Answer) as stream:
            assert (await stream.get_final_response()).output_parsed == Answer(answer="hi")
        return FULL

    async def responses_parse(c):
        assert (await c.responses.parse(**RESP, text_format=Answer)).output_parsed == Answer(answer="hi")
        return FULL

    async def responses_raw(c):
        _check_raw(await c.responses.with_raw_response.create(**RESP), openai.types.responses.Response)
        return FULL

    async def chat_raw_stream(c):
        raw = await c.chat.completions.with_raw_response.create(**CHAT, stream=True, stream_options=USAGE)
        assert type(raw) is LegacyAPIResponse
        assert [ch.model async for ch in raw.parse()][0] == "gpt-served"  # legacy parse() is sync
        return FULL

    async def chat_unread_body(c):
        async with c.chat.completions.with_streaming_response.create(**CHAT) as response:
            assert type(response) is openai._response.AsyncAPIResponse
            assert (await response.parse()).model == "gpt-served"
        return FULL

    async def responses_unread_stream(c):
        async with c.responses.with_streaming_response.create(**RESP, stream=True) as response:
            assert type(response) is openai._response.AsyncAPIResponse
            assert [e async for e in await response.parse()][-1].type == "response.completed"
        return FULL

    return {
        f.__name__: f
        for f in (
            create,
            create_stream,
            create_stream_without_usage,
            chat_stream_helper,
            chat_parse,
            chat_raw,
            responses_create,
            responses_create_stream,
            responses_stream_helper,
            responses_parse,
            responses_raw,
            chat_raw_stream,
            chat_unread_body,
            responses_unread_stream,
        )
    }


SYNC_SHAPES, ASYNC_SHAPES = sync_shapes(), async_shapes()


def run_async_shape(fp, shape):
    async def main():
        async with async_client(fp) as c:
            return await shape(c)

    return asyncio.run(main())


def assert_one_inference_span(telemetry, usage, stream, api_type):
    (span,) = telemetry.spans(scope=None)  # every span exported, from any scope
    assert span.name == "chat gpt-req" and span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    a = span.attributes
    assert (a[names.GEN_AI_OPERATION_NAME], a[names.GEN_AI_PROVIDER_NAME]) == ("chat", "openai")
    assert a[names.OPENAI_API_TYPE] == api_type  # semconv OpenaiApiTypeValues
    assert a[names.ENDING] == "completed"
    # gpt-served is not a snapshot of gpt-req and no policy covers it (docs/telemetry.md degradation.reason)
    assert (a[names.DEGRADATION_MODE], a[names.DEGRADATION_REASON]) == ("degraded", ("substitution",))
    assert (a[names.GEN_AI_REQUEST_MODEL], a[names.GEN_AI_RESPONSE_MODEL]) == ("gpt-req", "gpt-served")
    assert a[names.GEN_AI_REQUEST_MAX_TOKENS] == 64
    assert a.get(names.GEN_AI_REQUEST_STREAM, False) is stream
    assert a[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    assert a[names.SERVER_ADDRESS] == "127.0.0.1" and isinstance(a[names.SERVER_PORT], int)
    got = tuple(
        a.get(k)
        for k in (
            names.GEN_AI_USAGE_INPUT_TOKENS,
            names.GEN_AI_USAGE_OUTPUT_TOKENS,
            names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
        )
    )
    assert got == (usage or (None, None, None))
    assert names.ERROR_TYPE not in a
    token_types = {"input": 1, "output": 1} if usage else {}  # cache parts are inside input
    assert telemetry.counts(names.METRIC_GEN_AI_TOKEN_USAGE, names.GEN_AI_TOKEN_TYPE) == {
        (t,): n for t, n in token_types.items()
    }
    if stream:
        assert a[names.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] > 0


def _streams(name):
    return "stream" in name


def _api_type(name):
    return "responses" if name.startswith("responses") else "chat_completions"


@pytest.mark.parametrize("name", list(SYNC_SHAPES))
def test_sync_call_shape_makes_one_span(openai_instrumented, fake_provider, name):
    usage = SYNC_SHAPES[name](client(fake_provider))
    assert_one_inference_span(openai_instrumented, usage, _streams(name), _api_type(name))


@pytest.mark.parametrize("name", list(ASYNC_SHAPES))
def test_async_call_shape_makes_one_span(openai_instrumented, fake_provider, name):
    usage = run_async_shape(fake_provider, ASYNC_SHAPES[name])
    assert_one_inference_span(openai_instrumented, usage, _streams(name), _api_type(name))


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_streaming_response_read_without_parse_ends_at_close(openai_instrumented, fake_provider, api):
    """with_streaming_response read as bytes or lines: the body is the caller's and we never see it;
    the span ends when the caller leaves the block, with the request but no response attributes."""
    resource = client(fake_provider).chat.completions if api == "chat" else client(fake_provider).responses
    body = CHAT if api == "chat" else {**RESP, "stream": True}
    with resource.with_streaming_response.create(**body) as response:
        assert response.read()  # the SDK's own bytes, untouched
        assert openai_instrumented.spans(scope=None) == []  # not ended while the caller holds it open
    (span,) = openai_instrumented.spans(scope=None)
    assert span.attributes[names.GEN_AI_REQUEST_MODEL] == "gpt-req"
    assert names.GEN_AI_RESPONSE_MODEL not in span.attributes and names.ERROR_TYPE not in span.attributes


def test_every_call_shape_starts_and_ends_its_span_once(openai_instrumented, fake_provider, monkeypatch, caplog):
    """As many of our spans end as start, each once, over every shape; the SDK warns when an
    ended span is ended again, and never does here."""
    balance = SpanBalance()
    add_span_processor(monkeypatch, balance)
    caplog.set_level("WARNING", logger="opentelemetry.sdk.trace")
    for shape in SYNC_SHAPES.values():
        shape(client(fake_provider))
    for shape in ASYNC_SHAPES.values():
        run_async_shape(fake_provider, shape)
    calls = len(SYNC_SHAPES) + len(ASYNC_SHAPES)
    gc.collect()
    assert (balance.started, balance.ended) == (calls, calls)
    assert not [r for r in caplog.records if "ended span" in r.getMessage()]


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
@pytest.mark.parametrize("shape", list(SYNC_SHAPES))
def test_every_call_shape_sends_our_chat_span(shape, sync, openai_instrumented, fake_provider):
    """openai's SDK sends no trace context: every request carries ours (test_provider_trace_context.py)."""
    extra_headers = copy.deepcopy(CHAT["extra_headers"])
    fake_provider.reset()
    if sync:
        SYNC_SHAPES[shape](client(fake_provider))
    else:
        run_async_shape(fake_provider, ASYNC_SHAPES[shape])
    (span,) = openai_instrumented.spans()
    sent = [r["headers"].get("traceparent") for r in fake_provider.requests]
    assert sent == [traceparent_of(span)] * len(sent) and sent
    assert CHAT["extra_headers"] == extra_headers  # the caller's headers are not changed


def test_raw_response_namespace_touched_before_instrument(telemetry, fake_provider):
    """with_raw_response is a cached_property that binds the unwrapped create at first access."""
    from conftest import _instrumented

    sync_c, async_c = client(fake_provider), async_client(fake_provider)
    early = [
        sync_c.chat.completions.with_raw_response,
        sync_c.responses.with_raw_response,
        async_c.chat.completions.with_raw_response,
        async_c.responses.with_raw_response,
    ]
    for _ in _instrumented(telemetry, OpenAIInstrumentor):
        _check_raw(early[0].create(**CHAT), openai.types.chat.ChatCompletion)
        _check_raw(early[1].create(**RESP), openai.types.responses.Response)

        async def main():
            _check_raw(await early[2].create(**CHAT), openai.types.chat.ChatCompletion)
            _check_raw(await early[3].create(**RESP), openai.types.responses.Response)
            await async_c.close()

        asyncio.run(main())
    spans = telemetry.spans(scope=None)
    assert len(spans) == 4
    assert {s.attributes[names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] for s in spans} == {400}


def test_other_openai_requests_are_not_inference_spans(openai_instrumented, fake_provider):
    with pytest.raises(openai.NotFoundError):  # the fake has no /v1/embeddings: a real request all the same
        client(fake_provider).embeddings.create(model="text-embedding-3-small", input="x")
    assert openai_instrumented.spans(scope=None) == []


# ---------------------------------------------------------------- faults

ERRORS = [  # status -> the SDK's exception, error.type (the error body's code, else its type)
    (400, openai.BadRequestError, "invalid_request_error"),
    (404, openai.NotFoundError, "model_not_found"),
    (429, openai.RateLimitError, "rate_limit_exceeded"),
    (500, openai.InternalServerError, "server_error"),
    (503, openai.InternalServerError, "service_unavailable"),
]


def call(c, api, fault, **kw):
    if api == "chat":
        return c.chat.completions.create(model="gpt-req", messages=MESSAGES, **scenario(fault), **kw)
    return c.responses.create(model="gpt-req", input="hi", **scenario(fault), **kw)


def only_span(telemetry):
    (span,) = telemetry.spans(scope=None)
    return span


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize(("status", "exc", "error_type"), ERRORS)
def test_error_status_is_raised_unchanged_with_its_code(
    openai_instrumented, fake_provider, api, status, exc, error_type
):
    with pytest.raises(exc) as caught:
        call(client(fake_provider), api, f"status={status}")
    assert caught.value.status_code == status
    span = only_span(openai_instrumented)
    assert span.status.status_code is StatusCode.ERROR and span.attributes[names.ERROR_TYPE] == error_type
    assert openai_instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ERROR_TYPE) == {(error_type,): 1}


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_async_error_status(openai_instrumented, fake_provider, api):
    async def main():
        async with async_client(fake_provider) as c:
            if api == "chat":
                await c.chat.completions.create(model="gpt-req", messages=MESSAGES, **scenario("status=429"))
            else:
                await c.responses.create(model="gpt-req", input="hi", **scenario("status=429"))

    with pytest.raises(openai.RateLimitError):
        asyncio.run(main())
    assert only_span(openai_instrumented).attributes[names.ERROR_TYPE] == "rate_limit_exceeded"


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_rate_limit_then_success_with_sdk_retries_is_one_successful_span(openai_instrumented, fake_provider, api):
    fake_provider.reset()
    call(client(fake_provider, max_retries=2), api, "status=429,fail_first=2")
    assert [r["retry_count"] for r in fake_provider.requests] == [0, 1, 2]  # the SDK retried twice
    span = only_span(openai_instrumented)
    assert span.status.status_code is StatusCode.UNSET and names.ERROR_TYPE not in span.attributes
    assert span.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_timeout(openai_instrumented, fake_provider, api):
    with pytest.raises(openai.APITimeoutError):
        call(client(fake_provider, timeout=0.2), api, "delay=2")
    assert only_span(openai_instrumented).attributes[names.ERROR_TYPE] == "timeout"


def test_connection_refused(openai_instrumented):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-fake", max_retries=0)
    with pytest.raises(openai.APIConnectionError):
        c.chat.completions.create(model="gpt-req", messages=MESSAGES)
    span = only_span(openai_instrumented)
    assert span.attributes[names.ERROR_TYPE] == "connection_error"
    assert (span.attributes[names.SERVER_ADDRESS], span.attributes[names.SERVER_PORT]) == ("127.0.0.1", port)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("api", "fault", "reasons"),
    [
        ("chat", "refusal", ("content_filter",)),
        ("chat", "length", ("length",)),
        ("chat", "tool", ("tool_calls",)),
        ("responses", "refusal", ("content_filter",)),  # status incomplete, reason content_filter
        ("responses", "length", ("length",)),  # status incomplete, reason max_output_tokens
        ("responses", "tool", ("tool_calls",)),  # a function_call output item
    ],
)
def test_finish_reasons(openai_instrumented, fake_provider, api, fault, reasons, stream):
    result = call(client(fake_provider), api, fault, stream=stream)
    if stream:
        list(result)
    span = only_span(openai_instrumented)
    assert span.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == reasons
    assert span.status.status_code is StatusCode.UNSET  # a filtered or cut answer is still an answer


def test_responses_failed_event_is_an_error(openai_instrumented, fake_provider):
    """A streamed ``response.failed`` is yielded by the SDK, not raised: the span still fails."""
    events = list(call(client(fake_provider), "responses", "failed", stream=True))
    assert events[-1].type == "response.failed"
    span = only_span(openai_instrumented)
    assert span.status.status_code is StatusCode.ERROR and span.attributes[names.ERROR_TYPE] == "server_error"


def test_response_without_model_omits_the_attribute(openai_instrumented, fake_provider):
    completion = call(client(fake_provider), "chat", "no_model")
    assert completion.model is None  # the SDK parses leniently
    span = only_span(openai_instrumented)
    assert names.GEN_AI_RESPONSE_MODEL not in span.attributes  # not None, not the request model
    assert span.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)


def test_instrumentation_dependencies_declare_the_supported_range():
    """openai 2.x (on httpx, what llama-index-llms-openai pins) and 3.x (on httpx2)."""
    assert list(OpenAIInstrumentor().instrumentation_dependencies()) == ["openai >= 2.0, < 4"]


def test_the_state_runs_on_the_installed_majors_http_library(openai_instrumented):
    """openai 3.0 moved from httpx to httpx2: raw errors of that library are the ones that escape streams."""
    state = OpenAIInstrumentor()._state
    assert state.http_library == OPENAI_HTTP.__name__
    assert state.failure(OPENAI_HTTP.ReadTimeout("read")) == ("timeout", names.ENDING_TIMEOUT)


# ---------------------------------------------------------------- cases every instrumentation must get right


def test_async_streaming_response_is_untouched(openai_instrumented, fake_provider):
    async def main():
        async with (
            async_client(fake_provider) as c,
            c.chat.completions.with_streaming_response.create(**CHAT) as response,
        ):
            assert type(response) is openai._response.AsyncAPIResponse
            return (await response.parse()).model

    assert asyncio.run(main()) == "gpt-served"
    assert len(openai_instrumented.spans(scope=None)) == 1


def test_what_enter_returns_is_the_instrumented_stream(openai_instrumented, fake_provider):
    stream = client(fake_provider).chat.completions.create(**CHAT, stream=True, stream_options=USAGE)
    with stream as entered:
        assert entered is stream and isinstance(entered, openai.Stream)
        assert entered.response.status_code == 200  # attributes pass through the proxy
        assert len(list(entered)) == 4
    assert only_span(openai_instrumented).attributes[names.GEN_AI_USAGE_INPUT_TOKENS] == 425


def test_omitted_parameters_never_reach_attributes(openai_instrumented, fake_provider):
    client(fake_provider).chat.completions.create(
        model="gpt-req",
        messages=MESSAGES,
        max_tokens=openai.omit,
        max_completion_tokens=openai.NOT_GIVEN,
        stream=openai.omit,
    )
    a = only_span(openai_instrumented).attributes
    assert names.GEN_AI_REQUEST_MAX_TOKENS not in a and names.GEN_AI_REQUEST_STREAM not in a
    assert all(isinstance(v, (str, int, float, bool, tuple)) for v in a.values())


def test_a_failing_extractor_changes_nothing_the_caller_sees(openai_instrumented, fake_provider, monkeypatch):
    from otel_sampling.instrumentation.openai import StreamAccumulator

    def broken(self, chunk):
        raise RuntimeError("extractor bug")

    monkeypatch.setattr(StreamAccumulator, "observe", broken)
    chunks = list(client(fake_provider).chat.completions.create(**CHAT, stream=True))
    assert [c.choices[0].finish_reason for c in chunks] == [None, None, "stop"]
    assert len(openai_instrumented.spans(scope=None)) == 1


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_cancelled_call_ends_cancelled_and_propagates(openai_instrumented, fake_provider, api):
    async def main():
        async with async_client(fake_provider) as c:
            call_ = (
                c.chat.completions.create(model="gpt-req", messages=MESSAGES, **scenario("delay=5"))
                if api == "chat"
                else c.responses.create(model="gpt-req", input="hi", **scenario("delay=5"))
            )
            task = asyncio.ensure_future(call_)
            while not fake_provider.requests or fake_provider.requests[-1]["scenario"] != {"delay": "5"}:
                await asyncio.sleep(0.01)  # until the request is on the wire
            task.cancel()
            await task

    fake_provider.reset()
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    span = only_span(openai_instrumented)
    assert span.status.status_code is StatusCode.ERROR and span.attributes[names.ERROR_TYPE] == "cancelled"


# ---------------------------------------------------------------- the model asked for, Azure OpenAI deployments
def test_openai_model_given_only_in_extra_body(openai_instrumented, fake_provider):
    c = openai.OpenAI(base_url=fake_provider.url + "/v1", api_key="k", max_retries=0)
    completion = c.chat.completions.create(
        model=openai.omit, messages=[{"role": "user", "content": "hi"}], extra_body={"model": "gpt-4o-mini"}
    )
    assert completion.model == "gpt-4o-mini"
    (span,) = openai_instrumented.spans()
    assert (span.name, span.attributes[names.GEN_AI_REQUEST_MODEL]) == ("chat gpt-4o-mini", "gpt-4o-mini")
    assert span.attributes[names.DEGRADATION_MODE] == "primary"


def test_azure_openai_deployment_names_are_no_substitution(telemetry):
    # Azure OpenAI's `model` is the caller's deployment name; the answer names the model behind it.
    # GenAI semconv: gen_ai.provider.name "azure.ai.openai".
    answer = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
    sent: list[str] = []

    def handler(request: OPENAI_HTTP.Request) -> OPENAI_HTTP.Response:
        sent.append(request.url.path)
        return OPENAI_HTTP.Response(200, json=answer)

    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        azure = openai.AzureOpenAI(
            api_key="k",
            api_version="2024-10-21",
            azure_endpoint="http://azure.test",
            max_retries=0,
            http_client=OPENAI_HTTP.Client(transport=OPENAI_HTTP.MockTransport(handler)),
        )
        assert azure.chat.completions.create(model="prod-chat", messages=[{"role": "user", "content": "hi"}]).id == "c"
    finally:
        instrumentor.uninstrument()
    assert sent == ["/openai/deployments/prod-chat/chat/completions"]
    (span,) = telemetry.spans()
    a = span.attributes
    assert (a[names.GEN_AI_PROVIDER_NAME], a[names.GEN_AI_REQUEST_MODEL], a[names.GEN_AI_RESPONSE_MODEL]) == (
        "azure.ai.openai",
        "prod-chat",
        "gpt-4o-2024-08-06",
    )
    assert a[names.DEGRADATION_MODE] == "primary" and names.DEGRADATION_REASON not in a
    modes = telemetry.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.GEN_AI_PROVIDER_NAME, names.DEGRADATION_MODE)
    assert modes == {("azure.ai.openai", "primary"): 1}


# ---------------------------------------------------------------- the plain reads of the SDK's own models
# The SDK builds answers without validating them (``construct_type``): any member may hold any JSON.
# Answers built of its own models throughout are read with plain attribute reads; whatever the JSON,
# they must report what the tolerant read reports.


def _or_any(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return good | json_value


_usage = _or_any(
    st.fixed_dictionaries(
        {
            "prompt_tokens": _or_any(st.integers(-1, 2**64)),
            "completion_tokens": _or_any(st.integers(-1, 2**64)),
            "total_tokens": st.just(0),
        },
        optional={
            "prompt_tokens_details": _or_any(
                st.fixed_dictionaries({}, optional={"cached_tokens": json_value, "cache_write_tokens": json_value})
            ),
            "completion_tokens_details": _or_any(st.fixed_dictionaries({}, optional={"reasoning_tokens": json_value})),
        },
    )
)
_refusals = st.none() | st.sampled_from(["", "I can't help with that."])
_reasons = st.none() | st.sampled_from(["stop", "length", "tool_calls"])


def _answer(kind: str, part: str, body: st.SearchStrategy[Any], **optional: Any) -> st.SearchStrategy[Any]:
    """A Chat Completions answer (``kind``) whose choices carry ``part`` (``message`` / ``delta``)."""
    choice = st.fixed_dictionaries(
        {"index": _or_any(st.integers(0, 2)), "finish_reason": _or_any(_reasons), part: _or_any(body)}
    )
    return st.fixed_dictionaries(
        {
            "id": _or_any(st.just("chatcmpl-1")),
            "object": st.just(kind),
            "created": st.just(0),
            "model": _or_any(st.sampled_from(["gpt-4o", ""])),
            "choices": _or_any(st.lists(_or_any(choice), max_size=3)),
            "usage": st.none() | _usage,
        },
        optional=optional,
    )


_completion = _answer(
    "chat.completion",
    "message",
    st.fixed_dictionaries({"role": st.just("assistant"), "content": json_value, "refusal": _or_any(_refusals)}),
    error=json_value,
)
_chunk = _answer(
    "chat.completion.chunk",
    "delta",
    st.fixed_dictionaries({}, optional={"content": _or_any(st.sampled_from(["", "hi"])), "refusal": _refusals}),
)


def _state() -> Any:
    from otel_sampling.metrics import Instruments
    from otel_sampling.settings import Settings

    return OpenAIInstrumentor()._table()[1](Instruments(Settings()))  # the installed major's state


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(body=_completion)
def test_a_completion_read_plainly_reports_what_the_tolerant_read_does(body):
    from openai.types.chat import ChatCompletion

    from otel_sampling.instrumentation.openai import chat_response_of

    completion = construct_type(type_=ChatCompletion, value=body)
    assert _state().response_of(completion) == chat_response_of(completion)


_tool_call = st.one_of(
    st.fixed_dictionaries(
        {
            "id": st.just("call_1"),
            "type": _or_any(st.just("function")),
            "function": _or_any(
                st.fixed_dictionaries({}, optional={"name": _or_any(st.just("get_weather")), "arguments": json_value})
            ),
        }
    ),
    st.fixed_dictionaries(  # a custom tool's call: free text input, read by its name only
        {"id": st.just("call_2"), "type": st.just("custom"), "custom": st.just({"name": "grep", "input": "x"})}
    ),
)
_tool_answer = _answer(
    "chat.completion",
    "message",
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": json_value},
        optional={"tool_calls": _or_any(st.lists(_or_any(_tool_call), max_size=3))},
    ),
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(body=_tool_answer)
@example(  # two choices, each with a function tool call
    body={
        "id": "c",
        "model": "m",
        "choices": [
            {"index": i, "message": {"content": None, "tool_calls": [{"type": "function", "function": f}]}}
            for i, f in enumerate([{"name": "a", "arguments": "{}"}, {"name": "b", "arguments": '{"x": 1}'}])
        ],
    }
)
def test_a_completion_s_tool_calls_read_plainly_are_what_the_tolerant_read_finds(body):
    from openai.types.chat import ChatCompletion

    from otel_sampling.instrumentation.call_answers import chat_answer

    completion = construct_type(type_=ChatCompletion, value=body)
    assert _state()._chat_answers.of(completion) == chat_answer(completion)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=st.lists(_chunk, min_size=1, max_size=5))
@example(  # a refusal under an index that is no int, once choice 0 (which it reads as) showed text
    bodies=[
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "hi"}}]},
        {"id": "c", "model": "m", "choices": [{"index": "0", "delta": {"refusal": "no"}}]},
    ]
)
def test_a_stream_read_plainly_reports_what_the_tolerant_read_of_every_chunk_does(bodies):
    from openai.types.chat import ChatCompletionChunk

    from otel_sampling.instrumentation.openai import StreamAccumulator

    chunks = [construct_type(type_=ChatCompletionChunk, value=body) for body in bodies]
    plain = StreamAccumulator(models=_state()._chat_models)  # as the state makes it for a chat stream
    tolerant = StreamAccumulator()
    for chunk in chunks:
        plain.observe(chunk)
        tolerant._observe(chunk)
    assert (plain.response(), plain.complete) == (tolerant.response(), tolerant.complete)


@pytest.mark.parametrize("where", ["call", "client"])
def test_a_traceparent_the_caller_named_in_another_case_is_the_one_sent(where, openai_instrumented, fake_provider):
    """The SDK merges header names case-insensitively: a ``TraceParent`` the caller gave on the call
    or on the client is the only ``traceparent`` the request carries."""
    own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    sent: list[list[str]] = []
    http_client = openai.DefaultHttpxClient(
        event_hooks={"request": [lambda request: sent.append(request.headers.get_list("traceparent"))]}
    )
    given = {"TraceParent": own}
    c = client(fake_provider, http_client=http_client, **({"default_headers": given} if where == "client" else {}))
    c.chat.completions.create(**{**CHAT, **({"extra_headers": given} if where == "call" else {})})
    assert sent == [[own]]
    assert given == {"TraceParent": own}
    assert openai_instrumented.spans()  # still traced


class _UnhashablePost(str):
    """A method that equals "post" and cannot be a dict key (a caller's own request options)."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)


def test_a_caller_built_post_whose_method_is_an_odd_string_is_traced(openai_instrumented, fake_provider):
    """The method is compared as the SDK's request compares it, whatever its type."""
    from openai._models import FinalRequestOptions
    from openai.types.chat import ChatCompletion

    options = FinalRequestOptions.construct(
        method=_UnhashablePost("post"),
        url="/chat/completions",
        json_data={"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert type(client(fake_provider).request(ChatCompletion, options)) is ChatCompletion
    assert [span.name for span in openai_instrumented.spans()] == ["chat gpt-4o"]
