"""Adversarial review of MCP sampling on real sessions (both sides, both protocol paths): hostile
request fields, content that must stay out of telemetry, the denial vocabulary round trip, peer
errors and exception groups reaching the host unchanged, violations counted once, and the failure
kinds of the shared case list (items 7, 8, 9, 11, 14, 15, 16)."""

from __future__ import annotations

import logging
import sys

import pytest

pytest.importorskip("mcp_types", reason="mcp 2.x sessions")

import anyio
import mcp_types as types
from mcp import Client, MCPError
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.trace import SpanKind

import otel_sampling
from conftest import TRACER_PROVIDER
from otel_sampling import names
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
from sampling_server import build_asking_server, build_server

if sys.version_info < (3, 11):  # anyio brings the backport there
    from exceptiongroup import ExceptionGroup

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
    # the host's span is always there (so the loop below runs); on the 2026-07-28 path a denied
    # request's server span ends only later, unanswered (test_mcp_server_side, a real run)
    assert [s.kind.name for s in spans if s.kind.name == "SERVER"] == ["SERVER"]
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


# ---------------------------------------------------------------- the denial vocabulary round trip
@pytest.mark.parametrize("mode", PATHS)
@pytest.mark.parametrize("how", ["returned", "raised"])
def test_sampling_error_is_sent_and_read_back_unchanged(both, mode, how):
    """What ``sampling_error`` builds is a frame the mcp SDK sends as is: the server's call fails
    with that code, message and data, and both sides classify it as the budget exhaustion."""
    error = otel_sampling.sampling_error("policy.budget_exhausted", "Daily limit reached",
                                         resets_at="2026-12-01T00:00:00Z")

    async def callback(ctx, params):
        if how == "raised":
            raise MCPError.from_error_data(error)
        return error

    out = anyio.run(call, build_server(), mode, callback, "sample", {"hint": "claude-sonnet"})
    if mode == "auto" and how == "raised":  # the exception stays in the host (an anyio group)
        (out,) = out.exceptions
    assert isinstance(out, MCPError)
    assert (out.error.code, out.error.message, out.error.data) == (
        -32003, "Daily limit reached", {"reason": "policy.budget_exhausted", "resetsAt": "2026-12-01T00:00:00Z"})
    host = sampling_spans(both, SpanKind.SERVER)
    server = sampling_spans(both, SpanKind.CLIENT)
    # On the 2026-07-28 path a denial never reaches the server (it waits for a retry): no span yet.
    for span in host + (server if mode == "legacy" else []):
        assert span.attributes[names.SAMPLING_ENDING] == "policy.budget_exhausted"
        assert span.attributes[names.SAMPLING_BUDGET_RESETS_AT] == "2026-12-01T00:00:00Z"
    assert len(host) == 1 and len(server) == (1 if mode == "legacy" else 0)


@pytest.mark.parametrize("reason", [["policy.denied"], {"policy.denied": 1}, None, 7])
def test_sampling_error_rejects_a_reason_of_the_wrong_type_with_value_error(reason):
    with pytest.raises(ValueError, match="reason must be one of"):
        otel_sampling.sampling_error(reason, "Denied")


@pytest.mark.parametrize("scope", [["none"], {"none": 1}, None, 0])
def test_grant_context_rejects_a_scope_of_the_wrong_type_with_value_error(scope):
    with pytest.raises(ValueError, match="scope must be one of"):
        otel_sampling.grant_context(scope)


# ---------------------------------------------------------------- peer errors unchanged (case 16)
async def _deadline_exceeded(mode):
    async def slow(ctx, params):
        await anyio.sleep(5)
        return result()
    return await call(build_server(), mode, slow, "sample_with_deadline", {"deadline_s": 0.3})


async def _denied(mode):
    return await call(build_server(), mode, returning(types.ErrorData(code=-32000, message="Host says no")),
                      "sample", {"hint": "claude-sonnet"})


@pytest.mark.parametrize(("scenario", "mode"), [(_deadline_exceeded, "legacy"), (_denied, "legacy"),
                                                (_denied, "auto")])
