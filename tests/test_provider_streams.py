"""The stream proxy and the call ending through the real anthropic SDK on an in-process transport,
where the test controls the exact bytes and the exact exception object.
"""

from __future__ import annotations

import asyncio
import collections.abc
import contextlib
import copy
import gc
import inspect
import json
import pickle
import threading
import time

import anthropic
import httpx2
import openai
import pytest
from opentelemetry.trace import StatusCode

from conftest import TRACER_PROVIDER, instrumenting, raised_by
from drivers import ANTHROPIC_MESSAGE
from harness.limits import HANG_S
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.testing.fake_provider import DEFAULT_TEXT

KW = {"model": "claude-req", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
MESSAGE_START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-req",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    },
}


def sse(event: dict) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def streaming(
    client_class: type, http_client_class: type, body: collections.abc.Callable[[], object]
) -> anthropic.Anthropic | anthropic.AsyncAnthropic:
    """An anthropic client of ``client_class`` whose every answer is an HTTP 200 event stream of
    the bytes ``body()`` yields (what it raises, the transport raises)."""
    transport = httpx2.MockTransport(
        lambda request: httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())
    )
    return client_class(
        api_key="k",
        base_url="http://provider.test",
        max_retries=0,
        open_telemetry=False,
        http_client=http_client_class(transport=transport),
    )


def as_the_sdk_passes(seen: BaseException, boom: BaseException) -> tuple[type, bool, bool]:
    """How a caller got ``boom``, a transport error raised while the SDK read the body: its class,
    whether it is ``boom`` itself (anthropic before 2.17) or the SDK's error wrapping it (from
    2.17, its ``APIConnectionError`` / ``APITimeoutError`` raised from ``boom``). Compared between
    a run of the SDK alone and an instrumented run, equal tuples mean the caller got what the SDK
    raised."""
    return type(seen), seen is boom, seen.__cause__ is boom


def test_a_mid_stream_error_reaches_the_caller_as_the_same_object(telemetry):
    boom = httpx2.RemoteProtocolError("peer closed connection without sending complete message body")

    def body():
        yield sse(MESSAGE_START)
        raise boom

    def read():
        c = streaming(anthropic.Anthropic, httpx2.Client, body)
        list(c.messages.create(**KW, stream=True))

    sdk_alone = as_the_sdk_passes(raised_by(read), boom)
    assert sdk_alone[1] or sdk_alone[2]  # the SDK raised boom or its own error from it
    with instrumenting(telemetry, AnthropicInstrumentor) as anthropic_instrumented:
        with pytest.raises(sdk_alone[0]) as info:
            read()
    assert as_the_sdk_passes(info.value, boom) == sdk_alone
    (span,) = anthropic_instrumented.spans()
    assert (span.attributes[names.ERROR_TYPE], span.attributes[names.ENDING]) == (
        "connection_error",
        "model.unavailable",
    )
    assert span.attributes[names.GEN_AI_USAGE_INPUT_TOKENS] == 3  # what message_start said


def test_an_async_error_reaches_the_caller_as_the_same_object(telemetry):
    boom = httpx2.ReadTimeout("read timed out")

    async def body():
        yield sse(MESSAGE_START)
        raise boom

    async def main():
        c = streaming(anthropic.AsyncAnthropic, httpx2.AsyncClient, body)
        stream = await c.messages.create(**KW, stream=True)
        async for _ in stream:
            pass

    sdk_alone = as_the_sdk_passes(raised_by(lambda: asyncio.run(main())), boom)
    assert sdk_alone[1] or sdk_alone[2]
    with instrumenting(telemetry, AnthropicInstrumentor) as anthropic_instrumented:
        with pytest.raises(sdk_alone[0]) as info:
            asyncio.run(main())
    assert as_the_sdk_passes(info.value, boom) == sdk_alone
    (span,) = anthropic_instrumented.spans()
    assert (span.attributes[names.ERROR_TYPE], span.attributes[names.ENDING]) == ("timeout", "timeout")


