"""anthropic fault scenarios against the fake provider: error statuses, retries, timeouts, drops,
the stream fault matrix (early exits x errors), served-model changes, fallback, refusal.

Endings follow docs/telemetry.md "Provider call endings"; ``error.type`` is the provider's error
envelope ``type`` (the fake provider sends anthropic's documented types per status).
"""

from __future__ import annotations

import asyncio
import gc

import anthropic
import pytest
from opentelemetry.trace import StatusCode

from conftest import instrumenting, raised_by
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor

MODEL = "claude-req"
KW = {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


def client(fp, **kw) -> anthropic.Anthropic:
    kw.setdefault("max_retries", 0)
    return anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", open_telemetry=False, **kw)


def aclient(fp, **kw) -> anthropic.AsyncAnthropic:
    kw.setdefault("max_retries", 0)
    return anthropic.AsyncAnthropic(base_url=fp.url, api_key="sk-fake", open_telemetry=False, **kw)


def scenario(value: str) -> dict:
    return {"extra_headers": {"x-fake-scenario": value}}


def only_span(telemetry):
    (span,) = telemetry.spans()
    return span


def duration_endings(telemetry) -> dict:
    return telemetry.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ENDING, names.ERROR_TYPE)


# The SDK's class for HTTP 504: GatewayTimeoutError from anthropic 2.0; 1.x raises its
# InternalServerError for every 5xx but 529 (_client._make_status_error).
GATEWAY_TIMEOUT = getattr(anthropic, "GatewayTimeoutError", anthropic.InternalServerError)


# ---------------------------------------------------------------- non-stream errors
@pytest.mark.parametrize(
    ("status", "error_class", "error_type", "ending"),
    [
        (400, anthropic.BadRequestError, "invalid_request_error", "error"),
        (404, anthropic.NotFoundError, "not_found_error", "error"),
        (429, anthropic.RateLimitError, "rate_limit_error", "model.unavailable"),
        (500, anthropic.InternalServerError, "api_error", "model.unavailable"),
        (529, anthropic.OverloadedError, "overloaded_error", "model.unavailable"),
        (504, GATEWAY_TIMEOUT, "timeout_error", "timeout"),
    ],
)
def test_error_status(anthropic_instrumented, fake_provider, status, error_class, error_type, ending):
    with pytest.raises(error_class) as info:
        client(fake_provider).messages.create(**KW, **scenario(f"status={status}"))
    assert info.value.status_code == status
    span = only_span(anthropic_instrumented)
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes[names.ERROR_TYPE], span.attributes[names.ENDING]) == (error_type, ending)
    assert duration_endings(anthropic_instrumented) == {(ending, error_type): 1}


def test_sdk_retries_inside_one_call_are_one_span(anthropic_instrumented, fake_provider):
    message = client(fake_provider, max_retries=2).messages.create(**KW, **scenario("status=529,fail_first=2"))
    assert message.model == MODEL
    assert [r["retry_count"] for r in fake_provider.requests[-3:]] == [0, 1, 2]
    span = only_span(anthropic_instrumented)
    assert span.status.status_code is StatusCode.UNSET
    assert span.attributes[names.ENDING] == "completed"
    assert duration_endings(anthropic_instrumented) == {("completed", None): 1}


def test_timeout(anthropic_instrumented, fake_provider):
    with pytest.raises(anthropic.APITimeoutError):
        client(fake_provider, timeout=0.2).messages.create(**KW, **scenario("delay=1"))
    span = only_span(anthropic_instrumented)
    assert (span.attributes[names.ERROR_TYPE], span.attributes[names.ENDING]) == ("timeout", "timeout")


def test_connection_refused(anthropic_instrumented):
    with pytest.raises(anthropic.APIConnectionError):
        anthropic.Anthropic(base_url="http://127.0.0.1:9", api_key="k", max_retries=0).messages.create(**KW)
    span = only_span(anthropic_instrumented)
    assert (span.attributes[names.ERROR_TYPE], span.attributes[names.ENDING]) == (
        "connection_error",
        "model.unavailable",
    )


def test_async_cancellation_ends_cancelled(anthropic_instrumented, fake_provider):
    async def main():
        c = aclient(fake_provider)
        task = asyncio.ensure_future(c.messages.create(**KW, **scenario("delay=2")))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await c.close()

    asyncio.run(main())
    span = only_span(anthropic_instrumented)
    assert (span.attributes[names.ERROR_TYPE], span.attributes[names.ENDING]) == ("cancelled", "cancelled")


# ---------------------------------------------------------------- stream fault matrix
# error kind -> (scenario, client options, error.type, ending). The exception the caller sees is
# the one the SDK alone raises for the scenario (its class depends on the release: conftest.raised_by).
STREAM_ERRORS = {
    "provider_error_event": ("midstream_error", {}, "overloaded_error", "model.unavailable"),
    "dropped_connection": ("drop", {}, "connection_error", "model.unavailable"),
    "read_timeout": ("chunk_delay=0.5", {"timeout": 0.2}, "timeout", "timeout"),
}


