"""What the MCP server sees of its sampling requests, on both protocol paths, plus streamable HTTP
on 127.0.0.1 (session id, transport) and the stall watchdog on a real session; and what both sides
record of one request: its fields as attributes (int64 bounds, never raw content), the endings of
odd answers, the denial frames ``sampling_error`` builds, labels within their limits."""

from __future__ import annotations

import contextlib
import logging
import sys
import time

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.trace import SpanKind, StatusCode

import otel_sampling
from conftest import TRACER_PROVIDER
from drivers import ARGS, PATHS, SERVED, callback_returning, result, serve_streamable_http
from otel_sampling import names, state
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from sampling_server import SERVER_NAME, build_asking_server, build_fault_server, build_server

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup


@pytest.fixture
def both(telemetry):
    """Host and server instrumentors on one meter provider; yields (telemetry, server instrumentor)."""
    host, server = MCPSamplingInstrumentor(), MCPServerSamplingInstrumentor()
    for instrumentor in (host, server):
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    yield telemetry, server
    server.uninstrument()
    host.uninstrument()


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
    return telemetry.counts(
        names.METRIC_SAMPLING_SERVER_REQUESTS, names.SAMPLING_PATH, names.SAMPLING_ENDING, names.GEN_AI_RESPONSE_MODEL
    )


@pytest.mark.parametrize("mode", PATHS)
def test_server_sees_the_completed_request(both, mode):
    telemetry, _ = both
    anyio.run(call, build_server(), mode, callback_returning(result()))
    (span,) = server_spans(telemetry)
    attrs = span.attributes
    assert attrs[names.MCP_METHOD_NAME] == "sampling/createMessage"
    assert attrs[names.SAMPLING_PATH] == PATHS[mode]
    assert attrs[names.SAMPLING_ENDING] == "completed"
    assert attrs[names.GEN_AI_RESPONSE_MODEL] == SERVED
    assert attrs[names.SAMPLING_INCLUDE_CONTEXT_REQUESTED] == "thisServer"
    assert attrs[names.MCP_SERVER_NAME] == SERVER_NAME
    assert attrs[names.SAMPLING_TOOL_NAME] == "sample"
    assert server_counts(telemetry) == {(PATHS[mode], "completed", SERVED): 1}


def test_legacy_denial_reaches_the_server(both):
    telemetry, _ = both
    denial = types.ErrorData(code=-1, message="User rejected sampling request")
    out = anyio.run(call, build_server(), "legacy", callback_returning(denial))
    assert isinstance(out, MCPError) and out.code == -1
    (span,) = server_spans(telemetry)
    assert span.attributes[names.SAMPLING_ENDING] == "user.denied"
    assert span.attributes[names.ERROR_TYPE] == "-1"
    assert span.attributes[names.RPC_RESPONSE_STATUS_CODE] == "-1"  # MCP semconv: the answer's error code
    assert span.status.status_code is StatusCode.ERROR
    assert server_counts(telemetry) == {("rpc", "user.denied", "_unknown"): 1}


@pytest.mark.parametrize("mode", PATHS)
def test_mcp_client_operation_duration_on_the_server(both, mode):
    """MCP semconv ``mcp.client.operation.duration``: the sender's duration of its request, by
    ``mcp.method.name`` and ``mcp.protocol.version``; with ``error.type`` and
    ``rpc.response.status_code`` for a legacy denial (the client's frame)."""
    telemetry, _ = both
    anyio.run(call, build_server(), mode, callback_returning(result()))
    (span,) = server_spans(telemetry)
    (point,) = telemetry.points(names.METRIC_MCP_CLIENT_OPERATION_DURATION)
    assert dict(point.attributes) == {
        names.MCP_METHOD_NAME: "sampling/createMessage",
        names.MCP_PROTOCOL_VERSION: span.attributes[names.MCP_PROTOCOL_VERSION],
    }
    assert point.count == 1 and tuple(point.explicit_bounds) == names.MCP_DURATION_BUCKETS


def test_mcp_client_operation_duration_of_a_legacy_denial(both):
    telemetry, _ = both
    anyio.run(call, build_server(), "legacy", callback_returning(types.ErrorData(code=-1, message="User rejected")))
    points = telemetry.points(names.METRIC_MCP_CLIENT_OPERATION_DURATION)
    assert [(p.attributes[names.ERROR_TYPE], p.attributes[names.RPC_RESPONSE_STATUS_CODE]) for p in points] == [
        ("-1", "-1")
    ]


