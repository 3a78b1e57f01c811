"""A sampling callback that calls the real anthropic SDK: the sampling span sees the provider calls."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anthropic
import anyio
import mcp_types as types
import pytest

from conftest import call_sample_tool, provider_host_callback, with_policy
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor


def test_sampling_span_records_provider_model_and_usage(instrumented, fake_provider):
    anyio.run(call_sample_tool, "auto", provider_host_callback(fake_provider, "cache"))
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
    callback = provider_host_callback(fake_provider, "status=529", fallback="claude-haiku-5-5")
    out = anyio.run(call_sample_tool, "legacy", callback)
    assert out.content[0].text == "claude-haiku-5-5|endTurn"
    (sampling,) = instrumented.spans(names.SPAN_SAMPLING)
    a = sampling.attributes
    assert a[names.SAMPLING_ENDING] == "completed"
    assert a[names.DEGRADATION_MODE] == "degraded"  # no policy: the failover itself says so
    assert a[names.SAMPLING_PROVIDER_CALLS] == 2
    assert a[names.GEN_AI_RESPONSE_MODEL] == "claude-haiku-5-5"
    # One logical request: counted once, completed once.
    assert instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING, names.DEGRADATION_MODE) == {
        ("completed", "degraded"): 1
    }
    provider = instrumented.counts(
        names.METRIC_GEN_AI_OPERATION_DURATION, names.GEN_AI_REQUEST_MODEL, names.ERROR_TYPE, names.DEGRADATION_MODE
    )
    assert provider == {
        ("claude-sonnet-5-5", "overloaded_error", "primary"): 1,
        ("claude-haiku-5-5", None, "degraded"): 1,
    }


def test_a_request_answered_during_a_drill_is_counted_with_the_drills_name(instrumented, fake_provider):
    import otel_sampling as osm

    callback = provider_host_callback(fake_provider, fallback="claude-haiku-5-5")
    with osm.drill("nightly", target_model="claude-sonnet-5-5", duration=600):
        anyio.run(call_sample_tool, "legacy", callback)
    anyio.run(call_sample_tool, "legacy", callback)  # after the drill: no drill label
    requests = instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.DRILL_NAME, names.GEN_AI_RESPONSE_MODEL)
    assert requests == {("nightly", "claude-haiku-5-5"): 1, (None, "claude-sonnet-5-5"): 1}
    durations = instrumented.counts(names.METRIC_SAMPLING_DURATION, names.DRILL_NAME)
    assert durations == {("nightly",): 1, (None,): 1}
    calls = instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.GEN_AI_REQUEST_MODEL, names.DRILL_NAME)
    assert calls == {
        ("claude-sonnet-5-5", "nightly"): 1,
        ("claude-haiku-5-5", "nightly"): 1,
        ("claude-sonnet-5-5", None): 1,
    }
    # the in-flight count goes up and down on one series, whenever the drill starts or ends
    assert {p.attributes.get(names.DRILL_NAME) for p in instrumented.points(names.METRIC_SAMPLING_IN_FLIGHT)} == {None}


def test_outage_without_fallback_is_model_unavailable(instrumented, fake_provider):
    out = anyio.run(call_sample_tool, "auto", provider_host_callback(fake_provider, "status=529"))
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
                slow = client.messages.create(
                    model=first, max_tokens=8, messages=msgs, extra_headers={"x-fake-scenario": "delay=0.3"}
                )
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
    callback = two_model_callback(fake_provider, "claude-haiku-5-5", "claude-sonnet-5-5", hedge=hedge)
    anyio.run(call_sample_tool, "auto", callback)
    (sampling,) = instrumented.spans(names.SPAN_SAMPLING)
    assert sampling.attributes[names.DEGRADATION_MODE] == "primary"
    assert sampling.attributes[names.SAMPLING_PROVIDER_CALLS] == 2
    modes = instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.DEGRADATION_MODE)
    assert modes == {("primary",): 2}


def test_a_stream_ending_in_another_request_stays_with_its_own(instrumented, fake_provider):
    kept = []

    async def opens(ctx, params):
        client = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        kept.append(
            await client.messages.create(
                model="claude-sonnet-5-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}], stream=True
            )
        )
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="x"), model="claude-sonnet-5-5"
        )

    async def closes(ctx, params):
        async for _ in kept.pop():
            pass
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="x"), model="claude-sonnet-5-5"
        )

    anyio.run(call_sample_tool, "legacy", opens)
    anyio.run(call_sample_tool, "legacy", closes)
    _first, second = instrumented.spans(names.SPAN_SAMPLING)
    # The stream ended after its own request had ended: counted there by no one, never in the other.
    assert names.SAMPLING_PROVIDER_CALLS not in second.attributes
    assert instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.DEGRADATION_MODE) == {("primary",): 1}


# ---------------------------------------------------------------- a -latest alias is its snapshots
LATEST_POLICY = """
[servers."sampling-test-server"]
primary_model = "claude-sonnet-5-5-latest"
permitted_models = ["claude-sonnet-5-5-latest"]
"""


@pytest.fixture
def latest_primary(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    yield from with_policy(
        telemetry, tmp_path, monkeypatch, LATEST_POLICY, MCPSamplingInstrumentor, AnthropicInstrumentor
    )


def test_a_latest_primary_served_by_its_dated_snapshot_is_primary(latest_primary, fake_provider):
    # The provider resolves the alias: asked for claude-sonnet-5-5-latest, it names the snapshot it ran.
    async def callback(ctx, params):
        client = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="k", max_retries=0, open_telemetry=False)
        try:
            message = await client.messages.create(
                model="claude-sonnet-5-5-latest",
                max_tokens=8,
                messages=[{"role": "user", "content": "hi"}],
                extra_headers={"x-fake-scenario": "served_model=claude-sonnet-5-5-20261001"},
            )
        finally:
            await client.close()
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="x"), model=message.model)

    anyio.run(call_sample_tool, "auto", callback)
    (chat,) = latest_primary.spans("chat claude-sonnet-5-5-latest")
    assert chat.attributes[names.DEGRADATION_MODE] == "primary"
    (sampling,) = latest_primary.spans(names.SPAN_SAMPLING)
    a = sampling.attributes
    assert a[names.GEN_AI_RESPONSE_MODEL] == "claude-sonnet-5-5-20261001"
    assert a[names.DEGRADATION_MODE] == "primary" and names.DEGRADATION_REASON not in a
