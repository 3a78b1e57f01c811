"""Host-side MCP sampling on mcp 1.x: the same span, attributes, endings and metrics as on mcp 2.x,
and the same host state (request identity and violations, stalls, grants, server and connection
facts); inside ``suppress_instrumentation()``, nothing.

Real mcp 1.x sessions: in-memory (``create_connected_server_and_client_session``), a stdio
subprocess and streamable HTTP on 127.0.0.1. Skipped when mcp 2.x is installed; ``make test-matrix``
runs it against the oldest and the newest supported mcp 1.x.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest

if int(version("mcp").split(".")[0]) != 1:
    pytest.skip("mcp 1.x only (mcp 2.x is covered by test_mcp_sampling.py)", allow_module_level=True)

import anyio
import wrapt
from mcp import ClientSession, StdioServerParameters, types
from mcp.client import stdio as mcp_stdio
from mcp.client import streamable_http as mcp_streamable_http
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import StreamableHTTPTransport, streamablehttp_client
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.shared.session import RequestResponder
from opentelemetry import trace
from opentelemetry.instrumentation.utils import suppress_instrumentation
from opentelemetry.trace import SpanKind, StatusCode

import otel_sampling
from drivers import callback_returning, in_a_task_of_its_own, only_sampling_span, serve_streamable_http
from harness.limits import HANG_S
from mcp_v1_server import SERVER_NAME, SERVER_VERSION, build_server
from otel_sampling import names, state
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.rules.servers import stdio_endpoint

ARGS = {"hint": "claude-sonnet", "include_context": "thisServer"}
SERVED = "claude-sonnet-5-5-20261001"


def result(model: str = SERVED, stop_reason: str = "endTurn") -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="ok"), model=model, stopReason=stop_reason
    )


def tool_output(out: types.CallToolResult):
    text = out.content[0].text
    return ("tool_error", text) if out.isError else text


async def call(callback, args: dict | None = None):
    """One tool call over an in-memory mcp 1.x session; the tool's text or its error text."""
    async with create_connected_server_and_client_session(
        build_server()._mcp_server, sampling_callback=callback
    ) as session:
        return tool_output(await session.call_tool("sample", ARGS if args is None else args))


STDIO = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).with_name("mcp_v1_server.py"))])


async def call_stdio(callback, args: dict | None = None):
    async with stdio_client(STDIO) as (read, write), ClientSession(read, write, sampling_callback=callback) as session:
        await session.initialize()
        return tool_output(await session.call_tool("sample", ARGS if args is None else args))


@pytest.fixture
def v1_instrumented(telemetry):
    instrumentor = MCPSamplingInstrumentor()  # picks the mcp 1.x table
    instrumentor.instrument(meter_provider=telemetry.meter_provider)  # the global (test) tracer provider
    yield telemetry
    instrumentor.uninstrument()


@pytest.mark.parametrize("transport", [call, call_stdio], ids=["memory", "stdio"])
def test_completed_request(v1_instrumented, transport):
    out = anyio.run(transport, callback_returning(result()))
    assert out == f"{SERVED}|endTurn"
    span = only_sampling_span(v1_instrumented)
    assert span.kind is SpanKind.SERVER
    assert span.status.status_code is StatusCode.UNSET
    attrs = span.attributes
    assert attrs[names.MCP_METHOD_NAME] == "sampling/createMessage"
    assert attrs[names.SAMPLING_PATH] == names.PATH_RPC
    assert attrs[names.MCP_SERVER_NAME] == SERVER_NAME
    assert attrs[names.MCP_PROTOCOL_VERSION] == types.LATEST_PROTOCOL_VERSION  # both ends run the same SDK
    assert attrs[names.JSONRPC_REQUEST_ID] == "0"  # the server session's first request id
    assert attrs[names.SAMPLING_ENDING] == "completed"
    assert attrs[names.GEN_AI_RESPONSE_MODEL] == SERVED
    assert attrs[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("endTurn",)
    assert attrs[names.SAMPLING_MODEL_HINTS] == ("claude-sonnet",)
    assert attrs[names.SAMPLING_INCLUDE_CONTEXT_REQUESTED] == "thisServer"
    assert attrs[names.GEN_AI_REQUEST_MAX_TOKENS] == 64
    assert attrs[names.SAMPLING_SUBSTITUTION] == "none"  # the hint is a substring of the served model
    assert attrs[names.DEGRADATION_MODE] == "primary"
    # Server and connection facts, as on mcp 2.x's JSON-RPC path.
    assert attrs[names.MCP_SERVER_VERSION] == SERVER_VERSION  # serverInfo.version of the initialize result
    assert attrs[names.SAMPLING_TOOL_NAME] == "sample"  # the one call_tool in flight on the session
    assert attrs.get(names.NETWORK_TRANSPORT) == ("pipe" if transport is call_stdio else None)  # in-memory: none
    assert names.MCP_SESSION_ID not in attrs  # only streamable HTTP has one
    counts = v1_instrumented.counts(
        names.METRIC_SAMPLING_REQUESTS,
        names.MCP_SERVER_NAME,
        names.SAMPLING_PATH,
        names.SAMPLING_ENDING,
        names.GEN_AI_RESPONSE_MODEL,
    )
    assert counts == {(SERVER_NAME, "rpc", "completed", SERVED): 1}
    assert v1_instrumented.counts(names.METRIC_SAMPLING_DURATION, names.SAMPLING_ENDING) == {("completed",): 1}
    assert v1_instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 0}


BUDGET = types.ErrorData(
    code=-32003,
    message="Daily sampling budget exhausted",
    data={"reason": "policy.budget_exhausted", "resetsAt": "2026-12-01T00:00:00Z"},
)
# MCP semconv (model/mcp/common.yaml), the receiver's rule: "-32700 (Parse error), -32600 (Invalid
# Request), -32601 (Method not found), -32602 (Invalid params), -32002 (Resource not found) ... SHOULD
# NOT be considered errors" on the receiving side; every other error code is.
RECEIVER_NOT_ERRORS = {"-32700", "-32600", "-32601", "-32602", "-32002"}

