"""anthropic ``messages.create`` (sync/async, plain/stream) against the fake provider over real HTTP.

Expected usage numbers come from the fake provider's fixed bodies: 25 input and 5 output tokens;
with ``cache``, 400 cache-read and 100 cache-creation tokens on top (anthropic's Usage docstring:
total input = input_tokens + cache_creation_input_tokens + cache_read_input_tokens).
"""

from __future__ import annotations

import asyncio
import gc

import anthropic
import httpx2
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import SpanKind, StatusCode

from conftest import TRACER_PROVIDER, instrumenting, raised_by
from drivers import ANTHROPIC_MESSAGE
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor

MESSAGES = [{"role": "user", "content": "Summarise: printer on fire"}]


def client(fp, **kw) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0, **kw)


def scenario(value: str) -> dict:
    return {"extra_headers": {"x-fake-scenario": value}}


def chat_spans(telemetry):
    return telemetry.spans("chat claude-req")


def test_create_span_attributes_and_metrics(anthropic_instrumented, fake_provider):
    message = client(fake_provider).messages.create(
        model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("cache,served_model=claude-served")
    )
    assert isinstance(message, anthropic.types.Message)
    (span,) = chat_spans(anthropic_instrumented)
    assert span.kind is SpanKind.CLIENT
    a = span.attributes
    assert a[names.GEN_AI_OPERATION_NAME] == "chat"
    assert a[names.GEN_AI_PROVIDER_NAME] == "anthropic"
    assert a[names.GEN_AI_REQUEST_MODEL] == "claude-req"
    assert a[names.GEN_AI_REQUEST_MAX_TOKENS] == 64
    assert a[names.GEN_AI_RESPONSE_MODEL] == "claude-served"
    assert a[names.GEN_AI_RESPONSE_ID] == message.id
    assert a[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("end_turn",)
    assert a[names.GEN_AI_USAGE_INPUT_TOKENS] == 25 + 400 + 100
    assert a[names.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
    assert a[names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 400
    assert a[names.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS] == 100
    assert a[names.SERVER_ADDRESS] == "127.0.0.1"
    assert a[names.SERVER_PORT] == int(fake_provider.url.rsplit(":", 1)[1])
    tokens = anthropic_instrumented.counts(names.METRIC_GEN_AI_TOKEN_USAGE, names.GEN_AI_TOKEN_TYPE)
    assert tokens == {("input",): 1, ("output",): 1}  # cache parts are inside input, never a token type
    (input_point,) = [
        p
        for p in anthropic_instrumented.points(names.METRIC_GEN_AI_TOKEN_USAGE)
        if p.attributes[names.GEN_AI_TOKEN_TYPE] == "input"
    ]
    assert input_point.sum == 525
    assert input_point.attributes[names.GEN_AI_RESPONSE_MODEL] == "claude-served"
    assert anthropic_instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ERROR_TYPE) == {(None,): 1}


class _RecordingSampler(Sampler):
    """Always samples; keeps the attributes each span was started with."""

    def __init__(self) -> None:
        self.started: list[dict] = []

    def should_sample(self, parent_context, trace_id, name, kind=None, attributes=None, links=None, trace_state=None):
        self.started.append(dict(attributes or {}))
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)

    def get_description(self) -> str:
        return "recording"


def test_a_sampler_sees_what_is_known_at_the_start(telemetry, fake_provider):
    """The GenAI conventions ask for gen_ai.operation.name, the provider, the request model and the
    server at span creation (sampling-relevant): the sampler gets them, the answer's come at the end."""
    sampler = _RecordingSampler()
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TracerProvider(sampler=sampler), meter_provider=telemetry.meter_provider)
    try:
        client(fake_provider).messages.create(model="claude-req", max_tokens=64, messages=MESSAGES)
    finally:
        instrumentor.uninstrument()
    started = next(a for a in sampler.started if a.get(names.GEN_AI_OPERATION_NAME) == "chat")
    assert started[names.GEN_AI_PROVIDER_NAME] == "anthropic"
    assert started[names.GEN_AI_REQUEST_MODEL] == "claude-req"
    assert started[names.GEN_AI_REQUEST_MAX_TOKENS] == 64
    assert started[names.SERVER_ADDRESS] == "127.0.0.1"
    assert started[names.SERVER_PORT] == int(fake_provider.url.rsplit(":", 1)[1])
    assert names.GEN_AI_RESPONSE_MODEL not in started


