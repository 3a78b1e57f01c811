"""openai stream fault matrix: every way a stream ends x every way it fails, sync and async.

Each cell must export exactly one span, ended once, with the status the ending implies: a caller
leaving early is not an error; an error while reading is ERROR with its ``error.type`` and reaches
the caller as the same exception; a stream without its terminal event (chat: no ``finish_reason``;
Responses: no ``response.completed`` / ``incomplete`` / ``failed``) is ``incomplete_stream``.
Faults come from the fake provider (``midstream_error``, ``drop``, ``truncate``, ``chunk_delay``
with a read timeout), cut after the first words of the answer.
"""

from __future__ import annotations

import asyncio
import gc
from importlib.metadata import version

import openai
import pytest
from opentelemetry.trace import StatusCode
from packaging.version import Version

from cassette_replay import OPENAI_HTTP
from harness.limits import HANG_S
from otel_sampling import names
from otel_sampling.rules import endings

MESSAGES = [{"role": "user", "content": "hi"}]
# openai's streams changed inside 3.x: AsyncStream.aclose() exists from 3.12, and the raw httpx2 errors
# a transport raises mid-body reach the caller wrapped in APITimeoutError / APIConnectionError from
# 3.14 (as they are before: both are named alike, docs/telemetry.md "Provider call endings").
HAS_ACLOSE = hasattr(openai.AsyncStream, "aclose")
WRAPS_TRANSPORT_ERRORS = Version(version("openai")) >= Version("3.14")
DROPPED = openai.APIConnectionError if WRAPS_TRANSPORT_ERRORS else OPENAI_HTTP.RemoteProtocolError

# fault -> (exception the SDK raises while reading, or None; error.type; ending) per API. Endings:
# docs/telemetry.md "Provider call endings" (server_error and connection failures: model.unavailable).
FAULTS = {
    "none": {"chat": (None, None, "completed"), "responses": (None, None, "completed")},
    "midstream_error": {
        "chat": (openai.APIError, "server_error", "model.unavailable"),  # data: {"error": ...} raised
        # an `error` event is yielded, not raised
        "responses": (None, "server_error", "model.unavailable"),
    },
    "drop": {
        "chat": (DROPPED, "connection_error", "model.unavailable"),
        "responses": (DROPPED, "connection_error", "model.unavailable"),
    },
    "truncate": {"chat": (None, "incomplete_stream", "error"), "responses": (None, "incomplete_stream", "error")},
    "chunk_delay=2": {
        "chat": ((openai.APITimeoutError, OPENAI_HTTP.TimeoutException), "timeout", "timeout"),
        "responses": ((openai.APITimeoutError, OPENAI_HTTP.TimeoutException), "timeout", "timeout"),
    },
}
EARLY_FAULTS = ["none", "midstream_error", "drop", "truncate"]  # the fault comes after the first event


def open_stream(c, api, fault):
    headers = {"x-fake-scenario": fault}
    if api == "chat":
        return c.chat.completions.create(
            model="gpt-req",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
            extra_headers=headers,
        )
    return c.responses.create(model="gpt-req", input="hi", stream=True, extra_headers=headers)


def read_timeout(fault: str | None) -> float:
    """The client's timeout: short only where the fault is a slow chunk (``chunk_delay=2``) the
    timeout must cut; elsewhere long enough that a busy machine never times a read out."""
    return 0.5 if fault and fault.startswith("chunk_delay") else HANG_S


def sync_client(fp, fault: str | None = None):
    return openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0, timeout=read_timeout(fault))


def async_client(fp, fault: str | None = None):
    return openai.AsyncOpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0, timeout=read_timeout(fault))


def ended_once(telemetry):
    """The one span and its one duration sample (a later close or collection may not end it again)."""
    (span,) = telemetry.spans(scope=None)
    assert telemetry.counts(names.METRIC_GEN_AI_OPERATION_DURATION) == {(): 1}
    return span


def assert_status(span, error_type, ending=None):
    if ending is not None:
        assert span.attributes[names.ENDING] == ending
    if error_type is None:
        assert span.status.status_code is StatusCode.UNSET and names.ERROR_TYPE not in span.attributes
    else:
        assert span.status.status_code is StatusCode.ERROR and span.attributes[names.ERROR_TYPE] == error_type


