"""A server-side ``tools/call`` is a run named ``<server>/<tool>`` (real mcp 2.x sessions in memory,
both protocol eras; the tools call the real anthropic SDK against the fake provider): its provider
calls roll up into it, it fails when the tool does, a 2026-07-28 input-required round is not a run
of its own, and a server that answers from its own model after its sampling request got no answer
is degraded ``server_model``, on its run and on its sampling span."""

from __future__ import annotations

import sys

import anyio
import mcp_types as types
import pytest
from mcp import Client
from opentelemetry.trace import SpanKind

from conftest import instrumenting
from drivers import PATHS, SERVED, callback_returning, result
from model_server import FALLBACK, PRIMARY, SERVER_NAME, build_model_server
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from otel_sampling.records.run import RunScope
from sampling_server import SERVER_NAME as SAMPLING_SERVER
from sampling_server import build_server

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

DENIAL = types.ErrorData(code=-1, message="User rejected sampling request")
OVERLOADED = "status=529,no_retry"


@pytest.fixture
def server_side(telemetry, tmp_path, monkeypatch):
    """What a server process loads: the server instrumentor and the provider SDK's; the fallback
    priced at 1 and 5 USD per million input and output tokens."""
    path = tmp_path / "policy.toml"
    path.write_text(f'[prices."{FALLBACK}"]\ninput_usd_per_mtok = 1.0\noutput_usd_per_mtok = 5.0\n')
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(path))
    with instrumenting(telemetry, MCPServerSamplingInstrumentor, AnthropicInstrumentor):
        yield telemetry


async def call_tool(server, mode, tool, callback=None):
    async with Client(server, mode=mode, sampling_callback=callback) as client:
        out = await client.call_tool(tool, {})
    return out.content[0].text, out.is_error


def runs(telemetry):
    """agent.runs by (run name, mode, outcome)."""
    return telemetry.counts(
        names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE, names.AGENT_RUN_OUTCOME
    )


def run_spans(telemetry):
    return [s for s in telemetry.spans() if s.attributes.get(names.GEN_AI_OPERATION_NAME) == "invoke_agent"]


def incidents(telemetry):
    return telemetry.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME)


def sampling_span(telemetry):
    (span,) = [s for s in telemetry.spans(names.SPAN_SAMPLING) if s.kind is SpanKind.CLIENT]
    return span


@pytest.mark.parametrize("mode", PATHS)
def test_a_tool_served_by_its_primary_is_a_primary_run(server_side, fake_provider, mode):
    text, is_error = anyio.run(call_tool, build_model_server(fake_provider.url), mode, "triage")
    assert (text, is_error) == (PRIMARY, False)
    assert runs(server_side) == {(f"{SERVER_NAME}/triage", "primary", "completed"): 1}
    (span,) = run_spans(server_side)
    assert span.attributes[names.AGENT_RUN_NAME] == f"{SERVER_NAME}/triage"
    (chat,) = server_side.spans(f"chat {PRIMARY}")
    assert chat.context.trace_id == span.context.trace_id  # the provider call is inside the tool's run
    assert incidents(server_side) == {}


@pytest.mark.parametrize("mode", PATHS)
def test_a_fallback_chain_through_a_primary_outage_is_a_degraded_run_and_a_silent_incident(
    server_side, fake_provider, mode
):
    server = build_model_server(fake_provider.url, OVERLOADED)
    text, is_error = anyio.run(call_tool, server, mode, "triage")
    assert (text, is_error) == (FALLBACK, False)
    name = f"{SERVER_NAME}/triage"
    assert runs(server_side) == {(name, "degraded", "completed"): 1}
    (span,) = run_spans(server_side)
    assert span.attributes[names.DEGRADATION_REASON] == ("failover",)
    assert incidents(server_side) == {(name,): 1}
    # the run's cost is the fallback's call (the fake's 25 in, 5 out); the failed primary reported no usage
    costs = server_side.counts(names.METRIC_AGENT_RUN_COST, names.AGENT_RUN_NAME)
    assert costs == {(name,): pytest.approx((25 * 1.0 + 5 * 5.0) / 1e6)}


@pytest.mark.parametrize("mode", PATHS)
def test_a_tool_that_raises_ends_its_run_failed(server_side, fake_provider, mode):
    _, is_error = anyio.run(call_tool, build_model_server(fake_provider.url), mode, "broken")
    assert is_error
    assert runs(server_side) == {(f"{SERVER_NAME}/broken", "primary", "failed"): 1}


