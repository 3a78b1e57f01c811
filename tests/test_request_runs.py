"""A host-side sampling request that no run owns is a run of its own, the same on both protocol paths,
over real mcp 2.x sessions (the rule: docs/telemetry.md "Runs"; the outcome rule:
tests/rules/test_verdict.py).

Its run is named ``sampling/createMessage`` whatever the request's parent (none, a remote one
from ``params._meta``, a framework's local ``tools/call`` CLIENT span); a run that owns the trace
(an explicit run, a framework's agent span) owns the request instead. Its outcome comes from the
request's ending: a decision is ``denied``, a failure or a refusal ``failed``. A framework's agent
span's run reads the endings of the requests inside it the same way (its span closes OK when the
failed request came back to the agent as a tool error); an explicit run is the host's own account.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("mcp_types", reason="mcp 2.x sessions")

import anyio
import mcp_types as types
from opentelemetry import trace

import otel_sampling as osm
from conftest import TRACER_PROVIDER, with_policy
from drivers import PATHS, call, callback_returning, result
from otel_sampling import names, state
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.runs import current_run

FRAMEWORK = trace.get_tracer("a-framework", tracer_provider=TRACER_PROVIDER)
OWN = names.SPAN_SAMPLING  # the name of a request's own run
POLICY = """
[servers."sampling-test-server"]
primary_model = "claude-sonnet-5-5"
permitted_models = ["claude-sonnet-5-5", "claude-haiku-5-5"]
"""
both_paths = pytest.mark.parametrize("mode", list(PATHS))


@pytest.fixture
def host(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(state, "_disclosure_called", False)  # a zero-code host unless the test discloses
    yield from with_policy(telemetry, tmp_path, monkeypatch, POLICY, MCPSamplingInstrumentor)


def _runs(t) -> dict:
    return t.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.AGENT_RUN_OUTCOME)


@both_paths
def test_a_request_no_run_owns_is_its_own_completed_run(host, mode):
    anyio.run(call, mode, callback_returning(result()))
    assert _runs(host) == {(OWN, "completed"): 1}
    (duration,) = host.points(names.METRIC_AGENT_RUN_DURATION)
    assert duration.count == 1


@both_paths
@pytest.mark.parametrize(
    ("answer", "ending", "outcome"),
    [
        (types.ErrorData(code=-1, message="User rejected sampling request"), "user.denied", "denied"),
        (types.ErrorData(code=-32003, message="Denied by policy"), "policy.denied", "denied"),
        (
            types.ErrorData(code=-32003, message="Budget", data={"reason": "policy.budget_exhausted"}),
            "policy.budget_exhausted",
            "denied",
        ),
        (
            types.ErrorData(code=-32603, message="No model", data={"reason": "model.unavailable"}),
            "model.unavailable",
            "failed",
        ),
        (types.ErrorData(code=-32603, message="Internal error"), "error", "failed"),
        (result(stop_reason="refusal"), "refused", "failed"),
    ],
)
def test_the_run_outcome_is_the_group_of_the_request_ending(host, mode, answer, ending, outcome):
    anyio.run(call, mode, callback_returning(answer))
    (span,) = host.spans(names.SPAN_SAMPLING)
    assert span.attributes[names.SAMPLING_ENDING] == ending
    assert _runs(host) == {(OWN, outcome): 1}


@both_paths
def test_a_request_under_a_local_client_span_is_its_own_run(host, mode):
    """A framework's ``tools/call`` CLIENT span roots the host's trace (fastmcp's does): it is no
    run, so the request under it is one."""

    async def tool_call():
        with FRAMEWORK.start_as_current_span("tools/call sample", kind=trace.SpanKind.CLIENT):
            return await call(mode, callback_returning(result()))

    anyio.run(tool_call)
    assert _runs(host) == {(OWN, "completed"): 1}


@both_paths
def test_an_explicit_run_around_the_tool_call_owns_the_request(host, mode):
    async def in_a_run():
        async with osm.run("triage"):
            return await call(mode, callback_returning(types.ErrorData(code=-1, message="no")))

    anyio.run(in_a_run)
    assert _runs(host) == {("triage", "completed"): 1}  # the task went on after the user's denial


@both_paths
def test_an_agent_span_around_the_tool_call_owns_the_request(host, mode):
    async def agent():
        with FRAMEWORK.start_as_current_span(
            "invoke_agent triage", attributes={names.GEN_AI_OPERATION_NAME: "invoke_agent"}
        ):
            return await call(mode, callback_returning(result()))

    anyio.run(agent)
    assert _runs(host) == {("invoke_agent triage", "completed"): 1}


def _agent(mode, *answers, status=None, explicit=None):
    """A framework's agent span that closes OK whatever the tool returned (google-adk's
    ``invoke_workflow``: a failed sampling request comes back to the agent as a tool error), around
    one request per answer, made in an explicit run named ``explicit`` when given."""

    async def agent():
        with FRAMEWORK.start_as_current_span(
            "invoke_agent triage", attributes={names.GEN_AI_OPERATION_NAME: "invoke_agent"}
        ) as span:
            for answer in answers:
                if explicit is None:
                    await call(mode, callback_returning(answer))
                else:
                    async with osm.run(explicit):
                        await call(mode, callback_returning(answer))
            if status is not None:
                span.set_status(status)

    anyio.run(agent)


@both_paths
@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        (result(stop_reason="refusal"), "failed"),
        (types.ErrorData(code=-32603, message="No model", data={"reason": "model.unavailable"}), "failed"),
        (types.ErrorData(code=-1, message="User rejected sampling request"), "denied"),
    ],
)
def test_an_agent_span_run_reads_the_ending_of_the_request_inside(host, mode, answer, outcome):
    """Its span closed OK, but the one request inside was refused, failed or declined: the run
    tells the request's story (the outcome its own run would have had)."""
    _agent(mode, answer)
    assert _runs(host) == {("invoke_agent triage", outcome): 1}