def test_a_response_without_a_model_omits_the_attribute(anthropic_instrumented):
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "x"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    transport = httpx2.MockTransport(lambda request: httpx2.Response(200, json=message))
    c = anthropic.Anthropic(
        api_key="k",
        base_url="http://provider.test",
        max_retries=0,
        open_telemetry=False,
        http_client=httpx2.Client(transport=transport),
    )
    assert c.messages.create(**KW).model is None
    (span,) = anthropic_instrumented.spans()
    assert names.GEN_AI_RESPONSE_MODEL not in span.attributes  # not None, not the request model
    assert span.attributes[names.DEGRADATION_MODE] == "primary"
    assert span.status.status_code is StatusCode.UNSET
    points = anthropic_instrumented.points(names.METRIC_GEN_AI_OPERATION_DURATION)
    assert [p.attributes[names.GEN_AI_RESPONSE_MODEL] for p in points] == ["_unknown"]


def test_an_event_whose_type_is_not_a_string_is_read_not_skipped(anthropic_instrumented):
    """The SDK builds an event whose JSON ``type`` is an array as it is (it validates nothing): such
    an event is read as any unknown one, so a stream that ends without ``message_stop`` is still
    incomplete."""
    odd = f"event: message_delta\ndata: {json.dumps({'type': ['weird'], 'delta': {}})}\n\n".encode()
    client = streaming(anthropic.Anthropic, httpx2.Client, lambda: sse(MESSAGE_START) + odd)
    assert len(list(client.messages.create(**KW, stream=True))) == 2
    (span,) = anthropic_instrumented.spans()
    assert span.attributes[names.ENDING] == names.ENDING_ERROR
    assert span.attributes[names.ERROR_TYPE] == "incomplete_stream"


# ---------------------------------------------------------------- both SDKs: what a caller can do with a stream
def test_time_to_first_chunk_and_duration_never_exceed_the_span(anthropic_instrumented, fake_provider, monkeypatch):
    # Whatever runs before the span starts (here a slow look-up of the current sampling request,
    # as a GC pause would be) is not part of the call's timings: both are measured from the span's start.
    from otel_sampling import state
    from otel_sampling.records import provider_call

    class SlowLookup:
        def get(self):
            time.sleep(0.05)
            return state.current_request.get()

    class SlowState:
        current_request = SlowLookup()

        def __getattr__(self, name):
            return getattr(state, name)

    monkeypatch.setattr(provider_call, "state", SlowState())
    c = anthropic.Anthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=False)
    list(c.messages.create(model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}], stream=True))
    (span,) = anthropic_instrumented.spans()
    span_seconds = (span.end_time - span.start_time) / 1e9
    assert span.attributes[names.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] <= span_seconds
    (point,) = anthropic_instrumented.points(names.METRIC_GEN_AI_OPERATION_DURATION)
    assert point.sum <= span_seconds


async def _misuse(stream) -> dict:
    """How a stream answers the protocol checks a host may make (the collections.abc and contextlib
    ABCs) and the exception type of each misuse (None: it worked)."""

    def raised(action) -> type | None:
        try:
            action()
        except Exception as exc:  # noqa: BLE001
            return type(exc)
        return None

    async def araised(action) -> type | None:
        try:
            await action()
        except Exception as exc:  # noqa: BLE001
            return type(exc)
        return None

    def use_with():
        with stream:
            pass

    async def use_async_with():
        async with stream:
            pass

    async def use_async_exit_stack():
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(stream)

    found: dict = {
        abc.__name__: isinstance(stream, abc)
        for abc in (
            collections.abc.Iterable,
            collections.abc.Iterator,
            collections.abc.AsyncIterable,
            collections.abc.AsyncIterator,
            contextlib.AbstractContextManager,
            contextlib.AbstractAsyncContextManager,
        )
    }
    found["iter"] = raised(lambda: iter(stream))
    found["deepcopy"] = raised(lambda: copy.deepcopy(stream))
    found["pickle"] = raised(lambda: pickle.dumps(stream))
    found["exit_stack"] = raised(lambda: contextlib.ExitStack().enter_context(stream))
    found["async_exit_stack"] = await araised(use_async_exit_stack)
    found["async with"] = await araised(use_async_with)
    found["with"] = raised(use_with)
    return found