DENIALS = [
    # (ErrorData the host returns, expected ending, expected error.type): the same table as mcp 2.x
    # (MCP spec: -1 is the user's rejection; -32003, the legacy policy refusal code, + data.reason).
    (types.ErrorData(code=-1, message="User rejected sampling request"), "user.denied", "-1"),
    (types.ErrorData(code=-32003, message="Denied", data={"reason": "policy.denied"}), "policy.denied", "-32003"),
    (BUDGET, "policy.budget_exhausted", "-32003"),
    (
        types.ErrorData(code=-32603, message="No model", data={"reason": "model.unavailable"}),
        "model.unavailable",
        "-32603",
    ),
    # A known host's decline in its own words (agent-framework-core 1.26.0, agent_framework/_mcp.py).
    (
        types.ErrorData(code=-32600, message="Sampling request denied by the 'sampling_approval_callback'."),
        "user.denied",
        "-32600",
    ),
]


@pytest.mark.parametrize(("error", "ending", "error_type"), DENIALS)
def test_error_frames_are_classified(v1_instrumented, error, ending, error_type):
    out = anyio.run(call, callback_returning(error))
    # The server received the frame the host returned, unchanged (FastMCP reports it as a tool error).
    assert out[0] == "tool_error" and error.message in out[1]
    span = only_sampling_span(v1_instrumented)
    assert span.attributes[names.SAMPLING_ENDING] == ending
    assert span.attributes[names.ERROR_TYPE] == error_type
    assert span.attributes[names.SAMPLING_SUBSTITUTION] == "none"
    assert span.status.status_code is (StatusCode.UNSET if error_type in RECEIVER_NOT_ERRORS else StatusCode.ERROR)
    assert v1_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING) == {(ending,): 1}
    if error is BUDGET:
        assert span.attributes[names.SAMPLING_BUDGET_RESETS_AT] == "2026-12-01T00:00:00Z"


def test_raising_callback_is_an_error_and_the_sdk_answers_invalid_params(v1_instrumented):
    async def callback(ctx, params):
        raise RuntimeError("provider 503")

    out = anyio.run(call, callback)
    # mcp 1.x turns any callback exception into -32602 "Invalid request parameters" for the server.
    assert out[0] == "tool_error" and "Invalid request parameters" in out[1]
    span = only_sampling_span(v1_instrumented)
    assert span.attributes[names.SAMPLING_ENDING] == "error"
    assert span.attributes[names.ERROR_TYPE] == "RuntimeError"
    assert v1_instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 0}


def test_session_closed_under_the_callback_is_cancelled(v1_instrumented):
    started = anyio.Event()

    async def callback(ctx, params):
        started.set()
        await anyio.sleep_forever()

    async def abandon():
        async with (
            create_connected_server_and_client_session(
                build_server()._mcp_server, sampling_callback=callback
            ) as session,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(session.call_tool, "sample", ARGS)
            await started.wait()
            tg.cancel_scope.cancel()
        # leaving the session cancels its receive loop, and with it the callback

    anyio.run(abandon)
    span = only_sampling_span(v1_instrumented)
    assert span.attributes[names.SAMPLING_ENDING] == "cancelled"
    assert span.attributes[names.ERROR_TYPE] == "cancelled"
    assert v1_instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 0}


def test_span_is_parented_from_params_meta_traceparent(v1_instrumented):
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"  # W3C trace-context example

    async def traced(callback):
        async with create_connected_server_and_client_session(
            build_server()._mcp_server, sampling_callback=callback
        ) as session:
            out = await session.call_tool("sample_traced", {"traceparent": f"00-{trace_id}-{parent_id}-01"})
        return tool_output(out)

    assert anyio.run(traced, callback_returning(result())) == SERVED
    span = only_sampling_span(v1_instrumented)
    assert format(span.context.trace_id, "032x") == trace_id
    assert format(span.parent.span_id, "016x") == parent_id and span.parent.is_remote


@contextlib.asynccontextmanager
async def memory_session(callback):
    async with create_connected_server_and_client_session(
        build_server()._mcp_server, sampling_callback=callback
    ) as session:
        yield session


@contextlib.asynccontextmanager
async def stdio_session(callback):
    async with stdio_client(STDIO) as (read, write), ClientSession(read, write, sampling_callback=callback) as session:
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def http_session(callback):
    async with contextlib.AsyncExitStack() as stack:
        url = await stack.enter_async_context(streamable_http_server())
        read, write, _ = await stack.enter_async_context(mcp_streamable_http.streamablehttp_client(url))
        session = await stack.enter_async_context(ClientSession(read, write, sampling_callback=callback))
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def streamable_http_server():
    ready, done = anyio.Event(), anyio.Event()
    where: list[str] = []

    async def body(url):
        where.append(url)
        ready.set()
        await done.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve_streamable_http, build_server(), body)
        await ready.wait()
        try:
            yield where[0]
        finally:
            done.set()


@pytest.mark.parametrize("session_on", [memory_session, stdio_session, http_session], ids=["memory", "stdio", "http"])
def test_a_request_joins_the_trace_of_the_tool_call_that_triggered_it(v1_instrumented, session_on):
    """A host opens its session once and calls tools later, each in a span of its own. mcp 1.x's server
    sends no trace context and the callback runs in the session's receive loop, whose context is the
    session's: the span is a child of the span current where the host called the tool."""
    tracer = trace.get_tracer("host")

    async def host(callback):
        async with session_on(callback) as session:
            with tracer.start_as_current_span("execute_tool sample") as tool_span:
                out = tool_output(await session.call_tool("sample", ARGS))
        return out, tool_span.get_span_context()

    out, tool_call = anyio.run(host, callback_returning(result()))
    assert out == f"{SERVED}|endTurn"
    span = only_sampling_span(v1_instrumented)
    assert span.context.trace_id == tool_call.trace_id
    assert span.parent.span_id == tool_call.span_id and not span.parent.is_remote


def test_two_tool_calls_in_flight_leave_the_parent_unguessed(v1_instrumented):
    """Which of two concurrent calls asked cannot be read from the request: neither trace is joined."""
    tracer = trace.get_tracer("host")

    async def host(callback):
        async with memory_session(callback) as session:

            async def one(name):
                with tracer.start_as_current_span(f"execute_tool {name}"):
                    return tool_output(await session.call_tool("sample", ARGS))

            async with anyio.create_task_group() as tg:
                tg.start_soon(one, "a")
                tg.start_soon(one, "b")

    anyio.run(host, callback_returning(result()))
    spans = v1_instrumented.spans(names.SPAN_SAMPLING)
    assert len(spans) == 2
    assert all(span.parent is None for span in spans)


