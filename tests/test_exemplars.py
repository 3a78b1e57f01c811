"""Exemplars name our span: every metric point of ours is recorded in the context of the span it
describes.

The OpenTelemetry SDK attaches an exemplar to a measurement when its exemplar filter lets it
through; the default filter (``trace_based``, ``OTEL_METRICS_EXEMPLAR_FILTER``) takes the span of
the context the measurement is recorded in (``add`` / ``record(..., context=...)``, the current
context when none is given) and keeps the measurement only when that span is sampled. Our points
are recorded when a request or call ends, after its span stopped being current, or on the
watchdog thread (stalls), where nothing is current: each must name its own span, not the parent
or none. Read here through an SDK ``MeterProvider`` with ``TraceBasedExemplarFilter`` and an
``InMemoryMetricReader``: each exemplar's ``span_id`` / ``trace_id``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import anyio
import openai
import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider, TraceBasedExemplarFilter
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

import otel_sampling
from conftest import (
    POLICY_TOML,
    SPANS,
    TRACER_PROVIDER,
    Telemetry,
    _instrumented,
    call_sample_tool,
    provider_host_callback,
)
from drivers import call, callback_returning, result
from otel_sampling import names
from otel_sampling import state as otel_state
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

pytest.importorskip("mcp_types", reason="mcp 2.x sessions")

PATHS = ("legacy", "auto")
MESSAGES = [{"role": "user", "content": "hi"}]
PRICES = """
[prices."claude-sonnet-5-5"]
input_usd_per_mtok = 3.0
output_usd_per_mtok = 15.0
"""


class ExemplarTelemetry(Telemetry):
    """The conftest telemetry, its meter provider with the trace-based exemplar filter named.

    The SDK hands each exemplar to one collection only (the reservoir is emptied when collected),
    so every metric is read from the first collection after the workload.
    """

    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader], exemplar_filter=TraceBasedExemplarFilter())
        self._collected = None

    def exemplar_spans(self, metric: str) -> set[tuple[int, int]]:
        """``(trace_id, span_id)`` of every exemplar of every point of ``metric``."""
        if self._collected is None:
            self._collected = self.reader.get_metrics_data()
        points = [
            p
            for rm in self._collected.resource_metrics
            for sm in rm.scope_metrics
            for m in sm.metrics
            if m.name == metric
            for p in m.data.data_points
        ]
        found = {(e.trace_id, e.span_id) for p in points for e in p.exemplars}
        assert found, f"{metric}: no exemplar at all"
        return found


def ids(span) -> set[tuple[int, int]]:
    return {(span.context.trace_id, span.context.span_id)}


def _instrumentors(*classes) -> Iterator[ExemplarTelemetry]:
    SPANS.clear()
    telemetry = ExemplarTelemetry()
    yield from _instrumented(telemetry, *classes)
    telemetry.meter_provider.shutdown()


@pytest.fixture
def host() -> Iterator[ExemplarTelemetry]:
    yield from _instrumentors(MCPSamplingInstrumentor, AnthropicInstrumentor, OpenAIInstrumentor)


@pytest.fixture
def host_with_policy(tmp_path: Path, monkeypatch) -> Iterator[ExemplarTelemetry]:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY_TOML + PRICES)
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(path))
    yield from _instrumentors(MCPSamplingInstrumentor, AnthropicInstrumentor)


@pytest.fixture
def server() -> Iterator[ExemplarTelemetry]:
    yield from _instrumentors(MCPSamplingInstrumentor, MCPServerSamplingInstrumentor)


@pytest.mark.parametrize("mode", PATHS)
def test_a_sampling_request_and_its_provider_call_each_name_their_own_span(mode, host, fake_provider):
    anyio.run(call_sample_tool, mode, provider_host_callback(fake_provider))
    (sampling,) = host.spans(names.SPAN_SAMPLING)
    (chat,) = host.spans("chat claude-sonnet-5-5")
    for metric in (names.METRIC_SAMPLING_REQUESTS, names.METRIC_SAMPLING_DURATION):
        assert host.exemplar_spans(metric) == ids(sampling), metric
    for metric in (names.METRIC_GEN_AI_OPERATION_DURATION, names.METRIC_GEN_AI_TOKEN_USAGE):
        assert host.exemplar_spans(metric) == ids(chat), metric


def test_a_stream_s_time_to_first_chunk_names_its_chat_span(host, fake_provider):
    c = openai.OpenAI(base_url=fake_provider.url + "/v1", api_key="sk-fake", max_retries=0)
    for _ in c.chat.completions.create(
        model="gpt-req", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    ):
        pass
    (chat,) = host.spans("chat gpt-req")
    for metric in (
        names.METRIC_GEN_AI_TIME_TO_FIRST_CHUNK,
        names.METRIC_GEN_AI_OPERATION_DURATION,
        names.METRIC_GEN_AI_TOKEN_USAGE,
    ):
        assert host.exemplar_spans(metric) == ids(chat), metric


def test_cost_and_a_violation_name_their_spans(host_with_policy, fake_provider):
    """A priced call (otel_sampling.client.cost.usd) inside a request whose answer names a model outside
    the server's permitted models (otel_sampling.sampling.violations)."""

    async def callback(ctx, params):
        client = anthropic.AsyncAnthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
        await client.messages.create(model="claude-sonnet-5-5", max_tokens=8, messages=MESSAGES)
        await client.close()
        return result(model="gpt-outside-policy")

    anyio.run(call_sample_tool, "legacy", callback)
    (sampling,) = host_with_policy.spans(names.SPAN_SAMPLING)
    (chat,) = host_with_policy.spans("chat claude-sonnet-5-5")
    assert host_with_policy.exemplar_spans(names.METRIC_CLIENT_COST) == ids(chat)
    assert host_with_policy.exemplar_spans(names.METRIC_SAMPLING_VIOLATIONS) == ids(sampling)