def test_the_sdk_timeout_is_no_answer_and_has_no_status_code(both):
    """The mcp SDK's own REQUEST_TIMEOUT (-32001) is raised on the server's side: ``error.type``
    names it, ``rpc.response.status_code`` stays off (no answer carried a code; the SDK's own
    ``MCP send`` span leaves it off too)."""
    telemetry, _ = both

    async def slow(ctx, params):
        await anyio.sleep(5)
        return result()

    out = anyio.run(call, build_server(), "legacy", slow, "sample_with_deadline", {"deadline_s": 0.3})
    assert isinstance(out, MCPError)
    (span,) = server_spans(telemetry)
    assert (span.attributes[names.SAMPLING_ENDING], span.attributes[names.ERROR_TYPE]) == ("timeout", "-32001")
    assert names.RPC_RESPONSE_STATUS_CODE not in span.attributes
    (point,) = telemetry.points(names.METRIC_MCP_CLIENT_OPERATION_DURATION)
    assert point.attributes[names.ERROR_TYPE] == "-32001" and names.RPC_RESPONSE_STATUS_CODE not in point.attributes


def test_legacy_server_span_parents_the_sdk_send_span(both):
    telemetry, _ = both
    anyio.run(call, build_server(), "legacy", callback_returning(result()))
    (ours,) = server_spans(telemetry)
    (send,) = [s for s in telemetry.spans(scope=None) if s.name == "MCP send sampling/createMessage"]
    assert send.parent is not None and send.parent.span_id == ours.context.span_id


def test_mrtr_denial_never_reaches_the_server_and_is_unanswered(both):
    telemetry, server = both
    denial = types.ErrorData(code=-1, message="User rejected sampling request")
    out = anyio.run(call, build_server(), "auto", callback_returning(denial))
    assert isinstance(out, MCPError) and out.code == -1  # raised on the host; nothing was sent
    assert server_spans(telemetry) == []  # the server is still waiting for a retry
    server._state.pending.sweep(time.monotonic() + 301)  # the watchdog, once the wait is over (300 s)
    (span,) = server_spans(telemetry)
    assert span.attributes[names.SAMPLING_ENDING] == "unanswered"
    assert span.attributes[names.SAMPLING_PATH] == "mrtr"
    assert server_counts(telemetry) == {("mrtr", "unanswered", "_unknown"): 1}
    assert len(server._state.pending) == 0


def test_a_request_with_no_back_channel_is_not_counted_as_an_mrtr_request(both):
    """A tool that sends sampling/createMessage itself (``ServerSession.send_request``) on a 2026-07-28
    connection: the SDK refuses it (``NoBackChannelError``, -32600), nothing reaches the client. Its
    path says so, beside the same server's real multi-round-trip request."""
    telemetry, _ = both
    out = anyio.run(
        call, build_server(), "auto", callback_returning(result()), "sample_with_deadline", {"deadline_s": 5}
    )
    assert isinstance(out, MCPError) and out.code == -32600  # the tool failed: the request could not be sent
    assert host_spans(telemetry) == []  # the client never saw it
    anyio.run(call, build_server(), "auto", callback_returning(result()))  # a real one, through the Sample resolver
    unsent, sent = server_spans(telemetry)
    assert unsent.attributes[names.SAMPLING_PATH] == "no_back_channel"
    assert unsent.attributes[names.SAMPLING_ENDING] == "error"
    assert unsent.attributes[names.ERROR_TYPE] == "-32600"
    assert sent.attributes[names.SAMPLING_PATH] == "mrtr"
    assert server_counts(telemetry) == {("no_back_channel", "error", "_unknown"): 1, ("mrtr", "completed", SERVED): 1}


def test_a_legacy_request_sent_over_json_rpc_is_rpc(both):
    """The same tool on a legacy connection: the request goes out as a JSON-RPC request."""
    telemetry, _ = both
    anyio.run(call, build_server(), "legacy", callback_returning(result()), "sample_with_deadline", {"deadline_s": 5})
    (span,) = server_spans(telemetry)
    assert span.attributes[names.SAMPLING_PATH] == "rpc"
    assert server_counts(telemetry) == {("rpc", "completed", SERVED): 1}