# deepcopy of an SDK stream half-copies its HTTP client, whose __del__ then complains (SDK behaviour).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_stream_proxies_answer_protocol_checks_like_the_stream(openai_instrumented, fake_provider, sdk):
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=openai_instrumented.meter_provider)
    if sdk == "anthropic":
        kw = {"base_url": fake_provider.url, "api_key": "k", "max_retries": 0, "open_telemetry": False}
        sync_client, async_client = anthropic.Anthropic(**kw), anthropic.AsyncAnthropic(**kw)
        request = {"model": "claude-req", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
        sync_create, async_create = sync_client.messages.create, async_client.messages.create
    else:
        kw = {"base_url": fake_provider.url + "/v1", "api_key": "k", "max_retries": 0}
        sync_client, async_client = openai.OpenAI(**kw), openai.AsyncOpenAI(**kw)
        request = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        sync_create, async_create = sync_client.chat.completions.create, async_client.chat.completions.create

    async def compare():
        # Two streams of each kind: the misuses may close what they touch.
        for proxy, other in (
            (sync_create(**request, stream=True), sync_create(**request, stream=True)),
            (await async_create(**request, stream=True), await async_create(**request, stream=True)),
        ):
            assert type(proxy).__name__.endswith("StreamProxy") and isinstance(proxy, type(other.__wrapped__))
            assert await _misuse(proxy) == await _misuse(other.__wrapped__)
            for stream in (proxy, other):
                await stream.close() if inspect.iscoroutinefunction(stream.close) else stream.close()
        await async_client.close()
        sync_client.close()

    try:
        asyncio.run(compare())
    finally:
        instrumentor.uninstrument()


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_an_iterator_of_a_dropped_stream_reads_it_to_the_end(anthropic_instrumented, fake_provider, asynchronous):
    # As with the SDK's stream, whose iterator is a generator of its own that holds the stream: the
    # caller keeps only the iterator, and the call ends when that iterator reaches the end.
    request = {"model": "claude-req", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}], "stream": True}
    kw = {"base_url": fake_provider.url, "api_key": "k", "max_retries": 0, "open_telemetry": False}
    if asynchronous:

        async def main():
            async with anthropic.AsyncAnthropic(**kw) as c:
                events = aiter(await c.messages.create(**request))
                gc.collect()
                return [e.type async for e in events]

        seen = asyncio.run(main())
    else:
        with anthropic.Anthropic(**kw) as c:
            events = iter(c.messages.create(**request))
            gc.collect()
            seen = [e.type for e in events]
    assert seen[0] == "message_start" and seen[-1] == "message_stop"
    (span,) = anthropic_instrumented.spans()
    assert span.attributes[names.ENDING] == "completed"


def test_a_second_reader_thread_does_not_end_a_stream_that_goes_on(anthropic_instrumented):
    # Thread A waits inside the stream for its next event; the main thread reads the same stream
    # meanwhile and gets the generator's ValueError (the SDK's behaviour). The stream itself goes on
    # and completes in A: the call is a success with its usage, not an error.
    reading, release = threading.Event(), threading.Event()
    start = {
        "type": "message_start",
        "message": {
            **ANTHROPIC_MESSAGE,
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    }
    rest = [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 4},
        },
        {"type": "message_stop"},
    ]

    def body():
        yield sse(start)
        reading.set()
        release.wait()
        yield b"".join(sse(e) for e in rest)

    transport = httpx2.MockTransport(
        lambda request: httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())
    )
    c = anthropic.Anthropic(
        api_key="k",
        base_url="http://provider.test",
        max_retries=0,
        open_telemetry=False,
        http_client=httpx2.Client(transport=transport),
    )
    stream = c.messages.create(
        model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}], stream=True
    )
    assert next(stream).type == "message_start"
    seen: list = []
    reader = threading.Thread(target=lambda: seen.extend(e.type for e in stream))
    reader.start()
    assert reading.wait(HANG_S)
    with pytest.raises(ValueError, match="generator already executing"):
        next(stream)
    release.set()
    reader.join(HANG_S)
    assert seen == ["message_delta", "message_stop"]
    (span,) = anthropic_instrumented.spans()
    a = span.attributes
    assert span.status.status_code is StatusCode.UNSET and names.ERROR_TYPE not in a
    assert (a[names.ENDING], a[names.GEN_AI_USAGE_INPUT_TOKENS], a[names.GEN_AI_USAGE_OUTPUT_TOKENS]) == (
        "completed",
        3,
        4,
    )


