"""Request identity and violations on real mcp sessions, both protocol paths (in-memory and stdio).

Each violation kind is shown detected when it happens and not when it does not: the narrowing
retry, the same decision repeated, a different request to another server. With the server side
instrumented too, each is counted once: a retry wider both ways, a flip seen through a decision at
another server, a reroute retried at its new server, a budget running out (no flip); and a request
whose metadata JSON cannot carry (bytes, sets) still gets its identity.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from opentelemetry import trace
from opentelemetry.trace import SpanKind

import otel_sampling
from otel_sampling import names
from sampling_server import SERVER_NAME, build_server

PATHS = {"legacy": names.PATH_RPC, "auto": names.PATH_MRTR}
OTHER_SERVER = "other-server"
STDIO = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).parent / "sampling_server.py")])


def result(model: str = "claude-sonnet-5-5-20261001") -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="ok"), model=model, stop_reason="endTurn"
    )


DENIED = types.ErrorData(code=-32003, message="Denied by policy", data={"reason": "policy.denied"})


def answering(*answers, grant: str | None = None):
    """A callback returning ``answers`` in turn (each a result or ErrorData), granting ``grant``."""
    queue = list(answers)

    async def callback(ctx, params):
        if grant is not None:
            otel_sampling.grant_context(grant)
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return callback


async def call(mode, callback, server=None, **args):
    async with Client(server or build_server(), mode=mode, sampling_callback=callback) as client:
        # denials surface as MCPError; the test reads the telemetry
        with contextlib.suppress(BaseException):
            await client.call_tool("sample", {"hint": "claude-sonnet", "include_context": "none", **args})


def violations(telemetry) -> dict:
    return telemetry.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND, names.MCP_SERVER_NAME)


def sampling_spans(telemetry):
    return telemetry.spans(names.SPAN_SAMPLING)


def host_spans(telemetry):
    return [s for s in sampling_spans(telemetry) if s.kind is SpanKind.SERVER]


def events(span, name=names.EVENT_SAMPLING_VIOLATION):
    return [e for e in span.events if e.name == name]


@pytest.mark.parametrize("mode", PATHS)
def test_wider_requested_scope_on_retry_is_scope_widened(mcp_instrumented, mode):
    callback = answering(result())
    anyio.run(lambda: call(mode, callback, include_context="none"))
    anyio.run(lambda: call(mode, callback, include_context="thisServer"))
    assert violations(mcp_instrumented) == {(names.VIOLATION_SCOPE_WIDENED, SERVER_NAME): 1}
    first, second = sampling_spans(mcp_instrumented)
    # The retry's span links to the first request's span (the fingerprint is known at start)...
    assert [link.context.span_id for link in second.links] == [first.context.span_id]
    # ...and the violation event names the earlier request.
    (event,) = events(second)
    assert event.attributes[names.SAMPLING_VIOLATION_KIND] == "scope_widened"
    assert event.attributes[names.SAMPLING_EARLIER_TRACE_ID] == trace.format_trace_id(first.context.trace_id)
    assert event.attributes[names.SAMPLING_EARLIER_SPAN_ID] == trace.format_span_id(first.context.span_id)
    assert first.attributes[names.SAMPLING_FINGERPRINT] == second.attributes[names.SAMPLING_FINGERPRINT]


@pytest.mark.parametrize("mode", PATHS)
def test_narrowing_retry_is_fine(mcp_instrumented, mode):
    callback = answering(result())
    anyio.run(lambda: call(mode, callback, include_context="allServers"))
    anyio.run(lambda: call(mode, callback, include_context="thisServer"))
    assert violations(mcp_instrumented) == {}
    assert all(events(s) == [] for s in sampling_spans(mcp_instrumented))


@pytest.mark.parametrize("mode", PATHS)
def test_wider_granted_scope_on_retry_is_scope_widened(mcp_instrumented, mode):
    anyio.run(lambda: call(mode, answering(result(), grant="none"), include_context="allServers"))
    anyio.run(lambda: call(mode, answering(result(), grant="thisServer"), include_context="allServers"))
    assert violations(mcp_instrumented) == {(names.VIOLATION_SCOPE_WIDENED, SERVER_NAME): 1}
    spans = sampling_spans(mcp_instrumented)
    assert [s.attributes[names.SAMPLING_INCLUDE_CONTEXT_GRANTED] for s in spans] == ["none", "thisServer"]


@pytest.mark.parametrize("mode", PATHS)
def test_repeated_request_with_another_decision_is_decision_flipped(mcp_instrumented, mode):
    callback = answering(result(), DENIED)
    anyio.run(lambda: call(mode, callback))
    anyio.run(lambda: call(mode, callback))
    assert violations(mcp_instrumented) == {(names.VIOLATION_DECISION_FLIPPED, SERVER_NAME): 1}
    assert [s.attributes[names.SAMPLING_ENDING] for s in sampling_spans(mcp_instrumented)] == [
        "completed",
        "policy.denied",
    ]


@pytest.mark.parametrize("mode", PATHS)
def test_same_decision_repeated_is_fine(mcp_instrumented, mode):
    for _ in range(3):
        anyio.run(lambda: call(mode, answering(DENIED)))
    assert violations(mcp_instrumented) == {}
    assert len(sampling_spans(mcp_instrumented)) == 3


@pytest.mark.parametrize("mode", PATHS)
def test_denied_request_from_another_server_is_rerouted_after_denial(mcp_instrumented, mode):
    anyio.run(lambda: call(mode, answering(DENIED)))
    anyio.run(lambda: call(mode, answering(result()), build_server(OTHER_SERVER)))
    assert violations(mcp_instrumented) == {(names.VIOLATION_REROUTED_AFTER_DENIAL, OTHER_SERVER): 1}


@pytest.mark.parametrize("mode", PATHS)
def test_a_different_request_to_another_server_is_fine(mcp_instrumented, mode):
    anyio.run(lambda: call(mode, answering(DENIED)))
    anyio.run(lambda: call(mode, answering(result()), build_server(OTHER_SERVER), text="Another ticket"))
    assert violations(mcp_instrumented) == {}


@pytest.mark.subprocess
@pytest.mark.parametrize("mode", PATHS)
def test_identity_violations_over_stdio(mcp_instrumented, mode):
    """A real subprocess server: a flip and a widened scope; no reroute claimed for the same server."""
    callback = answering(result(), DENIED)
    anyio.run(lambda: call(mode, callback, STDIO))
    anyio.run(lambda: call(mode, callback, STDIO, include_context="thisServer"))
    assert violations(mcp_instrumented) == {
        (names.VIOLATION_DECISION_FLIPPED, SERVER_NAME): 1,
        (names.VIOLATION_SCOPE_WIDENED, SERVER_NAME): 1,
    }
    for span in sampling_spans(mcp_instrumented):
        assert span.attributes[names.NETWORK_TRANSPORT] == "pipe"
        assert span.attributes[names.MCP_SERVER_VERSION] == "1.0.0"
        assert names.MCP_SESSION_ID not in span.attributes  # stdio has no session id
        # rpc: the one call_tool in flight on the session; mrtr: Client.call_tool's context
        assert span.attributes[names.SAMPLING_TOOL_NAME] == "sample"


@pytest.mark.parametrize("mode", PATHS)
def test_grant_above_the_ceiling_is_context_above_ceiling(policy_env, mcp_instrumented, mode):
    # conftest POLICY_TOML: context_ceiling = "thisServer" for the test server.
    anyio.run(lambda: call(mode, answering(result(), grant="thisServer"), include_context="allServers"))
    assert violations(mcp_instrumented) == {}
    anyio.run(
        lambda: call(mode, answering(result(), grant="allServers"), include_context="allServers", text="Second ticket")
    )
    assert violations(mcp_instrumented) == {(names.VIOLATION_CONTEXT_ABOVE_CEILING, SERVER_NAME): 1}
    counts = mcp_instrumented.counts(
        names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_INCLUDE_CONTEXT_REQUESTED, names.SAMPLING_INCLUDE_CONTEXT_GRANTED
    )
    assert counts == {("allServers", "thisServer"): 1, ("allServers", "allServers"): 1}


def test_no_grant_is_unreported(mcp_instrumented):
    anyio.run(lambda: call("legacy", answering(result())))
    (span,) = sampling_spans(mcp_instrumented)
    assert span.attributes[names.SAMPLING_INCLUDE_CONTEXT_GRANTED] == "unreported"
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_REQUESTS, names.SAMPLING_INCLUDE_CONTEXT_GRANTED) == {
        ("unreported",): 1
    }


def test_substitution_outside_policy_is_model_outside_policy(policy_env, mcp_instrumented):
    anyio.run(lambda: call("legacy", answering(result(model="claude-opus-5-5")), hint="gpt-4o"))
    anyio.run(lambda: call("legacy", answering(result(model="claude-haiku-5-5")), hint="gpt-4o", text="b"))
    assert violations(mcp_instrumented) == {(names.VIOLATION_MODEL_OUTSIDE_POLICY, SERVER_NAME): 1}


def test_grant_after_exhaustion_is_fine_and_otherwise_a_violation(mcp_instrumented):
    tracer = trace.get_tracer("test")
    budget = otel_sampling.sampling_error("policy.budget_exhausted", "Daily limit", resets_at="2026-12-01T00:00:00Z")
    anyio.run(lambda: call("legacy", answering(budget)))
    with tracer.start_as_current_span("approve") as approve:
        otel_sampling.record_grant(SERVER_NAME, 5, "2026-12-01T00:00:00Z", granted_by="u-123")
    assert violations(mcp_instrumented) == {}
    anyio.run(lambda: call("legacy", answering(result())))
    otel_sampling.record_grant(SERVER_NAME, 2.5, "2026-12-01T00:00:00Z", granted_by="u-123")
    assert violations(mcp_instrumented) == {(names.VIOLATION_GRANT_WITHOUT_EXHAUSTION, SERVER_NAME): 1}
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_GRANTS, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 2}
    assert mcp_instrumented.counts(names.METRIC_SAMPLING_GRANTED_USD, names.MCP_SERVER_NAME) == {(SERVER_NAME,): 7.5}
    (event,) = [e for e in approve.events if e.name == names.EVENT_SAMPLING_GRANT]
    assert dict(event.attributes) == {
        names.MCP_SERVER_NAME: SERVER_NAME,
        names.SAMPLING_GRANT_ADD_USD: 5.0,
        names.SAMPLING_GRANT_EXPIRES_AT: "2026-12-01T00:00:00Z",
        names.SAMPLING_GRANT_GRANTED_BY: "u-123",
    }
    for point in mcp_instrumented.points(names.METRIC_SAMPLING_GRANTS):
        assert names.SAMPLING_GRANT_GRANTED_BY not in point.attributes


@pytest.mark.parametrize("mode", PATHS)
def test_host_ending_rules_from_the_policy_file(tmp_path, monkeypatch, telemetry, mode):
    """A host whose denials use their own code: the policy file's [[ending_rules]] classify them."""
    from conftest import _instrumented
    from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor

    policy = tmp_path / "policy.toml"
    policy.write_text('[[ending_rules]]\ncode = -32099\nending = "policy.budget_exhausted"\n')
    monkeypatch.setenv("OTEL_SAMPLING_POLICY", str(policy))
    instrumented = _instrumented(telemetry, MCPSamplingInstrumentor)
    next(instrumented)
    try:
        anyio.run(lambda: call(mode, answering(types.ErrorData(code=-32099, message="Out of credit"))))
    finally:
        next(instrumented, None)
    (span,) = sampling_spans(telemetry)
    assert span.attributes[names.SAMPLING_ENDING] == "policy.budget_exhausted"
    assert span.attributes[names.ERROR_TYPE] == "-32099"


