"""Host-side MCP sampling spans and metrics, over real mcp 2.x sessions on both protocol paths.

``mode="legacy"`` runs the in-memory JSON-RPC transport (server-to-client request, protocol
2025-11-25); ``mode="auto"`` negotiates 2026-07-28, where sampling rides InputRequiredResult.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters
from opentelemetry.trace import SpanKind, StatusCode

import otel_sampling
from conftest import _instrumented
from drivers import ARGS, PATHS, call, callback_returning, only_sampling_span, result
from otel_sampling import names
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from sampling_server import SERVER_NAME, build_server

if sys.version_info < (3, 11):  # anyio brings the backport there
    from exceptiongroup import BaseExceptionGroup


@pytest.mark.parametrize("mode", PATHS)
def test_completed_request_on_each_path(mcp_instrumented, mode):
    out = anyio.run(call, mode, callback_returning(result()))
    assert out == "claude-sonnet-5-5-20261001|endTurn"
    span = only_sampling_span(mcp_instrumented)
    assert span.kind is SpanKind.SERVER
    attrs = span.attributes
    assert attrs[names.MCP_METHOD_NAME] == "sampling/createMessage"
    assert attrs[names.SAMPLING_PATH] == PATHS[mode]
    assert attrs[names.MCP_SERVER_NAME] == SERVER_NAME
    assert attrs[names.SAMPLING_ENDING] == "completed"
    assert attrs[names.GEN_AI_RESPONSE_MODEL] == "claude-sonnet-5-5-20261001"
    assert attrs[names.GEN_AI_RESPONSE_FINISH_REASONS] == ("endTurn",)
    assert attrs[names.SAMPLING_MODEL_HINTS] == ("claude-sonnet",)
    assert attrs[names.SAMPLING_INCLUDE_CONTEXT_REQUESTED] == "thisServer"
    assert attrs[names.GEN_AI_REQUEST_MAX_TOKENS] == 64
    assert attrs[names.SAMPLING_SUBSTITUTION] == "none"  # hint is a substring of the served model
    assert names.RPC_RESPONSE_STATUS_CODE not in attrs and names.ERROR_TYPE not in attrs
    assert span.status.status_code is StatusCode.UNSET
    counts = mcp_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.MCP_SERVER_NAME, names.SAMPLING_ENDING)
    assert counts == {(SERVER_NAME, "completed"): 1}
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_DURATION, names.SAMPLING_ENDING) == {("completed",): 1}
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 0}


def test_same_request_same_telemetry_on_both_paths(mcp_instrumented):
    """The Done-when check: both paths yield the same ending and attributes, path aside."""
    seen = []
    for mode in PATHS:
        anyio.run(call, mode, callback_returning(ErrorDataBudget))
        anyio.run(call, mode, callback_returning(result(model="claude-haiku-5-5")))
        seen.append(
            [
                {
                    k: v
                    for k, v in s.attributes.items()
                    if k not in (names.SAMPLING_PATH, names.JSONRPC_REQUEST_ID, names.MCP_PROTOCOL_VERSION)
                }
                for s in mcp_instrumented.spans(names.SPAN_SAMPLING)[-2:]
            ]
        )
    assert seen[0] == seen[1]
    assert seen[0][0][names.SAMPLING_ENDING] == "policy.budget_exhausted"
    assert seen[0][1][names.SAMPLING_ENDING] == "completed"


ErrorDataBudget = types.ErrorData(
    code=-32003,
    message="Daily sampling budget exhausted",
    data={"reason": "policy.budget_exhausted", "resetsAt": "2026-12-01T00:00:00Z"},
)

DENIALS = [
    # (ErrorData the host returns, expected ending, expected error.type) -- rules from the MCP spec
    # (-1 and the text "User rejected sampling request" = user rejection), the mcp SDK's default
    # callback and -32003, the policy refusal code hosts sent before -31003.
    (types.ErrorData(code=-1, message="User rejected sampling request"), "user.denied", "-1"),
    (types.ErrorData(code=-32003, message="Denied", data={"reason": "policy.denied"}), "policy.denied", "-32003"),
    (types.ErrorData(code=-32003, message="Denied"), "policy.denied", "-32003"),
    (ErrorDataBudget, "policy.budget_exhausted", "-32003"),
    (
        types.ErrorData(code=-32603, message="No model", data={"reason": "model.unavailable"}),
        "model.unavailable",
        "-32603",
    ),
    # The mcp SDK's own answer without a sampling callback: the host does not sample (a decision).
    (types.ErrorData(code=-32600, message="Sampling not supported"), "host.unsupported", "-32600"),
    # fastmcp sends a handler's refusal as -32603 with its text: the spec's rejection text decides.
    (types.ErrorData(code=-32603, message="User rejected sampling request"), "user.denied", "-32603"),
]


@pytest.mark.parametrize("mode", PATHS)
@pytest.mark.parametrize(("error", "ending", "error_type"), DENIALS)
def test_error_frames_are_classified(mcp_instrumented, mode, error, ending, error_type):
    out = anyio.run(call, mode, callback_returning(error))
    # The host sees the frame it returned, unchanged: as the tool call's JSON-RPC error.
    assert isinstance(out, MCPError)
    assert (out.code, out.message) == (error.code, error.message)
    span = only_sampling_span(mcp_instrumented)
    assert span.attributes[names.SAMPLING_ENDING] == ending
    assert span.attributes[names.ERROR_TYPE] == error_type
    # MCP semconv: conditionally required when the answer carries an error code, the code as a string
    assert span.attributes[names.RPC_RESPONSE_STATUS_CODE] == str(error.code)
    # MCP semconv (mcp.server.status.attributes): on the receiver, -32600 "Invalid Request" (the
    # mcp SDK's "Sampling not supported") is a request it could not serve, not its error
    receiver_error = error.code != -32600
    assert span.status.status_code is (StatusCode.ERROR if receiver_error else StatusCode.UNSET)
    assert span.attributes[names.SAMPLING_SUBSTITUTION] == "none"
    assert names.GEN_AI_RESPONSE_MODEL not in span.attributes
    if error is ErrorDataBudget:
        assert span.attributes[names.SAMPLING_BUDGET_RESETS_AT] == "2026-12-01T00:00:00Z"


@pytest.fixture
def mcp_refusal_code_4003(telemetry, monkeypatch):
    monkeypatch.setenv("OTEL_SAMPLING_POLICY_REFUSAL_CODE", "4003")
    yield from _instrumented(telemetry, MCPSamplingInstrumentor)


@pytest.mark.parametrize("mode", PATHS)
@pytest.mark.parametrize("frame", ["sampling_error", "bare"])
def test_the_configured_policy_refusal_code_is_sent_and_read(mcp_refusal_code_4003, mode, frame):
    """``OTEL_SAMPLING_POLICY_REFUSAL_CODE=4003``, read at ``instrument()``: ``sampling_error()``
    sends 4003, and a frame with that code and no ``data.reason`` is a policy denial."""

    async def callback(context, params):
        if frame == "bare":
            return types.ErrorData(code=4003, message="Denied")
        return otel_sampling.sampling_error("policy.denied", "Denied")

    out = anyio.run(call, mode, callback)
    assert isinstance(out, MCPError) and out.code == 4003
    span = only_sampling_span(mcp_refusal_code_4003)
    assert (span.attributes[names.SAMPLING_ENDING], span.attributes[names.ERROR_TYPE]) == ("policy.denied", "4003")


@pytest.mark.parametrize("mode", PATHS)
def test_mcp_server_operation_duration_of_a_completed_request(mcp_instrumented, mode):
    """MCP semconv ``mcp.server.operation.duration`` (model/mcp/metrics.yaml): the receiver's
    duration, by ``mcp.method.name`` and ``mcp.protocol.version``; no ``error.type`` when it succeeded."""
    anyio.run(call, mode, callback_returning(result()))
    span = only_sampling_span(mcp_instrumented)
    (point,) = mcp_instrumented.points(names.METRIC_MCP_SERVER_OPERATION_DURATION)
    assert dict(point.attributes) == {
        names.MCP_METHOD_NAME: "sampling/createMessage",
        names.MCP_PROTOCOL_VERSION: span.attributes[names.MCP_PROTOCOL_VERSION],
    }
    assert point.count == 1 and 0 < point.sum < (span.end_time - span.start_time) / 1e9 + 0.5
    assert tuple(point.explicit_bounds) == names.MCP_DURATION_BUCKETS
    assert not mcp_instrumented.points(names.METRIC_MCP_CLIENT_OPERATION_DURATION)  # the server's, not ours


@pytest.mark.parametrize("mode", PATHS)
def test_mcp_server_operation_duration_of_a_denial_names_its_code(mcp_instrumented, mode):
    anyio.run(call, mode, callback_returning(types.ErrorData(code=-1, message="User rejected sampling request")))
    (point,) = mcp_instrumented.points(names.METRIC_MCP_SERVER_OPERATION_DURATION)
    assert (point.attributes[names.ERROR_TYPE], point.attributes[names.RPC_RESPONSE_STATUS_CODE]) == ("-1", "-1")


def test_callback_that_raises_keeps_the_exception_and_records_error(mcp_instrumented):
    raised = RuntimeError("host bug")

    async def callback(ctx, params):
        raise raised

    # On the 2026-07-28 path the exception stays in the host: call_tool raises it (in a group).
    out = anyio.run(call, "auto", callback)
    assert isinstance(out, BaseExceptionGroup)
    assert out.exceptions[0] is raised
    span = only_sampling_span(mcp_instrumented)
    assert span.attributes[names.SAMPLING_ENDING] == "error"
    assert span.attributes[names.ERROR_TYPE] == "RuntimeError"
    assert names.RPC_RESPONSE_STATUS_CODE not in span.attributes  # no error frame: nothing reached the server
    assert span.status.status_code is StatusCode.ERROR


def test_callback_that_raises_on_legacy_path_reaches_the_server_as_code_0(mcp_instrumented):
    async def callback(ctx, params):
        raise RuntimeError("provider 503")

    out = anyio.run(call, "legacy", callback)
    # mcp 2.x turns a raising handler into a JSON-RPC error with code 0 and the message.
    assert isinstance(out, MCPError) and out.code == 0 and "provider 503" in out.message
    assert only_sampling_span(mcp_instrumented).attributes[names.SAMPLING_ENDING] == "error"


def test_mcp_error_raised_by_callback_is_classified_by_its_frame(mcp_instrumented):
    async def callback(ctx, params):
        raise MCPError(-32003, "Daily limit", data={"reason": "policy.budget_exhausted", "resetsAt": "2026-12-01"})

    out = anyio.run(call, "legacy", callback)
    assert isinstance(out, MCPError) and out.code == -32003
    span = only_sampling_span(mcp_instrumented)
    assert span.attributes[names.SAMPLING_ENDING] == "policy.budget_exhausted"
    assert span.attributes[names.SAMPLING_BUDGET_RESETS_AT] == "2026-12-01"
    assert span.attributes[names.RPC_RESPONSE_STATUS_CODE] == "-32003"  # the frame the SDK sent


def test_server_deadline_is_a_timeout(mcp_instrumented):
    async def callback(ctx, params):
        await anyio.sleep(5)
        return result()

    out = anyio.run(call, "legacy", callback, "sample_with_deadline", {"deadline_s": 0.3})
    # The server's own call failed with the SDK's REQUEST_TIMEOUT (-32001).
    assert isinstance(out, MCPError) and out.code == -32001
    span = only_sampling_span(mcp_instrumented)
    assert span.attributes[names.SAMPLING_ENDING] == "timeout"
    assert span.attributes[names.SAMPLING_CANCEL_REASON] == "timed out after 0.3s"
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 0}


@pytest.mark.parametrize("mode", PATHS)
def test_host_giving_up_is_a_cancellation(mcp_instrumented, mode):
    started = anyio.Event()

    async def callback(ctx, params):
        started.set()
        await anyio.sleep(5)
        return result()

    async def main():
        async with Client(build_server(), mode=mode, sampling_callback=callback) as client:
            with anyio.move_on_after(0.3):
                await client.call_tool("sample", ARGS)
            await anyio.sleep(0.1)

    anyio.run(main)
    assert started.is_set()
    span = only_sampling_span(mcp_instrumented)
    assert span.attributes[names.SAMPLING_ENDING] == "cancelled"
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_IN_FLIGHT, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 0}


@pytest.mark.parametrize("mode", PATHS)
def test_the_host_cancelling_gets_its_cancellation_back(mcp_both_instrumented, mode):
    """The cancellation propagates through our wrapper unchanged (the host's cancel scope
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
    (host,) = [s for s in mcp_both_instrumented.spans(names.SPAN_SAMPLING) if s.kind is SpanKind.SERVER]
    assert host.attributes[names.SAMPLING_ENDING] == "cancelled"


SUBSTITUTIONS = [
    # (hint, served model, expected judgement, expected mode) under POLICY_TOML (conftest)
    ("claude-sonnet", "claude-sonnet-5-5-20261001", "none", "primary"),
    ("gpt-4o", "claude-haiku-5-5", "within_policy", "degraded"),
    ("gpt-4o", "claude-opus-5-5", "outside_policy", "degraded"),
    ("claude-sonnet", "claude-sonnet-5-5", "none", "primary"),
]


@pytest.mark.parametrize(("hint", "served", "judgement", "mode"), SUBSTITUTIONS)
def test_substitution_and_mode_follow_hints_and_policy(policy_env, mcp_instrumented, hint, served, judgement, mode):
    anyio.run(
        call, "legacy", callback_returning(result(model=served)), "sample", {"hint": hint, "include_context": "none"}
    )
    span = only_sampling_span(mcp_instrumented)
    assert span.attributes[names.SAMPLING_SUBSTITUTION] == judgement
    assert span.attributes[names.DEGRADATION_MODE] == mode
    counts = mcp_instrumented.counts(
        names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_SUBSTITUTION, names.DEGRADATION_MODE
    )
    assert counts == {(judgement, mode): 1}


def test_without_policy_a_model_the_hint_does_not_name_is_a_substitution(mcp_instrumented):
    """No provider call seen: the hint is the reference (docs/telemetry.md "Verdicts without a policy")."""
    anyio.run(
        call,
        "legacy",
        callback_returning(result(model="claude-haiku-5-5")),
        "sample",
        {"hint": "gpt-4o", "include_context": "none"},
    )
    a = only_sampling_span(mcp_instrumented).attributes
    assert (a[names.SAMPLING_SUBSTITUTION], a[names.DEGRADATION_MODE], a[names.DEGRADATION_REASON]) == (
        "without_policy",
        "degraded",
        ("substitution",),
    )


def test_refusal_stop_reason_is_refused(mcp_instrumented):
    anyio.run(call, "legacy", callback_returning(result(stop_reason="refusal")))
    assert only_sampling_span(mcp_instrumented).attributes[names.SAMPLING_ENDING] == "refused"


def test_span_is_parented_from_params_meta_traceparent(mcp_instrumented):
    """Legacy in-memory: the server's SDK span injects traceparent into params._meta."""
    anyio.run(call, "legacy", callback_returning(result()))
    ours = only_sampling_span(mcp_instrumented)
    sdk_send = [s for s in mcp_instrumented.spans(scope=None) if s.name == "MCP send sampling/createMessage"]
    assert len(sdk_send) == 1
    assert ours.parent is not None and ours.parent.span_id == sdk_send[0].context.span_id
    assert ours.context.trace_id == sdk_send[0].context.trace_id
    # mcp 2.x emits no client-side span for the inbound request: ours is the only SERVER span for it.
    server_spans = [
        s
        for s in mcp_instrumented.spans(scope=None)
        if s.kind is SpanKind.SERVER and "sampling/createMessage" in s.name
    ]
    assert server_spans == [ours]


@pytest.mark.subprocess
def test_stdio_subprocess_server(mcp_instrumented):
    params = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).parent / "sampling_server.py")])

    async def main():
        async with Client(params, mode="legacy", sampling_callback=callback_returning(result())) as client:
            return (await client.call_tool("sample", ARGS)).content[0].text

    assert anyio.run(main) == "claude-sonnet-5-5-20261001|endTurn"
    span = only_sampling_span(mcp_instrumented)
    assert span.attributes[names.MCP_SERVER_NAME] == SERVER_NAME
    assert span.attributes[names.SAMPLING_PATH] == "rpc"
    # The traceparent crossed the process boundary: our span joins the client's tools/call trace.
    tools_call = [s for s in mcp_instrumented.spans(scope=None) if s.name == "MCP send tools/call sample"]
    assert len(tools_call) == 1 and span.context.trace_id == tools_call[0].context.trace_id


