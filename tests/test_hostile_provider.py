"""A hostile provider: answers with ``model: null``, ``choices: null``, no usage, an
error body with HTTP 200, an absurdly long model name, numbers where strings belong. Real anthropic
and openai SDKs against the fake provider on 127.0.0.1, create and stream.

Expected behaviour comes from the uninstrumented SDK: each call is made once without and once with
the instrumentation, and the host must get the same outcome (the same result type, or the SDK's own
exception with the same type and message, raised from SDK code, never ours). The instrumentation
then owes exactly one ended span per call, no attribute that is None or longer than the cap, and
metric labels inside their bounds.
"""

from __future__ import annotations

import asyncio
import traceback

import anthropic
import openai
import pytest

from conftest import TRACER_PROVIDER
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.metrics import LABEL_MAX_LENGTH

CAP = 40  # OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH for this module: far below the long model name
LONG = 1_000_000
SCENARIOS = [
    "null_model",
    "null_choices",
    "no_usage",
    "error_200",
    f"long_model={LONG}",
    "odd_types",
    "null_model,null_choices,no_usage",
]
MESSAGES = [{"role": "user", "content": "hi"}]


def _anthropic_create(fp):
    return lambda sc: anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0).messages.create(
        model="claude-req", max_tokens=8, messages=MESSAGES, extra_headers={"x-fake-scenario": sc}
    )


def _anthropic_stream(fp):
    def call(sc):
        client = anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0)
        return list(
            client.messages.create(
                model="claude-req", max_tokens=8, messages=MESSAGES, stream=True, extra_headers={"x-fake-scenario": sc}
            )
        )

    return call


def _chat_create(fp):
    return lambda sc: openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0).chat.completions.create(
        model="gpt-req", messages=MESSAGES, extra_headers={"x-fake-scenario": sc}
    )


def _chat_stream(fp):
    def call(sc):
        client = openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0)
        return list(
            client.chat.completions.create(
                model="gpt-req",
                messages=MESSAGES,
                stream=True,
                stream_options={"include_usage": True},
                extra_headers={"x-fake-scenario": sc},
            )
        )

    return call


def _responses_create(fp):
    return lambda sc: openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0).responses.create(
        model="gpt-req", input="hi", extra_headers={"x-fake-scenario": sc}
    )


def _responses_stream(fp):
    def call(sc):
        client = openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0)
        return list(
            client.responses.create(model="gpt-req", input="hi", stream=True, extra_headers={"x-fake-scenario": sc})
        )

    return call


def _anthropic_async_create(fp):
    async def call(sc):
        async with anthropic.AsyncAnthropic(base_url=fp.url, api_key="sk-fake", max_retries=0) as client:
            return await client.messages.create(
                model="claude-req", max_tokens=8, messages=MESSAGES, extra_headers={"x-fake-scenario": sc}
            )

    return lambda sc: asyncio.run(call(sc))


def _chat_async_stream(fp):
    async def call(sc):
        async with openai.AsyncOpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0) as client:
            return [
                chunk
                async for chunk in await client.chat.completions.create(
                    model="gpt-req", messages=MESSAGES, stream=True, extra_headers={"x-fake-scenario": sc}
                )
            ]

    return lambda sc: asyncio.run(call(sc))


CALLS = {
    "anthropic create": _anthropic_create,
    "anthropic stream": _anthropic_stream,
    "anthropic async create": _anthropic_async_create,
    "chat create": _chat_create,
    "chat stream": _chat_stream,
    "chat async stream": _chat_async_stream,
    "responses create": _responses_create,
    "responses stream": _responses_stream,
}


def _outcome(call, sc):
    """What the host gets: ``("ok", type of the result)`` or ``("raised", type, message, exception)``."""
    try:
        result = call(sc)
    except Exception as exc:  # noqa: BLE001 - the outcome is what is compared
        return ("raised", type(exc), str(exc), exc)
    return ("ok", type(result) if not isinstance(result, list) else tuple(type(r) for r in result))


