"""Adversarial review of degraded mode: incidents counted once, state that cannot leak between
requests, bounded labels and strings, clear errors for bad input, the host's exception untouched."""

from __future__ import annotations

import contextlib
import contextvars
import gc
import logging

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace

import otel_sampling as osm
from conftest import TRACER_PROVIDER
from otel_sampling import automatic, degradation, labels, log_fields, names, runs, state

LATER = "2099-01-01T00:00:00Z"
OTHER = trace.get_tracer("someone-elses-instrumentation", tracer_provider=TRACER_PROVIDER)
DEGRADED_SPAN = {names.DEGRADATION_MODE: names.MODE_DEGRADED, names.DEGRADATION_REASON: [names.REASON_FALLBACK]}


@pytest.fixture(autouse=True)
def no_degradation_left():
    yield
    for leftover in state.active_degradations():
        leftover.exit()


def _outage(reason: str = "sources unavailable") -> degradation.Degradation:
    return osm.degraded("search", reason=reason, owner="oncall-search", expires_at=LATER)


# ---------------------------------------------------------------- the silent-incident rule
def test_a_silent_degradation_in_a_nested_run_is_one_incident_not_two(mcp_instrumented):
    with osm.run("outer"), osm.run("inner"), OTHER.start_as_current_span("fallback call", attributes=DEGRADED_SPAN):
        pass
    t = mcp_instrumented
    assert t.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE) == {
        ("outer", "degraded"): 1, ("inner", "degraded"): 1}
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
def test_a_run_inside_a_framework_root_span_is_not_a_second_incident(mcp_instrumented, disclose):
    # A web framework's SERVER span is the local root: an implicit run. The host's explicit run
    # inside it is the task; a disclosure there reaches the person, so no incident anywhere.
    with OTHER.start_as_current_span("POST /triage", kind=trace.SpanKind.SERVER), osm.run("ticket-triage"):
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


# ---------------------------------------------------------------- the host's exception, untouched
def test_a_run_exited_in_another_context_passes_the_host_exception_through(mcp_instrumented):
    scope = osm.run("r")
    context = contextvars.copy_context()
    context.run(scope.__enter__)
    boom = RuntimeError("host failure")
    # exited from a different context (a task other than the one that entered it)
    assert scope.__exit__(RuntimeError, boom, None) is None
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_OUTCOME) == {("failed",): 1}


# ---------------------------------------------------------------- no state shared between requests
class _Record:
    """Stands in for a sampling record: resolve() reads these."""

    _span = None
    _server_name = None

    def failed_over(self) -> bool:
        return False


def test_state_of_a_request_that_never_ended_does_not_reach_a_new_one():
    stale = _Record()
    automatic._calls_of(stale).canary = True  # a canary request that never ended (its record is gone)
    stale_id = id(stale)
    del stale
    gc.collect()
    alive = []  # kept, so each try takes another free slot; CPython soon reuses the freed one
    for _ in range(10_000):
        fresh = _Record()
        if id(fresh) == stale_id:
            break
        alive.append(fresh)
    else:
        pytest.skip("the allocator did not reuse the address")
    assert automatic.resolve(fresh, names.MODE_PRIMARY, "m", names.SUBSTITUTION_NONE) == (names.MODE_PRIMARY, ())


# ---------------------------------------------------------------- bounded labels and strings
def test_host_reasons_cannot_push_the_reason_vocabulary_into_other(mcp_instrumented, monkeypatch):
    monkeypatch.setattr(degradation, "_known", {})  # the flood below stays out of later tests' gauges
    for i in range(150):  # more distinct free-text reasons than the label admits (100)
        with _outage(f"index down: error {i}"):
            pass
    mcp_instrumented.points(names.METRIC_DEGRADATION_ACTIVE)  # the gauges label every known reason
    assert [automatic.reason_label((r,)) for r in names.DEGRADATION_REASONS] == list(names.DEGRADATION_REASONS)