def test_other_input_requests_pass_through_untouched(mcp_instrumented):
    roots = types.ListRootsResult(roots=[])

    async def list_roots(ctx):
        return roots

    async def main():
        async with Client(
            build_server(),
            mode="legacy",
            sampling_callback=callback_returning(result()),
            list_roots_callback=list_roots,
        ) as client:
            ctx = type("Ctx", (), {"request_id": 7, "meta": None})()
            return await client.session.dispatch_input_request(ctx, types.ListRootsRequest())

    assert anyio.run(main) is roots
    assert mcp_instrumented.spans(names.SPAN_SAMPLING) == []


def test_nothing_is_emitted_after_uninstrument(telemetry):
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(meter_provider=telemetry.meter_provider)
    try:  # the same call is recorded while instrumented: the empty lists below are not vacuous
        anyio.run(call, "legacy", callback_returning(result()))
    finally:
        instrumentor.uninstrument()
    assert len(telemetry.spans(names.SPAN_SAMPLING)) == 1
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS) == {(): 1}
    anyio.run(call, "legacy", callback_returning(result()))
    assert len(telemetry.spans(names.SPAN_SAMPLING)) == 1
    assert telemetry.counts(names.METRIC_SAMPLING_REQUESTS) == {(): 1}


def test_hostile_server_cannot_blow_up_labels_or_attributes(mcp_instrumented):
    many_hints = ",".join(f"model-{i}" for i in range(17))  # one past the 16 kept
    anyio.run(
        call,
        "legacy",
        callback_returning(result(model="x" * 257)),
        "sample",
        {"hint": many_hints, "include_context": "thisServer"},
    )
    span = only_sampling_span(mcp_instrumented)
    assert len(span.attributes[names.SAMPLING_MODEL_HINTS]) == 16
    assert len(span.attributes[names.GEN_AI_RESPONSE_MODEL]) == 256
    (labels,) = [p.attributes for p in mcp_instrumented.points(names.METRIC_SAMPLING_REQUESTS)]
    assert len(labels[names.GEN_AI_RESPONSE_MODEL]) == 128