@pytest.mark.parametrize("mode", PATHS)
def test_a_sampling_tool_is_one_run_on_both_eras(server_side, mode):
    """On 2026-07-28 the tool call takes two rounds (input_required, then the retry with the
    answer): still one run, ended by the retry."""

    async def go():
        async with Client(build_server(), mode=mode, sampling_callback=callback_returning(result())) as client:
            return await client.call_tool("sample", {})

    out = anyio.run(go)
    assert out.content[0].text.startswith(SERVED)
    assert runs(server_side) == {(f"{SAMPLING_SERVER}/sample", "primary", "completed"): 1}
    span = sampling_span(server_side)
    assert names.DEGRADATION_MODE not in span.attributes


def test_a_refused_request_then_the_servers_own_model_is_server_model(server_side, fake_provider):
    """Legacy era: the client refuses; the tool answers from its own model."""
    text, is_error = anyio.run(
        call_tool, build_model_server(fake_provider.url), "legacy", "summarise", callback_returning(DENIAL)
    )
    assert (text, is_error) == (FALLBACK, False)
    name = f"{SERVER_NAME}/summarise"
    assert runs(server_side) == {(name, "degraded", "completed"): 1}
    (run_span,) = run_spans(server_side)
    assert run_span.attributes[names.DEGRADATION_REASON] == ("server_model",)
    span = sampling_span(server_side)
    assert span.attributes[names.SAMPLING_ENDING] == "user.denied"
    assert span.attributes[names.DEGRADATION_MODE] == "degraded"
    assert span.attributes[names.DEGRADATION_REASON] == ("server_model",)
    assert span.end_time <= run_span.end_time
    assert incidents(server_side) == {(name,): 1}


def test_a_client_without_sampling_then_the_servers_own_model_is_server_model(server_side, fake_provider):
    """Legacy era, a client that declares no sampling: its SDK answers the request with an error."""
    text, _ = anyio.run(call_tool, build_model_server(fake_provider.url), "legacy", "summarise")
    assert text == FALLBACK
    assert runs(server_side) == {(f"{SERVER_NAME}/summarise", "degraded", "completed"): 1}
    span = sampling_span(server_side)
    assert span.attributes[names.SAMPLING_ENDING] != "completed"
    assert span.attributes[names.DEGRADATION_REASON] == ("server_model",)


def test_no_back_channel_then_the_servers_own_model_is_server_model(server_side, fake_provider):
    """2026-07-28 era: the request cannot be sent at all (no back-channel)."""
    text, _ = anyio.run(
        call_tool, build_model_server(fake_provider.url), "auto", "summarise", callback_returning(result())
    )
    assert text == FALLBACK
    assert runs(server_side) == {(f"{SERVER_NAME}/summarise", "degraded", "completed"): 1}
    span = sampling_span(server_side)
    assert span.attributes[names.SAMPLING_PATH] == "no_back_channel"
    assert span.attributes[names.DEGRADATION_REASON] == ("server_model",)


def test_an_answered_request_is_no_server_model(server_side, fake_provider):
    text, _ = anyio.run(
        call_tool, build_model_server(fake_provider.url), "legacy", "summarise", callback_returning(result())
    )
    assert text == SERVED
    assert runs(server_side) == {(f"{SERVER_NAME}/summarise", "primary", "completed"): 1}
    assert names.DEGRADATION_MODE not in sampling_span(server_side).attributes


def test_a_request_with_no_answer_and_no_model_after_it_ends_as_it_was(server_side):
    """The client refuses and the tool fails with it (the client's error frame propagates): the
    span ends at the refusal, not degraded."""
    with pytest.raises(BaseExceptionGroup):
        anyio.run(call_tool, build_server(), "legacy", "sample", callback_returning(DENIAL))
    span = sampling_span(server_side)
    assert names.DEGRADATION_MODE not in span.attributes
    assert runs(server_side) == {(f"{SAMPLING_SERVER}/sample", "primary", "failed"): 1}


def test_run_tool_is_the_server_and_tool_pair():
    assert RunScope("s/t", tool=("s", "t"))._run.tool == ("s", "t")
    assert RunScope("plain")._run.tool is None
    with pytest.raises(TypeError):
        RunScope("s/t", tool=("s",))