def test_a_huge_reason_is_cut_on_spans_logs_and_memory(mcp_instrumented):
    huge = "x" * 1_000_000 + "\u202e"
    with osm.degraded("search\n" + "c" * 10_000, reason=huge, owner="o" * 10_000, expires_at=LATER) as outage:
        with OTHER.start_as_current_span("their work"):
            pass
    (span,) = mcp_instrumented.spans("their work", scope=None)
    (reason,) = span.attributes[names.DEGRADATION_REASON]
    assert reason == "x" * labels.LABEL_MAX_LENGTH
    assert len(outage.component) <= labels.LABEL_MAX_LENGTH and "\n" not in outage.component
    assert len(outage.owner) <= labels.LABEL_MAX_LENGTH


def test_a_span_that_brings_its_own_reason_keeps_it_inside_a_degradation(mcp_instrumented):
    with _outage(), OTHER.start_as_current_span("fallback call", attributes=DEGRADED_SPAN):
        pass
    (span,) = mcp_instrumented.spans("fallback call", scope=None)
    assert span.attributes[names.DEGRADATION_REASON] == ("fallback", "sources unavailable")


def test_owner_and_expiry_are_on_the_spans_of_a_degradation(mcp_instrumented):
    with _outage(), osm.degraded("verify", reason="verification off", owner="team-a",
                                 expires_at="2030-06-01T12:00:00+02:00"), OTHER.start_as_current_span("their work"):
        pass
    (span,) = mcp_instrumented.spans("their work", scope=None)
    assert span.attributes[names.DEGRADATION_COMPONENT] == ("search", "verify")
    assert span.attributes[names.DEGRADATION_OWNER] == ("oncall-search", "team-a")
    assert span.attributes[names.DEGRADATION_EXPIRES_AT] == ("2099-01-01T00:00:00Z", "2030-06-01T10:00:00Z")


# ---------------------------------------------------------------- clear errors for bad input
@pytest.mark.parametrize(("call", "error"), [
    (lambda: osm.record_evaluation("suite", -0.25), ValueError),  # a histogram drops negatives silently
    (lambda: osm.record_evaluation("suite", 10 ** 400), ValueError),  # not an OverflowError
    (lambda: runs.add_cost(10 ** 400), ValueError),
    (lambda: osm.record_evaluation("suite", 0.5, run="my-run"), TypeError),
    (lambda: _outage().__class__("c", "r", "o", "9999-12-31T23:59:59-01:00"), ValueError),  # past datetime.max in UTC
    (lambda: osm.degraded("c", "r", "o", "2026-12-01T00:00:00"), ValueError),
    (lambda: osm.degraded("c", "r", "o", "x" * 1_000_000), ValueError),
])
def test_bad_input_is_a_clear_error(call, error):
    with pytest.raises(error) as caught:
        call()
    assert len(str(caught.value)) < 300  # the message names the problem, not a megabyte of input


def test_a_negative_score_is_not_silently_dropped(mcp_instrumented):
    with pytest.raises(ValueError, match="score"):
        osm.record_evaluation("suite", -0.25)
    osm.record_evaluation("suite", 0.0)
    (point,) = mcp_instrumented.points(names.METRIC_EVALUATION_SCORE)
    assert point.count == 1


@pytest.mark.parametrize("stamp", [
    {"mode": ["primary"]}, {"mode": {"a": 1}}, {"mode": "primary", "model": 3, "region": ["eu"]},
    {"mode": "degraded", "config_id": "c" * 1_000_000}, {1: 2}, "primary", 42,
])
def test_a_malformed_stamp_is_counted_with_bounded_labels(mcp_instrumented, stamp):
    match = osm.provenance.lookup(hit=True, stamp=stamp)
    assert match in (names.CACHE_MATCH, names.CACHE_MISMATCH, names.CACHE_UNSTAMPED)
    (point,) = mcp_instrumented.points(names.METRIC_CACHE_LOOKUPS)
    assert point.attributes[names.CACHE_PROVENANCE_MODE] in (*names.MODES, names.CACHE_UNSTAMPED)