def test_a_traceparent_the_server_sent_wins_over_the_tool_calls_context(v1_instrumented):
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"  # W3C trace-context example

    async def traced(callback):
        async with memory_session(callback) as session:
            with trace.get_tracer("host").start_as_current_span("execute_tool sample_traced"):
                return tool_output(
                    await session.call_tool("sample_traced", {"traceparent": f"00-{trace_id}-{parent_id}-01"})
                )

    assert anyio.run(traced, callback_returning(result())) == SERVED
    span = only_sampling_span(v1_instrumented)
    assert format(span.context.trace_id, "032x") == trace_id
    assert format(span.parent.span_id, "016x") == parent_id


def test_without_a_span_around_the_tool_call_the_request_starts_a_trace(v1_instrumented):
    async def host(callback):
        async with memory_session(callback) as session:
            return tool_output(await session.call_tool("sample", ARGS))

    assert anyio.run(host, callback_returning(result())) == f"{SERVED}|endTurn"
    assert only_sampling_span(v1_instrumented).parent is None


def test_instrument_wraps_once_and_uninstrument_restores_identity(telemetry):
    # Listed from the SDK's structure, not read from the target table.
    targets = [
        (ClientSession, "initialize"),
        (ClientSession, "_received_request"),
        (ClientSession, "__init__"),
        (ClientSession, "call_tool"),
        (mcp_stdio, "_create_platform_compatible_process"),
        (StreamableHTTPTransport, "__init__"),
    ]
    original = [vars(owner)[name] for owner, name in targets]
    respond = vars(RequestResponder)["respond"]  # shared with server sessions: watched per request only
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    instrumentor.instrument(meter_provider=telemetry.meter_provider)  # a second call changes nothing
    try:
        for (owner, name), before in zip(targets, original, strict=True):
            now = vars(owner)[name]
            assert isinstance(now, wrapt.FunctionWrapper) and now.__wrapped__ is before
        assert vars(RequestResponder)["respond"] is respond
    finally:
        instrumentor.uninstrument()
    assert [vars(owner)[name] for owner, name in targets] == original
    anyio.run(call, callback_returning(result()))
    assert telemetry.spans(names.SPAN_SAMPLING) == []


HOST = f"""
import json, sys, anyio, wrapt
sys.path.insert(0, {str(Path(__file__).parent)!r})
from mcp import types
from mcp.client.session import ClientSession
from mcp.shared.memory import create_connected_server_and_client_session
from mcp_v1_server import build_server

async def ok(ctx, params):
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="x"), model="m")

async def main():
    async with create_connected_server_and_client_session(build_server()._mcp_server, sampling_callback=ok) as s:
        await s.call_tool("sample", {{"hint": "m", "include_context": "none"}})

anyio.run(main)
print(json.dumps(isinstance(ClientSession.__dict__["_received_request"], wrapt.FunctionWrapper)), file=sys.stderr)
"""