def test_a_second_reader_task_does_not_end_an_async_stream_that_goes_on(anthropic_instrumented):
    start = {
        "type": "message_start",
        "message": {
            **ANTHROPIC_MESSAGE,
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    }
    rest = [
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 4},
        },
        {"type": "message_stop"},
    ]

    async def main():
        reading, release = asyncio.Event(), asyncio.Event()

        async def body():
            yield sse(start)
            reading.set()
            await release.wait()
            yield b"".join(sse(e) for e in rest)

        transport = httpx2.MockTransport(
            lambda request: httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())
        )
        c = anthropic.AsyncAnthropic(
            api_key="k",
            base_url="http://provider.test",
            max_retries=0,
            open_telemetry=False,
            http_client=httpx2.AsyncClient(transport=transport),
        )
        stream = await c.messages.create(
            model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        assert (await stream.__anext__()).type == "message_start"

        async def read_rest():
            return [e.type async for e in stream]

        reader = asyncio.create_task(read_rest())
        await reading.wait()
        with pytest.raises(RuntimeError, match="already running"):
            await stream.__anext__()
        release.set()
        return await reader

    assert asyncio.run(main()) == ["message_delta", "message_stop"]
    (span,) = anthropic_instrumented.spans()
    a = span.attributes
    assert span.status.status_code is StatusCode.UNSET and names.ERROR_TYPE not in a
    assert (a[names.ENDING], a[names.GEN_AI_USAGE_OUTPUT_TOKENS]) == ("completed", 4)


@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_a_task_cancelled_mid_stream_ends_cancelled_and_propagates(anthropic_instrumented, fake_provider, sdk):
    # asyncio.CancelledError while awaiting the next event: the task gets it, the call ends cancelled.
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=anthropic_instrumented.meter_provider)
    slow = {"extra_headers": {"x-fake-scenario": "chunk_delay=0.3"}}

    async def main():
        if sdk == "anthropic":
            c = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=False)
            stream = await c.messages.create(
                model="claude-req", max_tokens=8, stream=True, messages=[{"role": "user", "content": "hi"}], **slow
            )
        else:
            c = openai.AsyncOpenAI(base_url=fake_provider.url + "/v1", api_key="k", max_retries=0)
            stream = await c.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "hi"}], stream=True, **slow
            )
        await stream.__anext__()
        task = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0)  # the task is now waiting for the next event
        task.cancel()
        try:
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            await stream.close()
            await c.close()

    try:
        asyncio.run(main())
    finally:
        instrumentor.uninstrument()
    (span,) = anthropic_instrumented.spans()
    assert (span.attributes[names.ENDING], span.attributes[names.ERROR_TYPE]) == ("cancelled", "cancelled")
    durations = anthropic_instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ENDING)
    assert durations == {("cancelled",): 1}


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_a_stream_dropped_after_uninstrument_ends_once_and_later_calls_emit_nothing(telemetry, fake_provider):
    # The call started while instrumented still ends (cancelled, once) when its stream is
    # collected after uninstrument(); calls after uninstrument() emit nothing.
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    c = anthropic.Anthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=False)
    request = {"model": "claude-req", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    try:
        stream = c.messages.create(**request, stream=True)
        assert next(stream).type == "message_start"
    finally:  # never left instrumented, even when the call above fails
        instrumentor.uninstrument()
    del stream
    gc.collect()
    c.messages.create(**request)
    list(c.messages.create(**request, stream=True))
    (span,) = telemetry.spans()
    assert span.attributes[names.ENDING] == "cancelled"
    assert telemetry.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ENDING) == {("cancelled",): 1}
    c.close()


def _kept_break_in_with(c, request, kept):
    with c.messages.create(**request, stream=True) as stream:
        kept.append(stream)
        for _ in stream:
            break


def _kept_close(c, request, kept):
    kept.append(stream := c.messages.create(**request, stream=True))
    next(stream)
    stream.close()


