"""Adversarial review of the provider instrumentation: inputs and answers a host may really send or
receive, each of which once changed what the host sent or lost the call's telemetry.

Expected values come from the SDKs' own behaviour (what the uninstrumented SDK sends, which body
``extra_body`` produces) and from docs/telemetry.md.
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
from pathlib import Path

import anthropic
import anyio
import httpx2
import mcp_types as types
import openai
import pytest
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.trace import StatusCode

from conftest import TRACER_PROVIDER, with_policy
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.testing.fake_provider import DEFAULT_TEXT
from test_sampling_with_provider import call

MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-req",
           "content": [{"type": "text", "text": "x"}], "stop_reason": "end_turn", "stop_sequence": None,
           "usage": {"input_tokens": 3, "output_tokens": 1}}


@pytest.fixture
def capturing(telemetry, monkeypatch):
    """The anthropic instrumentor with content capture on (span attributes)."""
    monkeypatch.setenv(names.ENV_CAPTURE_MESSAGE_CONTENT, "SPAN_ONLY")
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    yield telemetry
    instrumentor.uninstrument()


def recording_client() -> tuple[anthropic.Anthropic, list[dict]]:
    """A real anthropic client on an in-process transport that keeps every request body it is sent."""
    bodies: list[dict] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=MESSAGE)

    c = anthropic.Anthropic(api_key="k", base_url="http://provider.test", max_retries=0, open_telemetry=False,
                            http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    return c, bodies


# ---------------------------------------------------------------- capture must not consume the request
@pytest.mark.parametrize(("kwargs", "sent"), [
    ({"messages": (m for m in [{"role": "user", "content": "hi"}])},
     {"messages": [{"role": "user", "content": "hi"}]}),
    ({"messages": [{"role": "user", "content": (b for b in [{"type": "text", "text": "hi"}])}]},
     {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}),
    ({"system": (b for b in [{"type": "text", "text": "be brief"}]), "messages": [{"role": "user", "content": "hi"}]},
     {"system": [{"type": "text", "text": "be brief"}], "messages": [{"role": "user", "content": "hi"}]}),
])
def test_capture_leaves_one_shot_iterables_in_the_request_to_the_sdk(capturing, kwargs, sent):
    # anthropic's create() takes any Iterable and prepares it inside request(), after our wrapper ran:
    # reading a generator there would send an empty list to the provider.
    c, bodies = recording_client()
    c.messages.create(model="claude-req", max_tokens=8, **kwargs)
    (body,) = bodies
    assert {k: body[k] for k in sent} == sent
    (span,) = capturing.spans()
    assert span.attributes[names.GEN_AI_RESPONSE_MODEL] == "claude-req"


@pytest.mark.parametrize("broken", ["input_content", "output_of"])
def test_a_content_capture_failure_keeps_the_span_and_what_the_response_said(capturing, monkeypatch, broken):
    from otel_sampling.instrumentation import anthropic as ours

    def boom(*args, **kwargs):
        raise RuntimeError("content extractor bug")

    monkeypatch.setattr(ours._State, broken, boom if broken == "input_content" else staticmethod(boom))
    c, _ = recording_client()
    message = c.messages.create(model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert message.id == "msg_1"
    (span,) = capturing.spans()
    a = span.attributes
    assert (a[names.GEN_AI_RESPONSE_MODEL], a[names.GEN_AI_USAGE_INPUT_TOKENS], a[names.ENDING]) == (
        "claude-req", 3, "completed")


# ---------------------------------------------------------------- extra_body is part of the request
def test_extra_body_model_is_the_model_asked_for(anthropic_instrumented, fake_provider):
    # The SDK merges extra_body over the body it sends: the provider was asked for claude-other.
    c = anthropic.Anthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=False)
    message = c.messages.create(model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}],
                                extra_body={"model": "claude-other", "max_tokens": 16})
    assert fake_provider.requests[-1]["model"] == message.model == "claude-other"
    (span,) = anthropic_instrumented.spans()
    a = span.attributes
    assert (span.name, a[names.GEN_AI_REQUEST_MODEL], a[names.GEN_AI_REQUEST_MAX_TOKENS]) == (
        "chat claude-other", "claude-other", 16)
    assert a[names.DEGRADATION_MODE] == "primary" and names.DEGRADATION_REASON not in a  # no substitution


def test_openai_model_given_only_in_extra_body(openai_instrumented, fake_provider):
    c = openai.OpenAI(base_url=fake_provider.url + "/v1", api_key="k", max_retries=0)
    completion = c.chat.completions.create(model=openai.omit, messages=[{"role": "user", "content": "hi"}],
                                           extra_body={"model": "gpt-4o-mini"})
    assert completion.model == "gpt-4o-mini"
    (span,) = openai_instrumented.spans()
    assert (span.name, span.attributes[names.GEN_AI_REQUEST_MODEL]) == ("chat gpt-4o-mini", "gpt-4o-mini")
    assert span.attributes[names.DEGRADATION_MODE] == "primary"


# ---------------------------------------------------------------- a -latest alias is its snapshots
LATEST_POLICY = """
[servers."sampling-test-server"]
primary_model = "claude-sonnet-5-5-latest"
permitted_models = ["claude-sonnet-5-5-latest"]
"""


@pytest.fixture
def latest_primary(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    yield from with_policy(telemetry, tmp_path, monkeypatch, LATEST_POLICY,
                           MCPSamplingInstrumentor, AnthropicInstrumentor)


def test_a_latest_primary_served_by_its_dated_snapshot_is_primary(latest_primary, fake_provider):
    # The provider resolves the alias: asked for claude-sonnet-5-5-latest, it names the snapshot it ran.
    async def callback(ctx, params):
        client = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=False)
        try:
            message = await client.messages.create(
                model="claude-sonnet-5-5-latest", max_tokens=8, messages=[{"role": "user", "content": "hi"}],
                extra_headers={"x-fake-scenario": "served_model=claude-sonnet-5-5-20261001"})
        finally:
            await client.close()
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="x"), model=message.model)

    anyio.run(call, "auto", callback)
    (chat,) = latest_primary.spans("chat claude-sonnet-5-5-latest")
    assert chat.attributes[names.DEGRADATION_MODE] == "primary"
    (sampling,) = latest_primary.spans(names.SPAN_SAMPLING)
    a = sampling.attributes
    assert a[names.GEN_AI_RESPONSE_MODEL] == "claude-sonnet-5-5-20261001"
    assert a[names.DEGRADATION_MODE] == "primary" and names.DEGRADATION_REASON not in a


# ---------------------------------------------------------------- timings are inside the span
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


# ---------------------------------------------------------------- the proxy has the stream's protocols only
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

    found: dict = {abc.__name__: isinstance(stream, abc) for abc in (
        collections.abc.Iterable, collections.abc.Iterator, collections.abc.AsyncIterable,
        collections.abc.AsyncIterator, contextlib.AbstractContextManager, contextlib.AbstractAsyncContextManager)}
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
        for proxy, other in ((sync_create(**request, stream=True), sync_create(**request, stream=True)),
                             (await async_create(**request, stream=True), await async_create(**request, stream=True))):
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


# ---------------------------------------------------------------- our failure at close stays ours
class RaisingSpanProcessor(SpanProcessor):
    """Fails on our spans only."""

    def on_end(self, span) -> None:
        if span.instrumentation_scope.name == names.SCOPE_NAME:
            raise RuntimeError("broken span processor")


@pytest.fixture
def raising_processor():
    processor = RaisingSpanProcessor()
    TRACER_PROVIDER.add_span_processor(processor)
    yield
    TRACER_PROVIDER._active_span_processor._span_processors = tuple(
        p for p in TRACER_PROVIDER._active_span_processor._span_processors if p is not processor)


def _streaming_responses(fp, asynchronous: bool):
    """``with_streaming_response`` namespaces and one request each, for both SDKs."""
    a_kw = {"base_url": fp.url, "api_key": "k", "max_retries": 0, "open_telemetry": False}
    o_kw = {"base_url": fp.url + "/v1", "api_key": "k", "max_retries": 0}
    a = (anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic)(**a_kw)
    o = (openai.AsyncOpenAI if asynchronous else openai.OpenAI)(**o_kw)
    return [
        (a, a.messages.with_streaming_response.create,
         {"model": "claude-req", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}),
        (o, o.chat.completions.with_streaming_response.create,
         {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}),
    ]


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_a_failing_span_end_at_close_or_collection_never_reaches_the_host(
        anthropic_instrumented, fake_provider, raising_processor):
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=anthropic_instrumented.meter_provider)
    try:
        for client, create, request in _streaming_responses(fake_provider, asynchronous=False):
            with create(**request) as response:  # left without parsing: the call ends at close
                assert response.status_code == 200
            response = create(**request).__enter__()
            del response  # never parsed nor closed: the call ends when collected
            gc.collect()
            client.close()

        async def leave_async():
            for client, create, request in _streaming_responses(fake_provider, asynchronous=True):
                async with create(**request) as response:
                    assert response.status_code == 200
                await client.close()

        asyncio.run(leave_async())
    finally:
        instrumentor.uninstrument()
    assert len(anthropic_instrumented.spans()) == 6  # each call still ended once


# ---------------------------------------------------------------- one stream, two threads
def _sse(event: dict) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def test_a_second_reader_thread_does_not_end_a_stream_that_goes_on(anthropic_instrumented):
    # Thread A waits inside the stream for its next event; the main thread reads the same stream
    # meanwhile and gets the generator's ValueError (the SDK's behaviour). The stream itself goes on
    # and completes in A: the call is a success with its usage, not an error.
    reading, release = threading.Event(), threading.Event()
    start = {"type": "message_start", "message": {**MESSAGE, "content": [], "stop_reason": None,
                                                  "usage": {"input_tokens": 3, "output_tokens": 1}}}
    rest = [{"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
             "usage": {"output_tokens": 4}}, {"type": "message_stop"}]

    def body():
        yield _sse(start)
        reading.set()
        release.wait()
        yield b"".join(_sse(e) for e in rest)

    transport = httpx2.MockTransport(lambda request: httpx2.Response(
        200, headers={"content-type": "text/event-stream"}, content=body()))
    c = anthropic.Anthropic(api_key="k", base_url="http://provider.test", max_retries=0, open_telemetry=False,
                            http_client=httpx2.Client(transport=transport))
    stream = c.messages.create(model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}],
                               stream=True)
    assert next(stream).type == "message_start"
    seen: list = []
    reader = threading.Thread(target=lambda: seen.extend(e.type for e in stream))
    reader.start()
    assert reading.wait(5)
    with pytest.raises(ValueError, match="generator already executing"):
        next(stream)
    release.set()
    reader.join(5)
    assert seen == ["message_delta", "message_stop"]
    (span,) = anthropic_instrumented.spans()
    a = span.attributes
    assert span.status.status_code is StatusCode.UNSET and names.ERROR_TYPE not in a
    assert (a[names.ENDING], a[names.GEN_AI_USAGE_INPUT_TOKENS], a[names.GEN_AI_USAGE_OUTPUT_TOKENS]) == (
        "completed", 3, 4)


def test_a_second_reader_task_does_not_end_an_async_stream_that_goes_on(anthropic_instrumented):
    start = {"type": "message_start", "message": {**MESSAGE, "content": [], "stop_reason": None,
                                                  "usage": {"input_tokens": 3, "output_tokens": 1}}}
    rest = [{"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
             "usage": {"output_tokens": 4}}, {"type": "message_stop"}]

    async def main():
        reading, release = asyncio.Event(), asyncio.Event()

        async def body():
            yield _sse(start)
            reading.set()
            await release.wait()
            yield b"".join(_sse(e) for e in rest)

        transport = httpx2.MockTransport(lambda request: httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, content=body()))
        c = anthropic.AsyncAnthropic(api_key="k", base_url="http://provider.test", max_retries=0,
                                     open_telemetry=False, http_client=httpx2.AsyncClient(transport=transport))
        stream = await c.messages.create(model="claude-req", max_tokens=8,
                                         messages=[{"role": "user", "content": "hi"}], stream=True)
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


def test_a_latest_entry_admits_and_prices_the_snapshots_it_resolves_to(telemetry, tmp_path, monkeypatch, fake_provider):
    # docs/configuration.md: an entry admits (and prices) its dated snapshots; a -latest entry names
    # the model whose snapshots the provider serves under that alias.
    from otel_sampling.policy import Price
    from otel_sampling.rules import cost, substitution

    price = Price(1.0, 5.0)
    assert substitution.same_model("claude-haiku-5-5-latest", "claude-haiku-5-5-20261001")
    assert substitution.judge(["gpt-4o"], "claude-haiku-5-5-20261001", ["claude-haiku-5-5-latest"]) == "within_policy"
    assert cost.price_for({"claude-haiku-5-5-latest": price}, "claude-haiku-5-5-20261001") is price
    assert cost.price_for({"claude-haiku-5-5-latest": price}, "claude-haiku-5-6-20261001") is None
    path = tmp_path / "policy.toml"
    path.write_text('[prices."claude-haiku-5-5-latest"]\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 5.0\n')
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(path))
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        c = anthropic.Anthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=False)
        c.messages.create(model="claude-haiku-5-5-latest", max_tokens=8, messages=[{"role": "user", "content": "hi"}],
                          extra_headers={"x-fake-scenario": "served_model=claude-haiku-5-5-20261001"})
    finally:
        instrumentor.uninstrument()
    (span,) = telemetry.spans()
    assert span.attributes[names.COST_USD] == pytest.approx((25 * 1.0 + 5 * 5.0) / 1e6)  # the fake's 25 in, 5 out


# ---------------------------------------------------------------- cases README coverage
@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_a_task_cancelled_mid_stream_ends_cancelled_and_propagates(anthropic_instrumented, fake_provider, sdk):
    # cases README 11: asyncio.CancelledError while awaiting the next event.
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=anthropic_instrumented.meter_provider)
    slow = {"extra_headers": {"x-fake-scenario": "chunk_delay=0.3"}}

    async def main():
        if sdk == "anthropic":
            c = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=False)
            stream = await c.messages.create(model="claude-req", max_tokens=8, stream=True,
                                             messages=[{"role": "user", "content": "hi"}], **slow)
        else:
            c = openai.AsyncOpenAI(base_url=fake_provider.url + "/v1", api_key="k", max_retries=0)
            stream = await c.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}],
                                                     stream=True, **slow)
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


def test_anthropic_sentinels_and_sdk_objects_never_reach_attributes(capturing):
    # cases README 7: Omit / NOT_GIVEN and the SDK's own pydantic blocks (a previous answer's
    # content sent back) in a request; content capture on, so every part is read.
    c, bodies = recording_client()
    previous = c.messages.create(model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    c.messages.create(model="claude-req", max_tokens=8, system=anthropic.omit, stop_sequences=anthropic.NOT_GIVEN,
                      stream=anthropic.omit, messages=[{"role": "user", "content": "hi"},
                                                      {"role": "assistant", "content": previous.content}])
    assert "system" not in bodies[-1] and "stream" not in bodies[-1]
    span = capturing.spans()[-1]
    a = span.attributes
    assert names.GEN_AI_SYSTEM_INSTRUCTIONS not in a and names.GEN_AI_REQUEST_STREAM not in a
    assert all(isinstance(v, (str, int, float, bool, tuple)) for v in a.values())
    assert "Omit" not in repr(dict(a)) and "NotGiven" not in repr(dict(a))
    assert json.loads(a[names.GEN_AI_INPUT_MESSAGES])[1] == {"role": "assistant",
                                                             "parts": [{"type": "text", "content": "x"}]}


SENTINEL = "SENTINEL-9c41"


def _echoing(sdk: str):
    """A provider that puts the prompt back into its error message (as validation errors do)."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        message = f"bad request: {request.content.decode()}"
        error = ({"type": "error", "error": {"type": "invalid_request_error", "message": message}} if sdk == "anthropic"
                 else {"error": {"message": message, "type": "invalid_request_error", "code": None, "param": None}})
        return httpx2.Response(400, json=error)

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def test_content_off_keeps_sentinels_in_tools_and_error_messages_out(anthropic_instrumented):
    # cases README 15, with the sentinel in tools, metadata and the provider's error message.
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=anthropic_instrumented.meter_provider)
    try:
        a = anthropic.Anthropic(api_key="k", base_url="http://provider.test", max_retries=0, open_telemetry=False,
                                http_client=_echoing("anthropic"))
        with pytest.raises(anthropic.BadRequestError) as info:
            a.messages.create(model="claude-req", max_tokens=8, system=SENTINEL, metadata={"user_id": SENTINEL},
                              messages=[{"role": "user", "content": SENTINEL}],
                              tools=[{"name": "t", "description": SENTINEL, "input_schema": {"type": "object"}}])
        assert SENTINEL in str(info.value)  # the provider did echo it
        o = openai.OpenAI(api_key="k", base_url="http://provider.test/v1", max_retries=0,
                          http_client=_echoing("openai"))
        with pytest.raises(openai.BadRequestError) as info:
            o.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": SENTINEL}],
                                      tools=[{"type": "function", "function": {"name": "t", "description": SENTINEL}}])
        assert SENTINEL in str(info.value)
    finally:
        instrumentor.uninstrument()
    spans = anthropic_instrumented.spans()
    assert len(spans) == 2 and all(s.attributes[names.ERROR_TYPE] == "invalid_request_error" for s in spans)
    exported = repr([(s.name, dict(s.attributes), [dict(e.attributes) for e in s.events]) for s in spans])
    points = anthropic_instrumented.points(names.METRIC_GEN_AI_OPERATION_DURATION)
    exported += repr([dict(p.attributes) for p in points])
    assert SENTINEL not in exported


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_a_stream_dropped_after_uninstrument_ends_once_and_later_calls_emit_nothing(telemetry, fake_provider):
    # cases README 1 and 9: the call started while instrumented still ends (cancelled, once) when
    # its stream is collected after uninstrument(); calls after uninstrument() emit nothing.
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