def test_a_stall_reported_by_the_watchdog_thread_names_its_request(host, fake_provider):
    ledger = otel_state.host_ledger()

    async def callback(ctx, params):
        sweep = threading.Thread(target=ledger.pending.sweep, args=(time.monotonic() + 31,))  # past the 30 s default
        sweep.start()
        sweep.join()
        return result()

    anyio.run(call, "legacy", callback)
    (sampling,) = host.spans(names.SPAN_SAMPLING)
    assert host.exemplar_spans(names.METRIC_SAMPLING_STALLS) == ids(sampling)


@pytest.mark.parametrize("mode", PATHS)
def test_the_server_s_request_names_its_client_span(mode, server):
    anyio.run(call, mode, callback_returning(result()))
    (client_span,) = [s for s in server.spans(names.SPAN_SAMPLING) if s.kind is trace.SpanKind.CLIENT]
    assert server.exemplar_spans(names.METRIC_SAMPLING_SERVER_REQUESTS) == ids(client_span)


RUN_METRICS = (
    names.METRIC_AGENT_RUNS,
    names.METRIC_AGENT_RUN_DURATION,
    names.METRIC_AGENT_RUN_COST,
    names.METRIC_SILENT_INCIDENTS,
)


def _substituted_call(fake_provider) -> None:
    """A call whose served model is not the one asked for: degraded, so the run is a silent incident.
    Both models are priced by genai-prices (a run with an unpriced call records no cost point)."""
    c = openai.OpenAI(base_url=fake_provider.url + "/v1", api_key="sk-fake", max_retries=0)
    c.chat.completions.create(
        model="gpt-4o", messages=MESSAGES, extra_headers={"x-fake-scenario": "served_model=gpt-4o-mini"}
    )


def test_an_explicit_run_names_its_run_span(host, fake_provider):
    with otel_sampling.run("triage"):
        _substituted_call(fake_provider)
    (run_span,) = host.spans(f"{names.OPERATION_INVOKE_AGENT} triage")
    for metric in RUN_METRICS:
        assert host.exemplar_spans(metric) == ids(run_span), metric


def test_an_agent_span_s_run_names_that_span(host, fake_provider):
    with TRACER_PROVIDER.get_tracer("host").start_as_current_span(
        "triage-task", attributes={names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT}
    ):
        _substituted_call(fake_provider)
    (root,) = host.spans("triage-task", scope=None)
    for metric in RUN_METRICS:
        assert host.exemplar_spans(metric) == ids(root), metric


@pytest.mark.parametrize("mode", PATHS)
def test_a_sampling_request_s_own_run_names_its_sampling_span(mode, host_with_policy):
    """No run owns the request: its own run's points name the request's span (the silent incident
    too: served by a model outside the policy)."""
    anyio.run(call, mode, callback_returning(result(model="claude-opus-5-5")))
    (sampling,) = host_with_policy.spans(names.SPAN_SAMPLING)
    for metric in RUN_METRICS:
        assert host_with_policy.exemplar_spans(metric) == ids(sampling), metric


@pytest.mark.parametrize("inside_a_span", [True, False])
def test_a_grant_names_the_span_that_carries_its_event(inside_a_span, host):
    def grant():
        otel_sampling.record_grant("sampling-test-server", 5.0, "2026-12-01T00:00:00Z", "approver-1")

    if inside_a_span:
        with TRACER_PROVIDER.get_tracer("host").start_as_current_span("approval"):
            grant()
        (span,) = host.spans("approval", scope=None)
    else:
        grant()
        (span,) = host.spans(names.SPAN_SAMPLING_GRANT)
    for metric in (names.METRIC_SAMPLING_GRANTS, names.METRIC_SAMPLING_GRANTED_USD):
        assert host.exemplar_spans(metric) == ids(span), metric
