"""A sampling callback that calls the real anthropic SDK: the sampling span sees the provider calls."""

from __future__ import annotations

import anthropic
import anyio
import mcp_types as types
from mcp import Client
from sampling_server import build_server

from otel_sampling import names

ARGS = {"hint": "claude-sonnet", "include_context": "thisServer"}


def host_callback(fake_provider, primary_scenario: str = "", fallback: str | None = None):
    """A host callback: primary claude-sonnet-5-5; on overload, the fallback model if given."""

    async def callback(ctx, params):
        client = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        try:
            try:
                message = await client.messages.create(
                    model="claude-sonnet-5-5", max_tokens=params.max_tokens, messages=[{"role": "user", "content": "hi"}],
                    extra_headers={"x-fake-scenario": primary_scenario})
            except anthropic.OverloadedError:
                if fallback is None:
                    return types.ErrorData(code=-32603, message="No model", data={"reason": "model.unavailable"})
                message = await client.messages.create(
                    model=fallback, max_tokens=params.max_tokens, messages=[{"role": "user", "content": "hi"}])
        finally:
            await client.close()
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text=message.content[0].text),
                                         model=message.model, stop_reason="endTurn")

    return callback


async def call(mode: str, callback):
    async with Client(build_server(), mode=mode, sampling_callback=callback) as client:
        try:
            return await client.call_tool("sample", ARGS)
        except Exception as exc:  # noqa: BLE001
            return exc


def test_sampling_span_records_provider_model_and_usage(instrumented, fake_provider):
    anyio.run(call, "auto", host_callback(fake_provider, "cache"))
    (sampling,) = instrumented.spans(names.SPAN_SAMPLING)
    (chat,) = instrumented.spans("chat claude-sonnet-5-5")
    assert chat.parent.span_id == sampling.context.span_id  # the provider call nests in the request
    a = sampling.attributes
    assert a[names.SAMPLING_PROVIDER_CALLS] == 1
    assert a[names.SAMPLING_PROVIDER_MODEL] == "claude-sonnet-5-5"
    assert a[names.GEN_AI_USAGE_INPUT_TOKENS] == 525
    assert a[names.GEN_AI_USAGE_OUTPUT_TOKENS] == 5
    assert a[names.DEGRADATION_MODE] == "primary"


def test_failover_to_fallback_is_degraded_one_request(instrumented, fake_provider):
    out = anyio.run(call, "legacy", host_callback(fake_provider, "status=529", fallback="claude-haiku-5-5"))
    assert out.content[0].text == "claude-haiku-5-5|endTurn"
    (sampling,) = instrumented.spans(names.SPAN_SAMPLING)
    a = sampling.attributes
    assert a[names.SAMPLING_ENDING] == "completed"
    assert a[names.DEGRADATION_MODE] == "degraded"  # no policy: the failover itself says so
    assert a[names.SAMPLING_PROVIDER_CALLS] == 2
    assert a[names.GEN_AI_RESPONSE_MODEL] == "claude-haiku-5-5"
    # One logical request: counted once, completed once.
    assert instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING, names.DEGRADATION_MODE) == {
        ("completed", "degraded"): 1}
    provider = instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.GEN_AI_REQUEST_MODEL,
                                   names.ERROR_TYPE, names.DEGRADATION_MODE)
    assert provider == {("claude-sonnet-5-5", "overloaded_error", "primary"): 1,
                        ("claude-haiku-5-5", None, "degraded"): 1}


def test_outage_without_fallback_is_model_unavailable(instrumented, fake_provider):
    out = anyio.run(call, "auto", host_callback(fake_provider, "status=529"))
    assert out.code == -32603
    (sampling,) = instrumented.spans(names.SPAN_SAMPLING)
    assert sampling.attributes[names.SAMPLING_ENDING] == "model.unavailable"
    assert sampling.attributes[names.SAMPLING_PROVIDER_CALLS] == 1