# ---------------------------------------------------------------- bounded memory in a long-lived process
def test_a_long_run_serving_many_remote_traces_stays_bounded(mcp_instrumented):
    # A run around a server loop: every request arrives with its own remote trace.
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    with osm.run("serve") as serving:
        for i in range(1, 3 * state.MAX_OPEN_RUNS):
            remote = SpanContext(trace_id=i, span_id=i, is_remote=True, trace_flags=TraceFlags(1))
            with OTHER.start_as_current_span("handle", context=trace.set_span_in_context(NonRecordingSpan(remote)),
                                             kind=trace.SpanKind.SERVER):
                pass
        assert len(serving._trace_ids) <= state.MAX_OPEN_RUNS


# ---------------------------------------------------------------- log records
def test_the_documented_formatter_prints_every_record(mcp_instrumented):
    # docs/telemetry.md: a formatter printing the fields gives defaults for records outside a degradation
    formatter = logging.Formatter("%(degradation.mode)s %(message)s", defaults=log_fields.FORMATTER_DEFAULTS)
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    log = logging.getLogger("a.host.module.fmt")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        log.info("before")
        with _outage():
            log.info("during")
    finally:
        log.removeHandler(handler)
    assert [formatter.format(r) for r in records] == ["primary before", "degraded during"]


@pytest.mark.parametrize("nested", [False, True])
def test_a_substitution_outside_policy_without_disclosure_is_exactly_one_incident(mcp_instrumented, nested):
    with (osm.run("task"), osm.run("step") if nested else contextlib.nullcontext()):
        with OTHER.start_as_current_span("sampling", attributes={
                names.SAMPLING_SUBSTITUTION: names.SUBSTITUTION_OUTSIDE_POLICY}):
            pass
    assert mcp_instrumented.counts(names.METRIC_SILENT_INCIDENTS, names.AGENT_RUN_NAME) == {("task",): 1}
    (event,) = [e for s in mcp_instrumented.spans("invoke_agent task") for e in s.events]
    assert event.attributes[names.SILENT_INCIDENT_CAUSE] == (names.SUBSTITUTION_OUTSIDE_POLICY,)


@pytest.mark.parametrize("reason", [3, True, 2.5])
def test_a_foreign_span_with_a_non_string_reason_still_ends_its_run(mcp_instrumented, reason):
    with OTHER.start_as_current_span("handle", attributes={names.DEGRADATION_MODE: "degraded",
                                                           names.DEGRADATION_REASON: reason}), _outage():
        with OTHER.start_as_current_span("inner", attributes={names.DEGRADATION_REASON: reason}):
            pass
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE) == {
        ("handle", "degraded"): 1}
    (inner,) = mcp_instrumented.spans("inner", scope=None)
    assert inner.attributes[names.DEGRADATION_REASON] == (str(reason), "sources unavailable")


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


def test_many_active_degradations_put_a_bounded_list_on_each_span(mcp_instrumented, monkeypatch):
    monkeypatch.setattr(degradation, "_known", {})  # these 500 stay out of later tests' gauges
    leaked = [osm.degraded(f"c{i}", reason=f"r{i}", owner=f"o{i}", expires_at=LATER).enter() for i in range(500)]
    with OTHER.start_as_current_span("their work"):
        pass
    (span,) = mcp_instrumented.spans("their work", scope=None)
    for key in (names.DEGRADATION_REASON, names.DEGRADATION_COMPONENT, names.DEGRADATION_OWNER,
                names.DEGRADATION_EXPIRES_AT):
        assert 0 < len(span.attributes[key]) <= state.MAX_STAMPED
    assert span.attributes[names.DEGRADATION_REASON][0] == "r0"
    for outage in leaked:
        outage.exit()


def test_work_a_run_left_behind_after_it_ended_is_a_run_of_its_own(mcp_instrumented):
    with osm.run("request"):
        background = contextvars.copy_context()  # a task started inside the run, outliving it

    def later():
        assert runs.current_run() is None  # not the ended run
        with OTHER.start_as_current_span("background job", context=otel_context.Context()):  # its own trace
            with _outage():
                pass
            osm.disclose("reduced mode")
            assert runs.current_run() is not None and runs.current_run().name == "background job"

    background.run(later)
    assert mcp_instrumented.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.AGENT_RUN_DISCLOSED) == {
        ("request", "false"): 1, ("background job", "true"): 1}
    assert mcp_instrumented.points(names.METRIC_SILENT_INCIDENTS) == []
