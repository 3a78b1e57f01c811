"""What the MCP server sees of its sampling requests, on both protocol paths, plus streamable HTTP
on 127.0.0.1 (session id, transport) and the stall watchdog on a real session."""

from __future__ import annotations

import contextlib
import sys
import time

import anyio
import mcp_types as types
import pytest
import uvicorn
from mcp import Client, MCPError
from opentelemetry.trace import SpanKind, StatusCode

from conftest import TRACER_PROVIDER
from otel_sampling import names, state
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from sampling_server import SERVER_NAME, build_server

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

PATHS = {"legacy": names.PATH_RPC, "auto": names.PATH_MRTR}
ARGS = {"hint": "claude-sonnet", "include_context": "thisServer"}
SERVED = "claude-sonnet-5-5-20261001"


@pytest.fixture
def both(telemetry):
    """Host and server instrumentors on one meter provider; yields (telemetry, server instrumentor)."""
    host, server = MCPSamplingInstrumentor(), MCPServerSamplingInstrumentor()
    for instrumentor in (host, server):
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    yield telemetry, server
    server.uninstrument()
    host.uninstrument()


def result() -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(text="ok"), model=SERVED,
                                     stop_reason="endTurn")


def returning(value):
    async def callback(ctx, params):
        return value
    return callback


async def call(target, mode, callback, tool="sample", args=None):
    async with Client(target, mode=mode, sampling_callback=callback) as client:
        try:
            return await client.call_tool(tool, ARGS if args is None else args)
        except BaseException as exc:  # noqa: BLE001 - the test inspects what the host got
            return exc


def server_spans(telemetry):
    return [s for s in telemetry.spans(names.SPAN_SAMPLING) if s.kind is SpanKind.CLIENT]


def host_spans(telemetry):
    return [s for s in telemetry.spans(names.SPAN_SAMPLING) if s.kind is SpanKind.SERVER]


def server_counts(telemetry):
    return telemetry.counts(names.METRIC_SAMPLING_SERVER_REQUESTS, names.SAMPLING_PATH, names.SAMPLING_ENDING,
                            names.GEN_AI_RESPONSE_MODEL)


@pytest.mark.parametrize("mode", PATHS)
def test_server_sees_the_completed_request(both, mode):
    telemetry, _ = both
    anyio.run(call, build_server(), mode, returning(result()))
    (span,) = server_spans(telemetry)
    attrs = span.attributes
    assert attrs[names.MCP_METHOD_NAME] == "sampling/createMessage"
    assert attrs[names.SAMPLING_PATH] == PATHS[mode]
    assert attrs[names.SAMPLING_ENDING] == "completed"
    assert attrs[names.GEN_AI_RESPONSE_MODEL] == SERVED
    assert attrs[names.SAMPLING_INCLUDE_CONTEXT_REQUESTED] == "thisServer"
    assert attrs[names.MCP_SERVER_NAME] == SERVER_NAME
    assert attrs[names.GEN_AI_TOOL_NAME] == "sample"
    assert server_counts(telemetry) == {(PATHS[mode], "completed", SERVED): 1}


def test_legacy_denial_reaches_the_server(both):
    telemetry, _ = both
    denial = types.ErrorData(code=-1, message="User rejected sampling request")
    out = anyio.run(call, build_server(), "legacy", returning(denial))
    assert isinstance(out, MCPError) and out.code == -1
    (span,) = server_spans(telemetry)
    assert span.attributes[names.SAMPLING_ENDING] == "user.denied"
    assert span.attributes[names.ERROR_TYPE] == "-1"
    assert span.status.status_code is StatusCode.ERROR
    assert server_counts(telemetry) == {("rpc", "user.denied", "_unknown"): 1}


def test_legacy_server_span_parents_the_sdk_send_span(both):
    telemetry, _ = both
    anyio.run(call, build_server(), "legacy", returning(result()))
    (ours,) = server_spans(telemetry)
    (send,) = [s for s in telemetry.spans(scope=None) if s.name == "MCP send sampling/createMessage"]
    assert send.parent is not None and send.parent.span_id == ours.context.span_id


def test_mrtr_denial_never_reaches_the_server_and_is_unanswered(both):
    telemetry, server = both
    denial = types.ErrorData(code=-1, message="User rejected sampling request")
    out = anyio.run(call, build_server(), "auto", returning(denial))
    assert isinstance(out, MCPError) and out.code == -1  # raised on the host; nothing was sent
    assert server_spans(telemetry) == []  # the server is still waiting for a retry
    server._state.pending.sweep(time.monotonic() + 301)  # the watchdog, once the wait is over (300 s)
    (span,) = server_spans(telemetry)
    assert span.attributes[names.SAMPLING_ENDING] == "unanswered"
    assert span.attributes[names.SAMPLING_PATH] == "mrtr"
    assert server_counts(telemetry) == {("mrtr", "unanswered", "_unknown"): 1}
    assert len(server._state.pending) == 0


def test_mrtr_request_not_yet_due_stays_pending(both):
    telemetry, server = both
    anyio.run(call, build_server(), "auto", returning(types.ErrorData(code=-1, message="no")))
    server._state.pending.sweep(time.monotonic() + 10)
    assert server_spans(telemetry) == [] and len(server._state.pending) == 1