@pytest.mark.subprocess
def test_opentelemetry_instrument_selects_the_mcp_v1_table():
    environment = {key: value for key, value in os.environ.items() if not key.startswith("OTEL_")}
    environment.update(
        {
            "OTEL_TRACES_EXPORTER": "console",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
            "OTEL_SERVICE_NAME": "auto-test-v1",
        }
    )
    instrument = str(Path(sys.executable).parent / "opentelemetry-instrument")
    proc = subprocess.run(
        [instrument, sys.executable, "-c", HOST], env=environment, capture_output=True, text=True, timeout=HANG_S
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "true"
    assert '"name": "sampling/createMessage"' in proc.stdout  # ConsoleSpanExporter output
    assert '"otel_sampling.sampling.ending": "completed"' in proc.stdout
    assert "otel-sampling" not in proc.stderr  # no missing target, no failed set-up: the 1.x table was chosen


def test_a_message_ending_rule_classifies_the_frame(tmp_path, monkeypatch, telemetry):
    """The policy file's ``message_contains`` rules read the frame's message on mcp 1.x too."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[[ending_rules]]\nmessage_contains = "out of credit"\nending = "policy.budget_exhausted"\n')
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(policy))
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    try:
        anyio.run(call, callback_returning(types.ErrorData(code=-32099, message="Gateway: Out of credit")))
    finally:
        instrumentor.uninstrument()
    span = only_sampling_span(telemetry)
    assert span.attributes[names.SAMPLING_ENDING] == "policy.budget_exhausted"
    assert span.attributes[names.ERROR_TYPE] == "-32099"


# ---------------------------------------------------------------- adversarial: the host never breaks


def test_a_dict_the_sdk_validates_is_a_completed_request(v1_instrumented):
    # mcp 1.x validates the callback's return with ClientResponse, so a plain dict of the result's
    # wire shape is a valid answer (camelCase keys, as on the wire).
    answer = {
        "role": "assistant",
        "content": {"type": "text", "text": "ok"},
        "model": SERVED,
        "stopReason": "maxTokens",
    }
    assert anyio.run(call, callback_returning(answer)) == f"{SERVED}|maxTokens"
    span = only_sampling_span(v1_instrumented)
    assert span.attributes[names.SAMPLING_ENDING] == "completed"
    assert span.attributes[names.GEN_AI_RESPONSE_MODEL] == SERVED
    assert span.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("maxTokens",)


def test_a_dict_of_another_shape_is_an_error(v1_instrumented):
    # Any dict validates as some ClientResult (EmptyResult takes extra keys), so mcp 1.x sends it
    # as a result and the server is the one that rejects it.
    out = anyio.run(call, callback_returning({"model": 5}))
    assert out[0] == "tool_error" and "validation error" in out[1]
    span = only_sampling_span(v1_instrumented)
    assert span.attributes[names.SAMPLING_ENDING] == "error"
    # The host's answer was refused with -32602 (invalid params): the receiver's span is not in error.
    assert span.attributes[names.ERROR_TYPE] == "-32602"
    assert span.status.status_code is StatusCode.UNSET


def test_a_return_the_sdk_cannot_validate_is_an_error(v1_instrumented):
    out = anyio.run(call, callback_returning("not a result"))
    assert out[0] == "tool_error" and "Invalid request parameters" in out[1]
    span = only_sampling_span(v1_instrumented)
    assert span.attributes[names.SAMPLING_ENDING] == "error"
    # The exception's fully-qualified class name (OTel semconv error.type), raised by the SDK.
    assert span.attributes[names.ERROR_TYPE] == "pydantic_core._pydantic_core.ValidationError"


# The strings one past the 256-character attribute bound.
HOSTILE_DATA = [
    None,
    "a string",
    7,
    ["reason"],
    {"reason": 5},
    {"reason": "x" * 257},
    {"reason": "policy.budget_exhausted", "resetsAt": {"nested": True}},
    {"reason": "policy.budget_exhausted", "resetsAt": "\x1b[31m" + "9" * 257},
]


@pytest.mark.parametrize("data", HOSTILE_DATA, ids=range(len(HOSTILE_DATA)))
def test_a_denial_with_odd_data_is_still_one_span_and_reaches_the_server(v1_instrumented, data):
    error = types.ErrorData(code=-32003, message="Denied", data=data)
    out = anyio.run(call, callback_returning(error))
    assert out[0] == "tool_error" and "Denied" in out[1]
    span = only_sampling_span(v1_instrumented)
    assert span.attributes[names.ERROR_TYPE] == "-32003"
    assert span.status.status_code is StatusCode.ERROR
    for value in span.attributes.values():
        assert not isinstance(value, str) or (len(value) <= 256 and value.isprintable())
    assert sum(v1_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING).values()) == 1


def test_a_hostile_server_cannot_blow_up_labels_or_attributes(v1_instrumented):
    # Each one past its bound: 256-character attributes (128 for labels), 16 hints.
    name = "\x00\x1b\u202e" + "s" * 257 + "\n"
    many_hints = ",".join(f"model-{i}\x00" for i in range(17))

    async def hostile(callback):
        async with create_connected_server_and_client_session(
            build_server(name)._mcp_server, sampling_callback=callback
        ) as session:
            return tool_output(await session.call_tool("sample", {"hint": many_hints, "include_context": "thisServer"}))

    anyio.run(hostile, callback_returning(result(model="m\r\n" * 86)))
    span = only_sampling_span(v1_instrumented)
    assert len(span.attributes[names.SAMPLING_MODEL_HINTS]) == 16
    assert span.attributes[names.SAMPLING_MODEL_HINTS][0] == "model-0"  # the NUL dropped
    server_name = span.attributes[names.MCP_SERVER_NAME]  # cut, then the controls dropped
    assert set(server_name) == {"s"} and len(server_name) <= 256
    assert len(span.attributes[names.GEN_AI_RESPONSE_MODEL]) <= 256
    assert span.attributes[names.GEN_AI_RESPONSE_MODEL].isprintable()
    (labels,) = [p.attributes for p in v1_instrumented.points(names.METRIC_SAMPLING_REQUESTS)]
    assert set(labels[names.MCP_SERVER_NAME]) == {"s"} and len(labels[names.MCP_SERVER_NAME]) <= 128
    assert len(labels[names.GEN_AI_RESPONSE_MODEL]) <= 128 and labels[names.GEN_AI_RESPONSE_MODEL].isprintable()


def test_a_session_initialised_before_instrument_reports_no_server_name(telemetry):
    async def initialised_first():
        async with create_connected_server_and_client_session(
            build_server()._mcp_server, sampling_callback=callback_returning(result())
        ) as s:
            instrumentor = MCPSamplingInstrumentor()
            instrumentor.instrument(meter_provider=telemetry.meter_provider)
            try:
                return tool_output(await s.call_tool("sample", ARGS))
            finally:
                instrumentor.uninstrument()

    assert anyio.run(initialised_first) == f"{SERVED}|endTurn"
    span = only_sampling_span(telemetry)
    assert names.MCP_SERVER_NAME not in span.attributes
    assert names.MCP_PROTOCOL_VERSION not in span.attributes
    assert span.attributes[names.SAMPLING_ENDING] == "completed"
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.MCP_SERVER_NAME) == {(names.UNKNOWN_LABEL,): 1}


@pytest.mark.parametrize("traceparent", ["garbage", "00-" + "0" * 32 + "-" + "0" * 16 + "-01", "x" * 100_000])
def test_an_invalid_traceparent_starts_a_new_trace(v1_instrumented, traceparent):
    async def traced(callback):
        async with create_connected_server_and_client_session(
            build_server()._mcp_server, sampling_callback=callback
        ) as session:
            return tool_output(await session.call_tool("sample_traced", {"traceparent": traceparent}))

    assert anyio.run(traced, callback_returning(result())) == SERVED
    span = only_sampling_span(v1_instrumented)
    assert span.parent is None


def test_concurrent_requests_on_one_session_each_get_their_own_span(v1_instrumented):
    async def served_from_hint(ctx, params):
        return result(model=f"{params.modelPreferences.hints[0].name}-served")

    async def concurrently():
        outs: dict[str, object] = {}
        async with (
            create_connected_server_and_client_session(
                build_server()._mcp_server, sampling_callback=served_from_hint
            ) as session,
            anyio.create_task_group() as tg,
        ):

            async def one(hint):
                outs[hint] = tool_output(await session.call_tool("sample", {"hint": hint, "include_context": "none"}))

            for hint in ("alpha", "beta", "gamma"):
                tg.start_soon(one, hint)
        return outs

    outs = anyio.run(concurrently)
    assert outs == {h: f"{h}-served|endTurn" for h in ("alpha", "beta", "gamma")}
    spans = v1_instrumented.spans(names.SPAN_SAMPLING)
    assert sorted(
        (s.attributes[names.SAMPLING_MODEL_HINTS][0], s.attributes[names.GEN_AI_RESPONSE_MODEL]) for s in spans
    ) == [(h, f"{h}-served") for h in ("alpha", "beta", "gamma")]
    assert len({s.attributes[names.JSONRPC_REQUEST_ID] for s in spans}) == 3
    assert {s.attributes[names.SAMPLING_SUBSTITUTION] for s in spans} == {"none"}
    # Three call_tool in flight on the session: which one a request belongs to is not known.
    assert all(names.SAMPLING_TOOL_NAME not in s.attributes for s in spans)
    assert v1_instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 0}


def _outermost(owner, name, seen):
    """Wrap ``owner.name`` on top of whatever is there; record what passes through it."""

    async def outer(wrapped, instance, args, kwargs):
        try:
            value = await wrapped(*args, **kwargs)
        except BaseException as exc:
            seen.append(("raised", exc))
            raise
        seen.append(("returned", value))
        return value

    wrapt.wrap_function_wrapper(owner, name, outer)


def _innermost(owner, name, monkeypatch, seen):
    """Replace ``owner.name`` (before instrument) by a layer recording what the SDK produced."""
    original = vars(owner)[name]

    async def inner(self, *args, **kwargs):
        value = await original(self, *args, **kwargs)
        seen.append(args[0] if name == "respond" else value)
        return value

    monkeypatch.setattr(owner, name, inner)


def test_results_and_exceptions_reach_mcp_as_the_same_objects(telemetry, monkeypatch):
    """What the SDK and the callback produce crosses our wrappers unchanged: same objects."""
    initialized: list = []
    responded: list = []
    _innermost(ClientSession, "initialize", monkeypatch, initialized)
    _innermost(RequestResponder, "respond", monkeypatch, responded)  # both sides' answers
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    host: list = []
    received: list = []
    outer = [(ClientSession, "initialize", host), (ClientSession, "_received_request", received)]
    try:
        for owner, name, seen in outer:
            _outermost(owner, name, seen)
        answer = result()
        assert anyio.run(call, callback_returning(answer)) == f"{SERVED}|endTurn"
        boom = RuntimeError("provider 503")

        async def raising(ctx, params):
            raise boom

        assert anyio.run(call, raising)[0] == "tool_error"
    finally:
        instrumentor.uninstrument()
        for owner, name, _ in outer:
            setattr(owner, name, vars(owner)[name].__wrapped__)
    assert host[0][0] == "returned" and host[0][1] is initialized[0]  # initialize's result, same object
    assert any(getattr(sent, "root", None) is answer for sent in responded)  # the callback's result, as is
    assert received[0] == ("returned", None)
    assert received[-1][0] == "raised" and received[-1][1] is boom  # the callback's exception, same object
    assert [s.attributes[names.SAMPLING_ENDING] for s in telemetry.spans(names.SPAN_SAMPLING)] == ["completed", "error"]


def test_uninstrument_under_a_running_callback_still_records_how_it_ended(telemetry):
    """A request that started instrumented is recorded as it ended, even when the host
    uninstruments while its callback runs (it used to be recorded ``cancelled``)."""
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)

    async def callback(ctx, params):
        instrumentor.uninstrument()
        return result()

    assert anyio.run(call, callback) == f"{SERVED}|endTurn"
    span = only_sampling_span(telemetry)
    assert span.attributes[names.SAMPLING_ENDING] == "completed"
    assert span.attributes[names.GEN_AI_RESPONSE_MODEL] == SERVED
    anyio.run(call, callback_returning(result()))  # and the next request is not recorded
    assert len(telemetry.spans(names.SPAN_SAMPLING)) == 1


def test_a_failing_deactivate_still_ends_the_request(v1_instrumented, monkeypatch):
    from otel_sampling.records.sampling import SamplingRecord

    def broken(self):
        raise RuntimeError("broken deactivate")

    monkeypatch.setattr(SamplingRecord, "deactivate", broken)
    assert anyio.run(call, callback_returning(result())) == f"{SERVED}|endTurn"
    assert v1_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING) == {("completed",): 1}
    assert only_sampling_span(v1_instrumented).attributes[names.SAMPLING_ENDING] == "completed"


# ---------------------------------------------------------------- the same host state as mcp 2.x
# The expectations are test_mcp_violations.py's and test_mcp_server_side.py's, on mcp 1.x sessions.

OTHER_SERVER = "other-server"
DENIED = types.ErrorData(code=-32003, message="Denied by policy", data={"reason": "policy.denied"})


def answering(*answers, grant: str | None = None):
    """A callback returning ``answers`` in turn (each a result or ErrorData), granting ``grant``."""
    queue = list(answers)

    async def callback(ctx, params):
        if grant is not None:
            otel_sampling.grant_context(grant)
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return callback


async def call_server(callback, server=None, **args):
    """One ``sample`` call (in-memory, or over stdio with ``server=STDIO``); denials are the tool's error."""
    args = {"hint": "claude-sonnet", "include_context": "none", **args}
    if server is STDIO:
        return await call_stdio(callback, args)
    async with create_connected_server_and_client_session(
        (server or build_server())._mcp_server, sampling_callback=callback
    ) as session:
        return tool_output(await session.call_tool("sample", args))


def violations(telemetry) -> dict:
    return telemetry.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND, names.MCP_SERVER_NAME)