def test_mrtr_request_not_yet_due_stays_pending(both):
    telemetry, server = both
    anyio.run(call, build_server(), "auto", callback_returning(types.ErrorData(code=-1, message="no")))
    server._state.pending.sweep(time.monotonic() + 10)
    assert server_spans(telemetry) == [] and len(server._state.pending) == 1


def test_mcp_error_raised_on_the_2026_path_is_still_budget_exhausted(both):
    """The SDK surfaces a raising callback as an exception group on 2026-07-28; the host span still
    reads the error frame."""
    telemetry, _ = both
    raised = MCPError(
        -32003, "Daily limit", data={"reason": "policy.budget_exhausted", "resetsAt": "2026-12-01T00:00:00Z"}
    )

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
    assert event.attributes[names.SAMPLING_TOOL_NAME] == "sample"
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


@pytest.mark.parametrize("mode", PATHS)
def test_streamable_http_session_id_and_transport(both, mode):
    telemetry, _ = both
    sessions = []

    async def body(url):
        async with Client(url, mode=mode, sampling_callback=callback_returning(result())) as client:
            sessions.append(client.session)
            return await client.call_tool("sample", ARGS)

    out = anyio.run(serve_streamable_http, build_server(), body)
    assert out.content[0].text == f"{SERVED}|endTurn"
    (host,) = host_spans(telemetry)
    (server,) = server_spans(telemetry)
    assert host.attributes[names.NETWORK_TRANSPORT] == "tcp"
    assert host.attributes[names.MCP_SERVER_VERSION] == "1.0.0"
    # MCP semconv: the receiver's duration carries network.transport ("tcp" for HTTP)
    (point,) = telemetry.points(names.METRIC_MCP_SERVER_OPERATION_DURATION)
    assert point.attributes[names.NETWORK_TRANSPORT] == "tcp"
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

    anyio.run(serve_streamable_http, build_server(), body)
    assert telemetry.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND) == {
        ("decision_flipped",): 1
    }


def test_uninstrument_ends_pending_requests_unanswered(telemetry):
    """No retry can come once the server stops: its pending 2026-07-28 requests end unanswered."""
    server = MCPServerSamplingInstrumentor()
    server.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        anyio.run(call, build_server(), "auto", callback_returning(types.ErrorData(code=-1, message="no")))
        assert server_spans(telemetry) == []
    finally:  # never leave the server side instrumented for later tests
        server.uninstrument()
    (span,) = server_spans(telemetry)
    assert span.attributes[names.SAMPLING_ENDING] == "unanswered"


# ---------------------------------------------------------------- what both sides record of one request
def sampling_spans(telemetry, kind=None):
    return [s for s in telemetry.spans(names.SPAN_SAMPLING) if kind is None or s.kind is kind]


SENTINEL = "SENTINEL-7f3a"
INT64_MAX = 2**63 - 1  # OTLP AnyValue.int_value is an int64


@pytest.mark.parametrize("mode", PATHS)
def test_max_tokens_beyond_int64_is_left_off_the_spans_and_they_still_export(both, mode, caplog):
    """JSON has no integer bound and mcp accepts any int; OTLP carries int64 only, so a huge
    ``maxTokens`` would make every exporter fail on the attribute (and log a traceback per span)."""
    telemetry, _ = both
    out = anyio.run(call, build_asking_server(max_tokens=10**20), mode, callback_returning(result()), "ask", {})
    assert out.content[0].text == f"{SERVED}|endTurn"
    spans = sampling_spans(telemetry)
    assert {s.kind for s in spans} == {SpanKind.SERVER, SpanKind.CLIENT}
    assert all(names.GEN_AI_REQUEST_MAX_TOKENS not in s.attributes for s in spans)
    with caplog.at_level(logging.ERROR):
        encode_spans(spans)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize("max_tokens", [-5, INT64_MAX])
def test_max_tokens_within_int64_is_recorded_as_sent(both, max_tokens):
    telemetry, _ = both
    anyio.run(call, build_asking_server(max_tokens=max_tokens), "legacy", callback_returning(result()), "ask", {})
    assert [s.attributes[names.GEN_AI_REQUEST_MAX_TOKENS] for s in sampling_spans(telemetry)] == [max_tokens] * 2