ODD_ANSWERS = {
    "anthropic usage None": ("anthropic", {**MESSAGE, "usage": None}),
    "anthropic no model, no content": ("anthropic", {**MESSAGE, "model": None, "content": None, "stop_reason": None}),
    "anthropic unknown blocks": ("anthropic", {**MESSAGE, "content": [
        {"type": "block_from_the_future", "x": 1}, {"type": "tool_result", "tool_use_id": "t", "content": 5}]}),
    "openai choices None": ("chat", {"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                                     "choices": None, "usage": None}),
    "openai message None": ("chat", {"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                                     "choices": [{"index": 0, "message": None, "finish_reason": None}],
                                     "usage": {"prompt_tokens": None, "completion_tokens": 3}}),
    "responses output None": ("responses", {"id": "r", "object": "response", "created_at": 1, "model": "gpt-4o",
                                            "status": None, "output": None, "usage": None}),
}
# No content / choices / output and no error: an empty answer (rules/endings.py "Provider answers", row 2).
EMPTY_ANSWERS = {"anthropic no model, no content", "openai choices None", "responses output None"}


@pytest.mark.parametrize("capture", [None, "SPAN_AND_EVENT"])
@pytest.mark.parametrize("name", list(ODD_ANSWERS))
def test_odd_answers_reach_the_caller_and_still_make_one_span(telemetry, monkeypatch, capture, name):
    # usage=None, model=None, choices=None, content blocks of unknown types: the SDKs hand them over
    # as they are; the call still makes one span with whatever the answer did say.
    sdk, answer = ODD_ANSWERS[name]
    if capture:
        monkeypatch.setenv(names.ENV_CAPTURE_MESSAGE_CONTENT, capture)
    client = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, json=answer)))
    instrumentor = AnthropicInstrumentor() if sdk == "anthropic" else OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        if sdk == "anthropic":
            c = anthropic.Anthropic(api_key="k", base_url="http://provider.test", max_retries=0, open_telemetry=False,
                                    http_client=client)
            result = c.messages.create(model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        elif sdk == "chat":
            c = openai.OpenAI(api_key="k", base_url="http://provider.test/v1", max_retries=0, http_client=client)
            result = c.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        else:
            c = openai.OpenAI(api_key="k", base_url="http://provider.test/v1", max_retries=0, http_client=client)
            result = c.responses.create(model="gpt-4o", input="hi")
    finally:
        instrumentor.uninstrument()
    assert result.id == answer["id"]
    (span,) = telemetry.spans()
    a = span.attributes
    if name in EMPTY_ANSWERS:
        assert span.status.status_code is StatusCode.ERROR
        assert (a[names.ENDING], a[names.ERROR_TYPE]) == ("error", "empty_response")
    else:
        assert span.status.status_code is StatusCode.UNSET and a[names.ENDING] == "completed"
    assert a.get(names.GEN_AI_RESPONSE_MODEL) == answer["model"]  # omitted when the answer has none
    assert a[names.GEN_AI_RESPONSE_ID] == answer["id"]


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


@pytest.mark.parametrize("leave", [_kept_break_in_with, _kept_close, _kept_manager_early, _kept_manager_unread,
                                   _akept_close, _akept_manager_early], ids=lambda f: f.__name__.strip("_"))
def test_a_stream_left_early_ends_when_left_not_when_collected(anthropic_instrumented, fake_provider, leave):
    # cases README 1: the span ends at close / leaving the with block, while the caller still holds
    # the stream (nothing is collected), exactly once.
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


class Balance(SpanProcessor):
    """Counts our spans started and ended (cases README 2: start count == end count)."""

    def __init__(self) -> None:
        self.started = self.ended = 0

    def on_start(self, span, parent_context=None) -> None:
        if span.instrumentation_scope.name == names.SCOPE_NAME:
            self.started += 1

    def on_end(self, span) -> None:
        if span.instrumentation_scope.name == names.SCOPE_NAME:
            self.ended += 1


def test_every_call_shape_and_stream_fault_starts_and_ends_its_spans_once(
        anthropic_instrumented, fake_provider, caplog):
    import test_anthropic_call_shapes as a_shapes
    import test_openai as o_shapes

    balance = Balance()
    TRACER_PROVIDER.add_span_processor(balance)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=anthropic_instrumented.meter_provider)
    caplog.set_level("WARNING", logger="opentelemetry.sdk.trace")
    calls = 0
    try:
        for native in (True, False):
            for shape in a_shapes.SYNC_SHAPES:
                shape(a_shapes.client(fake_provider, native))
                calls += 1

            async def run_async(native=native):
                c = a_shapes.aclient(fake_provider, native)
                try:
                    for shape in a_shapes.ASYNC_SHAPES:
                        await shape(c)
                finally:
                    await c.close()

            asyncio.run(run_async())
            calls += len(a_shapes.ASYNC_SHAPES)
        for shape in o_shapes.SYNC_SHAPES.values():
            shape(o_shapes.client(fake_provider))
        for shape in o_shapes.ASYNC_SHAPES.values():
            o_shapes.run_async_shape(fake_provider, shape)
        calls += len(o_shapes.SYNC_SHAPES) + len(o_shapes.ASYNC_SHAPES)
        c = a_shapes.client(fake_provider, native=False)
        for fault in ("midstream_error", "drop", "truncate"):
            with contextlib.suppress(Exception):  # the fault's own error, tested elsewhere
                list(c.messages.create(**a_shapes.KW, stream=True, extra_headers={"x-fake-scenario": fault}))
            stream = c.messages.create(**a_shapes.KW, stream=True, extra_headers={"x-fake-scenario": fault})
            next(stream)
            del stream  # left mid-way, then collected
            calls += 2
        gc.collect()
    finally:
        instrumentor.uninstrument()
        TRACER_PROVIDER._active_span_processor._span_processors = tuple(
            p for p in TRACER_PROVIDER._active_span_processor._span_processors if p is not balance)
    assert (balance.started, balance.ended) == (calls, calls)
    assert not [r for r in caplog.records if "ended span" in r.getMessage()]