def _sync_create_stream(c, sc):
    return list(c.messages.create(**KW, stream=True, **scenario(sc)))


def _sync_manager(c, sc):
    with c.messages.stream(**KW, **scenario(sc)) as stream:
        return stream.get_final_message()


async def _async_create_stream(c, sc):
    return [e async for e in await c.messages.create(**KW, stream=True, **scenario(sc))]


async def _async_manager(c, sc):
    async with c.messages.stream(**KW, **scenario(sc)) as stream:
        return await stream.get_final_message()


@pytest.mark.parametrize(
    "reader",
    [_sync_create_stream, _sync_manager, _async_create_stream, _async_manager],
    ids=lambda f: f.__name__.strip("_"),
)
@pytest.mark.parametrize("kind", list(STREAM_ERRORS))
def test_stream_error_midway(telemetry, fake_provider, kind, reader):
    sc, options, error_type, ending = STREAM_ERRORS[kind]
    if asyncio.iscoroutinefunction(reader):

        async def main():
            c = aclient(fake_provider, **options)
            try:
                await reader(c, sc)
            finally:
                await c.close()

        run = lambda: asyncio.run(main())  # noqa: E731
    else:
        run = lambda: reader(client(fake_provider, **options), sc)  # noqa: E731
    sdk_alone = type(raised_by(run))
    with instrumenting(telemetry, AnthropicInstrumentor) as anthropic_instrumented:
        with pytest.raises(sdk_alone) as info:
            run()
    assert type(info.value) is sdk_alone  # passed through, not wrapped or replaced
    span = only_span(anthropic_instrumented)
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes[names.ERROR_TYPE], span.attributes[names.ENDING]) == (error_type, ending)
    if kind != "read_timeout":  # chunk_delay holds back every event, message_start included
        assert span.attributes[names.GEN_AI_RESPONSE_MODEL] == MODEL  # message_start was seen
    assert duration_endings(anthropic_instrumented) == {(ending, error_type): 1}


@pytest.mark.parametrize("reader", [_sync_create_stream, _sync_manager], ids=lambda f: f.__name__.strip("_"))
def test_stream_without_message_stop_is_an_error(anthropic_instrumented, fake_provider, reader):
    # neither reader raises on a stream without message_stop (anthropic 2.x, a real run): the host
    # gets what was sent; only the span says the stream was incomplete
    reader(client(fake_provider), "truncate")
    span = only_span(anthropic_instrumented)
    assert span.status.status_code is StatusCode.ERROR
    assert (span.attributes[names.ERROR_TYPE], span.attributes[names.ENDING]) == ("incomplete_stream", "error")


def _leave_break_in_with(c):
    with c.messages.create(**KW, stream=True) as stream:
        for _ in stream:
            break


def _leave_close(c):
    stream = c.messages.create(**KW, stream=True)
    next(iter(stream))
    stream.close()


def _leave_gc(c):
    stream = c.messages.create(**KW, stream=True)
    next(iter(stream))
    del stream
    gc.collect()


def _leave_manager_early(c):
    with c.messages.stream(**KW) as stream:
        for _ in stream:
            break


def _leave_manager_unread(c):
    with c.messages.stream(**KW):
        pass


async def _aleave_close(c):
    stream = await c.messages.create(**KW, stream=True)
    await stream.__anext__()
    await stream.close()


async def _aleave_break_in_with(c):
    async with await c.messages.create(**KW, stream=True) as stream:
        async for _ in stream:
            break


async def _aleave_manager_early(c):
    async with c.messages.stream(**KW) as stream:
        async for _ in stream:
            break


@pytest.mark.parametrize(
    "leave",
    [
        _leave_break_in_with,
        _leave_close,
        _leave_gc,
        _leave_manager_early,
        _leave_manager_unread,
        _aleave_close,
        _aleave_break_in_with,
        _aleave_manager_early,
    ],
    ids=lambda f: f.__name__.strip("_"),
)
def test_stream_left_early_ends_once_cancelled(anthropic_instrumented, fake_provider, leave):
    if asyncio.iscoroutinefunction(leave):

        async def main():
            c = aclient(fake_provider)
            try:
                await leave(c)
            finally:
                await c.close()

        asyncio.run(main())
    else:
        leave(client(fake_provider))
    gc.collect()
    span = only_span(anthropic_instrumented)
    assert span.status.status_code is StatusCode.UNSET
    assert span.attributes[names.ENDING] == "cancelled"
    assert names.ERROR_TYPE not in span.attributes
    if leave is not _leave_manager_unread:  # the partial usage message_start carried
        assert span.attributes[names.GEN_AI_USAGE_INPUT_TOKENS] == 25
    assert duration_endings(anthropic_instrumented) == {("cancelled", None): 1}


