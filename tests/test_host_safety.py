"""Telemetry never breaks the host, and hostile or odd input never breaks the telemetry.

Each test is one way to break the instrumentation: a provider, span processor or span exporter
that raises, a poisoned ``params._meta``, odd callback returns and odd provider answers, a foreign
wrapper over ours, a session opened before ``instrument()``, error bodies choosing their own type
names, peer errors, exception groups and cancellations that must reach the host as they would
without us, token counts past int64, peer cancel reasons nobody reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import gc
import sys

import anthropic
import anyio
import httpx2
import mcp_types as types
import openai
import pytest
import wrapt
from mcp import Client, MCPError
from mcp.client.session import ClientSession
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from conftest import TRACER_PROVIDER
from drivers import ANTHROPIC_MESSAGE, call, callback_returning, only_sampling_span, result
from otel_sampling import names
from otel_sampling.instrumentation import _provider
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from sampling_server import SERVER_NAME, build_server

if sys.version_info < (3, 11):  # anyio brings the backport there
    from exceptiongroup import ExceptionGroup

MESSAGES = [{"role": "user", "content": "hi"}]


class RaisingSpanProcessor(SpanProcessor):
    """Fails on our spans only (the mcp SDK's own spans would break the SDK, not us)."""

    def on_end(self, span) -> None:
        if span.instrumentation_scope.name == names.SCOPE_NAME:
            raise RuntimeError("broken span processor")


def test_a_raising_span_processor_loses_no_metric(mcp_instrumented):
    processor = RaisingSpanProcessor()
    TRACER_PROVIDER.add_span_processor(processor)
    try:
        out = anyio.run(call, "legacy", callback_returning(answer := result()))
    finally:
        TRACER_PROVIDER._active_span_processor._span_processors = tuple(
            p for p in TRACER_PROVIDER._active_span_processor._span_processors if p is not processor
        )
    assert out == f"{answer.model}|endTurn"
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 0}
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING) == {("completed",): 1}


class BrokenMeterProvider(MeterProvider):
    def get_meter(self, *args, **kwargs):
        raise RuntimeError("broken meter provider")


def test_a_raising_meter_provider_does_not_reach_the_host(telemetry):
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(meter_provider=BrokenMeterProvider())  # must not raise
    try:
        out = anyio.run(call, "legacy", callback_returning(answer := result()))
        assert out == f"{answer.model}|endTurn"  # the tool's text: the served model and stopReason
    finally:
        instrumentor.uninstrument()