def test_the_stream_helpers_surface_works_through_the_proxy(anthropic_instrumented, fake_provider):
    # The SDKs' stream helpers read our proxy: their own surface (until_done, snapshots, final
    # message / text, response) must work as without us, sync and async, one completed span each.
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=anthropic_instrumented.meter_provider)
    request = {"model": "claude-req", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    chat = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}],
            "stream_options": {"include_usage": True}}
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


# ---------------------------------------------------------------- Azure OpenAI: the model is a deployment name
def test_azure_openai_deployment_names_are_no_substitution(telemetry):
    # Azure OpenAI's `model` is the caller's deployment name; the answer names the model behind it.
    # GenAI semconv: gen_ai.provider.name "azure.ai.openai".
    answer = {"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o-2024-08-06",
              "choices": [{"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
    sent: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.url.path)
        return httpx2.Response(200, json=answer)

    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        azure = openai.AzureOpenAI(api_key="k", api_version="2024-10-21", azure_endpoint="http://azure.test",
                                   max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
        assert azure.chat.completions.create(model="prod-chat", messages=[{"role": "user", "content": "hi"}]).id == "c"
    finally:
        instrumentor.uninstrument()
    assert sent == ["/openai/deployments/prod-chat/chat/completions"]
    (span,) = telemetry.spans()
    a = span.attributes
    assert (a[names.GEN_AI_PROVIDER_NAME], a[names.GEN_AI_REQUEST_MODEL], a[names.GEN_AI_RESPONSE_MODEL]) == (
        "azure.ai.openai", "prod-chat", "gpt-4o-2024-08-06")
    assert a[names.DEGRADATION_MODE] == "primary" and names.DEGRADATION_REASON not in a
    modes = telemetry.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.GEN_AI_PROVIDER_NAME, names.DEGRADATION_MODE)
    assert modes == {("azure.ai.openai", "primary"): 1}


@pytest.mark.parametrize(("platform", "model"), [
    # Bedrock: a model id, or an inference profile; Vertex AI: model@version. Both answer with the
    # Anthropic model name (e.g. AWS's InvokeModel example: "model": "claude-3-7-sonnet-20250219").
    ("bedrock", "anthropic.claude-3-7-sonnet-20250219-v1:0"),
    ("bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0"),
    ("vertex", "claude-3-7-sonnet@20250219"),
])
def test_platform_model_ids_are_no_substitution(anthropic_instrumented, platform, model):
    answer = {**MESSAGE, "id": "msg_bdrk_01", "model": "claude-3-7-sonnet-20250219"}
    http = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, json=answer)))
    if platform == "bedrock":
        c = anthropic.AnthropicBedrock(api_key="k", aws_region="us-east-1", base_url="http://bedrock.test",
                                       max_retries=0, open_telemetry=False, http_client=http)
    else:
        c = anthropic.AnthropicVertex(region="us-east5", project_id="p", access_token="t", base_url="http://vertex.test",
                                      max_retries=0, open_telemetry=False, http_client=http)
    message = c.messages.create(model=model, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert message.id == "msg_bdrk_01"
    (span,) = anthropic_instrumented.spans()
    a = span.attributes
    assert (a[names.GEN_AI_REQUEST_MODEL], a[names.GEN_AI_RESPONSE_MODEL]) == (model, "claude-3-7-sonnet-20250219")
    assert a[names.DEGRADATION_MODE] == "primary" and names.DEGRADATION_REASON not in a


@pytest.mark.parametrize("shape", ["create", "stream", "manager"])
def test_cache_cost_by_hand_on_every_anthropic_read_path(telemetry, tmp_path, monkeypatch, fake_provider, shape):
    # The fake's `cache` answer: input_tokens 25 (anthropic's count excludes the cache), cache reads
    # 400, cache writes 100, output 5. Semconv input = 525. Cost at 1.0 / 0.1 / 1.25 / 5.0 USD per
    # million: 25 x 1.0 + 400 x 0.1 + 100 x 1.25 + 5 x 5.0 = 215 USD per million = 0.000215.
    path = tmp_path / "policy.toml"
    path.write_text('[prices."claude-haiku-5-5"]\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 5.0\n'
                    'cache_read_usd_per_mtok = 0.1\ncache_creation_usd_per_mtok = 1.25\n')
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(path))
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    request = {"model": "claude-haiku-5-5", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
               "extra_headers": {"x-fake-scenario": "cache"}}
    try:
        c = anthropic.Anthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=False)
        if shape == "create":
            c.messages.create(**request)
        elif shape == "stream":
            list(c.messages.create(**request, stream=True))
        else:
            with c.messages.stream(**request) as stream:
                stream.until_done()
    finally:
        instrumentor.uninstrument()
    (span,) = telemetry.spans()
    a = span.attributes
    assert (a[names.GEN_AI_USAGE_INPUT_TOKENS], a[names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS],
            a[names.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS], a[names.GEN_AI_USAGE_OUTPUT_TOKENS]) == (
        525, 400, 100, 5)
    assert a[names.COST_USD] == pytest.approx(0.000215)
    (cost_point,) = telemetry.points(names.METRIC_GEN_AI_COST)
    assert cost_point.value == pytest.approx(0.000215)


def test_token_counts_beyond_int64_are_left_off_the_span(telemetry):
    # A hostile provider's usage can pass int64 (JSON has no bound); such an attribute would fail
    # every OTLP export of the span, so it is left off and the rest of the span stays.
    huge = 2**70
    answer = {**MESSAGE, "usage": {"input_tokens": huge, "output_tokens": 3}}
    client = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, json=answer)))
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        c = anthropic.Anthropic(api_key="k", base_url="http://provider.test", max_retries=0, open_telemetry=False,
                                http_client=client)
        result = c.messages.create(model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    finally:
        instrumentor.uninstrument()
    assert result.usage.input_tokens == huge  # the caller sees what the provider said
    (span,) = telemetry.spans()
    assert names.GEN_AI_USAGE_INPUT_TOKENS not in span.attributes
    assert span.attributes[names.GEN_AI_USAGE_OUTPUT_TOKENS] == 3