@pytest.fixture
def capped(telemetry, monkeypatch):
    monkeypatch.setenv(names.ENV_ATTRIBUTE_MAX_LENGTH, str(CAP))
    instrumentors = [AnthropicInstrumentor(), OpenAIInstrumentor()]
    yield telemetry, instrumentors
    for instrumentor in instrumentors:
        instrumentor.uninstrument()


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("shape", list(CALLS))
def test_a_hostile_answer_reaches_the_host_as_without_us_and_makes_one_clean_span(
    capped, fake_provider, shape, scenario, caplog
):
    telemetry, instrumentors = capped
    call = CALLS[shape](fake_provider)
    bare = _outcome(call, scenario)
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    caplog.set_level("DEBUG", logger="otel_sampling")
    caplog.set_level("WARNING", logger="opentelemetry")
    seen = _outcome(call, scenario)

    assert seen[:3] == bare[:3]
    if seen[0] == "raised":  # the SDK's own exception: raised by SDK code, not by ours
        frames = traceback.extract_tb(seen[3].__traceback__)
        assert "otel_sampling" not in frames[-1].filename.replace("\\", "/").split("/site-packages/")[-1]
    (span,) = telemetry.spans()  # one span, ended (only finished spans are exported)
    for key, value in span.attributes.items():
        for item in value if isinstance(value, tuple) else (value,):
            assert item is not None, key
            if isinstance(item, str):
                assert len(item) <= CAP and item.isprintable(), (key, item[:80])
    assert len(span.name) <= len("chat ") + CAP
    model = span.attributes.get(names.GEN_AI_RESPONSE_MODEL)
    if "null_model" in scenario or "odd_types" in scenario:
        assert model is None  # omitted, not "None" nor a number made a name
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")], "an attribute the SDK refused"
    assert span.attributes[names.ENDING] in names.ENDINGS
    if scenario == "error_200" and "stream" not in shape:
        # The SDK hands the error body over as a result; the call still ends as the error it reports,
        # the way the same body with HTTP 529 / 500 does (docs/telemetry.md "Provider call endings").
        assert span.attributes[names.ENDING] == names.ENDING_MODEL_UNAVAILABLE
        assert span.attributes[names.ERROR_TYPE] == ("overloaded_error" if "anthropic" in shape else "server_error")
    for metric in (names.METRIC_GEN_AI_OPERATION_DURATION, names.METRIC_GEN_AI_TOKEN_USAGE):
        for point in telemetry.points(metric):
            for value in point.attributes.values():
                assert isinstance(value, str) and value and len(value) <= LABEL_MAX_LENGTH and value.isprintable()


@pytest.mark.parametrize("capture", ["SPAN_ONLY", "SPAN_AND_EVENT"])
def test_captured_content_with_controls_and_lone_surrogates_still_exports(
    telemetry, monkeypatch, fake_provider, capture
):
    """Content capture (opt-in) copies the request before the SDK encodes it: a lone surrogate the
    SDK then refuses (``UnicodeEncodeError``, the host's to handle) must not make our span
    unexportable, and controls or bidi overrides must not reach a backend raw. The content stays
    JSON; each unprintable character is a JSON escape."""
    import json

    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    monkeypatch.setenv(names.ENV_CAPTURE_MESSAGE_CONTENT, capture)
    instrumentor = AnthropicInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
    try:
        with pytest.raises(UnicodeEncodeError):
            client.messages.create(
                model="claude-req",
                max_tokens=8,
                system="sys\ud800",
                messages=[{"role": "user", "content": "hi\x00\u202e"}],
            )
        client.messages.create(
            model="claude-req",
            max_tokens=8,
            system="sys\x1b[31m",
            messages=[{"role": "user", "content": "hi\x00\u202e\u2028"}],
        )
    finally:
        instrumentor.uninstrument()
    spans = telemetry.spans()
    assert len(spans) == 2
    encode_spans(spans).SerializeToString()  # raises on a string that is not valid UTF-8
    for span in spans:
        for key in (names.GEN_AI_SYSTEM_INSTRUCTIONS, names.GEN_AI_INPUT_MESSAGES):
            text = span.attributes[key]
            assert text.isprintable(), (key, text)
    sent = json.loads(spans[1].attributes[names.GEN_AI_INPUT_MESSAGES])
    assert sent[0]["parts"][0]["content"] == "hi\x00\u202e\u2028"  # the content itself, unchanged


def test_the_sdk_span_limit_applies_after_our_cap_and_the_shorter_wins(telemetry, monkeypatch, fake_provider):
    """docs/security.md: OTEL_SAMPLING_ATTRIBUTE_MAX_LENGTH cuts and cleans first, then the OTel
    SDK's SpanLimits (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT) truncate what is left."""
    from opentelemetry.sdk.trace import SpanLimits, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    monkeypatch.setenv(names.ENV_ATTRIBUTE_MAX_LENGTH, str(CAP))
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=SpanLimits(max_attribute_length=10))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider, meter_provider=telemetry.meter_provider)
    try:
        _chat_create(fake_provider)(f"long_model={LONG}")
        monkeypatch.setenv(names.ENV_ATTRIBUTE_MAX_LENGTH, "5")
        instrumentor.uninstrument()
        instrumentor.instrument(tracer_provider=provider, meter_provider=telemetry.meter_provider)
        _chat_create(fake_provider)(f"long_model={LONG}")
    finally:
        instrumentor.uninstrument()
    sdk_cut, ours = (span.attributes[names.GEN_AI_RESPONSE_MODEL] for span in exporter.get_finished_spans())
    assert (sdk_cut, ours) == ("m" * 10, "m" * 5)