@pytest.mark.parametrize("mode", PATHS)
def test_image_and_audio_messages_never_reach_attributes_raw(both, mode):
    """Pydantic content objects are never passed into attributes; labels are scalars from
    the allow-list; the fingerprint covers the content (another image, another identity)."""
    telemetry, _ = both

    def asking(data: str):
        return build_asking_server(
            messages=[
                types.SamplingMessage(role="user", content=types.ImageContent(data=data, mime_type="image/png")),
                types.SamplingMessage(role="user", content=types.AudioContent(data="UklGRg==", mime_type="audio/wav")),
            ]
        )

    anyio.run(call, asking("aGVsbG8="), mode, callback_returning(result()), "ask", {})
    anyio.run(call, asking("d29ybGQ="), mode, callback_returning(result()), "ask", {})
    spans = sampling_spans(telemetry)
    assert len(spans) == 4
    for span in spans:
        for value in span.attributes.values():
            assert isinstance(value, (str, int, float, bool)) or all(isinstance(v, str) for v in value)
        assert not any("aGVsbG8" in str(v) or "image/png" in str(v) for v in span.attributes.values())
    host = sampling_spans(telemetry, SpanKind.SERVER)
    first, second = (s.attributes[names.SAMPLING_FINGERPRINT] for s in host)
    assert first != second
    (labels,) = {tuple(sorted(p.attributes)) for p in telemetry.points(names.METRIC_SAMPLING_REQUESTS)}
    assert set(labels) == {
        names.MCP_SERVER_NAME,
        names.SAMPLING_PATH,
        names.SAMPLING_ENDING,
        names.SAMPLING_SUBSTITUTION,
        names.DEGRADATION_MODE,
        names.SAMPLING_INCLUDE_CONTEXT_REQUESTED,
        names.SAMPLING_INCLUDE_CONTEXT_GRANTED,
        names.GEN_AI_RESPONSE_MODEL,
    }


@pytest.mark.parametrize("mode", PATHS)
def test_max_tokens_stop_reason_is_completed_and_truncation_recorded(both, mode):
    """MCP spec: stopReason "maxTokens" is a completed (truncated) result, not an error."""
    telemetry, _ = both
    out = anyio.run(
        call,
        build_server(),
        mode,
        callback_returning(result(stop_reason="maxTokens")),
        "sample",
        {"hint": "claude-sonnet", "include_context": "none"},
    )
    assert out.content[0].text == f"{SERVED}|maxTokens"
    for span in sampling_spans(telemetry):
        assert span.attributes[names.SAMPLING_ENDING] == "completed"
        assert span.attributes[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("maxTokens",)
        assert names.ERROR_TYPE not in span.attributes


@pytest.mark.parametrize("mode", PATHS)
@pytest.mark.parametrize("ending", ["completed", "denied", "raised"])
def test_content_reaches_no_span_event_log_or_label(both, mode, ending, caplog):
    """A sentinel in the messages, system prompt, metadata, the error message and the exception
    message appears nowhere in telemetry (content capture is off by default)."""
    telemetry, _ = both
    server = build_asking_server(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(text=f"ticket {SENTINEL}"))],
        system_prompt=f"system {SENTINEL}",
        metadata={"note": SENTINEL, SENTINEL: 1},
        stop_sequences=[SENTINEL],
    )

    async def callback(ctx, params):
        if ending == "denied":
            return otel_sampling.sampling_error("policy.denied", f"denied {SENTINEL}")
        if ending == "raised":
            raise MCPError(-32003, f"no {SENTINEL}", data={"reason": "policy.denied", "detail": SENTINEL})
        return result()

    with caplog.at_level(logging.DEBUG):
        anyio.run(call, server, mode, callback, "ask", {})
    spans = sampling_spans(telemetry)
    # the host's span is always there (so the loop below runs); on the 2026-07-28 path a denied
    # request's server span ends only later, unanswered (test_mrtr_denial_never_reaches_the_server_and_is_unanswered)
    assert [s.kind.name for s in spans if s.kind.name == "SERVER"] == ["SERVER"]
    for span in spans:
        texts = [str(v) for v in span.attributes.values()] + [span.name]
        texts += [str(v) for event in span.events for v in event.attributes.values()]
        assert not [t for t in texts if SENTINEL in t]
    metrics = telemetry.reader.get_metrics_data()
    labels = [
        str(v)
        for rm in metrics.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        for p in m.data.data_points
        for v in p.attributes.values()
    ]
    assert labels and not [v for v in labels if SENTINEL in v]
    ours = [r for r in caplog.records if r.name.startswith("otel_sampling")]
    assert not [r for r in ours if SENTINEL in r.getMessage() or SENTINEL in str(r.exc_info)]