def events(span, name=names.EVENT_SAMPLING_VIOLATION):
    return [e for e in span.events if e.name == name]


SHARED_FINGERPRINT_KEY = "a shared key of at least 32 characters"
# The canonical form of the request ``sample`` sends by default (one text message, maxTokens 64, a
# system prompt): its unkeyed SHA-256 prefix is the fingerprint mcp 2.3's table recorded for the
# same request from tests/sampling_server.py in a real run on both of its paths, before the
# fingerprint was keyed.
DEFAULT_REQUEST_CANONICAL = (
    b'{"maxTokens":64,"messages":[{"content":{"text":"Printer on fire","type":"text"},'
    b'"role":"user"}],"systemPrompt":"You summarise tickets."}'
)


@pytest.fixture
def shared_fingerprint_key(monkeypatch):
    monkeypatch.setenv(names.ENV_FINGERPRINT_KEY, SHARED_FINGERPRINT_KEY)  # before v1_instrumented reads it


def test_the_fingerprint_is_the_one_mcp_2x_gives_the_same_request(shared_fingerprint_key, v1_instrumented):
    """The fingerprint hashes the wire form: with a shared key, the request on mcp 1.x has the
    fingerprint of the canonical form mcp 2.3 gives the same request."""
    assert hashlib.sha256(DEFAULT_REQUEST_CANONICAL).hexdigest()[:32] == "6681dcafc91edd54b6ff4b3ca74bf999"
    anyio.run(call, callback_returning(result()))
    assert (
        only_sampling_span(v1_instrumented).attributes[names.SAMPLING_FINGERPRINT]
        == hmac.new(SHARED_FINGERPRINT_KEY.encode(), DEFAULT_REQUEST_CANONICAL, hashlib.sha256).hexdigest()[:32]
    )


@pytest.mark.subprocess
def test_wider_requested_scope_on_retry_is_scope_widened(v1_instrumented):
    callback = answering(result())
    anyio.run(lambda: call_server(callback, include_context="none"))
    anyio.run(lambda: call_server(callback, include_context="thisServer"))
    assert violations(v1_instrumented) == {(names.VIOLATION_SCOPE_WIDENED, SERVER_NAME): 1}
    first, second = v1_instrumented.spans(names.SPAN_SAMPLING)
    # The retry's span links to the first request's span (the fingerprint is known at start)...
    assert [link.context.span_id for link in second.links] == [first.context.span_id]
    # ...and the violation event names the earlier request.
    (event,) = events(second)
    assert event.attributes[names.SAMPLING_VIOLATION_KIND] == "scope_widened"
    assert event.attributes[names.SAMPLING_EARLIER_TRACE_ID] == trace.format_trace_id(first.context.trace_id)
    assert event.attributes[names.SAMPLING_EARLIER_SPAN_ID] == trace.format_span_id(first.context.span_id)
    assert first.attributes[names.SAMPLING_FINGERPRINT] == second.attributes[names.SAMPLING_FINGERPRINT]