def test_grant_outside_any_span_gets_a_span_of_its_own(mcp_instrumented):
    otel_sampling.record_grant(SERVER_NAME, 1, "2026-12-01T00:00:00Z", granted_by="u-9")
    (span,) = mcp_instrumented.spans(names.SPAN_SAMPLING_GRANT)
    assert [e.name for e in span.events] == [names.EVENT_SAMPLING_GRANT, names.EVENT_SAMPLING_VIOLATION]


BUDGET = types.ErrorData(
    code=-32003, message="Daily limit", data={"reason": "policy.budget_exhausted", "resetsAt": "2026-12-01T00:00:00Z"}
)


@pytest.mark.parametrize("mode", PATHS)
def test_exhausted_request_completed_later_without_a_grant_is_decision_flipped(mcp_instrumented, mode):
    """A budget window that rolled (or a limiter that refilled) re-evaluates the same request."""
    callback = answering(BUDGET, result())
    anyio.run(lambda: call(mode, callback))
    anyio.run(lambda: call(mode, callback))
    assert violations(mcp_instrumented) == {(names.VIOLATION_DECISION_FLIPPED, SERVER_NAME): 1}


@pytest.mark.parametrize("mode", PATHS)
def test_exhausted_request_completed_after_a_grant_is_fine(mcp_instrumented, mode):
    callback = answering(BUDGET, result())
    anyio.run(lambda: call(mode, callback))
    otel_sampling.record_grant(SERVER_NAME, 5, "2026-12-01T00:00:00Z", granted_by="u-123")
    anyio.run(lambda: call(mode, callback))
    assert violations(mcp_instrumented) == {}