def test_anthropic_own_span_is_a_child_never_a_sibling(anthropic_instrumented, fake_provider):
    client(fake_provider).messages.create(model="claude-req", max_tokens=64, messages=MESSAGES)
    (ours,) = chat_spans(anthropic_instrumented)
    native = [s for s in anthropic_instrumented.spans(scope=None) if s.name == "anthropic.messages.create"]
    assert len(native) == 1  # anthropic 2.x traces itself by default
    assert native[0].parent.span_id == ours.context.span_id


def test_error_passes_through_unchanged(anthropic_instrumented, fake_provider):
    with pytest.raises(anthropic.OverloadedError) as info:
        client(fake_provider).messages.create(
            model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("status=529")
        )
    (span,) = chat_spans(anthropic_instrumented)
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes[names.ERROR_TYPE] == "overloaded_error"  # the provider's error envelope type
    assert info.value.status_code == 529
    assert anthropic_instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ERROR_TYPE) == {
        ("overloaded_error",): 1
    }


def test_stream_passes_every_event_and_ends_once(anthropic_instrumented, fake_provider):
    stream = client(fake_provider).messages.create(model="claude-req", max_tokens=64, messages=MESSAGES, stream=True)
    assert isinstance(stream, anthropic.Stream)
    events = [event.type for event in stream]
    assert events[0] == "message_start" and events[-1] == "message_stop"
    (span,) = chat_spans(anthropic_instrumented)
    assert span.attributes[names.GEN_AI_REQUEST_STREAM] is True
    assert span.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("end_turn",)
    # message_start says output_tokens=1 (placeholder); message_delta's 5 overwrites it, not adds.
    assert span.attributes[names.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
    assert span.status.status_code is StatusCode.UNSET
    stream.close()
    assert len(chat_spans(anthropic_instrumented)) == 1
    assert anthropic_instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ERROR_TYPE) == {(None,): 1}


def test_stream_dropped_midway_raises_the_same_error(telemetry, fake_provider):
    def read_a_dropped_stream():
        stream = client(fake_provider).messages.create(
            model="claude-req", max_tokens=64, messages=MESSAGES, stream=True, **scenario("drop")
        )
        list(stream)

    sdk_alone = type(raised_by(read_a_dropped_stream))  # the class depends on the SDK release
    with instrumenting(telemetry, AnthropicInstrumentor) as anthropic_instrumented:
        with pytest.raises(sdk_alone) as info:
            read_a_dropped_stream()
    assert type(info.value) is sdk_alone
    (span,) = chat_spans(anthropic_instrumented)
    assert span.attributes[names.ERROR_TYPE] == "connection_error"


@pytest.mark.parametrize("leave", ["break_with", "close", "gc"])
def test_stream_left_early_ends_once(anthropic_instrumented, fake_provider, leave):
    c = client(fake_provider)
    stream = c.messages.create(model="claude-req", max_tokens=64, messages=MESSAGES, stream=True)
    if leave == "break_with":
        with stream as s:
            for _ in s:
                break
    elif leave == "close":
        next(iter(stream))
        stream.close()
    else:
        next(iter(stream))
        del stream
        gc.collect()
    (span,) = chat_spans(anthropic_instrumented)
    assert span.status.status_code is StatusCode.UNSET
    assert span.attributes[names.GEN_AI_RESPONSE_MODEL] == "claude-req"  # message_start was seen
    assert anthropic_instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ERROR_TYPE) == {(None,): 1}


def test_async_create_and_stream(anthropic_instrumented, fake_provider):
    async def main():
        c = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        message = await c.messages.create(model="claude-req", max_tokens=64, messages=MESSAGES)
        stream = await c.messages.create(model="claude-req", max_tokens=64, messages=MESSAGES, stream=True)
        assert isinstance(stream, anthropic.AsyncStream)
        events = [e.type async for e in stream]
        await c.close()
        return message, events

    message, events = asyncio.run(main())
    assert message.model == "claude-req" and events[-1] == "message_stop"
    spans = chat_spans(anthropic_instrumented)
    assert len(spans) == 2
    assert all(s.attributes[names.GEN_AI_USAGE_OUTPUT_TOKENS] == 5 for s in spans)