def test_a_raising_meter_provider_does_not_reach_an_anthropic_caller(telemetry, fake_provider):
    # The host call must go through the instrumented SDK (an MCP call never reaches the anthropic
    # wrappers); the message is the fake provider's answer, unchanged.
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(meter_provider=BrokenMeterProvider())  # must not raise
    try:
        c = anthropic.Anthropic(base_url=fake_provider.url, api_key="k", max_retries=0)
        message = c.messages.create(model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        assert isinstance(message, anthropic.types.Message) and message.stop_reason == "end_turn"
    finally:
        instrumentor.uninstrument()


@pytest.mark.parametrize(
    "meta",
    [
        {"traceparent": 1},
        {"traceparent": "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-01", "baggage": 5},
        {"traceparent": "garbage"},
        {"traceparent": "00-00000000000000000000000000000000-0000000000000000-01"},
    ],
)
def test_poisoned_trace_context_still_gives_one_span_under_the_ambient_parent(mcp_instrumented, meta):
    tracer = TRACER_PROVIDER.get_tracer("host")

    async def main():
        async with Client(build_server(), mode="legacy", sampling_callback=callback_returning(result())) as client:
            with tracer.start_as_current_span("host work") as host_span:
                ctx = type("Ctx", (), {"request_id": 1, "meta": meta})()
                request = types.CreateMessageRequest(
                    params=types.CreateMessageRequestParams(
                        messages=[types.SamplingMessage(role="user", content=types.TextContent(text="x"))], max_tokens=5
                    )
                )
                await client.session.dispatch_input_request(ctx, request)
                return host_span

    host_span = anyio.run(main)
    span = only_sampling_span(mcp_instrumented)
    assert span.parent is not None and span.parent.span_id == host_span.get_span_context().span_id


@pytest.mark.parametrize(
    ("returned", "ending", "model"),
    [
        ({"code": -1, "message": "User rejected sampling request"}, "user.denied", None),
        (
            {
                "role": "assistant",
                "content": {"type": "text", "text": "ok"},
                "model": "gpt-4o",
                "stopReason": "endTurn",
            },
            "completed",
            "gpt-4o",
        ),
        (None, "error", None),
    ],
)
def test_returns_are_classified_the_way_mcp_reads_them(mcp_instrumented, returned, ending, model):
    anyio.run(call, "legacy", callback_returning(returned))
    span = only_sampling_span(mcp_instrumented)
    assert span.attributes[names.SAMPLING_ENDING] == ending
    assert span.attributes.get(names.GEN_AI_RESPONSE_MODEL) == model


def test_a_foreign_wrapper_over_ours_survives_uninstrument_and_no_double_span(telemetry):
    def foreign(wrapped, instance, args, kwargs):
        return wrapped(*args, **kwargs)

    original = ClientSession.__dict__["dispatch_input_request"]
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    wrapt.wrap_function_wrapper(ClientSession, "dispatch_input_request", foreign)
    try:
        instrumentor.uninstrument()
        outer = ClientSession.__dict__["dispatch_input_request"]
        assert outer._self_wrapper is foreign and outer.__wrapped__ is original  # ours spliced out, theirs kept
        instrumentor.instrument(meter_provider=telemetry.meter_provider)
        anyio.run(call, "legacy", callback_returning(result()))
        assert len(telemetry.spans(names.SPAN_SAMPLING)) == 1
    finally:
        instrumentor.uninstrument()
        ClientSession.dispatch_input_request = original


def test_session_opened_before_instrument_still_learns_timeouts(telemetry):
    async def slow(ctx, params):
        await anyio.sleep(5)

    instrumentor = MCPSamplingInstrumentor()

    async def main():
        async with Client(build_server(), mode="legacy", sampling_callback=slow) as client:
            instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
            with pytest.raises(MCPError):
                await client.call_tool("sample_with_deadline", {"deadline_s": 0.3})

    try:
        anyio.run(main)
    finally:
        instrumentor.uninstrument()
    span = only_sampling_span(telemetry)
    assert span.attributes[names.SAMPLING_ENDING] == "timeout"


def test_a_matching_hint_past_the_sixteenth_still_counts(mcp_instrumented):
    hints = ",".join([f"other-{i}" for i in range(16)] + ["claude-sonnet"])  # the match is the 17th
    anyio.run(call, "legacy", callback_returning(result()), "sample", {"hint": hints, "include_context": "none"})
    span = only_sampling_span(mcp_instrumented)
    assert span.attributes[names.SAMPLING_SUBSTITUTION] == "none"
    assert len(span.attributes[names.SAMPLING_MODEL_HINTS]) == 16


def test_provider_error_types_are_a_bounded_label(telemetry, fake_provider, monkeypatch):
    """Error bodies name their own types: the metric label admits only OTEL_SAMPLING_LABEL_VALUE_LIMIT."""
    monkeypatch.setenv("OTEL_SAMPLING_LABEL_VALUE_LIMIT", "3")
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
    try:
        for status in (400, 401, 429, 500, 529):
            with pytest.raises(anthropic.APIStatusError):
                client.messages.create(
                    model="m",
                    max_tokens=8,
                    messages=[{"role": "user", "content": "x"}],
                    extra_headers={"x-fake-scenario": f"status={status}"},
                )
    finally:
        instrumentor.uninstrument()
    span_types = [s.attributes[names.ERROR_TYPE] for s in telemetry.spans() if s.name == "chat m"]
    assert len(set(span_types)) == 5  # the spans keep every type
    labels = telemetry.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ERROR_TYPE)
    assert set(labels) == {(t,) for t in span_types[:3]} | {("_OTHER",)}
    assert sum(labels.values()) == 5


def test_a_long_model_name_is_cut_in_the_span_name(anthropic_instrumented, fake_provider):
    client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
    model = "m" * 257 + "\n\x1b"  # one past the 256 characters kept
    client.messages.create(model=model, max_tokens=8, messages=[{"role": "user", "content": "x"}])
    (span,) = [s for s in anthropic_instrumented.spans() if s.name.startswith("chat ")]
    assert span.name == "chat " + "m" * 256