# ---------------------------------------------------------------- with the server side instrumented too
def test_content_json_cannot_carry_still_gets_an_identity(mcp_both_instrumented):
    """A host dispatching a request it built in-process (``dispatch_input_request``) can put bytes
    or sets in ``metadata``: mcp accepts them (``dict[str, Any]``); the request still gets a
    fingerprint, the same one when repeated, so the repeat is linked and judged."""

    def request(blob: bytes):
        return types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(
                messages=[types.SamplingMessage(role="user", content=types.TextContent(text="x"))],
                max_tokens=5,
                metadata={"blob": blob, "ids": {3, 1, 2}},
            )
        )

    async def main():
        async with Client(build_server(), mode="legacy", sampling_callback=answering(result())) as client:
            ctx = type("Ctx", (), {"request_id": 1, "meta": None})()
            for blob in (b"\xff\x00", b"\xff\x00", b"\xfe"):
                await client.session.dispatch_input_request(ctx, request(blob))

    anyio.run(main)
    first, repeat, other = host_spans(mcp_both_instrumented)
    assert first.attributes[names.SAMPLING_FINGERPRINT] == repeat.attributes[names.SAMPLING_FINGERPRINT]
    assert other.attributes[names.SAMPLING_FINGERPRINT] != first.attributes[names.SAMPLING_FINGERPRINT]
    assert [link.context.span_id for link in repeat.links] == [first.context.span_id]