@pytest.mark.parametrize("mode", PATHS)
@pytest.mark.parametrize("how", ["returned", "raised"])
def test_sampling_error_is_sent_and_read_back_unchanged(both, mode, how):
    """What ``sampling_error`` builds is a frame the mcp SDK sends as is: the server's call fails
    with that code, message and data, and both sides classify it as the budget exhaustion."""
    telemetry, _ = both
    error = otel_sampling.sampling_error(
        "policy.budget_exhausted", "Daily limit reached", resets_at="2026-12-01T00:00:00Z"
    )

    async def callback(ctx, params):
        if how == "raised":
            raise MCPError.from_error_data(error)
        return error

    out = anyio.run(call, build_server(), mode, callback, "sample", {"hint": "claude-sonnet"})
    if mode == "auto" and how == "raised":  # the exception stays in the host (an anyio group)
        (out,) = out.exceptions
    assert isinstance(out, MCPError)
    assert (out.error.code, out.error.message, out.error.data) == (
        -31003,
        "Daily limit reached",
        {"reason": "policy.budget_exhausted", "resetsAt": "2026-12-01T00:00:00Z"},
    )
    host = sampling_spans(telemetry, SpanKind.SERVER)
    server = sampling_spans(telemetry, SpanKind.CLIENT)
    # On the 2026-07-28 path a denial never reaches the server (it waits for a retry): no span yet.
    for span in host + (server if mode == "legacy" else []):
        assert span.attributes[names.SAMPLING_ENDING] == "policy.budget_exhausted"
        assert span.attributes[names.SAMPLING_BUDGET_RESETS_AT] == "2026-12-01T00:00:00Z"
    assert len(host) == 1 and len(server) == (1 if mode == "legacy" else 0)


@pytest.mark.parametrize("mode", PATHS)
def test_an_error_frame_claiming_completed_is_not_a_completion(both, mode):
    """An error frame is never a completion, whatever its ``data.reason`` says: the server got an
    error. Read as ``completed`` it would count as served and as an "allow" decision."""
    telemetry, _ = both
    frame = types.ErrorData(code=-32003, message="Denied", data={"reason": "completed"})
    out = anyio.run(call, build_server(), mode, callback_returning(frame), "sample", {"hint": "claude-sonnet"})
    assert isinstance(out, MCPError) and out.error.data == {"reason": "completed"}
    spans = sampling_spans(telemetry, SpanKind.SERVER)
    spans += sampling_spans(telemetry, SpanKind.CLIENT) if mode == "legacy" else []
    assert [s.attributes[names.SAMPLING_ENDING] for s in spans] == ["policy.denied"] * len(spans)


@pytest.mark.parametrize("mode", PATHS)
def test_a_result_with_an_empty_model_names_no_model_and_is_unjudged(both, mode):
    """No served model means no ``gen_ai.response.model`` (not "", not the hint) and an
    ``unjudged`` substitution."""
    telemetry, _ = both
    out = anyio.run(
        call, build_server(), mode, callback_returning(result(model="")), "sample", {"hint": "claude-sonnet"}
    )
    assert out.content[0].text == "|endTurn"
    for span in sampling_spans(telemetry, SpanKind.SERVER) + sampling_spans(telemetry, SpanKind.CLIENT):
        assert names.GEN_AI_RESPONSE_MODEL not in span.attributes
        assert span.attributes[names.SAMPLING_ENDING] == "completed"
    (host,) = sampling_spans(telemetry, SpanKind.SERVER)
    assert host.attributes[names.SAMPLING_SUBSTITUTION] == "unjudged"
    counts = telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_SUBSTITUTION, names.GEN_AI_RESPONSE_MODEL)
    assert counts == {("unjudged", names.UNKNOWN_LABEL): 1}


@pytest.mark.parametrize("name", ["\x00\x1b\u202e", "\ud800"])
def test_a_server_name_of_nothing_printable_is_labelled_unknown(both, name):
    telemetry, _ = both
    anyio.run(call, build_server(name), "legacy", callback_returning(result()), "sample", {"hint": "claude-sonnet"})
    counts = telemetry.counts(names.METRIC_SAMPLING_REQUESTS, names.MCP_SERVER_NAME)
    assert counts == {(names.UNKNOWN_LABEL,): 1}