def test_peer_errors_reach_the_host_as_without_instrumentation(telemetry, scenario, mode):
    """A JSON-RPC error frame and the SDK's -32001 timeout reach the caller with the same type,
    code, message and data whether or not we are installed."""
    def seen(exc):
        error = getattr(exc, "error", None)
        return type(exc), str(exc), getattr(error, "code", None), getattr(error, "data", None)

    bare = seen(anyio.run(scenario, mode))
    host, server = MCPSamplingInstrumentor(), MCPServerSamplingInstrumentor()
    for instrumentor in (host, server):
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        assert seen(anyio.run(scenario, mode)) == bare
    finally:
        server.uninstrument()
        host.uninstrument()
    assert bare[0] is MCPError and sampling_spans(telemetry)


# ---------------------------------------------------------------- violations counted once
@pytest.mark.parametrize("mode", PATHS)
def test_one_retry_wider_both_ways_is_one_scope_widened(both, mode):
    """A retry that requests and is granted a wider scope is one violation, not two."""
    def granting(scope):
        async def callback(ctx, params):
            otel_sampling.grant_context(scope)
            return result()
        return callback

    args = {"hint": "claude-sonnet"}
    anyio.run(call, build_server(), mode, granting("none"), "sample", {**args, "include_context": "none"})
    anyio.run(call, build_server(), mode, granting("thisServer"), "sample", {**args, "include_context": "thisServer"})
    counts = both.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND)
    assert counts == {(names.VIOLATION_SCOPE_WIDENED,): 1}
    retry = sampling_spans(both, SpanKind.SERVER)[-1]
    assert [e.attributes[names.SAMPLING_VIOLATION_KIND] for e in retry.events
            if e.name == names.EVENT_SAMPLING_VIOLATION] == [names.VIOLATION_SCOPE_WIDENED]


@pytest.mark.parametrize("mode", PATHS)
def test_a_flip_at_one_server_is_seen_through_a_decision_at_another(both, mode):
    """Denied by the host for server A, rerouted to B (completed there), then completed for A: the
    host flipped its decision for A, whatever it decided for B in between."""
    denied = otel_sampling.sampling_error("policy.denied", "Not for this server")
    args = {"hint": "claude-sonnet", "include_context": "none"}
    anyio.run(call, build_server("server-a"), mode, returning(denied), "sample", args)
    anyio.run(call, build_server("server-b"), mode, returning(result()), "sample", args)
    anyio.run(call, build_server("server-a"), mode, returning(result()), "sample", args)
    counts = both.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND, names.MCP_SERVER_NAME)
    assert counts == {(names.VIOLATION_REROUTED_AFTER_DENIAL, "server-b"): 1,
                      (names.VIOLATION_DECISION_FLIPPED, "server-a"): 1}


@pytest.mark.parametrize("name", ["\x00\x1b\u202e", "\ud800"])
def test_a_server_name_of_nothing_printable_is_labelled_unknown(both, name):
    anyio.run(call, build_server(name), "legacy", returning(result()), "sample", {"hint": "claude-sonnet"})
    counts = both.counts(names.METRIC_SAMPLING_REQUESTS, names.MCP_SERVER_NAME)
    assert counts == {(names.UNKNOWN_LABEL,): 1}


def test_content_json_cannot_carry_still_gets_an_identity(both):
    """A host dispatching a request it built in-process (``dispatch_input_request``) can put bytes
    or sets in ``metadata``: mcp accepts them (``dict[str, Any]``); the request still gets a
    fingerprint, the same one when repeated, so the repeat is linked and judged."""
    def request(blob: bytes):
        return types.CreateMessageRequest(params=types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(text="x"))], max_tokens=5,
            metadata={"blob": blob, "ids": {3, 1, 2}}))

    async def main():
        async with Client(build_server(), mode="legacy", sampling_callback=returning(result())) as client:
            ctx = type("Ctx", (), {"request_id": 1, "meta": None})()
            for blob in (b"\xff\x00", b"\xff\x00", b"\xfe"):
                await client.session.dispatch_input_request(ctx, request(blob))

    anyio.run(main)
    first, repeat, other = sampling_spans(both, SpanKind.SERVER)
    assert first.attributes[names.SAMPLING_FINGERPRINT] == repeat.attributes[names.SAMPLING_FINGERPRINT]
    assert other.attributes[names.SAMPLING_FINGERPRINT] != first.attributes[names.SAMPLING_FINGERPRINT]
    assert [link.context.span_id for link in repeat.links] == [first.context.span_id]