@pytest.mark.parametrize("mode", PATHS)
def test_one_retry_wider_both_ways_is_one_scope_widened(mcp_both_instrumented, mode):
    """A retry that requests and is granted a wider scope is one violation, not two."""

    def granting(scope):
        async def callback(ctx, params):
            otel_sampling.grant_context(scope)
            return result()

        return callback

    anyio.run(lambda: call(mode, granting("none"), include_context="none"))
    anyio.run(lambda: call(mode, granting("thisServer"), include_context="thisServer"))
    counts = mcp_both_instrumented.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND)
    assert counts == {(names.VIOLATION_SCOPE_WIDENED,): 1}
    retry = host_spans(mcp_both_instrumented)[-1]
    assert [
        e.attributes[names.SAMPLING_VIOLATION_KIND] for e in retry.events if e.name == names.EVENT_SAMPLING_VIOLATION
    ] == [names.VIOLATION_SCOPE_WIDENED]


@pytest.mark.parametrize("mode", PATHS)
def test_a_flip_at_one_server_is_seen_through_a_decision_at_another(mcp_both_instrumented, mode):
    """Denied by the host for server A, rerouted to B (completed there), then completed for A: the
    host flipped its decision for A, whatever it decided for B in between."""
    denied = otel_sampling.sampling_error("policy.denied", "Not for this server")
    anyio.run(call, mode, answering(denied), build_server("server-a"))
    anyio.run(call, mode, answering(result()), build_server("server-b"))
    anyio.run(call, mode, answering(result()), build_server("server-a"))
    counts = violations(mcp_both_instrumented)
    assert counts == {
        (names.VIOLATION_REROUTED_AFTER_DENIAL, "server-b"): 1,
        (names.VIOLATION_DECISION_FLIPPED, "server-a"): 1,
    }


@pytest.mark.parametrize("mode", PATHS)
def test_a_rerouted_request_retried_at_its_new_server_is_one_reroute(mcp_both_instrumented, mode):
    """Denied for A, sent to B, then retried at B: one reroute (the retry at B is a repeat there)."""
    denied = otel_sampling.sampling_error("policy.denied", "Not for this server")
    anyio.run(call, mode, answering(denied), build_server("server-a"))
    for _ in range(2):
        anyio.run(call, mode, answering(result()), build_server("server-b"))
    counts = violations(mcp_both_instrumented)
    assert counts == {(names.VIOLATION_REROUTED_AFTER_DENIAL, "server-b"): 1}


@pytest.mark.parametrize("mode", PATHS)
def test_a_budget_running_out_on_a_repeated_request_is_not_a_flip(mcp_both_instrumented, mode):
    """A server asking the same question several times (n samples) until the budget is spent: a
    budget is a quantity that runs out, not a re-evaluation. The reverse (exhausted, then served
    without a grant) stays a flip
    (test_exhausted_request_completed_later_without_a_grant_is_decision_flipped)."""
    budget = otel_sampling.sampling_error("policy.budget_exhausted", "Daily limit", resets_at="2026-12-01T00:00:00Z")
    for answer in (result(), result(), budget, budget):
        anyio.run(call, mode, answering(answer))
    assert mcp_both_instrumented.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND) == {}
    anyio.run(call, mode, answering(result()))
    assert mcp_both_instrumented.counts(names.METRIC_SAMPLING_VIOLATIONS, names.SAMPLING_VIOLATION_KIND) == {
        (names.VIOLATION_DECISION_FLIPPED,): 1
    }
