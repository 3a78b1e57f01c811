"""Runs: explicit and implicit (an agent span no run owns), mode, outcome, cost, duration, disclosure,
incidents, evaluations. What becomes a run: docs/telemetry.md "Runs" (a sampling request's own run:
tests/test_request_runs.py).

Also what a run cannot get wrong in a long-lived host: nested runs, runs outliving their parent or
exited in another context count one incident each, and the memory they hold stays bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading

import anthropic
import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

import otel_sampling as osm
from conftest import TRACER_PROVIDER, _instrumented, with_policy
from drivers import recording_logger_provider
from harness.limits import HANG_S
from otel_sampling import degradation, names, runs, state
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.records import run as run_records
from otel_sampling.settings import Settings

LATER = "2099-01-01T00:00:00Z"
OTHER = trace.get_tracer("someone-elses-instrumentation", tracer_provider=TRACER_PROVIDER)
RUN_KEYS = (names.AGENT_RUN_NAME, names.DEGRADATION_MODE, names.AGENT_RUN_OUTCOME, names.AGENT_RUN_DISCLOSED)
DEGRADED_SPAN = {names.DEGRADATION_MODE: names.MODE_DEGRADED, names.DEGRADATION_REASON: [names.REASON_FALLBACK]}
# A GenAI agent span (semconv "Invoke agent internal span"), as a framework starts it.
AGENT = {names.GEN_AI_OPERATION_NAME: "invoke_agent"}


@pytest.fixture(autouse=True)
def no_degradation_left():
    yield
    for leftover in state.active_degradations():
        leftover.exit()


def _outage(reason: str = "sources unavailable") -> degradation.Degradation:
    return osm.degraded("search", reason=reason, owner="oncall-search", expires_at=LATER)


def test_a_primary_run_counts_once_with_its_cost_and_duration(mcp_instrumented):
    t = mcp_instrumented
    with osm.run("ticket-triage") as run:
        runs.add_cost(0.25)
        runs.add_cost(0.5)
    assert run.cost_usd == 0.75
    assert t.counts(names.METRIC_AGENT_RUNS, *RUN_KEYS) == {("ticket-triage", "primary", "completed", "false"): 1}
    assert t.counts(names.METRIC_AGENT_RUN_COST, *RUN_KEYS[:3]) == {("ticket-triage", "primary", "completed"): 0.75}
    assert t.counts(names.METRIC_AGENT_RUN_DURATION, *RUN_KEYS[:3]) == {("ticket-triage", "primary", "completed"): 1}
    assert t.points(names.METRIC_SILENT_INCIDENTS) == []
    (span,) = t.spans("invoke_agent ticket-triage")
    assert span.kind == trace.SpanKind.INTERNAL
    assert span.attributes[names.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert span.attributes[names.DEGRADATION_MODE] == "primary"
    assert span.events == ()


def test_degraded_run_with_a_disclosure_is_not_an_incident(mcp_instrumented):
    t = mcp_instrumented
    with osm.run("ticket-triage"):
        with _outage():
            pass
        osm.disclose("Running in reduced mode: sources unavailable", kind="inline")
    assert t.counts(names.METRIC_AGENT_RUNS, *RUN_KEYS) == {("ticket-triage", "degraded", "completed", "true"): 1}
    assert t.points(names.METRIC_SILENT_INCIDENTS) == []
    (span,) = t.spans("invoke_agent ticket-triage")
    (event,) = span.events
    assert event.name == names.EVENT_DISCLOSURE
    # The text is not recorded without content capture: only its length.
    assert dict(event.attributes) == {names.DISCLOSURE_KIND: "inline", names.DISCLOSURE_MESSAGE_LENGTH: 44}


def test_the_same_run_without_a_disclosure_is_exactly_one_incident(mcp_instrumented):
    t = mcp_instrumented
    with osm.run("ticket-triage"), _outage():
        pass
    assert t.counts(names.METRIC_AGENT_RUNS, *RUN_KEYS) == {("ticket-triage", "degraded", "completed", "false"): 1}
    assert t.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME) == {("ticket-triage",): 1}
    (span,) = t.spans("invoke_agent ticket-triage")
    (event,) = span.events
    assert event.name == names.EVENT_SILENT_INCIDENT
    assert event.attributes[names.SILENT_INCIDENT_CAUSE] == ("degraded",)
    assert event.attributes[names.DEGRADATION_REASON] == ("sources unavailable",)
    assert span.attributes[names.DEGRADATION_REASON] == ("sources unavailable",)


@pytest.mark.parametrize(
    ("capture", "kept"),
    [("SPAN_ONLY", True), ("span_and_event", True), ("EVENT_ONLY", False), ("NO_CONTENT", False), ("true", False)],
)
def test_disclosure_text_is_kept_when_capture_puts_content_on_spans(mcp_instrumented, monkeypatch, capture, kept):
    """The GenAI capture values the provider instrumentors read (docs/configuration.md); an unknown
    value ("true") captures nothing, as it does for provider calls."""
    monkeypatch.setenv(names.ENV_CAPTURE_MESSAGE_CONTENT, capture)
    with osm.run("r"):
        osm.disclose("Answer produced without sources", kind="activity_log")
    (event,) = mcp_instrumented.spans("invoke_agent r")[0].events
    assert event.attributes.get(names.DISCLOSURE_MESSAGE) == ("Answer produced without sources" if kept else None)
    assert event.attributes[names.DISCLOSURE_KIND] == "activity_log"
    assert event.attributes[names.DISCLOSURE_MESSAGE_LENGTH] == len("Answer produced without sources")


def test_a_degraded_span_from_another_instrumentation_degrades_the_run(mcp_instrumented):
    with (
        osm.run("r"),
        OTHER.start_as_current_span(
            "their call", attributes={names.DEGRADATION_MODE: "degraded", names.DEGRADATION_REASON: "fallback"}
        ),
    ):
        pass
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.DEGRADATION_MODE) == {("degraded",): 1}


def test_a_degradation_entered_elsewhere_while_the_run_is_open_degrades_it(mcp_instrumented):
    outage = _outage()
    with osm.run("r"):
        worker = threading.Thread(target=lambda: (outage.enter(), outage.exit()))
        worker.start()
        worker.join(HANG_S)
    with osm.run("later"):
        pass
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE) == {
        ("r", "degraded"): 1,
        ("later", "primary"): 1,
    }


def test_an_exception_fails_the_run_and_passes_through(mcp_instrumented):
    boom = ValueError("boom")
    with pytest.raises(ValueError, match="boom") as caught, osm.run("r"):
        raise boom
    assert caught.value is boom
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_OUTCOME) == {("failed",): 1}
    (span,) = mcp_instrumented.spans("invoke_agent r")
    assert span.status.status_code is trace.StatusCode.ERROR
    assert span.attributes[names.ERROR_TYPE] == "ValueError"


def test_the_host_sets_the_outcome(mcp_instrumented):
    with osm.run("r") as run:
        run.set_outcome("abandoned")
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_OUTCOME) == {("abandoned",): 1}
    with pytest.raises(ValueError, match="must not be empty"):
        run.set_outcome("")


def test_async_runs_are_separate_per_task(mcp_instrumented):
    async def task(name: str, degrade: bool):
        async with osm.run(name):
            await asyncio.sleep(0)
            if degrade:
                with OTHER.start_as_current_span("x", attributes={names.DEGRADATION_MODE: "degraded"}):
                    pass
            await asyncio.sleep(0)
            runs.add_cost(1.0)

    async def main():
        await asyncio.gather(task("a", True), task("b", False))

    asyncio.run(main())
    t = mcp_instrumented
    assert t.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE) == {
        ("a", "degraded"): 1,
        ("b", "primary"): 1,
    }
    assert t.counts(names.METRIC_AGENT_RUN_COST, names.AGENT_RUN_NAME) == {("a",): 1.0, ("b",): 1.0}


def test_an_agent_span_is_a_run_by_default(mcp_instrumented):
    t = mcp_instrumented
    with OTHER.start_as_current_span("handle ticket", attributes=AGENT) as root:
        runs.add_cost(0.1)
        with OTHER.start_as_current_span(
            "fallback call", attributes={names.DEGRADATION_MODE: "degraded", names.DEGRADATION_REASON: ["fallback"]}
        ):
            pass
    assert t.counts(names.METRIC_AGENT_RUNS, *RUN_KEYS) == {("handle ticket", "degraded", "completed", "false"): 1}
    assert t.counts(names.METRIC_AGENT_RUN_COST, names.AGENT_RUN_NAME) == {("handle ticket",): 0.1}
    assert t.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME) == {("handle ticket",): 1}
    (incident,) = t.spans(names.EVENT_SILENT_INCIDENT)
    assert incident.parent.span_id == root.get_span_context().span_id
    assert incident.events[0].attributes[names.DEGRADATION_REASON] == ("fallback",)


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        (trace.SpanKind.SERVER, "GET /health"),
        (trace.SpanKind.INTERNAL, "cache refresh"),
        (trace.SpanKind.CONSUMER, "queue receive"),
        (trace.SpanKind.CLIENT, "tools/call summarise"),
    ],
)
def test_a_local_root_that_is_not_an_agent_span_is_no_run(mcp_instrumented, kind, name):
    """A web framework's health check, another library's INTERNAL work, a message, a bare client
    call: none is a task of the agent, degraded or not."""
    with OTHER.start_as_current_span(name, kind=kind), OTHER.start_as_current_span("x", attributes=DEGRADED_SPAN):
        assert runs.current_run() is None
    assert mcp_instrumented.points(names.METRIC_AGENT_RUNS) == []
    assert mcp_instrumented.points(names.METRIC_SILENT_INCIDENTS) == []


@pytest.mark.parametrize("operation", ["invoke_agent", "invoke_workflow"])
def test_an_agent_span_under_a_web_request_is_the_run(mcp_instrumented, operation):
    """The agent span need not be a local root: under a framework's SERVER span (which is no run)
    it is the task, and a nested agent span (a sub-agent) belongs to it."""
    with OTHER.start_as_current_span("POST /triage", kind=trace.SpanKind.SERVER):
        with OTHER.start_as_current_span(f"{operation} triage", attributes={names.GEN_AI_OPERATION_NAME: operation}):
            with OTHER.start_as_current_span("invoke_agent helper", attributes=AGENT):
                pass
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME) == {(f"{operation} triage",): 1}


def test_an_agent_span_with_a_remote_parent_is_a_run(mcp_instrumented):
    remote = SpanContext(trace_id=7, span_id=7, is_remote=True, trace_flags=TraceFlags(1))
    with OTHER.start_as_current_span(
        "invoke_agent remote",
        context=trace.set_span_in_context(NonRecordingSpan(remote)),
        kind=trace.SpanKind.SERVER,
        attributes=AGENT,
    ):
        pass
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME) == {("invoke_agent remote",): 1}


def test_an_agent_span_that_fails_is_a_failed_run(mcp_instrumented):
    with pytest.raises(RuntimeError), OTHER.start_as_current_span("handle ticket", attributes=AGENT):
        raise RuntimeError("x")
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_OUTCOME) == {("failed",): 1}


def test_a_disclosure_in_an_implicit_run_prevents_the_incident(mcp_instrumented):
    with OTHER.start_as_current_span("handle ticket", attributes=AGENT):
        with _outage():
            pass
        osm.disclose("reduced mode", kind="inline")
    t = mcp_instrumented
    assert t.counts(names.METRIC_AGENT_RUNS, names.DEGRADATION_MODE, names.AGENT_RUN_DISCLOSED) == {
        ("degraded", "true"): 1
    }
    assert t.points(names.METRIC_SILENT_INCIDENTS) == []


def test_evaluations_take_the_mode_of_the_state(mcp_instrumented):
    with osm.run("primary run") as primary:
        osm.record_evaluation("triage-suite", 0.9)
    with osm.run("degraded run") as degraded:
        with _outage():
            osm.record_evaluation("triage-suite", 0.5)
        osm.record_evaluation("triage-suite", 0.6)  # after the outage, still inside a degraded run
    osm.record_evaluation("triage-suite", 0.7, run=degraded)  # scored after the run ended
    osm.record_evaluation("triage-suite", 0.8, run=primary)
    points = {p.attributes[names.DEGRADATION_MODE]: p for p in mcp_instrumented.points(names.METRIC_EVALUATION_SCORE)}
    assert {m: (p.count, round(p.sum, 6)) for m, p in points.items()} == {"primary": (2, 1.7), "degraded": (3, 1.8)}
    assert points["primary"].attributes[names.GEN_AI_EVALUATION_NAME] == "triage-suite"


@pytest.fixture
def evaluation_events(telemetry, monkeypatch):
    """The MCP instrumentor with a logger provider of its own; ``(telemetry, records, set_capture)``."""
    logger_provider, records = recording_logger_provider()
    instrumentor = MCPSamplingInstrumentor()
    instrumentor.instrument(
        tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider, logger_provider=logger_provider
    )
    yield telemetry, records, lambda mode: monkeypatch.setenv(names.ENV_CAPTURE_MESSAGE_CONTENT, mode)
    instrumentor.uninstrument()


def test_an_evaluation_is_also_the_semconv_evaluation_result_event(evaluation_events):
    """GenAI semconv ``gen_ai.evaluation.result``: ``gen_ai.evaluation.name``, ``.score.value``,
    ``.score.label``, ``gen_ai.response.id``, emitted in the current span; the explanation only with
    content capture on events (it may quote what was scored)."""
    telemetry, records, set_capture = evaluation_events
    with osm.run("ticket-triage"):
        osm.record_evaluation("triage-suite", 0.75, label="pass", explanation="cites the ticket", response_id="msg_01")
    set_capture("EVENT_ONLY")
    osm.record_evaluation("triage-suite", 0.25, explanation="misses the ticket")
    quiet, captured = records
    assert quiet.event_name == captured.event_name == "gen_ai.evaluation.result"
    assert dict(quiet.attributes) == {
        "gen_ai.evaluation.name": "triage-suite",
        "gen_ai.evaluation.score.value": 0.75,
        "gen_ai.evaluation.score.label": "pass",
        "gen_ai.response.id": "msg_01",
        "degradation.mode": "primary",
    }
    (run_span,) = telemetry.spans("invoke_agent ticket-triage")
    assert quiet.span_id == run_span.context.span_id  # the span current where the host scored
    assert captured.attributes["gen_ai.evaluation.explanation"] == "misses the ticket"
    assert telemetry.counts(names.METRIC_EVALUATION_SCORE, names.GEN_AI_EVALUATION_NAME) == {("triage-suite",): 2}


@pytest.mark.parametrize("kwargs", [{"label": 1}, {"explanation": b"x"}, {"response_id": 7}])
def test_evaluation_event_fields_must_be_strings(kwargs):
    with pytest.raises(TypeError, match=r"evaluation (label|explanation|response_id) must be a string"):
        osm.record_evaluation("s", 0.5, **kwargs)


# The message names the argument and what was wrong (the standard: bad input gets a clear error),
# so a TypeError or ValueError raised by accident deeper down does not pass.
@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: runs.add_cost(-1), ValueError, r"cost must be a finite, non-negative number of USD, got -1"),
        (lambda: runs.add_cost(float("nan")), ValueError, r"cost must be .* got nan"),
        (lambda: runs.add_cost(True), TypeError, r"cost must be a number of USD, got bool"),
        (lambda: osm.disclose("x", kind="toast"), ValueError, r"disclosure kind must be one of .*'toast'"),
        (lambda: osm.disclose(None), TypeError, r"disclosure message must be a string, got NoneType"),
        (lambda: osm.run(""), ValueError, r"run name must not be empty"),
        (lambda: osm.run(3), TypeError, r"run name must be a string, got int"),
        (lambda: osm.record_evaluation("", 0.5), ValueError, r"evaluation name must not be empty"),
        (lambda: osm.record_evaluation("s", float("inf")), ValueError, r"evaluation score must be .* got inf"),
        (lambda: osm.record_evaluation("s", "0.5"), TypeError, r"evaluation score must be a number, got str"),
    ],
)
def test_bad_arguments_are_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_cost_outside_any_run_is_dropped(mcp_instrumented):
    runs.add_cost(1.0)  # no run, no span: nothing to add to, and no error
    assert mcp_instrumented.points(names.METRIC_AGENT_RUN_COST) == []


def test_a_degraded_span_without_a_reason_adds_unknown_only_when_nothing_explains_it(mcp_instrumented):
    unexplained = {names.DEGRADATION_MODE: "degraded"}
    with osm.run("unexplained") as alone, OTHER.start_as_current_span("x", attributes=unexplained):
        pass
    with osm.run("explained") as explained:
        with OTHER.start_as_current_span("x", attributes=unexplained):
            pass
        with OTHER.start_as_current_span("y", attributes={**unexplained, names.DEGRADATION_REASON: ["failover"]}):
            pass
    assert (alone.reasons, explained.reasons) == (("_unknown",), ("failover",))


def test_our_own_failures_never_reach_the_host(mcp_instrumented, monkeypatch):
    from otel_sampling import state

    def broken():
        raise RuntimeError("our telemetry is broken")

    monkeypatch.setattr(state, "api_instruments", broken)
    with osm.run("r") as run:  # every API call still works for the host
        with _outage(), OTHER.start_as_current_span("their work"):
            pass
        osm.disclose("reduced mode")
        osm.record_evaluation("suite", 0.5)
        stamp = osm.provenance.stamp()
        assert osm.provenance.lookup(hit=True, stamp=stamp) == "match"
        runs.add_cost(0.1)
    assert run.degraded and run.disclosed and stamp["config_id"] is None


def test_a_run_nested_in_a_run_keeps_its_own_spans_and_counts_in_the_outer_one(mcp_instrumented):
    with osm.run("outer"):
        with osm.run("sibling"):
            pass
        with osm.run("inner"):
            with OTHER.start_as_current_span("fallback", attributes={names.DEGRADATION_MODE: "degraded"}):
                pass
            osm.disclose("reduced mode")
    assert mcp_instrumented.counts(
        names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE, names.AGENT_RUN_DISCLOSED
    ) == {("inner", "degraded", "true"): 1, ("outer", "degraded", "true"): 1, ("sibling", "primary", "false"): 1}


# ---------------------------------------------------------------- one incident per task, whatever the nesting
def test_a_silent_degradation_in_a_nested_run_is_one_incident_not_two(mcp_instrumented):
    with osm.run("outer"), osm.run("inner"), OTHER.start_as_current_span("fallback call", attributes=DEGRADED_SPAN):
        pass
    t = mcp_instrumented
    assert t.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE) == {
        ("outer", "degraded"): 1,
        ("inner", "degraded"): 1,
    }
    # one degradation the person was never told about: one incident, counted by the enclosing task
    assert t.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME) == {("outer",): 1}


def test_a_nested_run_that_outlives_its_parent_counts_its_own_incident(mcp_instrumented):
    def background_task():  # started inside the outer run, still running after it ended
        with osm.run("inner"), OTHER.start_as_current_span("fallback call", attributes=DEGRADED_SPAN):
            pass

    with osm.run("outer"):
        task_context = contextvars.copy_context()
    task_context.run(background_task)
    assert mcp_instrumented.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME) == {("inner",): 1}


@pytest.mark.parametrize("disclose", [True, False])
@pytest.mark.parametrize("root", [{}, AGENT])
def test_a_run_inside_a_framework_root_span_is_not_a_second_incident(mcp_instrumented, disclose, root):
    # A web framework's SERVER span is no run; a framework's agent span is one, and the host's
    # explicit run inside it is nested there. Either way the explicit run is the task; a disclosure
    # there reaches the person, so no incident anywhere, and one without it.
    with (
        OTHER.start_as_current_span("POST /triage", kind=trace.SpanKind.SERVER, attributes=root),
        osm.run("ticket-triage"),
    ):
        with _outage():
            pass
        if disclose:
            osm.disclose("Reduced mode: sources unavailable")
    incidents = mcp_instrumented.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME)
    assert sum(incidents.values()) == (0 if disclose else 1)


def test_a_run_built_outside_a_run_and_entered_inside_it_is_nested(mcp_instrumented):
    scope = osm.run("inner")  # built first, entered inside the outer run
    with osm.run("outer"), scope, OTHER.start_as_current_span("fallback call", attributes=DEGRADED_SPAN):
        pass
    assert mcp_instrumented.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME) == {("outer",): 1}


@pytest.mark.parametrize("nested", [False, True])
def test_a_substitution_outside_policy_without_disclosure_is_exactly_one_incident(mcp_instrumented, nested):
    with osm.run("task"), osm.run("step") if nested else contextlib.nullcontext():
        with OTHER.start_as_current_span(
            "sampling", attributes={names.SAMPLING_SUBSTITUTION: names.SUBSTITUTION_OUTSIDE_POLICY}
        ):
            pass
    assert mcp_instrumented.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME) == {("task",): 1}
    (event,) = [e for s in mcp_instrumented.spans("invoke_agent task") for e in s.events]
    assert event.attributes[names.SILENT_INCIDENT_CAUSE] == (names.SUBSTITUTION_OUTSIDE_POLICY,)


@pytest.mark.parametrize("reason", [3, True, 2.5])
def test_a_foreign_span_with_a_non_string_reason_still_ends_its_run(mcp_instrumented, reason):
    with (
        OTHER.start_as_current_span(
            "handle", attributes={**AGENT, names.DEGRADATION_MODE: "degraded", names.DEGRADATION_REASON: reason}
        ),
        _outage(),
    ):
        with OTHER.start_as_current_span("inner", attributes={names.DEGRADATION_REASON: reason}):
            pass
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE) == {
        ("handle", "degraded"): 1
    }
    (inner,) = mcp_instrumented.spans("inner", scope=None)
    assert inner.attributes[names.DEGRADATION_REASON] == (str(reason), "sources unavailable")


def test_work_a_run_left_behind_after_it_ended_is_a_run_of_its_own(mcp_instrumented):
    with osm.run("request"):
        background = contextvars.copy_context()  # a task started inside the run, outliving it

    def later():
        assert runs.current_run() is None  # not the ended run
        with OTHER.start_as_current_span(
            "background job",
            context=otel_context.Context(),  # its own trace
            attributes=AGENT,
        ):
            with _outage():
                pass
            osm.disclose("reduced mode")
            assert runs.current_run() is not None and runs.current_run().name == "background job"

    background.run(later)
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.AGENT_RUN_DISCLOSED) == {
        ("request", "false"): 1,
        ("background job", "true"): 1,
    }
    assert mcp_instrumented.points(names.METRIC_SILENT_INCIDENTS) == []


# ---------------------------------------------------------------- the host's exception, untouched
def test_a_run_exited_in_another_context_passes_the_host_exception_through(mcp_instrumented):
    scope = osm.run("r")
    context = contextvars.copy_context()
    context.run(scope.__enter__)
    boom = RuntimeError("host failure")
    # exited from a different context (a task other than the one that entered it)
    assert scope.__exit__(RuntimeError, boom, None) is None
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_OUTCOME) == {("failed",): 1}


# ---------------------------------------------------------------- evaluations and cost: clear errors
# Input no check would otherwise catch: a histogram drops a negative score silently, a huge int
# overflows deep in the SDK. The message names the problem, not a megabyte of input.
@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: osm.record_evaluation("suite", -0.25), ValueError),
        (lambda: osm.record_evaluation("suite", 10**400), ValueError),  # not an OverflowError
        (lambda: runs.add_cost(10**400), ValueError),
        (lambda: osm.record_evaluation("suite", 0.5, run="my-run"), TypeError),
    ],
)
def test_bad_scores_and_costs_are_short_clear_errors(call, error):
    with pytest.raises(error) as caught:
        call()
    assert len(str(caught.value)) < 300


def test_a_negative_score_is_not_silently_dropped(mcp_instrumented):
    with pytest.raises(ValueError, match="score"):
        osm.record_evaluation("suite", -0.25)
    osm.record_evaluation("suite", 0.0)
    (point,) = mcp_instrumented.points(names.METRIC_EVALUATION_SCORE)
    assert point.count == 1


# ---------------------------------------------------------------- bounded memory in a long-lived process
def test_a_long_run_serving_many_remote_traces_stays_bounded(mcp_instrumented):
    # A run around a server loop: every request arrives with its own remote trace.
    with osm.run("serve") as serving:
        for i in range(1, 3 * run_records.MAX_OPEN_RUNS):
            remote = SpanContext(trace_id=i, span_id=i, is_remote=True, trace_flags=TraceFlags(1))
            with OTHER.start_as_current_span(
                "handle", context=trace.set_span_in_context(NonRecordingSpan(remote)), kind=trace.SpanKind.SERVER
            ):
                pass
        assert len(serving._trace_ids) <= run_records.MAX_OPEN_RUNS


def test_a_chain_of_jobs_each_started_from_the_last_keeps_no_chain_of_runs(mcp_instrumented):
    # A worker whose job schedules the next job from inside its run (the next task copies the
    # context, so its run is entered under the previous one, which ends first).
    context = contextvars.copy_context()

    def job():
        with osm.run("job") as current:
            return contextvars.copy_context(), current

    for _ in range(3 * 1000):  # deeper than the recursion limit
        context, last = context.run(job)
    kept, parent = 0, last._parent
    while parent is not None:
        kept, parent = kept + 1, parent._parent
    assert kept <= 1  # not every earlier run, alive through its child
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME) == {("job",): 3000}


# ---------------------------------------------------------------- who is paged: hosts that track disclosure
def _tracked(t) -> dict:
    return t.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME, names.DISCLOSURE_TRACKED)


@pytest.fixture
def zero_code(monkeypatch):
    """A process that has not called disclose() (a host that never does: no framework makes the call)."""
    monkeypatch.setattr(state, "_disclosure_called", False)


def test_a_host_that_never_discloses_records_its_incident_untracked(mcp_instrumented, zero_code):
    with osm.run("triage"), _outage():
        pass
    assert _tracked(mcp_instrumented) == {("triage", "false"): 1}
    (event,) = mcp_instrumented.spans("invoke_agent triage")[0].events
    assert event.attributes[names.DISCLOSURE_TRACKED] == "false"


def test_a_host_that_called_disclose_once_tracks_disclosure_from_then_on(mcp_instrumented, zero_code):
    with osm.run("first"), _outage():
        pass  # before the host's first disclose() call: not yet known to track disclosure
    with osm.run("told"), _outage():
        osm.disclose("Reduced mode")
    with osm.run("forgot"), _outage():
        pass
    assert _tracked(mcp_instrumented) == {("first", "false"): 1, ("forgot", "true"): 1}


def test_the_setting_tracks_disclosure_from_the_start(telemetry, zero_code, monkeypatch):
    monkeypatch.setenv(names.ENV_DISCLOSURE_TRACKED, "true")
    for t in _instrumented(telemetry, MCPSamplingInstrumentor):
        with osm.run("triage"), _outage():
            pass
        assert _tracked(t) == {("triage", "true"): 1}


@pytest.mark.parametrize(("raw", "tracked"), [("true", True), ("TRUE", True), ("false", False), ("", False)])
def test_the_setting_is_an_opentelemetry_boolean(raw, tracked):
    assert Settings.from_env({names.ENV_DISCLOSURE_TRACKED: raw}).disclosure_tracked is tracked


PRICED = """
[prices."claude-haiku-5-5"]
input_usd_per_mtok = 1.0
output_usd_per_mtok = 5.0
"""
CALL_USD = (25 * 1.0 + 5 * 5.0) / 1e6  # the fake provider's 25 input and 5 output tokens at the table's prices


@pytest.fixture
def priced(telemetry, tmp_path, monkeypatch):
    yield from with_policy(telemetry, tmp_path, monkeypatch, PRICED, AnthropicInstrumentor)


def test_a_priced_provider_call_is_part_of_the_run_cost(priced, fake_provider):
    """docs/api.md, add_cost: the run carries its priced calls; add_cost adds only what is not priced."""
    client = anthropic.Anthropic(base_url=fake_provider.url, api_key="sk-fake", max_retries=0)
    with osm.run("priced") as run:
        client.messages.create(model="claude-haiku-5-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}])
        runs.add_cost(1.0)  # a cost the price table cannot see
    assert priced.counts(names.METRIC_CLIENT_COST, names.GEN_AI_RESPONSE_MODEL) == {
        ("claude-haiku-5-5",): pytest.approx(CALL_USD)
    }
    assert run.cost_usd == pytest.approx(1.0 + CALL_USD)
    assert priced.counts(names.METRIC_AGENT_RUN_COST, names.AGENT_RUN_NAME) == {
        ("priced",): pytest.approx(1.0 + CALL_USD)
    }


def test_an_explicit_run_names_its_agent_and_the_hosts_conversation(mcp_instrumented):
    """GenAI semconv on the ``invoke_agent {gen_ai.agent.name}`` span: ``gen_ai.agent.name`` is the
    run's name; ``gen_ai.conversation.id`` only when the host gives one (never invented)."""
    with osm.run("ticket-triage", conversation_id="thread-42"):
        pass
    with osm.run("ticket-triage"):
        pass
    given, none = mcp_instrumented.spans("invoke_agent ticket-triage")
    assert given.attributes[names.GEN_AI_AGENT_NAME] == "ticket-triage"
    assert given.attributes[names.GEN_AI_CONVERSATION_ID] == "thread-42"
    assert none.attributes[names.GEN_AI_AGENT_NAME] == "ticket-triage"
    assert names.GEN_AI_CONVERSATION_ID not in none.attributes
    # a span attribute only: no metric point carries the conversation
    points = mcp_instrumented.points(names.METRIC_AGENT_RUNS)
    assert points and all(names.GEN_AI_CONVERSATION_ID not in p.attributes for p in points)


@pytest.mark.parametrize(("conversation_id", "error"), [(42, TypeError), ("  ", ValueError)])
def test_a_conversation_id_that_is_not_a_string_or_empty_is_refused(conversation_id, error):
    with pytest.raises(error, match="conversation_id"):
        osm.run("r", conversation_id=conversation_id)


def test_a_huge_conversation_id_is_cut_to_the_attribute_length(mcp_instrumented):
    with osm.run("r", conversation_id="c" * 100_000 + "\u202e"):
        pass
    (span,) = mcp_instrumented.spans("invoke_agent r")
    assert span.attributes[names.GEN_AI_CONVERSATION_ID] == "c" * 256
