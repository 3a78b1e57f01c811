"""Our new bookkeeping failing (identity store, stall watch, server-side records) never changes what
the host or the server sees, and the request is still counted."""

from __future__ import annotations

import anyio
import mcp_types as types
from mcp import Client

from conftest import TRACER_PROVIDER
from otel_sampling import names
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from otel_sampling.records.identity import IdentityStore
from otel_sampling.records.server_sampling import ServerSamplingRecord
from otel_sampling.records.stalls import PendingWatch
from sampling_server import SERVER_NAME, build_server

ARGS = {"hint": "claude-sonnet", "include_context": "thisServer"}
RESULT = types.CreateMessageResult(role="assistant", content=types.TextContent(text="ok"),
                                   model="claude-sonnet-5-5", stop_reason="endTurn")


async def callback(ctx, params):
    return RESULT


async def call(mode):
    async with Client(build_server(), mode=mode, sampling_callback=callback) as client:
        return (await client.call_tool("sample", ARGS)).content[0].text


def broken(*args, **kwargs):
    raise RuntimeError("broken bookkeeping")


def test_broken_identity_store_and_stall_watch_lose_nothing(mcp_instrumented, monkeypatch):
    monkeypatch.setattr(IdentityStore, "put", broken)
    monkeypatch.setattr(PendingWatch, "add", broken)
    for mode in ("legacy", "auto"):
        assert anyio.run(call, mode) == "claude-sonnet-5-5|endTurn"
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING) == {("completed",): 2}
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 0}
    assert len(mcp_instrumented.spans(names.SPAN_SAMPLING)) == 2


def test_broken_server_side_records_do_not_reach_the_server(telemetry, monkeypatch):
    monkeypatch.setattr(ServerSamplingRecord, "__init__", broken)
    instrumentor = MCPServerSamplingInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        for mode in ("legacy", "auto"):
            assert anyio.run(call, mode) == "claude-sonnet-5-5|endTurn"
    finally:
        instrumentor.uninstrument()
    assert telemetry.points(names.METRIC_SAMPLING_SERVER_REQUESTS) == []