def test_stream_time_to_first_chunk(anthropic_instrumented, fake_provider):
    list(client(fake_provider).messages.create(**KW, stream=True, **scenario("delay=0.05")))
    span = only_span(anthropic_instrumented)
    ttfc = span.attributes[names.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]
    assert 0.05 <= ttfc <= (span.end_time - span.start_time) / 1e9
    (point,) = anthropic_instrumented.points(names.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK)
    assert point.count == 1 and point.sum == pytest.approx(ttfc)
    client(fake_provider).messages.create(**KW)
    assert len(anthropic_instrumented.points(names.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK)) == 1  # streams only


# ---------------------------------------------------------------- served model, fallback, refusal
@pytest.mark.parametrize(
    ("served", "mode", "reason"),
    [
        ("claude-other", "degraded", ("substitution",)),
        (f"{MODEL}-20261001", "primary", None),  # a dated snapshot of the requested model is no substitution
    ],
)
def test_served_model_change(anthropic_instrumented, fake_provider, served, mode, reason):
    message = client(fake_provider).messages.create(**KW, **scenario(f"served_model={served}"))
    span = only_span(anthropic_instrumented)
    assert span.attributes[names.GEN_AI_RESPONSE_MODEL] == message.model == served
    assert span.attributes[names.DEGRADATION_MODE] == mode
    assert span.attributes.get(names.DEGRADATION_REASON) == reason


@pytest.mark.parametrize("stream", [False, True])
def test_server_side_fallback(anthropic_instrumented, fake_provider, stream):
    c = client(fake_provider)
    kwargs = dict(
        KW,
        betas=["server-side-fallback-2026-07-01"],
        fallbacks=[{"model": "claude-fb"}],
        **scenario("fallback=claude-fb"),
    )
    if stream:
        with c.beta.messages.stream(**kwargs) as s:
            message = s.get_final_message()
    else:
        message = c.beta.messages.create(**kwargs)
    assert message.model == "claude-fb"
    span = only_span(anthropic_instrumented)
    a = span.attributes
    assert (a[names.GEN_AI_REQUEST_MODEL], a[names.GEN_AI_RESPONSE_MODEL]) == (MODEL, "claude-fb")
    assert (a[names.DEGRADATION_MODE], a[names.DEGRADATION_REASON]) == ("degraded", ("provider_fallback",))
    tokens = anthropic_instrumented.counts(
        names.METRIC_GEN_AI_TOKEN_USAGE, names.GEN_AI_RESPONSE_MODEL, names.DEGRADATION_MODE
    )
    assert tokens == {("claude-fb", "degraded"): 2}  # input and output, on the model that served


def test_refusal(anthropic_instrumented, fake_provider):
    message = client(fake_provider).messages.create(**KW, **scenario("refusal"))
    assert message.stop_reason == "refusal"
    span = only_span(anthropic_instrumented)
    assert span.attributes[names.ENDING] == "refused"
    assert span.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("refusal",)
    assert span.status.status_code is StatusCode.UNSET


# ---------------------------------------------------------------- our own failures stay ours
@pytest.mark.parametrize("broken", ["response_of", "accumulator", "stream_response", "failure"])
def test_an_internal_failure_changes_nothing_for_the_caller(fake_provider, telemetry, monkeypatch, broken):
    from otel_sampling.instrumentation import anthropic as ours

    def boom(*args, **kwargs):
        raise RuntimeError("extractor bug")

    owner, name, value = {
        "response_of": (ours._State, "response_of", staticmethod(boom)),
        "accumulator": (ours.StreamAccumulator, "observe", boom),
        "stream_response": (ours.StreamAccumulator, "response", boom),
        "failure": (ours._State, "failure", boom),
    }[broken]
    monkeypatch.setattr(owner, name, value)
    instrumentor = ours.AnthropicInstrumentor()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    try:
        c = client(fake_provider)
        assert c.messages.create(**KW).model == MODEL
        assert [e.type for e in c.messages.create(**KW, stream=True)][-1] == "message_stop"
        with pytest.raises(anthropic.OverloadedError) as info:
            c.messages.create(**KW, **scenario("status=529"))
        assert info.value.status_code == 529
        with pytest.raises(anthropic.APIStatusError) as info:
            list(c.messages.create(**KW, stream=True, **scenario("midstream_error")))
        assert info.value.type == "overloaded_error"
    finally:
        instrumentor.uninstrument()
    spans = telemetry.spans()
    assert len(spans) == 4  # every span still ended
    assert [s.status.status_code for s in spans] == [StatusCode.UNSET] * 2 + [StatusCode.ERROR] * 2