def test_a_huge_server_name_is_not_kept_once_per_session(both):
    """A host that opens a session per tool call gets a fresh copy of the server's 1 MB name each
    time; the identity store and the per-server endings (kept an hour, 10k entries) must not hold
    one copy per request. Detection still works: the repeat at another server is a reroute."""
    huge = "s" * 1_000_000
    denied = otel_sampling.sampling_error("policy.denied", "No")
    for i in range(5):
        anyio.run(call, build_server(huge + "x"), "legacy", returning(denied), "sample", {"text": f"ticket {i}"})
    anyio.run(call, build_server(huge + "y"), "legacy", returning(result()), "sample", {"text": "ticket 4"})
    ledger = otel_sampling.state.host_ledger()
    kept = [seen for _, seen in ledger.identity._entries.items()]
    assert len(kept) == 5
    servers = [s.server for s in kept] + [d.server for s in kept for d in s.decisions] + [s.denied_server for s in kept]
    servers += list(ledger._last_endings)
    assert max(len(s) for s in servers) <= 256
    counts = both.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND)
    assert counts == {(names.VIOLATION_REROUTED_AFTER_DENIAL,): 1}


def test_the_session_id_never_reaches_a_metric(both):
    """Streamable HTTP (legacy, stateful) on 127.0.0.1: the session id is on both spans, on no
    metric point (DESIGN: no request or session ids on metrics)."""
    from test_mcp_server_side import _serve_http

    async def body(url):
        async with Client(url, mode="legacy", sampling_callback=returning(result())) as client:
            return await client.call_tool("sample", {"hint": "claude-sonnet"})

    anyio.run(_serve_http, body)
    session_ids = {s.attributes[names.MCP_SESSION_ID] for s in sampling_spans(both)}
    assert len(session_ids) == 1
    metrics = both.reader.get_metrics_data()
    points = [p for rm in metrics.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
              for p in m.data.data_points]
    assert points
    for point in points:
        assert names.MCP_SESSION_ID not in point.attributes
        assert not session_ids & {str(v) for v in point.attributes.values()}


LATE_IMPORT = """
import sys, wrapt
assert "mcp" not in sys.modules
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.mcp_server import MCPServerSamplingInstrumentor
host, server = MCPSamplingInstrumentor(), MCPServerSamplingInstrumentor()
host.instrument(); server.instrument()
from mcp.client.session import ClientSession            # imported after instrument(): wrapped
from mcp.server.session import ServerSession
print(isinstance(vars(ClientSession)["dispatch_input_request"], wrapt.FunctionWrapper),
      isinstance(vars(ServerSession)["send_request"], wrapt.FunctionWrapper))
server.uninstrument(); host.uninstrument()
from mcp.client.session import ClientSession            # imported after uninstrument(): not wrapped
from mcp.server.runner import ServerRunner
print(isinstance(vars(ClientSession)["dispatch_input_request"], wrapt.FunctionWrapper),
      isinstance(vars(ServerRunner)["_on_request"], wrapt.FunctionWrapper))
import threading
host.instrument()  # left instrumented: the watchdog thread must not keep the process alive
print(all(t.daemon for t in threading.enumerate() if t.name == "otel-sampling-watchdog"))
"""