@both_paths
def test_one_failed_request_fails_an_agent_span_run(host, mode):
    _agent(mode, result(), result(stop_reason="refusal"), types.ErrorData(code=-1, message="no"))
    assert _runs(host) == {("invoke_agent triage", "failed"): 1}


@both_paths
def test_a_denied_request_beside_a_completed_one_leaves_an_agent_span_run_completed(host, mode):
    _agent(mode, types.ErrorData(code=-1, message="no"), result())
    assert _runs(host) == {("invoke_agent triage", "completed"): 1}


@both_paths
def test_an_agent_span_with_status_error_is_a_failed_run_even_when_its_request_completed(host, mode):
    _agent(mode, result(), status=trace.Status(trace.StatusCode.ERROR))
    assert _runs(host) == {("invoke_agent triage", "failed"): 1}


@both_paths
def test_an_outcome_the_host_set_on_an_agent_span_run_wins(host, mode):
    async def agent():
        with FRAMEWORK.start_as_current_span(
            "invoke_agent triage", attributes={names.GEN_AI_OPERATION_NAME: "invoke_agent"}
        ):
            await call(mode, callback_returning(result(stop_reason="refusal")))
            current_run().set_outcome("escalated")

    anyio.run(agent)
    assert _runs(host) == {("invoke_agent triage", "escalated"): 1}


@both_paths
def test_a_request_in_an_explicit_run_nested_in_an_agent_span_counts_in_the_agent_run(host, mode):
    """The explicit run is the host's own account (completed: its block exited); the request
    inside it is inside the agent's run too, which reads its ending."""
    _agent(mode, result(stop_reason="refusal"), explicit="summarise")
    assert _runs(host) == {("summarise", "completed"): 1, ("invoke_agent triage", "failed"): 1}


@both_paths
def test_a_degraded_request_on_its_own_is_a_degraded_run_and_an_incident(host, mode):
    """Served by the permitted fallback, not the primary: degraded; nobody was told, and this host
    never calls disclose(): an incident, labelled untracked (recorded, not paged)."""
    anyio.run(call, mode, callback_returning(result(model="claude-haiku-5-5")))
    assert host.counts(
        names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE, names.AGENT_RUN_DISCLOSED
    ) == {(OWN, "degraded", "false"): 1}
    assert host.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME, names.DISCLOSURE_TRACKED) == {
        (OWN, "false"): 1
    }
    (incident,) = host.spans(names.EVENT_SILENT_INCIDENT)
    (sampling,) = host.spans(names.SPAN_SAMPLING)
    assert incident.parent.span_id == sampling.context.span_id
    assert incident.events[0].attributes[names.DEGRADATION_REASON] == ("fallback",)


@both_paths
def test_a_disclosure_in_the_callback_discloses_the_request_run(host, mode):
    async def callback(ctx, params):
        osm.disclose("Answered by the fallback model")
        return result(model="claude-haiku-5-5")

    anyio.run(call, mode, callback)
    assert host.counts(names.METRIC_AGENT_RUNS, names.DEGRADATION_MODE, names.AGENT_RUN_DISCLOSED) == {
        ("degraded", "true"): 1
    }
    assert host.points(names.METRIC_SILENT_INCIDENTS) == []