def test_a_stream_can_be_copied(anthropic_instrumented, fake_provider):
    client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
    stream = client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}], stream=True)
    duplicate = copy.copy(stream)
    assert isinstance(duplicate, anthropic.Stream)
    assert [e.type for e in stream][-1] == "message_stop"
    assert len([s for s in anthropic_instrumented.spans() if s.name == "chat m"]) == 1


def test_instrument_sequences_never_double_wrap(telemetry):
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    instrumentor.uninstrument()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        anyio.run(call, "auto", callback_returning(result()))
        assert len(telemetry.spans(names.SPAN_SAMPLING)) == 1
    finally:
        instrumentor.uninstrument()
    assert not isinstance(ClientSession.__dict__["dispatch_input_request"], wrapt.FunctionWrapper)


def test_an_answer_after_the_peer_cancelled_is_not_completed(mcp_instrumented):
    """mcp never sends an answer to a request the peer cancelled: the ending is the cancel's."""

    async def shielded(ctx, params):
        with anyio.CancelScope(shield=True):  # e.g. not to waste a paid completion
            await anyio.sleep(0.6)
        return result()

    out = anyio.run(call, "legacy", shielded, "sample_with_deadline", {"deadline_s": 0.3})
    assert isinstance(out, MCPError) and out.code == -32001
    span = only_sampling_span(mcp_instrumented)
    assert span.attributes[names.SAMPLING_ENDING] == "timeout"
    assert names.GEN_AI_RESPONSE_MODEL not in span.attributes


def test_cancel_reasons_correlate_ids_the_way_mcp_does():
    from mcp.shared.dispatcher import coerce_request_id

    from otel_sampling.instrumentation.mcp_v2 import _CancelReasons

    reasons, connection = _CancelReasons(coerce_request_id), object.__new__(type("Conn", (), {}))
    reasons.note(connection, {"requestId": "7", "reason": "timed out after 1s"})
    assert reasons.pop(connection, 7) == "timed out after 1s"  # mcp: "7" and 7 are one id
    reasons.note(connection, {"requestId": 8, "reason": "caller cancelled"})
    assert reasons.pop(connection, "8") == "caller cancelled"
    assert reasons.pop(connection, 8) is None  # read once


def test_peer_cancel_reasons_stay_bounded_when_nobody_reads_them():
    from mcp.shared.dispatcher import coerce_request_id

    from otel_sampling.instrumentation.mcp_v2 import (
        CANCEL_REASON_MAX_LENGTH,
        CANCEL_REASONS_PER_DISPATCHER,
        _CancelReasons,
    )

    # Three times the bound, a third read: twice the bound never read, each reason past its length.
    cancels = 3 * CANCEL_REASONS_PER_DISPATCHER
    reasons, connection = _CancelReasons(coerce_request_id), object.__new__(type("Conn", (), {}))
    for i in range(cancels):
        reasons.note(connection, {"requestId": i, "reason": "caller cancelled " + "x" * CANCEL_REASON_MAX_LENGTH})
        if i % 3 == 1:  # a third are read (a request of ours); the rest never are
            assert reasons.pop(connection, i) is not None
    kept = reasons._by_dispatcher[connection]
    assert len(kept) == CANCEL_REASONS_PER_DISPATCHER
    assert all(len(reason) <= 256 for reason in kept.values())
    assert reasons.pop(connection, cancels - 1) == "caller cancelled " + "x" * (256 - len("caller cancelled "))


# ---------------------------------------------------------------- MCP answers reach the host as without us
async def _deadline_exceeded(mode):
    async def slow(ctx, params):
        await anyio.sleep(5)
        return result()

    return await call(mode, slow, "sample_with_deadline", {"deadline_s": 0.3})


async def _denied(mode):
    return await call(
        mode,
        callback_returning(types.ErrorData(code=-32000, message="Host says no")),
        "sample",
        {"hint": "claude-sonnet"},
    )


