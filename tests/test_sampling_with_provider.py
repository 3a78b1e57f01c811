"""A sampling callback that calls the real anthropic SDK: the sampling span sees the provider calls."""

from __future__ import annotations

import asyncio

import anthropic
import anyio
import mcp_types as types
import pytest
from mcp import Client

from otel_sampling import names
from sampling_server import build_server

ARGS = {"hint": "claude-sonnet", "include_context": "thisServer"}


def host_callback(fake_provider, primary_scenario: str = "", fallback: str | None = None):
    """A host callback: primary claude-sonnet-5-5; on overload, the fallback model if given."""

    async def callback(ctx, params):
        client = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        try:
            try:
                message = await client.messages.create(
                    model="claude-sonnet-5-5", max_tokens=params.max_tokens,
                    messages=[{"role": "user", "content": "hi"}],
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


def two_model_callback(fake_provider, first: str, second: str, *, hedge: bool = False):
    """Calls two models without any error: a router then an answer, or a hedged pair."""

    async def callback(ctx, params):
        client = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        msgs = [{"role": "user", "content": "hi"}]
        try:
            if hedge:  # ask the first, then a backup that answers sooner; keep whichever ends first
                slow = client.messages.create(model=first, max_tokens=8, messages=msgs,
                                              extra_headers={"x-fake-scenario": "delay=0.3"})
                fast = client.messages.create(model=second, max_tokens=8, messages=msgs)
                results = await asyncio.gather(slow, fast)
                message = results[1]
            else:
                await client.messages.create(model=first, max_tokens=8, messages=msgs)
                message = await client.messages.create(model=second, max_tokens=8, messages=msgs)
        finally:
            await client.close()
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="x"), model=message.model)

    return callback


@pytest.mark.parametrize("hedge", [False, True])
def test_two_models_without_an_error_are_not_a_failover(instrumented, fake_provider, hedge):
    anyio.run(call, "auto", two_model_callback(fake_provider, "claude-haiku-5-5", "claude-sonnet-5-5", hedge=hedge))
    (sampling,) = instrumented.spans(names.SPAN_SAMPLING)
    assert sampling.attributes[names.DEGRADATION_MODE] == "primary"
    assert sampling.attributes[names.SAMPLING_PROVIDER_CALLS] == 2
    modes = instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.DEGRADATION_MODE)
    assert modes == {("primary",): 2}


def test_a_stream_ending_in_another_request_stays_with_its_own(instrumented, fake_provider):
    kept = []

    async def opens(ctx, params):
        client = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        kept.append(await client.messages.create(model="claude-sonnet-5-5", max_tokens=8,
                                                 messages=[{"role": "user", "content": "hi"}], stream=True))
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="x"),
                                         model="claude-sonnet-5-5")

    async def closes(ctx, params):
        async for _ in kept.pop():
            pass
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="x"),
                                         model="claude-sonnet-5-5")

    anyio.run(call, "legacy", opens)
    anyio.run(call, "legacy", closes)
    _first, second = instrumented.spans(names.SPAN_SAMPLING)
    # The stream ended after its own request had ended: counted there by no one, never in the other.
    assert names.SAMPLING_PROVIDER_CALLS not in second.attributes
    assert instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.DEGRADATION_MODE) == {("primary",): 1}