@pytest.mark.subprocess
def test_narrowing_retry_is_fine(v1_instrumented):
    callback = answering(result())
    anyio.run(lambda: call_server(callback, include_context="allServers"))
    anyio.run(lambda: call_server(callback, include_context="thisServer"))
    assert violations(v1_instrumented) == {}
    assert all(events(s) == [] for s in v1_instrumented.spans(names.SPAN_SAMPLING))


@pytest.mark.subprocess
def test_wider_granted_scope_on_retry_is_scope_widened(v1_instrumented):
    anyio.run(lambda: call_server(answering(result(), grant="none"), include_context="allServers"))
    anyio.run(lambda: call_server(answering(result(), grant="thisServer"), include_context="allServers"))
    assert violations(v1_instrumented) == {(names.VIOLATION_SCOPE_WIDENED, SERVER_NAME): 1}
    spans = v1_instrumented.spans(names.SPAN_SAMPLING)
    assert [s.attributes[names.SAMPLING_INCLUDE_CONTEXT_GRANTED] for s in spans] == ["none", "thisServer"]


@pytest.mark.subprocess
def test_repeated_request_with_another_decision_is_decision_flipped(v1_instrumented):
    callback = answering(result(), DENIED)
    anyio.run(lambda: call_server(callback))
    anyio.run(lambda: call_server(callback))
    assert violations(v1_instrumented) == {(names.VIOLATION_DECISION_FLIPPED, SERVER_NAME): 1}
    assert [s.attributes[names.SAMPLING_ENDING] for s in v1_instrumented.spans(names.SPAN_SAMPLING)] == [
        "completed",
        "policy.denied",
    ]


@pytest.mark.subprocess
def test_same_decision_repeated_is_fine(v1_instrumented):
    for _ in range(3):
        anyio.run(lambda: call_server(answering(DENIED)))
    assert violations(v1_instrumented) == {}
    assert len(v1_instrumented.spans(names.SPAN_SAMPLING)) == 3


@pytest.mark.subprocess
def test_denied_request_from_another_server_is_rerouted_after_denial(v1_instrumented):
    anyio.run(lambda: call_server(answering(DENIED)))
    anyio.run(lambda: call_server(answering(result()), build_server(OTHER_SERVER)))
    assert violations(v1_instrumented) == {(names.VIOLATION_REROUTED_AFTER_DENIAL, OTHER_SERVER): 1}


@pytest.mark.subprocess
def test_a_different_request_to_another_server_is_fine(v1_instrumented):
    anyio.run(lambda: call_server(answering(DENIED)))
    anyio.run(lambda: call_server(answering(result()), build_server(OTHER_SERVER), text="Another ticket"))
    assert violations(v1_instrumented) == {}


@pytest.mark.subprocess
def test_identity_violations_over_stdio(v1_instrumented):
    """A real subprocess server: a flip and a widened scope; no reroute claimed for the same server."""
    callback = answering(result(), DENIED)
    anyio.run(lambda: call_server(callback, STDIO))
    anyio.run(lambda: call_server(callback, STDIO, include_context="thisServer"))
    assert violations(v1_instrumented) == {
        (names.VIOLATION_DECISION_FLIPPED, SERVER_NAME): 1,
        (names.VIOLATION_SCOPE_WIDENED, SERVER_NAME): 1,
    }
    for span in v1_instrumented.spans(names.SPAN_SAMPLING):
        assert span.attributes[names.NETWORK_TRANSPORT] == "pipe"
        assert span.attributes[names.MCP_SERVER_VERSION] == SERVER_VERSION
        assert names.MCP_SESSION_ID not in span.attributes  # stdio has no session id
        assert span.attributes[names.SAMPLING_TOOL_NAME] == "sample"  # the one call_tool in flight


@pytest.mark.subprocess
def test_grant_above_the_ceiling_is_context_above_ceiling(policy_env, v1_instrumented):
    # conftest POLICY_TOML: context_ceiling = "thisServer" for the test server.
    anyio.run(lambda: call_server(answering(result(), grant="thisServer"), include_context="allServers"))
    assert violations(v1_instrumented) == {}
    anyio.run(
        lambda: call_server(answering(result(), grant="allServers"), include_context="allServers", text="Second ticket")
    )
    assert violations(v1_instrumented) == {(names.VIOLATION_CONTEXT_ABOVE_CEILING, SERVER_NAME): 1}
    counts = v1_instrumented.counts(
        names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_INCLUDE_CONTEXT_REQUESTED, names.SAMPLING_INCLUDE_CONTEXT_GRANTED
    )
    assert counts == {("allServers", "thisServer"): 1, ("allServers", "allServers"): 1}


@pytest.mark.subprocess
def test_no_grant_is_unreported(v1_instrumented):
    anyio.run(lambda: call_server(answering(result())))
    (span,) = v1_instrumented.spans(names.SPAN_SAMPLING)
    assert span.attributes[names.SAMPLING_INCLUDE_CONTEXT_GRANTED] == "unreported"


@pytest.mark.subprocess
def test_grant_after_exhaustion_is_fine_and_otherwise_a_violation(v1_instrumented):
    tracer = trace.get_tracer("test")
    budget = otel_sampling.sampling_error("policy.budget_exhausted", "Daily limit", resets_at="2026-12-01T00:00:00Z")
    assert isinstance(budget, types.ErrorData)  # mcp 1.x's ErrorData: the callback returns it as is
    anyio.run(lambda: call_server(answering(budget)))
    with tracer.start_as_current_span("approve") as approve:
        otel_sampling.record_grant(SERVER_NAME, 5, "2026-12-01T00:00:00Z", granted_by="u-123")
    assert violations(v1_instrumented) == {}
    anyio.run(lambda: call_server(answering(result())))
    otel_sampling.record_grant(SERVER_NAME, 2.5, "2026-12-01T00:00:00Z", granted_by="u-123")
    assert violations(v1_instrumented) == {(names.VIOLATION_GRANT_WITHOUT_EXHAUSTION, SERVER_NAME): 1}
    assert v1_instrumented.counts(names.METRIC_SAMPLING_GRANTS, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 2}
    assert v1_instrumented.counts(names.METRIC_SAMPLING_GRANTED_USD, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 7.5}
    (event,) = [e for e in approve.events if e.name == names.EVENT_SAMPLING_GRANT]
    assert dict(event.attributes) == {
        names.MCP_SERVER_NAME: SERVER_NAME,
        names.SAMPLING_GRANT_ADD_USD: 5.0,
        names.SAMPLING_GRANT_EXPIRES_AT: "2026-12-01T00:00:00Z",
        names.SAMPLING_GRANT_GRANTED_BY: "u-123",
    }