@pytest.mark.parametrize(("scenario", "mode"), [(_deadline_exceeded, "legacy"), (_denied, "legacy"), (_denied, "auto")])
def test_peer_errors_reach_the_host_as_without_instrumentation(telemetry, scenario, mode):
    """A JSON-RPC error frame and the SDK's -32001 timeout reach the caller with the same type,
    code, message and data whether or not we are installed."""

    def seen(exc):
        error = getattr(exc, "error", None)
        return type(exc), str(exc), getattr(error, "code", None), getattr(error, "data", None)

    bare = seen(anyio.run(scenario, mode))
    host, server = MCPSamplingInstrumentor(), MCPServerSamplingInstrumentor()
    for instrumentor in (host, server):
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        assert seen(anyio.run(scenario, mode)) == bare
    finally:
        server.uninstrument()
        host.uninstrument()
    assert bare[0] is MCPError and telemetry.spans(names.SPAN_SAMPLING)


def test_an_exception_group_raised_by_the_callback_reaches_the_host_as_it_would_bare(telemetry):
    """2026-07-28 path: the host's own exception group, inside anyio's, is the very same object
    with and without us; the span reads its single leaf."""

    def raising():
        raised = ExceptionGroup("host checks", [ValueError("bad params")])

        async def callback(ctx, params):
            raise raised

        return raised, callback

    def leaves(exc):
        return [exc] + [leaf for sub in getattr(exc, "exceptions", ()) for leaf in leaves(sub)]

    raised, callback = raising()
    bare = anyio.run(call, "auto", callback, "sample", {"hint": "claude-sonnet"})
    host = MCPSamplingInstrumentor()
    host.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        raised_again, callback = raising()
        out = anyio.run(call, "auto", callback, "sample", {"hint": "claude-sonnet"})
    finally:
        host.uninstrument()
    assert raised in leaves(bare) and raised_again in leaves(out)
    assert [type(e) for e in leaves(out)] == [type(e) for e in leaves(bare)]
    (span,) = telemetry.spans(names.SPAN_SAMPLING)
    assert span.attributes[names.SAMPLING_ENDING] == "error"
    assert span.attributes[names.ERROR_TYPE] == "ValueError"


# ---------------------------------------------------------------- provider calls
class RaisingExporter(SpanExporter):
    def export(self, spans):
        raise RuntimeError("broken exporter")

    def shutdown(self) -> None: ...


def _boom(*args, **kwargs):
    raise RuntimeError("broken extractor")


def _provider_calls(fp) -> list:
    """What a caller sees from a success and a failure of each SDK: type and the facts it reads."""
    seen = []
    claude = anthropic.Anthropic(base_url=fp.url, api_key="k", max_retries=0, open_telemetry=False)
    gpt = openai.OpenAI(base_url=fp.url + "/v1", api_key="k", max_retries=0)
    for create in (
        lambda h: claude.messages.create(model="claude-req", max_tokens=8, messages=MESSAGES, extra_headers=h),
        lambda h: gpt.chat.completions.create(model="gpt-req", messages=MESSAGES, extra_headers=h),
    ):
        response = create({})
        seen.append((type(response), response.model, str(response.usage)))
        try:
            create({"x-fake-scenario": "status=429,no_retry"})
        except (anthropic.APIStatusError, openai.APIStatusError) as exc:
            body = {k: v for k, v in exc.body.items() if k != "request_id"}  # the fake's ids are random
            seen.append((type(exc), exc.status_code, body))
    return seen


def test_broken_exporter_and_extractors_never_change_what_the_provider_caller_sees(
    telemetry, fake_provider, monkeypatch
):
    bare = _provider_calls(fake_provider)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(RaisingExporter()))
    instrumentors = [AnthropicInstrumentor(), OpenAIInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=provider, meter_provider=telemetry.meter_provider)
    try:
        assert _provider_calls(fake_provider) == bare  # the exporter raises on every span
        for name in ("parsed", "failure", "server_of"):  # reading the response, the error, the client
            monkeypatch.setattr(_provider.ProviderState, name, _boom)
        assert _provider_calls(fake_provider) == bare
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    # the calls were instrumented all along: 4 calls per run, 2 runs
    assert sum(telemetry.counts(names.METRIC_GEN_AI_OPERATION_DURATION).values()) == 8