# ---------------------------------------------------------------- read to the end


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_sync_exhaustion(openai_instrumented, fake_provider, api, fault):
    raised, error_type, ending = FAULTS[fault][api]
    stream = open_stream(sync_client(fake_provider, fault), api, fault)
    seen = []
    if raised:
        with pytest.raises(raised):
            for event in stream:
                seen.append(event)
    else:
        seen = list(stream)
    stream.close()
    span = ended_once(openai_instrumented)
    assert_status(span, error_type, ending)
    if fault == "none":
        assert span.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
        assert span.attributes[names.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
    elif seen:  # what was seen before the fault is kept: the served model
        assert span.attributes[names.GEN_AI_RESPONSE_MODEL] == "gpt-req"


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_async_exhaustion(openai_instrumented, fake_provider, api, fault):
    raised, error_type, ending = FAULTS[fault][api]

    async def main():
        async with async_client(fake_provider, fault) as c:
            stream = await open_stream(c, api, fault)
            if raised:
                with pytest.raises(raised):
                    async for _ in stream:
                        pass
            else:
                async for _ in stream:
                    pass
            await stream.close()

    asyncio.run(main())
    assert_status(ended_once(openai_instrumented), error_type, ending)


# ---------------------------------------------------------------- leave early


def _break_close(stream):
    next(iter(stream))
    stream.close()


def _with_exit(stream):
    with stream as s:
        for _ in s:
            break


SYNC_EXITS = {"break_close": _break_close, "with_exit": _with_exit}


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("fault", EARLY_FAULTS)
@pytest.mark.parametrize("exit_kind", [*SYNC_EXITS, "gc"])
def test_sync_early_exit_is_not_an_error(openai_instrumented, fake_provider, api, fault, exit_kind):
    stream = open_stream(sync_client(fake_provider, fault), api, fault)
    if exit_kind == "gc":
        next(iter(stream))
        del stream
        gc.collect()
    else:
        SYNC_EXITS[exit_kind](stream)
    # ended by the exit itself, while the caller still holds the stream
    assert len(openai_instrumented.spans(scope=None)) == 1
    assert_status(ended_once(openai_instrumented), None, "cancelled")


async def _abreak_close(stream):
    await stream.__anext__()
    await stream.close()


async def _abreak_aclose(stream):
    await stream.__anext__()
    await stream.aclose()


async def _async_with_exit(stream):
    async with stream as s:
        async for _ in s:
            break


ASYNC_EXITS = {"break_close": _abreak_close, "break_aclose": _abreak_aclose, "async_with_exit": _async_with_exit}


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("fault", EARLY_FAULTS)
@pytest.mark.parametrize("exit_kind", [*ASYNC_EXITS, "gc"])
def test_async_early_exit_is_not_an_error(openai_instrumented, fake_provider, api, fault, exit_kind):
    if exit_kind == "break_aclose" and not HAS_ACLOSE:
        pytest.skip("this openai's AsyncStream has no aclose()")

    async def main():
        async with async_client(fake_provider, fault) as c:
            stream = await open_stream(c, api, fault)
            if exit_kind == "gc":
                await stream.__anext__()
                del stream
                gc.collect()
            else:
                await ASYNC_EXITS[exit_kind](stream)
            # ended by the exit itself, while the caller still holds the stream
            assert len(openai_instrumented.spans(scope=None)) == 1

    asyncio.run(main())
    assert_status(ended_once(openai_instrumented), None, "cancelled")


# ---------------------------------------------------------------- stream() managers


def test_chat_stream_manager_span_ends_when_the_with_block_is_left(openai_instrumented, fake_provider):
    with sync_client(fake_provider).chat.completions.stream(model="gpt-req", messages=MESSAGES) as stream:
        for _ in stream:
            break
    assert len(openai_instrumented.spans(scope=None)) == 1  # `stream` is still referenced here
    # left after one event: "cancelled", not an error (docs/telemetry.md "Provider call endings"; a real run)
    assert_status(ended_once(openai_instrumented), None, "cancelled")
    del stream


def test_responses_stream_manager_span_ends_when_the_with_block_is_left(openai_instrumented, fake_provider):
    with sync_client(fake_provider).responses.stream(model="gpt-req", input="hi") as stream:
        for _ in stream:
            break
    assert len(openai_instrumented.spans(scope=None)) == 1  # `stream` is still referenced here
    assert_status(ended_once(openai_instrumented), None, "cancelled")  # as above
    del stream


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_async_stream_managers(openai_instrumented, fake_provider, api):
    async def main():
        async with async_client(fake_provider) as c:
            manager = (
                c.chat.completions.stream(model="gpt-req", messages=MESSAGES)
                if api == "chat"
                else c.responses.stream(model="gpt-req", input="hi")
            )
            async with manager as stream:
                async for _ in stream:
                    break
            assert len(openai_instrumented.spans(scope=None)) == 1  # `stream` is still referenced here
            return stream

    asyncio.run(main())
    assert_status(ended_once(openai_instrumented), None, "cancelled")  # as above


@pytest.mark.parametrize(
    ("api", "fault", "error_type"),
    [
        ("chat", "truncate", "incomplete_stream"),
        ("responses", "truncate", "incomplete_stream"),
        ("responses", "midstream_error", "server_error"),
    ],
)
def test_stream_manager_read_to_a_faulty_end(openai_instrumented, fake_provider, api, fault, error_type):
    c, headers = sync_client(fake_provider, fault), {"x-fake-scenario": fault}
    manager = (
        c.chat.completions.stream(model="gpt-req", messages=MESSAGES, extra_headers=headers)
        if api == "chat"
        else c.responses.stream(model="gpt-req", input="hi", extra_headers=headers)
    )
    with manager as stream:
        list(stream)
    assert_status(ended_once(openai_instrumented), error_type)


# ---------------------------------------------------------------- the caller's exception is the same object


class Boom(Exception):
    """An exception no SDK knows, raised by the transport in the middle of the body."""


CHUNK = (
    b'data: {"id":"c1","object":"chat.completion.chunk","created":0,"model":"gpt-x",'
    b'"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\n'
)


@pytest.mark.parametrize(
    ("error", "raised", "error_type"),
    [
        (Boom(), Boom, endings.qualified_name(Boom)),  # passes through the SDK as is
        # openai wraps the raw httpx2 errors a transport raises mid-body from 3.14
        (
            OPENAI_HTTP.ReadTimeout("read timed out"),
            openai.APITimeoutError if WRAPS_TRANSPORT_ERRORS else OPENAI_HTTP.ReadTimeout,
            "timeout",
        ),
        (
            OPENAI_HTTP.RemoteProtocolError("peer closed connection"),
            openai.APIConnectionError if WRAPS_TRANSPORT_ERRORS else OPENAI_HTTP.RemoteProtocolError,
            "connection_error",
        ),
    ],
)
def test_mid_stream_exception_reaches_the_caller_unchanged(openai_instrumented, error, raised, error_type):
    def body():
        yield CHUNK
        raise error

    def handler(request):
        return OPENAI_HTTP.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    c = openai.OpenAI(
        api_key="sk-fake",
        base_url="https://api.openai.com/v1",
        max_retries=0,
        http_client=OPENAI_HTTP.Client(transport=OPENAI_HTTP.MockTransport(handler)),
    )
    stream = c.chat.completions.create(model="gpt-req", messages=MESSAGES, stream=True)
    with pytest.raises(raised) as caught:
        list(stream)
    assert caught.value is error or caught.value.__cause__ is error
    span = ended_once(openai_instrumented)
    assert_status(span, error_type)
    assert span.attributes[names.GEN_AI_RESPONSE_MODEL] == "gpt-x"  # seen before the error


def _sse(*chunks: str) -> bytes:
    return b"".join(b"data: " + c.encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def _chunk(choices: str, usage: str = "null") -> str:
    head = '"id":"c1","object":"chat.completion.chunk","created":0,"model":"gpt-x"'
    return f'{{{head},"choices":{choices},"usage":{usage}}}'


def test_a_choice_index_that_is_no_int_midway_still_reports_the_finish_reason_and_usage(openai_instrumented):
    """The SDK does not validate chunks: a choice ``index`` sent as a JSON object after the first
    chunks (read plainly by then) is read tolerantly, as the choice the stream names first."""
    body = _sse(
        _chunk('[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]'),
        _chunk('[{"index":{"n":0},"delta":{},"finish_reason":"length"}]'),
        _chunk("[]", '{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}'),
    )

    def handler(request):
        return OPENAI_HTTP.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    c = openai.OpenAI(
        api_key="sk-fake",
        base_url="https://api.openai.com/v1",
        max_retries=0,
        http_client=OPENAI_HTTP.Client(transport=OPENAI_HTTP.MockTransport(handler)),
    )
    chunks = list(c.chat.completions.create(model="gpt-req", messages=MESSAGES, stream=True))
    assert len(chunks) == 3
    span = ended_once(openai_instrumented)
    assert span.attributes[names.ENDING] == "completed"
    assert span.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("length",)
    assert span.attributes[names.GEN_AI_USAGE_INPUT_TOKENS] == 3
    assert span.attributes[names.GEN_AI_USAGE_OUTPUT_TOKENS] == 1


def test_error_type_of_a_raw_http_library_error():
    """What a raw error of the SDK's HTTP library (httpx2; openai 2.x: httpx) escaping a stream would
    be named (the SDK's own classification)."""
    from otel_sampling.instrumentation.openai import OpenAIInstrumentor
    from otel_sampling.metrics import Instruments
    from otel_sampling.settings import Settings

    state = OpenAIInstrumentor()._table()[1](Instruments(Settings()))  # the installed major's state
    assert state.error_type(OPENAI_HTTP.ReadTimeout("t")) == "timeout"
    assert state.error_type(OPENAI_HTTP.RemoteProtocolError("p")) == "connection_error"
    assert state.error_type(asyncio.CancelledError()) == "cancelled"


def test_async_proxy_has_aclose_only_when_the_stream_has_one():
    import anthropic

    from otel_sampling.instrumentation.streams import AsyncStreamProxy

    assert not hasattr(anthropic.AsyncStream, "aclose")  # openai's has one from 3.12

    class NoAclose:
        async def close(self):
            return None

    assert not hasattr(AsyncStreamProxy(NoAclose(), None, None, None), "aclose")  # as anthropic's stream
