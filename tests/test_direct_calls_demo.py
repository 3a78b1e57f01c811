"""The demo's second server (examples/triage/desk_server.py), which calls its own model, over stdio
under ``opentelemetry-instrument`` as ``make demo`` runs it: each tool call is a run
``desk-server/<tool>`` in the server's own telemetry (OTLP to a receiver), through an outage of its
primary and two sampling requests that got no answer (a client with no sampling on the legacy era,
no back-channel on 2026-07-28). What the report must show is what the calls drove
(``direct_calls.CALLS``), counted here by hand too."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from harness.otlp_receiver import OTLPReceiver
from otel_sampling import names
from otel_sampling.testing.fake_provider import FakeProvider

TRIAGE = Path(__file__).resolve().parents[1] / "examples" / "triage"
sys.path.insert(0, str(TRIAGE))
import direct_calls  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.subprocess]


@pytest.fixture(scope="module")
def driven():
    with FakeProvider() as provider, OTLPReceiver() as receiver:
        params = direct_calls.server_parameters(provider.url, receiver.endpoint, receiver.metrics_endpoint)
        answers = anyio.run(direct_calls.drive, params)
        direct_calls.wait_for_runs(receiver)
        yield answers, list(receiver.metrics), list(receiver.spans)


def test_the_report_finds_what_the_calls_drove(driven):
    text, problems = direct_calls.report(driven[1], driven[2], driven[0])
    assert problems == []
    # 6 draft_reply runs: 3 through the outage (failover, undisclosed); 2 summarize runs, both server_model
    assert "desk-server/draft_reply      6         3          6       3" in text
    assert "desk-server/summarize        2         2          2       2" in text
    assert "server_model on the span): 2" in text
    # Each tool's calls judged against its own table (policy.toml); the failover's fallback was asked
    # for by name and is permitted: substitution none (docs/telemetry.md "Direct calls and policy scopes").
    assert (
        "desk-server/draft_reply: policy scope tool:desk-server/draft_reply; substitution of the calls that"
        " served {'none': 6}; degradation.reason {'failover': 3}"
    ) in text
    assert "desk-server/summarize: policy scope tool:desk-server/summarize;" in text
    assert "otel_sampling.client.violations: none" in text


def test_each_tool_call_is_one_run_of_its_tool(driven):
    runs: dict[tuple[str, str], float] = {}
    for metric in driven[1]:
        if metric["name"] == names.METRIC_AGENT_RUNS and metric["service_name"] == "desk-server":
            for point in metric["points"]:
                key = (point["attributes"][names.AGENT_RUN_NAME], point["attributes"][names.DEGRADATION_MODE])
                runs[key] = runs.get(key, 0) + point["value"]
    assert runs == {
        ("desk-server/draft_reply", "primary"): 3,
        ("desk-server/draft_reply", "degraded"): 3,
        ("desk-server/summarize", "degraded"): 2,
    }


def test_the_unanswered_sampling_spans_say_server_model(driven):
    spans = [s for s in driven[2] if s["service_name"] == "desk-server" and s["name"] == names.SPAN_SAMPLING]
    assert sorted(s["attributes"][names.SAMPLING_PATH] for s in spans) == ["no_back_channel", "rpc"]
    assert all(s["attributes"][names.DEGRADATION_REASON] == ["server_model"] for s in spans)
    assert all(s["attributes"][names.DEGRADATION_MODE] == "degraded" for s in spans)


def test_each_tool_run_is_in_its_callers_trace_with_its_provider_calls(driven):
    """The driver's calls carry its trace context in ``params._meta`` (this process has a tracer
    provider): each tool run's span is a child in the caller's trace, and the provider calls the
    tool made are in that trace too."""
    spans = [s for s in driven[2] if s["service_name"] == "desk-server"]
    run_spans = [s for s in spans if s["attributes"].get(names.GEN_AI_OPERATION_NAME) == "invoke_agent"]
    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert run_spans and chats
    assert all(s["parent_span_id"] is not None for s in run_spans)
    assert {s["trace_id"] for s in chats} <= {s["trace_id"] for s in run_spans}