def test_server_and_model_labels_stay_within_the_label_value_limit(telemetry, monkeypatch):
    """Every MCP sampling metric (both sides, violations and stalls included) admits at most
    OTEL_SAMPLING_LABEL_VALUE_LIMIT distinct server and model names; the rest are ``_OTHER``."""
    monkeypatch.setenv("OTEL_SAMPLING_LABEL_VALUE_LIMIT", "2")
    host, server = MCPSamplingInstrumentor(), MCPServerSamplingInstrumentor()
    for instrumentor in (host, server):
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    denied = otel_sampling.sampling_error("policy.denied", "No")
    try:
        anyio.run(call, build_server("server-0"), "legacy", callback_returning(denied), "sample", {"text": "same"})
        for i in range(1, 5):
            anyio.run(
                call,
                build_server(f"server-{i}"),
                "legacy",
                callback_returning(result(model=f"model-{i}")),
                "sample",
                {"text": "same"},
            )
        ledger = otel_sampling.state.host_ledger()

        async def stalling(ctx, params):
            ledger.pending.sweep(time.monotonic() + 3600)
            return result(model="model-9")

        anyio.run(call, build_server("server-9"), "legacy", stalling, "sample", {"text": "other"})
    finally:
        server.uninstrument()
        host.uninstrument()
    for metric in (
        names.METRIC_SAMPLING_REQUESTS,
        names.METRIC_SAMPLING_DURATION,
        names.METRIC_SAMPLING_IN_FLIGHT,
        names.METRIC_SAMPLING_VIOLATIONS,
        names.METRIC_SAMPLING_STALLS,
        names.METRIC_SAMPLING_SERVER_REQUESTS,
    ):
        points = telemetry.points(metric)
        assert points, metric
        for key in (names.MCP_SERVER_NAME, names.GEN_AI_RESPONSE_MODEL):
            values = {p.attributes[key] for p in points if key in p.attributes}
            assert len(values - {names.OVERFLOW_LABEL, names.UNKNOWN_LABEL}) <= 2, (metric, key, values)
    assert {p.attributes[names.MCP_SERVER_NAME] for p in telemetry.points(names.METRIC_SAMPLING_STALLS)} == {
        names.OVERFLOW_LABEL
    }


def test_the_session_id_never_reaches_a_metric(both):
    """Streamable HTTP (legacy, stateful) on 127.0.0.1: the session id is on both spans, on no
    metric point (no request or session id is ever a label)."""
    telemetry, _ = both

    async def body(url):
        async with Client(url, mode="legacy", sampling_callback=callback_returning(result())) as client:
            return await client.call_tool("sample", {"hint": "claude-sonnet"})

    anyio.run(serve_streamable_http, build_server(), body)
    session_ids = {s.attributes[names.MCP_SESSION_ID] for s in sampling_spans(telemetry)}
    assert len(session_ids) == 1
    metrics = telemetry.reader.get_metrics_data()
    points = [
        p for rm in metrics.resource_metrics for sm in rm.scope_metrics for m in sm.metrics for p in m.data.data_points
    ]
    assert points
    for point in points:
        assert names.MCP_SESSION_ID not in point.attributes
        assert not session_ids & {str(v) for v in point.attributes.values()}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_tool_error_after_a_completed_sampling_request(both, mode):
    """The tool's error keeps ``error.type=tool_error`` on the SDK's tools/call span and reaches the
    host unchanged; the sampling request made inside that tool stays ``completed``."""
    telemetry, _ = both
    out = anyio.run(
        call, build_fault_server(), mode, callback_returning(result(model="claude-x")), "sample_then_fail", {}
    )
    assert out.is_error  # the tool's error, as mcp reports it to the host
    tool_spans = [s for s in telemetry.spans(scope=None) if s.name == "tools/call sample_then_fail"]
    # 2026-07-28: the first round answers input-required (no error); the round that ran the tool is the last
    assert [s.attributes.get(names.ERROR_TYPE) for s in tool_spans][-1:] == ["tool_error"]
    assert {s.attributes.get(names.ERROR_TYPE) for s in tool_spans} <= {None, "tool_error"}
    host_span = [s for s in telemetry.spans(names.SPAN_SAMPLING) if s.kind.name == "SERVER"]
    assert [s.attributes[names.SAMPLING_ENDING] for s in host_span] == ["completed"]
    assert names.ERROR_TYPE not in host_span[0].attributes