@pytest.mark.subprocess
def test_exhausted_request_completed_later_without_a_grant_is_decision_flipped(v1_instrumented):
    """A budget window that rolled (or a limiter that refilled) re-evaluates the same request."""
    callback = answering(BUDGET, result())
    anyio.run(lambda: call_server(callback))
    anyio.run(lambda: call_server(callback))
    assert violations(v1_instrumented) == {(names.VIOLATION_DECISION_FLIPPED, SERVER_NAME): 1}


@pytest.mark.subprocess
def test_exhausted_request_completed_after_a_grant_is_fine(v1_instrumented):
    callback = answering(BUDGET, result())
    anyio.run(lambda: call_server(callback))
    otel_sampling.record_grant(SERVER_NAME, 5, "2026-12-01T00:00:00Z", granted_by="u-123")
    anyio.run(lambda: call_server(callback))
    assert violations(v1_instrumented) == {}


def test_stall_event_names_server_and_tool(v1_instrumented):
    """The watchdog's sweep (run here by the test at a later clock) flags a pending request once."""
    ledger = state.host_ledger()
    swept = []

    async def callback(ctx, params):
        swept.append(ledger.pending.sweep(time.monotonic() + 31))  # default threshold 30 s
        swept.append(ledger.pending.sweep(time.monotonic() + 62))  # reported once only
        return result()

    anyio.run(call, callback)
    assert swept == [1, 0]
    span = only_sampling_span(v1_instrumented)
    (event,) = events(span, names.EVENT_SAMPLING_STALL)
    assert event.attributes[names.MCP_SERVER_NAME] == SERVER_NAME
    assert event.attributes[names.SAMPLING_TOOL_NAME] == "sample"
    assert event.attributes[names.SAMPLING_PENDING_SECONDS] >= 31
    assert v1_instrumented.counts(names.METRIC_SAMPLING_STALLS, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 1}
    assert v1_instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 0}
    assert len(ledger.pending) == 0


def test_no_stall_before_the_threshold(v1_instrumented):
    ledger = state.host_ledger()

    async def callback(ctx, params):
        ledger.pending.sweep(time.monotonic() + 29)
        return result()

    anyio.run(call, callback)
    assert v1_instrumented.points(names.METRIC_SAMPLING_STALLS) == []
    assert events(only_sampling_span(v1_instrumented), names.EVENT_SAMPLING_STALL) == []


def test_streamable_http_session_id_and_transport(v1_instrumented):
    session_ids = []

    async def body(url):
        async with (
            streamablehttp_client(url) as (read, write, get_session_id),
            ClientSession(read, write, sampling_callback=callback_returning(result())) as session,
        ):
            await session.initialize()
            out = tool_output(await session.call_tool("sample", ARGS))
            session_ids.append(get_session_id())
            return out

    assert anyio.run(serve_streamable_http, build_server(), body) == f"{SERVED}|endTurn"
    span = only_sampling_span(v1_instrumented)
    assert span.attributes[names.NETWORK_TRANSPORT] == "tcp"
    assert span.attributes[names.MCP_SERVER_VERSION] == SERVER_VERSION
    assert span.attributes[names.SAMPLING_TOOL_NAME] == "sample"
    assert len(session_ids[0]) >= 16
    assert span.attributes[names.MCP_SESSION_ID] == session_ids[0]  # the transport's mcp-session-id
    # Not a metric label (unbounded).
    assert all(names.MCP_SESSION_ID not in p.attributes for p in v1_instrumented.points(names.METRIC_SAMPLING_REQUESTS))


def test_violation_over_streamable_http(v1_instrumented):
    callback = answering(result(), DENIED)

    async def body(url):
        for _ in range(2):
            async with (
                streamablehttp_client(url) as (read, write, _),
                ClientSession(read, write, sampling_callback=callback) as session,
            ):
                await session.initialize()
                with contextlib.suppress(Exception):
                    await session.call_tool("sample", ARGS)

    anyio.run(serve_streamable_http, build_server(), body)
    assert violations(v1_instrumented) == {(names.VIOLATION_DECISION_FLIPPED, SERVER_NAME): 1}


# ---------------------------------------------------------------- transports opened in a task of their own
# mcp-use's connection managers enter the transport in a task of their own and hand its streams to
# the task that makes the session. A host that imports the transport functions after instrument()
# (opentelemetry-instrument) gets the wrapped ones: read through the module here for that reason.
async def _sample_on(streams):
    async with ClientSession(streams[0], streams[1], sampling_callback=callback_returning(result())) as session:
        await session.initialize()
        return tool_output(await session.call_tool("sample", ARGS))


@pytest.mark.subprocess
def test_a_stdio_transport_opened_in_a_task_of_its_own_gives_the_same_facts(v1_instrumented):
    out = anyio.run(in_a_task_of_its_own, lambda: mcp_stdio.stdio_client(STDIO), _sample_on)
    assert out == f"{SERVED}|endTurn"
    attrs = only_sampling_span(v1_instrumented).attributes
    assert attrs[names.NETWORK_TRANSPORT] == "pipe"
    assert attrs[names.MCP_SERVER_NAME] == SERVER_NAME
    assert attrs[names.MCP_SERVER_VERSION] == SERVER_VERSION
    assert attrs[names.SAMPLING_TOOL_NAME] == "sample"


