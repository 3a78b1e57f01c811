"""The degraded mode of sampling requests, as their records end over real MCP sessions and the
real anthropic SDK (the fake provider): each reason of the request table (the rule:
tests/rules/test_verdict.py), canary traffic, named degradations, the compliance boundary,
and a host run around ``call_tool`` that owns the request.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mcp_types", reason="mcp 2.x sessions")

import anthropic
import anyio
import mcp_types as types
from mcp import Client

import otel_sampling as osm
from conftest import _instrumented
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from sampling_server import build_server

ARGS = {"hint": "claude-sonnet", "include_context": "thisServer"}
POLICY = """
[servers."sampling-test-server"]
primary_model = "claude-sonnet-5-5"
permitted_models = ["claude-sonnet-5-5", "claude-haiku-5-5"]
{boundary}

[endpoints."127.0.0.1"]
region = "eu"

[endpoints."api.us.example.com"]
region = "us"
"""


@pytest.fixture
def with_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def write(boundary: str = "") -> None:
        path = tmp_path / "policy.toml"
        path.write_text(POLICY.format(boundary=boundary))
        monkeypatch.setenv(names.ENV_POLICY, str(path))

    write()
    return write


def callback(fake_provider, *steps: tuple[str, str], canary: bool = False):
    """A host callback calling the given (model, fake scenario) in order until one succeeds."""

    async def host(ctx, params):
        client = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        try:
            for model, scenario in steps:
                try:
                    if canary:
                        with osm.canary():
                            message = await client.messages.create(
                                model=model,
                                max_tokens=8,
                                messages=[{"role": "user", "content": "hi"}],
                                extra_headers={"x-fake-scenario": scenario},
                            )
                    else:
                        message = await client.messages.create(
                            model=model,
                            max_tokens=8,
                            messages=[{"role": "user", "content": "hi"}],
                            extra_headers={"x-fake-scenario": scenario},
                        )
                    break
                except anthropic.OverloadedError:
                    continue
            else:
                return types.ErrorData(code=-32603, message="No model", data={"reason": "model.unavailable"})
        finally:
            await client.close()
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="x"), model=message.model, stop_reason="endTurn"
        )

    return host


async def call(mode: str, host, run: str | None = None, disclose: bool = False):
    async with Client(build_server(), mode=mode, sampling_callback=host) as client:
        if run is None:
            return await client.call_tool("sample", ARGS)
        async with osm.run(run):
            result = await client.call_tool("sample", ARGS)
            if disclose:
                osm.disclose("Answered by the fallback model", kind="inline")
            return result


def _sampling(t):
    (span,) = t.spans(names.SPAN_SAMPLING)
    return span.attributes


def _requests(t):
    return t.counts(names.METRIC_SAMPLING_REQUESTS, names.DEGRADATION_MODE, names.DEGRADATION_REASON)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_failover_after_an_error(with_policy, instrumented, fake_provider, mode):
    anyio.run(call, mode, callback(fake_provider, ("claude-sonnet-5-5", "status=529"), ("claude-haiku-5-5", "")))
    a = _sampling(instrumented)
    assert (a[names.DEGRADATION_MODE], a[names.DEGRADATION_REASON]) == ("degraded", ("failover",))
    assert _requests(instrumented) == {("degraded", "failover"): 1}


def test_a_permitted_model_that_is_not_the_primary_is_a_fallback(with_policy, instrumented, fake_provider):
    anyio.run(call, "auto", callback(fake_provider, ("claude-haiku-5-5", "")))
    a = _sampling(instrumented)
    assert a[names.SAMPLING_SUBSTITUTION] == "none"  # served as the host asked the provider
    assert a[names.DEGRADATION_REASON] == ("fallback",)
    assert _requests(instrumented) == {("degraded", "fallback"): 1}


def test_the_provider_serving_another_permitted_model_is_a_fallback_on_both_spans(
    with_policy, instrumented, fake_provider
):
    anyio.run(call, "auto", callback(fake_provider, ("claude-sonnet-5-5", "served_model=claude-haiku-5-5")))
    assert _sampling(instrumented)[names.DEGRADATION_REASON] == ("fallback",)
    (chat,) = instrumented.spans("chat claude-sonnet-5-5")
    assert chat.attributes[names.DEGRADATION_REASON] == ("fallback",)


def test_a_model_outside_policy_is_a_substitution(with_policy, instrumented, fake_provider):
    anyio.run(call, "auto", callback(fake_provider, ("claude-sonnet-5-5", "served_model=claude-opus-5-5")))
    a = _sampling(instrumented)
    assert (a[names.SAMPLING_SUBSTITUTION], a[names.DEGRADATION_REASON]) == ("outside_policy", ("substitution",))


def test_the_primary_has_no_reason(with_policy, instrumented, fake_provider):
    anyio.run(call, "auto", callback(fake_provider, ("claude-sonnet-5-5", "")))
    a = _sampling(instrumented)
    assert a[names.DEGRADATION_MODE] == "primary" and names.DEGRADATION_REASON not in a
    assert _requests(instrumented) == {("primary", None): 1}


def test_canary_traffic_through_the_fallback_is_visible(with_policy, instrumented, fake_provider):
    anyio.run(call, "legacy", callback(fake_provider, ("claude-haiku-5-5", ""), canary=True))
    # The canary first; the call's own reason (off the primary) follows it on the request.
    assert _sampling(instrumented)[names.DEGRADATION_REASON] == ("canary", "fallback")
    assert _requests(instrumented) == {("degraded", "canary"): 1}
    (chat,) = instrumented.spans("chat claude-haiku-5-5")
    assert (chat.attributes[names.DEGRADATION_MODE], chat.attributes[names.DEGRADATION_REASON]) == (
        "degraded",
        ("fallback", "canary"),
    )


def test_a_named_degradation_degrades_a_primary_request(with_policy, instrumented, fake_provider):
    with osm.degraded("search", reason="sources unavailable", owner="oncall", expires_at="2099-01-01T00:00:00Z"):
        anyio.run(call, "auto", callback(fake_provider, ("claude-sonnet-5-5", "")))
    a = _sampling(instrumented)
    assert (a[names.DEGRADATION_MODE], a[names.DEGRADATION_REASON]) == ("degraded", ("sources unavailable",))
    chat = instrumented.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.DEGRADATION_MODE)
    assert chat == {("degraded",): 1}


@pytest.mark.parametrize(
    ("boundary", "crossed"),
    [
        ('permitted_providers = ["anthropic"]', 0),
        ('permitted_providers = ["openai"]', 1),
        ('permitted_regions = ["eu"]', 0),  # the fake provider's endpoint is 127.0.0.1, region eu
        ('permitted_regions = ["us"]', 1),
    ],
)
def test_compliance_boundary(with_policy, fake_provider, telemetry, boundary, crossed):
    with_policy(boundary)
    fixture = _instrumented(telemetry, MCPSamplingInstrumentor, AnthropicInstrumentor)
    next(fixture)
    try:
        anyio.run(call, "auto", callback(fake_provider, ("claude-sonnet-5-5", "")))
    finally:
        next(fixture, None)
    violations = telemetry.counts(
        names.METRIC_SAMPLING_VIOLATIONS, names.MCP_SERVER_NAME, names.SAMPLING_VIOLATION_KIND
    )
    assert violations == ({("sampling-test-server", "boundary_crossed"): 1} if crossed else {})


@pytest.mark.parametrize("disclose", [False, True])
def test_a_host_run_around_call_tool_owns_the_sampling_request(with_policy, instrumented, fake_provider, disclose):
    # legacy: the sampling callback runs in mcp's receive task; the request's traceparent ties it to the run
    anyio.run(
        call,
        "legacy",
        callback(fake_provider, ("claude-sonnet-5-5", "status=529"), ("claude-haiku-5-5", "")),
        "triage",
        disclose,
    )
    t = instrumented
    runs = t.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE, names.AGENT_RUN_DISCLOSED)
    # the only run: the request is the host run's, and the test server's own spans are no run
    assert runs == {("triage", "degraded", "true" if disclose else "false"): 1}
    assert t.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME) == ({} if disclose else {("triage",): 1})


def test_a_request_that_started_during_a_degradation_stays_degraded(with_policy, instrumented, fake_provider):
    outage = osm.degraded("search", reason="sources unavailable", owner="oncall", expires_at="2099-01-01T00:00:00Z")
    answer = callback(fake_provider, ("claude-sonnet-5-5", ""))

    async def host(ctx, params):
        outage.exit()  # recovery while the request is being answered
        return await answer(ctx, params)

    outage.enter()
    anyio.run(call, "auto", host)
    a = _sampling(instrumented)
    assert (a[names.DEGRADATION_MODE], a[names.DEGRADATION_REASON]) == ("degraded", ("sources unavailable",))
    assert _requests(instrumented) == {("degraded", "sources unavailable"): 1}
    (chat,) = instrumented.spans("chat claude-sonnet-5-5")  # started after the exit
    assert chat.attributes[names.DEGRADATION_MODE] == "primary"
