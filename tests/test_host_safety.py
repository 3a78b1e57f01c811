"""Telemetry never breaks the host, and hostile or odd input never breaks the telemetry.

Each test is a fault a reviewer found by trying to break the instrumentation: a provider or span
processor that raises, a poisoned ``params._meta``, odd callback returns, a foreign wrapper over
ours, a session opened before ``instrument()``, error bodies choosing their own type names.
"""

from __future__ import annotations

import copy

import anthropic
import anyio
import mcp_types as types
import pytest
import wrapt
from mcp import Client, MCPError
from mcp.client.session import ClientSession
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import SpanProcessor

from conftest import TRACER_PROVIDER
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from sampling_server import SERVER_NAME, build_server
from test_mcp_sampling import call, callback_returning, only_sampling_span, result


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
            p for p in TRACER_PROVIDER._active_span_processor._span_processors if p is not processor)
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


@pytest.mark.parametrize("meta", [
    {"traceparent": 1},
    {"traceparent": "00-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-bbbbbbbbbbbbbbbb-01", "baggage": 5},
    {"traceparent": "garbage"},
    {"traceparent": "00-00000000000000000000000000000000-0000000000000000-01"},
])
def test_poisoned_trace_context_still_gives_one_span_under_the_ambient_parent(mcp_instrumented, meta):
    tracer = TRACER_PROVIDER.get_tracer("host")

    async def main():
        async with Client(build_server(), mode="legacy", sampling_callback=callback_returning(result())) as client:
            with tracer.start_as_current_span("host work") as host_span:
                ctx = type("Ctx", (), {"request_id": 1, "meta": meta})()
                request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(
                    messages=[types.SamplingMessage(role="user", content=types.TextContent(text="x"))], max_tokens=5))
                await client.session.dispatch_input_request(ctx, request)
                return host_span

    host_span = anyio.run(main)
    span = only_sampling_span(mcp_instrumented)
    assert span.parent is not None and span.parent.span_id == host_span.get_span_context().span_id


@pytest.mark.parametrize(("returned", "ending", "model"), [
    ({"code": -1, "message": "User rejected sampling request"}, "user.denied", None),
    ({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "gpt-4o", "stopReason": "endTurn"},
     "completed", "gpt-4o"),
    (None, "error", None),
])
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
    hints = ",".join([f"other-{i}" for i in range(19)] + ["claude-sonnet"])
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
                client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "x"}],
                                       extra_headers={"x-fake-scenario": f"status={status}"})
    finally:
        instrumentor.uninstrument()
    span_types = [s.attributes[names.ERROR_TYPE] for s in telemetry.spans() if s.name == "chat m"]
    assert len(set(span_types)) == 5  # the spans keep every type
    labels = telemetry.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.ERROR_TYPE)
    assert set(labels) == {(t,) for t in span_types[:3]} | {("_other",)}
    assert sum(labels.values()) == 5


def test_a_long_model_name_is_cut_in_the_span_name(anthropic_instrumented, fake_provider):
    client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
    model = "m" * 10_000 + "\n\x1b"
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