@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_a_task_cancelled_before_the_answer_ends_cancelled_and_propagates(telemetry, fake_provider, sdk):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = AnthropicInstrumentor() if sdk == "anthropic" else OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, meter_provider=telemetry.meter_provider)
    slow = {"extra_headers": {"x-fake-scenario": "delay=5"}}

    async def main() -> asyncio.Task:
        if sdk == "anthropic":
            c = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=False)
            call = c.messages.create(model="claude-req", max_tokens=8, messages=MESSAGES, **slow)
        else:
            c = openai.AsyncOpenAI(base_url=fake_provider.url + "/v1", api_key="k", max_retries=0)
            call = c.chat.completions.create(model="gpt-req", messages=MESSAGES, **slow)
        before = len(fake_provider.requests)
        task = asyncio.ensure_future(call)
        while len(fake_provider.requests) == before:  # in flight at the provider, not merely scheduled
            await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await c.close()
        return task

    try:
        task = asyncio.run(main())
    finally:
        instrumentor.uninstrument()
    assert task.cancelled()  # the CancelledError reached the task, unchanged
    (span,) = exporter.get_finished_spans()
    assert (span.attributes[names.ENDING], span.attributes[names.ERROR_TYPE]) == ("cancelled", "cancelled")
    assert telemetry.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ENDING) == {("cancelled",): 1}


@pytest.fixture
def raising_processor():
    processor = RaisingSpanProcessor()
    TRACER_PROVIDER.add_span_processor(processor)
    yield
    TRACER_PROVIDER._active_span_processor._span_processors = tuple(
        p for p in TRACER_PROVIDER._active_span_processor._span_processors if p is not processor
    )


def _streaming_responses(fp, asynchronous: bool):
    """``with_streaming_response`` namespaces and one request each, for both SDKs."""
    a_kw = {"base_url": fp.url, "api_key": "k", "max_retries": 0, "open_telemetry": False}
    o_kw = {"base_url": fp.url + "/v1", "api_key": "k", "max_retries": 0}
    a = (anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic)(**a_kw)
    o = (openai.AsyncOpenAI if asynchronous else openai.OpenAI)(**o_kw)
    return [
        (
            a,
            a.messages.with_streaming_response.create,
            {"model": "claude-req", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
        ),
        (
            o,
            o.chat.completions.with_streaming_response.create,
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
        ),
    ]


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_a_failing_span_end_at_close_or_collection_never_reaches_the_host(
    anthropic_instrumented, fake_provider, raising_processor
):
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


ODD_ANSWERS = {
    "anthropic usage None": ("anthropic", {**ANTHROPIC_MESSAGE, "usage": None}),
    "anthropic no model, no content": (
        "anthropic",
        {**ANTHROPIC_MESSAGE, "model": None, "content": None, "stop_reason": None},
    ),
    "anthropic unknown blocks": (
        "anthropic",
        {
            **ANTHROPIC_MESSAGE,
            "content": [
                {"type": "block_from_the_future", "x": 1},
                {"type": "tool_result", "tool_use_id": "t", "content": 5},
            ],
        },
    ),
    "openai choices None": (
        "chat",
        {"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o", "choices": None, "usage": None},
    ),
    "openai message None": (
        "chat",
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o",
            "choices": [{"index": 0, "message": None, "finish_reason": None}],
            "usage": {"prompt_tokens": None, "completion_tokens": 3},
        },
    ),
    "responses output None": (
        "responses",
        {
            "id": "r",
            "object": "response",
            "created_at": 1,
            "model": "gpt-4o",
            "status": None,
            "output": None,
            "usage": None,
        },
    ),
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
            c = anthropic.Anthropic(
                api_key="k", base_url="http://provider.test", max_retries=0, open_telemetry=False, http_client=client
            )
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


def test_token_counts_beyond_int64_are_left_off_the_span(telemetry):
    # A hostile provider's usage can pass int64 (JSON has no bound); such an attribute would fail
    # every OTLP export of the span, so it is left off and the rest of the span stays.
    huge = 2**70
    answer = {**ANTHROPIC_MESSAGE, "usage": {"input_tokens": huge, "output_tokens": 3}}
    client = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, json=answer)))
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        c = anthropic.Anthropic(
            api_key="k", base_url="http://provider.test", max_retries=0, open_telemetry=False, http_client=client
        )
        result = c.messages.create(model="claude-req", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    finally:
        instrumentor.uninstrument()
    assert result.usage.input_tokens == huge  # the caller sees what the provider said
    (span,) = telemetry.spans()
    assert names.GEN_AI_USAGE_INPUT_TOKENS not in span.attributes
    assert span.attributes[names.GEN_AI_USAGE_OUTPUT_TOKENS] == 3