def test_async_error_passes_through(anthropic_instrumented, fake_provider):
    async def main():
        c = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        try:
            await c.messages.create(model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("status=429"))
        finally:
            await c.close()

    with pytest.raises(anthropic.RateLimitError):
        asyncio.run(main())
    assert chat_spans(anthropic_instrumented)[0].attributes[names.ERROR_TYPE] == "rate_limit_error"


def test_raw_response_is_returned_untouched(anthropic_instrumented, fake_provider):
    raw = client(fake_provider).messages.with_raw_response.create(model="claude-req", max_tokens=64, messages=MESSAGES)
    assert raw.status_code == 200
    assert raw.parse().model == "claude-req"  # the body was not consumed by telemetry
    assert len(chat_spans(anthropic_instrumented)) == 1


# ---------------------------------------------------------------- the model asked for, platform ids, cost per read path
def test_extra_body_model_is_the_model_asked_for(anthropic_instrumented, fake_provider):
    # The SDK merges extra_body over the body it sends: the provider was asked for claude-other.
    c = anthropic.Anthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=False)
    message = c.messages.create(
        model="claude-req",
        max_tokens=8,
        messages=[{"role": "user", "content": "hi"}],
        extra_body={"model": "claude-other", "max_tokens": 16},
    )
    assert fake_provider.requests[-1]["model"] == message.model == "claude-other"
    (span,) = anthropic_instrumented.spans()
    a = span.attributes
    assert (span.name, a[names.GEN_AI_REQUEST_MODEL], a[names.GEN_AI_REQUEST_MAX_TOKENS]) == (
        "chat claude-other",
        "claude-other",
        16,
    )
    assert a[names.DEGRADATION_MODE] == "primary" and names.DEGRADATION_REASON not in a  # no substitution


@pytest.mark.parametrize(
    ("platform", "model"),
    [
        # Bedrock: a model id, or an inference profile; Vertex AI: model@version. Both answer with the
        # Anthropic model name (e.g. AWS's InvokeModel example: "model": "claude-3-7-sonnet-20250219").
        ("bedrock", "anthropic.claude-3-7-sonnet-20250219-v1:0"),
        ("bedrock", "us.anthropic.claude-3-7-sonnet-20250219-v1:0"),
        ("vertex", "claude-3-7-sonnet@20250219"),
    ],
)
def test_platform_model_ids_are_no_substitution(anthropic_instrumented, platform, model):
    answer = {**ANTHROPIC_MESSAGE, "id": "msg_bdrk_01", "model": "claude-3-7-sonnet-20250219"}
    http = httpx2.Client(transport=httpx2.MockTransport(lambda request: httpx2.Response(200, json=answer)))
    if platform == "bedrock":
        c = anthropic.AnthropicBedrock(
            api_key="k",
            aws_region="us-east-1",
            base_url="http://bedrock.test",
            max_retries=0,
            open_telemetry=False,
            http_client=http,
        )
    else:
        c = anthropic.AnthropicVertex(
            region="us-east5",
            project_id="p",
            access_token="t",
            base_url="http://vertex.test",
            max_retries=0,
            open_telemetry=False,
            http_client=http,
        )
    message = c.messages.create(model=model, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert message.id == "msg_bdrk_01"
    (span,) = anthropic_instrumented.spans()
    a = span.attributes
    assert (a[names.GEN_AI_REQUEST_MODEL], a[names.GEN_AI_RESPONSE_MODEL]) == (model, "claude-3-7-sonnet-20250219")
    assert a[names.DEGRADATION_MODE] == "primary" and names.DEGRADATION_REASON not in a


def test_a_latest_entry_admits_and_prices_the_snapshots_it_resolves_to(telemetry, tmp_path, monkeypatch, fake_provider):
    # docs/configuration.md: an entry admits (and prices) its dated snapshots; a -latest entry names
    # the model whose snapshots the provider serves under that alias.
    from otel_sampling.policy import Price
    from otel_sampling.rules import verdict

    price = Price(1.0, 5.0)
    assert verdict.same_model("claude-haiku-5-5-latest", "claude-haiku-5-5-20261001")
    assert (
        verdict.judge_substitution(["gpt-4o"], "claude-haiku-5-5-20261001", ["claude-haiku-5-5-latest"])
        == "within_policy"
    )
    assert verdict.price_for({"claude-haiku-5-5-latest": price}, "claude-haiku-5-5-20261001") is price
    assert verdict.price_for({"claude-haiku-5-5-latest": price}, "claude-haiku-5-6-20261001") is None
    path = tmp_path / "policy.toml"
    path.write_text('[prices."claude-haiku-5-5-latest"]\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 5.0\n')
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(path))
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        c = anthropic.Anthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=False)
        c.messages.create(
            model="claude-haiku-5-5-latest",
            max_tokens=8,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-fake-scenario": "served_model=claude-haiku-5-5-20261001"},
        )
    finally:
        instrumentor.uninstrument()
    (span,) = telemetry.spans()
    # the fake's 25 in, 5 out
    assert span.attributes[names.GEN_AI_USAGE_COST_AMOUNT] == pytest.approx((25 * 1.0 + 5 * 5.0) / 1e6)