def test_mcp_imported_after_instrument_is_wrapped_and_after_uninstrument_is_not():
    """Case 9, in a fresh interpreter where mcp is not imported yet; a process that exits still
    instrumented exits (the stall watchdog is a daemon thread)."""
    import subprocess

    proc = subprocess.run([sys.executable, "-c", LATE_IMPORT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True", "False", "False", "True"]


@pytest.mark.parametrize("mode", PATHS)
def test_an_error_frame_claiming_completed_is_not_a_completion(both, mode):
    """An error frame is never a completion, whatever its ``data.reason`` says: the server got an
    error. Read as ``completed`` it would count as served and as an "allow" decision."""
    frame = types.ErrorData(code=-32003, message="Denied", data={"reason": "completed"})
    out = anyio.run(call, build_server(), mode, returning(frame), "sample", {"hint": "claude-sonnet"})
    assert isinstance(out, MCPError) and out.error.data == {"reason": "completed"}
    spans = sampling_spans(both, SpanKind.SERVER) + (sampling_spans(both, SpanKind.CLIENT) if mode == "legacy" else [])
    assert [s.attributes[names.SAMPLING_ENDING] for s in spans] == ["policy.denied"] * len(spans)


def test_an_ending_rule_cannot_map_error_frames_to_completed(tmp_path):
    from otel_sampling.policy import PolicyError, load_policy

    path = tmp_path / "policy.toml"
    path.write_text('[[ending_rules]]\ncode = -32050\nending = "policy.denied"\n\n'
                    '[[ending_rules]]\ncode = -32051\nending = "completed"\n')
    with pytest.raises(PolicyError, match=r"policy.toml:7: ending_rules\[1\].ending: an error frame is never"):
        load_policy(path)


@pytest.mark.parametrize("mode", PATHS)
def test_a_rerouted_request_retried_at_its_new_server_is_one_reroute(both, mode):
    """Denied for A, sent to B, then retried at B: one reroute (the retry at B is a repeat there)."""
    denied = otel_sampling.sampling_error("policy.denied", "Not for this server")
    args = {"hint": "claude-sonnet", "include_context": "none"}
    anyio.run(call, build_server("server-a"), mode, returning(denied), "sample", args)
    for _ in range(2):
        anyio.run(call, build_server("server-b"), mode, returning(result()), "sample", args)
    counts = both.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND, names.MCP_SERVER_NAME)
    assert counts == {(names.VIOLATION_REROUTED_AFTER_DENIAL, "server-b"): 1}


# ---------------------------------------------------------------- cases 8 and 11
@pytest.mark.parametrize("mode", PATHS)
def test_a_result_with_an_empty_model_names_no_model_and_is_unjudged(both, mode):
    """Case 8: no served model means no ``gen_ai.response.model`` (not "", not the hint) and an
    ``unjudged`` substitution."""
    out = anyio.run(call, build_server(), mode, returning(result(model="")), "sample", {"hint": "claude-sonnet"})
    assert out.content[0].text == "|endTurn"
    for span in sampling_spans(both, SpanKind.SERVER) + sampling_spans(both, SpanKind.CLIENT):
        assert names.GEN_AI_RESPONSE_MODEL not in span.attributes
        assert span.attributes[names.SAMPLING_ENDING] == "completed"
    (host,) = sampling_spans(both, SpanKind.SERVER)
    assert host.attributes[names.SAMPLING_SUBSTITUTION] == "unjudged"
    counts = both.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_SUBSTITUTION, names.GEN_AI_RESPONSE_MODEL)
    assert counts == {("unjudged", names.UNKNOWN_LABEL): 1}


@pytest.mark.parametrize("mode", PATHS)
def test_the_host_cancelling_gets_its_cancellation_back(both, mode):
    """Case 11: the cancellation propagates through our wrapper unchanged (the host's cancel scope
    catches it, so it was not swallowed or replaced), and the request ends ``cancelled``."""
    started = anyio.Event()

    async def callback(ctx, params):
        started.set()
        await anyio.sleep(30)
        return result()

    async def main():
        async with Client(build_server(), mode=mode, sampling_callback=callback) as client:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(client.call_tool, "sample", {"hint": "claude-sonnet"})
                    await started.wait()
                    scope.cancel()
            await anyio.sleep(0.1)
            return scope.cancelled_caught

    assert anyio.run(main) is True
    (host,) = sampling_spans(both, SpanKind.SERVER)
    assert host.attributes[names.SAMPLING_ENDING] == "cancelled"