def _kept_manager_early(c, request, kept):
    with c.messages.stream(**request) as stream:
        kept.append(stream)
        for _ in stream:
            break


def _kept_manager_unread(c, request, kept):
    with c.messages.stream(**request) as stream:
        kept.append(stream)


async def _akept_close(c, request, kept):
    kept.append(stream := await c.messages.create(**request, stream=True))
    await stream.__anext__()
    await stream.close()


async def _akept_manager_early(c, request, kept):
    async with c.messages.stream(**request) as stream:
        kept.append(stream)
        async for _ in stream:
            break


@pytest.mark.parametrize(
    "leave",
    [_kept_break_in_with, _kept_close, _kept_manager_early, _kept_manager_unread, _akept_close, _akept_manager_early],
    ids=lambda f: f.__name__.strip("_"),
)
def test_a_stream_left_early_ends_when_left_not_when_collected(anthropic_instrumented, fake_provider, leave):
    # The span ends at close / leaving the with block, while the caller still holds the stream
    # (nothing is collected), exactly once.
    kept: list = []
    request = {"model": "claude-req", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    kw = {"base_url": fake_provider.url, "api_key": "k", "max_retries": 0, "open_telemetry": False}
    if inspect.iscoroutinefunction(leave):

        async def main():
            async with anthropic.AsyncAnthropic(**kw) as c:
                await leave(c, request, kept)

        asyncio.run(main())
    else:
        with anthropic.Anthropic(**kw) as c:
            leave(c, request, kept)
    (span,) = anthropic_instrumented.spans()
    assert kept and span.attributes[names.ENDING] == "cancelled"
    assert anthropic_instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ENDING) == {("cancelled",): 1}


def test_the_stream_helpers_surface_works_through_the_proxy(anthropic_instrumented, fake_provider):
    # The SDKs' stream helpers read our proxy: their own surface (until_done, snapshots, final
    # message / text, response) must work as without us, sync and async, one completed span each.
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=anthropic_instrumented.meter_provider)
    request = {"model": "claude-req", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    chat = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "hi"}],
        "stream_options": {"include_usage": True},
    }
    a_kw = {"base_url": fake_provider.url, "api_key": "k", "max_retries": 0, "open_telemetry": False}
    o_kw = {"base_url": fake_provider.url + "/v1", "api_key": "k", "max_retries": 0}
    try:
        with anthropic.Anthropic(**a_kw) as c, c.messages.stream(**request) as stream:
            assert stream.response.status_code == 200
            stream.until_done()
            assert stream.current_message_snapshot.model == "claude-req"
            assert stream.get_final_text() == DEFAULT_TEXT
            assert stream.get_final_message().usage.output_tokens == 5
        with openai.OpenAI(**o_kw) as o, o.chat.completions.stream(**chat) as chat_stream:
            chat_stream.until_done()
            assert chat_stream.current_completion_snapshot.model == "gpt-4o"
            assert chat_stream.get_final_completion().usage.prompt_tokens == 25
        with openai.OpenAI(**o_kw) as o, o.responses.stream(model="gpt-4o", input="hi") as responses_stream:
            responses_stream.until_done()
            assert responses_stream.get_final_response().usage.input_tokens == 25

        async def run_async():
            async with anthropic.AsyncAnthropic(**a_kw) as c:
                async with c.messages.stream(**request) as stream:
                    await stream.until_done()
                    assert stream.current_message_snapshot.model == "claude-req"
                    assert await stream.get_final_text() == DEFAULT_TEXT
                async with c.messages.stream(**request) as stream:
                    assert "".join([t async for t in stream.text_stream]) == DEFAULT_TEXT
            async with openai.AsyncOpenAI(**o_kw) as o, o.chat.completions.stream(**chat) as chat_stream:
                await chat_stream.until_done()
                assert (await chat_stream.get_final_completion()).usage.prompt_tokens == 25

        asyncio.run(run_async())
    finally:
        instrumentor.uninstrument()
    spans = anthropic_instrumented.spans()
    assert len(spans) == 6 and {s.attributes[names.ENDING] for s in spans} == {"completed"}
    assert all(s.attributes[names.GEN_AI_USAGE_INPUT_TOKENS] == 25 for s in spans)