@pytest.mark.parametrize("shape", ["create", "stream", "manager"])
def test_cache_cost_by_hand_on_every_anthropic_read_path(telemetry, tmp_path, monkeypatch, fake_provider, shape):
    # The fake's `cache` answer: input_tokens 25 (anthropic's count excludes the cache), cache reads
    # 400, cache writes 100, output 5. Semconv input = 525. Cost at 1.0 / 0.1 / 1.25 / 5.0 USD per
    # million: 25 x 1.0 + 400 x 0.1 + 100 x 1.25 + 5 x 5.0 = 215 USD per million = 0.000215.
    path = tmp_path / "policy.toml"
    path.write_text(
        '[prices."claude-haiku-5-5"]\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 5.0\n'
        "cache_read_usd_per_mtok = 0.1\ncache_write_usd_per_mtok = 1.25\n"
    )
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(path))
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    request = {
        "model": "claude-haiku-5-5",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}],
        "extra_headers": {"x-fake-scenario": "cache"},
    }
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
    assert (
        a[names.GEN_AI_USAGE_INPUT_TOKENS],
        a[names.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS],
        a[names.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS],
        a[names.GEN_AI_USAGE_OUTPUT_TOKENS],
    ) == (525, 400, 100, 5)
    assert a[names.GEN_AI_USAGE_COST_AMOUNT] == pytest.approx(0.000215)
    (cost_point,) = telemetry.points(names.METRIC_CLIENT_COST)
    assert cost_point.value == pytest.approx(0.000215)


def test_a_call_without_a_finish_reason_reports_error_in_its_place(anthropic_instrumented, fake_provider):
    """GenAI semconv (client-inference.md): a finish reason expected and not received (the call
    failed, was cancelled, or its stream ended before the final event) is reported as ``error``."""
    c = client(fake_provider)
    with pytest.raises(anthropic.RateLimitError):
        c.messages.create(model="claude-req", max_tokens=64, messages=MESSAGES, **scenario("status=429"))
    with c.messages.stream(model="claude-req", max_tokens=64, messages=MESSAGES) as stream:
        next(iter(stream))  # left before the final event
    c.messages.create(model="claude-req", max_tokens=64, messages=MESSAGES)
    failed, left, completed = chat_spans(anthropic_instrumented)
    assert failed.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("error",)
    assert left.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("error",)
    assert completed.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("end_turn",)


def test_a_message_built_without_some_members_reads_them_as_absent():
    """The SDK builds an answer without validating it: a body that lacks a member a Message declares
    (here ``usage``, and ``model`` given as a number) is read as reporting none of it, as a complete
    one is read field by field."""
    from anthropic._models import construct_type

    from otel_sampling.instrumentation.anthropic import response_of
    from otel_sampling.rules.values import Response, Usage

    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": 7, "content": [], "stop_reason": "end_turn"}
    message = construct_type(type_=anthropic.types.Message, value=body)
    assert response_of(message) == Response(None, "msg_1", ("end_turn",), Usage(), answered=True)
    complete = construct_type(
        type_=anthropic.types.Message,
        value={**body, "model": "claude-x", "usage": {"input_tokens": 3, "output_tokens": 2}},
    )
    assert response_of(complete) == Response("claude-x", "msg_1", ("end_turn",), Usage(3, 2), answered=True)