def test_an_exception_group_raised_by_the_callback_reaches_the_host_as_it_would_bare(telemetry):
    """2026-07-28 path: the host's own exception group, inside anyio's, is the very same object
    with and without us; the span reads its single leaf."""
    def raising():
        raised = ExceptionGroup("host checks", [ValueError("bad params")])

        async def callback(ctx, params):
            raise raised
        return raised, callback

    def leaves(exc):
        return [exc] + [leaf for sub in getattr(exc, "exceptions", ()) for leaf in leaves(sub)]

    raised, callback = raising()
    bare = anyio.run(call, build_server(), "auto", callback, "sample", {"hint": "claude-sonnet"})
    host = MCPSamplingInstrumentor()
    host.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        raised_again, callback = raising()
        out = anyio.run(call, build_server(), "auto", callback, "sample", {"hint": "claude-sonnet"})
    finally:
        host.uninstrument()
    assert raised in leaves(bare) and raised_again in leaves(out)
    assert [type(e) for e in leaves(out)] == [type(e) for e in leaves(bare)]
    (span,) = sampling_spans(telemetry)
    assert span.attributes[names.SAMPLING_ENDING] == "error"
    assert span.attributes[names.ERROR_TYPE] == "ValueError"


@pytest.mark.parametrize("mode", PATHS)
def test_a_budget_running_out_on_a_repeated_request_is_not_a_flip(both, mode):
    """A server asking the same question several times (n samples) until the budget is spent: a
    budget is a quantity that runs out, not a re-evaluation. The reverse (exhausted, then served
    without a grant) stays a flip (test_mcp_violations)."""
    budget = otel_sampling.sampling_error("policy.budget_exhausted", "Daily limit", resets_at="2026-12-01T00:00:00Z")
    args = {"hint": "claude-sonnet", "include_context": "none"}
    for answer in (result(), result(), budget, budget):
        anyio.run(call, build_server(), mode, returning(answer), "sample", args)
    assert both.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND) == {}
    anyio.run(call, build_server(), mode, returning(result()), "sample", args)
    assert both.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND) == {
        (names.VIOLATION_DECISION_FLIPPED,): 1}


def test_server_and_model_labels_stay_within_the_label_value_limit(telemetry, monkeypatch):
    """Every MCP sampling metric (both sides, violations and stalls included) admits at most
    OTEL_SAMPLING_LABEL_VALUE_LIMIT distinct server and model names; the rest are ``_other``."""
    monkeypatch.setenv("OTEL_SAMPLING_LABEL_VALUE_LIMIT", "2")
    host, server = MCPSamplingInstrumentor(), MCPServerSamplingInstrumentor()
    for instrumentor in (host, server):
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    denied = otel_sampling.sampling_error("policy.denied", "No")
    try:
        anyio.run(call, build_server("server-0"), "legacy", returning(denied), "sample", {"text": "same"})
        for i in range(1, 5):
            anyio.run(call, build_server(f"server-{i}"), "legacy", returning(result(model=f"model-{i}")),
                      "sample", {"text": "same"})
        ledger = otel_sampling.state.host_ledger()

        async def stalling(ctx, params):
            import time as clock
            ledger.pending.sweep(clock.monotonic() + 3600)
            return result(model="model-9")
        anyio.run(call, build_server("server-9"), "legacy", stalling, "sample", {"text": "other"})
    finally:
        server.uninstrument()
        host.uninstrument()
    for metric in (names.METRIC_SAMPLING_REQUESTS, names.METRIC_SAMPLING_DURATION, names.METRIC_SAMPLING_IN_FLIGHT,
                   names.METRIC_SAMPLING_VIOLATIONS, names.METRIC_SAMPLING_STALLS,
                   names.METRIC_SAMPLING_SERVER_REQUESTS):
        points = telemetry.points(metric)
        assert points, metric
        for key in (names.MCP_SERVER_NAME, names.GEN_AI_RESPONSE_MODEL):
            values = {p.attributes[key] for p in points if key in p.attributes}
            assert len(values - {names.OVERFLOW_LABEL, names.UNKNOWN_LABEL}) <= 2, (metric, key, values)
    assert {p.attributes[names.MCP_SERVER_NAME] for p in telemetry.points(names.METRIC_SAMPLING_STALLS)} == {
        names.OVERFLOW_LABEL}
