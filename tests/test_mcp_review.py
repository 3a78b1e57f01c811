"""Adversarial review of MCP sampling on real sessions (both sides, both protocol paths): hostile
request fields, content that must stay out of telemetry, the denial vocabulary round trip, and
peer errors reaching the host unchanged (``/cases``: items 7, 14, 15, 16)."""

from __future__ import annotations

import logging
import anyio
import mcp_types as types
import pytest
from conftest import TRACER_PROVIDER
from mcp import Client, MCPError
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.trace import SpanKind
from sampling_server import build_asking_server, build_server

import otel_sampling
from otel_sampling import names
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor

PATHS = {"legacy": names.PATH_RPC, "auto": names.PATH_MRTR}
SENTINEL = "SENTINEL-7f3a"
SERVED = "claude-sonnet-5-5-20261001"
INT64_MAX = 2**63 - 1  # OTLP AnyValue.int_value is an int64


@pytest.fixture
def both(telemetry):
    """Host and server instrumentors on one meter provider."""
    host, server = MCPSamplingInstrumentor(), MCPServerSamplingInstrumentor()
    for instrumentor in (host, server):
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    yield telemetry
    server.uninstrument()
    host.uninstrument()


def result(model: str = SERVED, stop_reason: str = "endTurn") -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(text="ok"), model=model,
                                     stop_reason=stop_reason)


def returning(value):
    async def callback(ctx, params):
        return value
    return callback


async def call(server, mode, callback, tool="ask", args=None):
    async with Client(server, mode=mode, sampling_callback=callback) as client:
        try:
            return await client.call_tool(tool, args or {})
        except BaseException as exc:  # noqa: BLE001 - the test inspects what the host got
            return exc


def sampling_spans(telemetry, kind=None):
    return [s for s in telemetry.spans(names.SPAN_SAMPLING) if kind is None or s.kind is kind]


# ---------------------------------------------------------------- hostile request fields
@pytest.mark.parametrize("mode", PATHS)
def test_max_tokens_beyond_int64_is_left_off_the_spans_and_they_still_export(both, mode, caplog):
    """JSON has no integer bound and mcp accepts any int; OTLP carries int64 only, so a huge
    ``maxTokens`` would make every exporter fail on the attribute (and log a traceback per span)."""
    out = anyio.run(call, build_asking_server(max_tokens=10**20), mode, returning(result()))
    assert out.content[0].text == f"{SERVED}|endTurn"
    spans = sampling_spans(both)
    assert {s.kind for s in spans} == {SpanKind.SERVER, SpanKind.CLIENT}
    assert all(names.GEN_AI_REQUEST_MAX_TOKENS not in s.attributes for s in spans)
    with caplog.at_level(logging.ERROR):
        encode_spans(spans)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("max_tokens", [-5, INT64_MAX])
def test_max_tokens_within_int64_is_recorded_as_sent(both, max_tokens):
    anyio.run(call, build_asking_server(max_tokens=max_tokens), "legacy", returning(result()))
    assert [s.attributes[names.GEN_AI_REQUEST_MAX_TOKENS] for s in sampling_spans(both)] == [max_tokens] * 2


@pytest.mark.parametrize("mode", PATHS)
def test_image_and_audio_messages_never_reach_attributes_raw(both, mode):
    """Case 7: pydantic content objects are never passed into attributes; labels are scalars from
    the allow-list; the fingerprint covers the content (another image, another identity)."""
    def asking(data: str):
        return build_asking_server(messages=[
            types.SamplingMessage(role="user", content=types.ImageContent(data=data, mime_type="image/png")),
            types.SamplingMessage(role="user", content=types.AudioContent(data="UklGRg==", mime_type="audio/wav")),
        ])

    anyio.run(call, asking("aGVsbG8="), mode, returning(result()))
    anyio.run(call, asking("d29ybGQ="), mode, returning(result()))
    spans = sampling_spans(both)
    assert len(spans) == 4
    for span in spans:
        for value in span.attributes.values():
            assert isinstance(value, (str, int, float, bool)) or all(isinstance(v, str) for v in value)
        assert not any("aGVsbG8" in str(v) or "image/png" in str(v) for v in span.attributes.values())
    host = sampling_spans(both, SpanKind.SERVER)
    first, second = (s.attributes[names.SAMPLING_FINGERPRINT] for s in host)
    assert first != second
    (labels,) = {tuple(sorted(p.attributes)) for p in both.points(names.METRIC_SAMPLING_REQUESTS)}
    assert set(labels) == {names.MCP_SERVER_NAME, names.SAMPLING_PATH, names.SAMPLING_ENDING,
                           names.SAMPLING_SUBSTITUTION, names.DEGRADATION_MODE,
                           names.SAMPLING_INCLUDE_CONTEXT_REQUESTED, names.SAMPLING_INCLUDE_CONTEXT_GRANTED,
                           names.GEN_AI_RESPONSE_MODEL}


# ---------------------------------------------------------------- semantics (case 14)
@pytest.mark.parametrize("mode", PATHS)
def test_max_tokens_stop_reason_is_completed_and_truncation_recorded(both, mode):
    """MCP spec: stopReason "maxTokens" is a completed (truncated) result, not an error."""
    out = anyio.run(call, build_server(), mode, returning(result(stop_reason="maxTokens")), "sample",
                    {"hint": "claude-sonnet", "include_context": "none"})
    assert out.content[0].text == f"{SERVED}|maxTokens"
    for span in sampling_spans(both):
        assert span.attributes[names.SAMPLING_ENDING] == "completed"
        assert span.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("maxTokens",)
        assert names.ERROR_TYPE not in span.attributes


# ---------------------------------------------------------------- content stays out (case 15)
@pytest.mark.parametrize("mode", PATHS)
@pytest.mark.parametrize("ending", ["completed", "denied", "raised"])
def test_content_reaches_no_span_event_log_or_label(both, mode, ending, caplog):
    """A sentinel in the messages, system prompt, metadata, the error message and the exception
    message appears nowhere in telemetry (content capture is off by default)."""
    server = build_asking_server(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(text=f"ticket {SENTINEL}"))],
        system_prompt=f"system {SENTINEL}", metadata={"note": SENTINEL, SENTINEL: 1},
        stop_sequences=[SENTINEL])

    async def callback(ctx, params):
        if ending == "denied":
            return otel_sampling.sampling_error("policy.denied", f"denied {SENTINEL}")
        if ending == "raised":
            raise MCPError(-32003, f"no {SENTINEL}", data={"reason": "policy.denied", "detail": SENTINEL})
        return result()

    with caplog.at_level(logging.DEBUG):
        anyio.run(call, server, mode, callback)
    spans = sampling_spans(both)
    assert spans
    for span in spans:
        texts = [str(v) for v in span.attributes.values()] + [span.name]
        texts += [str(v) for event in span.events for v in event.attributes.values()]
        assert not [t for t in texts if SENTINEL in t]
    metrics = both.reader.get_metrics_data()
    labels = [str(v) for rm in metrics.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
              for p in m.data.data_points for v in p.attributes.values()]
    assert labels and not [v for v in labels if SENTINEL in v]
    ours = [r for r in caplog.records if r.name.startswith("otel_sampling")]
    assert not [r for r in ours if SENTINEL in r.getMessage() or SENTINEL in str(r.exc_info)]