def test_a_streamable_http_transport_opened_in_a_task_of_its_own_gives_the_same_facts(v1_instrumented):
    session_ids = []

    async def use(streams):
        out = await _sample_on(streams)
        session_ids.append(streams[2]())
        return out

    async def body(url):
        return await in_a_task_of_its_own(lambda: mcp_streamable_http.streamablehttp_client(url), use)

    assert anyio.run(serve_streamable_http, build_server(), body) == f"{SERVED}|endTurn"
    attrs = only_sampling_span(v1_instrumented).attributes
    assert attrs[names.NETWORK_TRANSPORT] == "tcp"
    assert attrs[names.MCP_SESSION_ID] == session_ids[0]
    assert attrs[names.MCP_SERVER_VERSION] == SERVER_VERSION
    assert attrs[names.SAMPLING_TOOL_NAME] == "sample"


@pytest.mark.subprocess
def test_restarts_of_a_stdio_server_with_a_generated_name_are_one_server(tmp_path, monkeypatch, telemetry):
    """As on mcp 2.x (test_server_identity.py): labelled by the generator's prefix, kept and matched
    to a policy by the command line."""
    generated = StdioServerParameters(command=sys.executable, args=[*STDIO.args, "--generated-name"])
    policy = tmp_path / "policy.toml"
    policy.write_text(
        f"[servers.{json.dumps(stdio_endpoint(generated.command, generated.args))}]\n"
        'permitted_models = ["claude-haiku-5-5"]\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(policy))
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)

    async def restart():
        async with (
            stdio_client(generated) as (read, write),
            ClientSession(read, write, sampling_callback=callback_returning(result("claude-haiku-5-5"))) as session,
        ):
            await session.initialize()
            await session.call_tool("sample", {"hint": "gpt-4o", "include_context": "none"})

    try:
        for _ in range(2):
            anyio.run(restart)
    finally:
        instrumentor.uninstrument()
    spans = telemetry.spans(names.SPAN_SAMPLING)
    assert len({s.attributes[names.MCP_SERVER_NAME] for s in spans}) == 2  # a new name per process
    assert [s.attributes[names.SAMPLING_SUBSTITUTION] for s in spans] == ["within_policy"] * 2
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.MCP_SERVER_NAME) == {("FastMCP-*",): 2}


# ---------------------------------------------------------------- suppressed instrumentation
# Inside suppress_instrumentation() the table's wrappers (ClientSession.initialize, _received_request
# and the connection targets) pass straight through: the host gets the same answers, the responder
# is never shadowed, and nothing is recorded; outside it, as usual (mcp 2.x: tests/test_suppression.py).
ERROR_FRAME = types.ErrorData(code=-1, message="User rejected sampling request")


def _points(telemetry) -> dict:
    """Every metric point we recorded: (metric, attributes) -> sum or count."""
    data = telemetry.reader.get_metrics_data()
    return {
        (m.name, frozenset(p.attributes.items())): getattr(p, "value", None) or getattr(p, "count", None)
        for rm in (data.resource_metrics if data else ())
        for sm in rm.scope_metrics
        for m in sm.metrics
        for p in m.data.data_points
    }


def _shadowed_responders(monkeypatch) -> list:
    """Every responder whose ``respond`` was shadowed on the instance while a request was handled."""
    shadowed: list = []
    original = RequestResponder.__exit__

    def watching_exit(self, *exc_info):
        if "respond" in vars(self):
            shadowed.append(self)
        return original(self, *exc_info)

    monkeypatch.setattr(RequestResponder, "__exit__", watching_exit)
    return shadowed


async def _answers() -> list:
    """One request answered, one refused with an error frame, one over stdio."""
    return [
        await call_server(answering(result())),
        await call_server(answering(ERROR_FRAME)),
        await call_server(answering(result()), server=STDIO),
    ]


def test_suppressed_requests_are_answered_as_without_instrumentation(v1_instrumented, monkeypatch):
    shadowed = _shadowed_responders(monkeypatch)
    before = _points(v1_instrumented)  # gauges of degradations other tests entered read the same after
    with suppress_instrumentation():
        answers = anyio.run(_answers)
    assert answers[0] == answers[2] == f"{SERVED}|endTurn"
    assert answers[1] == ("tool_error", "Error executing tool sample: User rejected sampling request")
    assert shadowed == []
    assert v1_instrumented.spans() == []
    assert _points(v1_instrumented) == before


def test_outside_suppression_they_are_recorded(v1_instrumented):
    anyio.run(_answers)
    assert len(v1_instrumented.spans(names.SPAN_SAMPLING)) == 3
    assert v1_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_ENDING) == {
        ("completed",): 2,
        ("user.denied",): 1,
    }


# ---------------------------------------------------------------- requests mcp rejects
def test_sampling_requests_mcp_rejects_are_counted_by_server_and_reason(mcp_instrumented):
    """mcp 1.x answers a request it cannot validate -32602 in its receive loop, before any callback:
    counted on ``otel_sampling.sampling.rejected``, no span (tests/malformed_server.py, a raw server)."""
    from malformed_server import MALFORMED, NAME

    server = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).with_name("malformed_server.py"))])
    kinds = [k for k in MALFORMED if k != "valid"]

    async def main():
        async with (
            stdio_client(server) as (read, write),
            ClientSession(read, write, sampling_callback=callback_returning(result())) as session,
        ):
            await session.initialize()
            return [
                json.loads((await session.call_tool("ask", {"kind": k})).content[0].text) for k in [*kinds, "valid"]
            ]

    answers = anyio.run(main)
    assert [a.get("error", {}).get("code") for a in answers] == [-32602] * len(kinds) + [None]
    by = (names.MCP_SERVER_NAME, names.SAMPLING_REJECTION_REASON)
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_REJECTED, *by) == {(NAME, MALFORMED[k][1]): 1 for k in kinds}
    assert len(mcp_instrumented.spans(names.SPAN_SAMPLING)) == 1


def test_a_session_initialized_while_instrumented_counts_nothing_after_uninstrument(mcp_instrumented):
    """The request type the instrumentation put on a session stays there (mcp 1.x keeps it per
    session); after ``uninstrument()`` it counts nothing, and mcp still answers -32602."""
    from malformed_server import MALFORMED

    server = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).with_name("malformed_server.py"))])
    kind = next(k for k in MALFORMED if k != "valid")

    async def main():
        async with (
            stdio_client(server) as (read, write),
            ClientSession(read, write, sampling_callback=callback_returning(result())) as session,
        ):
            await session.initialize()
            MCPSamplingInstrumentor().uninstrument()
            return json.loads((await session.call_tool("ask", {"kind": kind})).content[0].text)

    answer = anyio.run(main)
    assert answer.get("error", {}).get("code") == -32602
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_REJECTED) == {}