def test_mcp_error_raised_on_the_2026_path_is_still_budget_exhausted(both):
    """The SDK surfaces a raising callback as an exception group on 2026-07-28; the host span still
    reads the error frame."""
    telemetry, _ = both
    raised = MCPError(-32003, "Daily limit", data={"reason": "policy.budget_exhausted",
                                                    "resetsAt": "2026-12-01T00:00:00Z"})

    async def callback(ctx, params):
        raise raised

    out = anyio.run(call, build_server(), "auto", callback)
    assert isinstance(out, BaseExceptionGroup) and out.exceptions[0] is raised
    (span,) = host_spans(telemetry)
    assert span.attributes[names.SAMPLING_ENDING] == "policy.budget_exhausted"
    assert span.attributes[names.SAMPLING_BUDGET_RESETS_AT] == "2026-12-01T00:00:00Z"


def test_stall_event_names_server_and_tool(both):
    """The watchdog's sweep (run here by the test at a later clock) flags a pending request once."""
    telemetry, _ = both
    ledger = state.host_ledger()
    swept = []

    async def callback(ctx, params):
        swept.append(ledger.pending.sweep(time.monotonic() + 31))  # default threshold 30 s
        swept.append(ledger.pending.sweep(time.monotonic() + 62))  # reported once only
        return result()

    anyio.run(call, build_server(), "auto", callback)
    assert swept == [1, 0]
    (span,) = host_spans(telemetry)
    (event,) = [e for e in span.events if e.name == names.EVENT_SAMPLING_STALL]
    assert event.attributes[names.MCP_SERVER_NAME] == SERVER_NAME
    assert event.attributes[names.GEN_AI_TOOL_NAME] == "sample"
    assert event.attributes[names.SAMPLING_PENDING_SECONDS] >= 31
    assert telemetry.counts(names.METRIC_SAMPLING_STALLS, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 1}
    assert telemetry.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 0}
    assert len(ledger.pending) == 0


def test_no_stall_before_the_threshold(both):
    telemetry, _ = both
    ledger = state.host_ledger()

    async def callback(ctx, params):
        ledger.pending.sweep(time.monotonic() + 29)
        return result()

    anyio.run(call, build_server(), "legacy", callback)
    assert telemetry.points(names.METRIC_SAMPLING_STALLS) == []
    assert [e for e in host_spans(telemetry)[0].events if e.name == names.EVENT_SAMPLING_STALL] == []


async def _serve_http(body):
    """Run the test server over streamable HTTP on 127.0.0.1 (a free port) around ``body(url)``."""
    config = uvicorn.Config(build_server().streamable_http_app(), host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:
            await anyio.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            return await body(f"http://127.0.0.1:{port}/mcp")
        finally:
            server.should_exit = True


@pytest.mark.parametrize("mode", PATHS)
def test_streamable_http_session_id_and_transport(both, mode):
    telemetry, _ = both
    sessions = []

    async def body(url):
        async with Client(url, mode=mode, sampling_callback=returning(result())) as client:
            sessions.append(client.session)
            return await client.call_tool("sample", ARGS)

    out = anyio.run(_serve_http, body)
    assert out.content[0].text == f"{SERVED}|endTurn"
    (host,) = host_spans(telemetry)
    (server,) = server_spans(telemetry)
    assert host.attributes[names.NETWORK_TRANSPORT] == "tcp"
    assert host.attributes[names.MCP_SERVER_VERSION] == "1.0.0"
    assert server.attributes[names.SAMPLING_ENDING] == "completed"
    if mode == "legacy":  # the stateful legacy connection has a session id; 2026-07-28 is stateless
        session_id = host.attributes[names.MCP_SESSION_ID]
        assert len(session_id) >= 16
        assert server.attributes[names.MCP_SESSION_ID] == session_id
    else:
        assert names.MCP_SESSION_ID not in host.attributes


@pytest.mark.parametrize("mode", PATHS)
def test_violation_over_streamable_http(both, mode):
    telemetry, _ = both
    answers = [result(), types.ErrorData(code=-32003, message="Denied", data={"reason": "policy.denied"})]

    async def callback(ctx, params):
        return answers.pop(0)

    async def body(url):
        for _ in range(2):
            async with Client(url, mode=mode, sampling_callback=callback) as client:
                with contextlib.suppress(MCPError):
                    await client.call_tool("sample", ARGS)

    anyio.run(_serve_http, body)
    assert telemetry.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND) == {
        ("decision_flipped",): 1}


def test_uninstrument_ends_pending_requests_unanswered(telemetry):
    """No retry can come once the server stops: its pending 2026-07-28 requests end unanswered."""
    server = MCPServerSamplingInstrumentor()
    server.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        anyio.run(call, build_server(), "auto", returning(types.ErrorData(code=-1, message="no")))
        assert server_spans(telemetry) == []
    finally:  # never leave the server side instrumented for later tests
        server.uninstrument()
    (span,) = server_spans(telemetry)
    assert span.attributes[names.SAMPLING_ENDING] == "unanswered"
