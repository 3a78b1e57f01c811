"""The provider-independent pieces reach openai (both APIs) through the shared machinery: endings,
cost (span, metric, sampling record), failover, time to first chunk, with no openai-specific code
for them.

Expected values: the fake provider's openai answers (25 prompt and 5 completion tokens, 400 of the
prompt cached with ``cache``) and the price table's arithmetic.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import mcp_types as types
import openai
import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from conftest import call_sample_tool, with_policy
from otel_sampling import names
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

PRICES = """
[prices."gpt-req"]
input_usd_per_mtok = 2.0
output_usd_per_mtok = 8.0
cache_read_usd_per_mtok = 0.5

[prices."gpt-mini"]
input_usd_per_mtok = 0.25
output_usd_per_mtok = 2.0
"""
MESSAGES = [{"role": "user", "content": "hi"}]
CACHED_USD = (25 * 2.0 + 400 * 0.5 + 5 * 8.0) / 1e6  # prompt 425 of which 400 cached, 5 output, on gpt-req
MINI_USD = (25 * 0.25 + 5 * 2.0) / 1e6  # 25 prompt and 5 output tokens on gpt-mini


@pytest.fixture
def priced_openai(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    yield from with_policy(telemetry, tmp_path, monkeypatch, PRICES, MCPSamplingInstrumentor, OpenAIInstrumentor)


def client(fp) -> openai.OpenAI:
    return openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0)


def test_cost_and_ending(priced_openai, fake_provider):
    client(fake_provider).chat.completions.create(
        model="gpt-req", messages=MESSAGES, extra_headers={"x-fake-scenario": "cache"}
    )
    (span,) = priced_openai.spans()
    assert span.attributes[names.ENDING] == "completed"
    # prompt 425 of which 400 cached: 25 at 2.0, 400 at 0.5, 5 output at 8.0 (USD per million)
    expected = (25 * 2.0 + 400 * 0.5 + 5 * 8.0) / 1e6
    assert span.attributes[names.GEN_AI_USAGE_COST_AMOUNT] == pytest.approx(expected)
    assert priced_openai.counts(names.METRIC_CLIENT_COST, names.GEN_AI_PROVIDER_NAME, names.GEN_AI_RESPONSE_MODEL) == {
        ("openai", "gpt-req"): pytest.approx(expected)
    }


def test_responses_cost(priced_openai, fake_provider):
    client(fake_provider).responses.create(model="gpt-req", input="hi", extra_headers={"x-fake-scenario": "cache"})
    (span,) = priced_openai.spans()
    assert span.attributes[names.OPENAI_API_TYPE] == "responses"
    assert span.attributes[names.GEN_AI_USAGE_COST_AMOUNT] == pytest.approx(CACHED_USD)
    assert priced_openai.counts(names.METRIC_CLIENT_COST, names.GEN_AI_RESPONSE_MODEL) == {
        ("gpt-req",): pytest.approx(CACHED_USD)
    }


@pytest.mark.parametrize("api", ["chat", "responses"])
# The exception is the one the openai SDK maps the status to (openai README "Handling errors":
# 429 RateLimitError, 400 BadRequestError); a refusal is a result, not an exception.
@pytest.mark.parametrize(
    ("sc", "ending", "raised"),
    [
        ("status=429", "model.unavailable", openai.RateLimitError),
        ("status=400", "error", openai.BadRequestError),
        ("refusal", "refused", None),
    ],
)
def test_endings(priced_openai, fake_provider, api, sc, ending, raised):
    headers = {"x-fake-scenario": sc}
    with pytest.raises(raised) if raised else contextlib.nullcontext():
        if api == "chat":
            client(fake_provider).chat.completions.create(model="gpt-req", messages=MESSAGES, extra_headers=headers)
        else:
            client(fake_provider).responses.create(model="gpt-req", input="hi", extra_headers=headers)
    (span,) = priced_openai.spans()
    assert span.attributes[names.ENDING] == ending
    assert priced_openai.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ENDING) == {(ending,): 1}


@pytest.mark.parametrize("stream", [False, True])
def test_a_failed_response_is_a_failure_without_an_exception(priced_openai, fake_provider, stream):
    """Responses status ``failed`` comes back as a result (or a yielded ``response.failed`` event),
    never raised: the caller gets it unchanged, the call ends with its ``error.code``."""
    result = client(fake_provider).responses.create(
        model="gpt-req", input="hi", stream=stream, extra_headers={"x-fake-scenario": "failed"}
    )
    final = list(result)[-1].response if stream else result
    assert (final.status, final.error.code) == ("failed", "server_error")
    (span,) = priced_openai.spans()
    assert span.status.status_code is StatusCode.ERROR
    # server_error is an unavailability envelope (docs/telemetry.md, Provider call endings)
    assert (span.attributes[names.ERROR_TYPE], span.attributes[names.ENDING]) == ("server_error", "model.unavailable")
    assert priced_openai.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ERROR_TYPE, names.ENDING) == {
        ("server_error", "model.unavailable"): 1
    }


def _rate_limited_then_mini(fp, api):
    c = client(fp)
    with pytest.raises(openai.RateLimitError):
        if api == "chat":
            c.chat.completions.create(
                model="gpt-req", messages=MESSAGES, extra_headers={"x-fake-scenario": "status=429"}
            )
        else:
            c.responses.create(model="gpt-req", input="hi", extra_headers={"x-fake-scenario": "status=429"})
    if api == "chat":
        return c.chat.completions.create(model="gpt-mini", messages=MESSAGES)
    return c.responses.create(model="gpt-mini", input="hi")


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_failover_under_one_parent_is_degraded_and_costed_to_the_fallback(priced_openai, fake_provider, api):
    with trace.get_tracer("host").start_as_current_span("host step"):
        assert _rate_limited_then_mini(fake_provider, api).model == "gpt-mini"
    # (the host step is no run: an INTERNAL span of the host, not an agent span)
    primary, fallback = [s for s in priced_openai.spans() if s.name.startswith("chat ")]
    assert (primary.attributes[names.ENDING], primary.attributes[names.DEGRADATION_MODE]) == (
        "model.unavailable",
        "primary",
    )
    a = fallback.attributes
    assert (a[names.DEGRADATION_MODE], a[names.DEGRADATION_REASON]) == ("degraded", ("failover",))
    assert a[names.GEN_AI_USAGE_COST_AMOUNT] == pytest.approx(MINI_USD)
    assert priced_openai.counts(names.METRIC_CLIENT_COST, names.GEN_AI_RESPONSE_MODEL, names.DEGRADATION_MODE) == {
        ("gpt-mini", "degraded"): pytest.approx(MINI_USD)
    }


def test_sampling_request_records_the_openai_calls_and_their_cost(priced_openai, fake_provider):
    async def callback(ctx, params):
        async with openai.AsyncOpenAI(base_url=fake_provider.url + "/v1", api_key="sk-fake", max_retries=0) as c:
            try:
                await c.chat.completions.create(
                    model="gpt-req", messages=MESSAGES, extra_headers={"x-fake-scenario": "status=429"}
                )
            except openai.RateLimitError:
                response = await c.responses.create(model="gpt-mini", input="hi")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=response.output_text),
            model=response.model,
            stop_reason="endTurn",
        )

    anyio.run(call_sample_tool, "legacy", callback)
    (sampling,) = priced_openai.spans(names.SPAN_SAMPLING)
    a = sampling.attributes
    assert (a[names.SAMPLING_PROVIDER_CALLS], a[names.SAMPLING_PROVIDER_MODEL]) == (2, "gpt-mini")
    assert a[names.COST_USD] == pytest.approx(MINI_USD)
    assert a[names.DEGRADATION_MODE] == "degraded"
    (fallback,) = priced_openai.spans("chat gpt-mini")
    assert fallback.parent.span_id == sampling.context.span_id
    assert fallback.attributes[names.DEGRADATION_REASON] == ("failover",)


def test_stream_time_to_first_chunk_and_early_exit(priced_openai, fake_provider):
    stream = client(fake_provider).chat.completions.create(model="gpt-req", messages=MESSAGES, stream=True)
    next(iter(stream))
    stream.close()
    (span,) = priced_openai.spans()
    assert span.attributes[names.ENDING] == "cancelled"
    assert span.status.status_code is StatusCode.UNSET
    assert span.attributes[names.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK] > 0
    assert len(priced_openai.points(names.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK)) == 1


@pytest.mark.parametrize(("served", "mode"), [("gpt-req-2026-01-15", "primary"), ("gpt-mini", "degraded")])
def test_a_dated_snapshot_is_the_model_asked_for(priced_openai, fake_provider, served, mode):
    client(fake_provider).responses.create(
        model="gpt-req", input="hi", extra_headers={"x-fake-scenario": f"served_model={served}"}
    )
    (span,) = priced_openai.spans()
    assert span.attributes[names.DEGRADATION_MODE] == mode
    assert span.attributes.get(names.DEGRADATION_REASON) == (None if mode == "primary" else ("substitution",))
