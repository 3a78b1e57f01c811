"""Named degradations: spans from any instrumentation, log records, gauges, transitions, thread and
task safety, bounded labels and strings, clear errors for bad input."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import threading

import pytest
from opentelemetry import trace

import otel_sampling as osm
from conftest import TRACER_PROVIDER
from harness.limits import HANG_S
from otel_sampling import degradation, log_fields, metrics, names, state
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.records.run import DegradationSpanProcessor

LATER = "2099-01-01T00:00:00Z"
EARLIER = "2001-01-01T00:00:00Z"
OTHER = trace.get_tracer("someone-elses-instrumentation", tracer_provider=TRACER_PROVIDER)
DEGRADED_SPAN = {names.DEGRADATION_MODE: names.MODE_DEGRADED, names.DEGRADATION_REASON: [names.REASON_FALLBACK]}


@pytest.fixture(autouse=True)
def no_degradation_left():
    yield
    for leftover in state.active_degradations():
        leftover.exit()


def _search_down(expires_at: str = LATER, reason: str = "sources unavailable") -> degradation.Degradation:
    return osm.degraded("search", reason=reason, owner="oncall-search", expires_at=expires_at)


def test_foreign_span_inside_a_degradation_is_stamped(mcp_instrumented):
    with _search_down(), OTHER.start_as_current_span("their work") as span:
        span.set_attribute("their.key", "kept")
    (theirs,) = mcp_instrumented.spans("their work", scope=None)
    assert theirs.instrumentation_scope.name == "someone-elses-instrumentation"
    assert dict(theirs.attributes) == {
        "their.key": "kept",
        names.DEGRADATION_MODE: "degraded",
        names.DEGRADATION_REASON: ("sources unavailable",),
        names.DEGRADATION_COMPONENT: ("search",),
        names.DEGRADATION_OWNER: ("oncall-search",),
        names.DEGRADATION_EXPIRES_AT: (LATER,),
    }


def test_nothing_added_or_removed_when_nothing_is_degraded(mcp_instrumented):
    with OTHER.start_as_current_span("their work", attributes={"a": 1, names.DEGRADATION_MODE: "theirs"}):
        pass
    (theirs,) = mcp_instrumented.spans("their work", scope=None)
    assert dict(theirs.attributes) == {"a": 1, names.DEGRADATION_MODE: "theirs"}


def test_every_active_reason_is_on_the_span(mcp_instrumented):
    with (
        _search_down(),
        osm.degraded("verify", reason="verification pass off", owner="team-a", expires_at=LATER),
        OTHER.start_as_current_span("both"),
    ):
        pass
    (span,) = mcp_instrumented.spans("both", scope=None)
    assert span.attributes[names.DEGRADATION_REASON] == ("sources unavailable", "verification pass off")


def test_process_wide_state_entered_in_one_thread_is_seen_in_another(mcp_instrumented):
    outage = _search_down()
    entered, checked = threading.Event(), threading.Event()

    def other_thread():
        entered.wait(HANG_S)
        with OTHER.start_as_current_span("in the other thread"):
            pass
        checked.set()

    worker = threading.Thread(target=other_thread)
    worker.start()
    outage.enter()
    entered.set()
    checked.wait(HANG_S)
    worker.join(HANG_S)
    outage.exit()
    with OTHER.start_as_current_span("after the exit"):
        pass
    (inside,) = mcp_instrumented.spans("in the other thread", scope=None)
    (after,) = mcp_instrumented.spans("after the exit", scope=None)
    assert inside.attributes[names.DEGRADATION_MODE] == "degraded"
    assert names.DEGRADATION_MODE not in after.attributes


def test_async_with_is_process_wide_across_tasks(mcp_instrumented):
    async def main():
        started = asyncio.Event()

        async def other_task():
            await started.wait()
            with OTHER.start_as_current_span("other task"):
                pass

        task = asyncio.create_task(other_task())
        async with _search_down():
            started.set()
            await task

    asyncio.run(main())
    (span,) = mcp_instrumented.spans("other task", scope=None)
    assert span.attributes[names.DEGRADATION_MODE] == "degraded"


def test_gauges_and_transitions(mcp_instrumented):
    key = (names.DEGRADATION_COMPONENT, names.DEGRADATION_REASON)
    mine = {("search", "sources unavailable"), ("verify", "verification pass off")}

    class Gauges:  # only this test's degradations (earlier tests' exited ones read 0)
        @staticmethod
        def counts(metric, *keys):
            return {k: v for k, v in mcp_instrumented.counts(metric, *keys).items() if k in mine}

    t = Gauges
    fresh = _search_down().enter()
    stale = osm.degraded("verify", reason="verification pass off", owner="team-a", expires_at=EARLIER).enter()
    fresh.enter()  # entering an active one again is not a transition
    assert t.counts(names.METRIC_DEGRADATION_ACTIVE, *key) == {
        ("search", "sources unavailable"): 1,
        ("verify", "verification pass off"): 1,
    }
    assert t.counts(names.METRIC_DEGRADATION_EXPIRED, *key) == {
        ("search", "sources unavailable"): 0,
        ("verify", "verification pass off"): 1,
    }
    fresh.exit()
    stale.exit()
    stale.exit()
    assert t.counts(names.METRIC_DEGRADATION_ACTIVE, *key) == {
        ("search", "sources unavailable"): 0,
        ("verify", "verification pass off"): 0,
    }
    assert mcp_instrumented.counts(
        names.METRIC_DEGRADATION_TRANSITIONS, names.DEGRADATION_COMPONENT, names.DEGRADATION_DIRECTION
    ) == {("search", "enter"): 1, ("search", "exit"): 1, ("verify", "enter"): 1, ("verify", "exit"): 1}


def test_log_records_carry_the_mode_only_while_degraded(mcp_instrumented):
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    log = logging.getLogger("a.host.module")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        with _search_down():
            log.info("inside")
        log.info("outside")
    finally:
        log.removeHandler(handler)
    inside, outside = records
    assert (
        logging.Formatter("%(degradation.mode)s %(degradation.reason)s %(message)s").format(inside)
        == "degraded sources unavailable inside"
    )
    assert names.DEGRADATION_MODE not in vars(outside)


def test_one_processor_per_provider_and_off_after_the_last_uninstrument(telemetry):
    instrumentors = [MCPSamplingInstrumentor(), AnthropicInstrumentor(), OpenAIInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        processors = [
            p
            for p in TRACER_PROVIDER._active_span_processor._span_processors
            if isinstance(p, DegradationSpanProcessor)
        ]
        assert len(processors) == 1
        for instrumentor in instrumentors[:2]:
            instrumentor.uninstrument()
        with _search_down():
            with OTHER.start_as_current_span("one instrumentor left"):
                pass
            instrumentors[2].uninstrument()
            with OTHER.start_as_current_span("none left"):
                pass
    finally:  # a failed assertion above must not leave instrumentors (and their processor) behind
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    assert names.DEGRADATION_MODE in telemetry.spans("one instrumentor left", scope=None)[0].attributes
    assert names.DEGRADATION_MODE not in telemetry.spans("none left", scope=None)[0].attributes


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"component": ""}, ValueError),
        ({"reason": "  "}, ValueError),
        ({"owner": None}, TypeError),
        ({"expires_at": "2026-12-01T00:00:00"}, ValueError),  # no offset: ambiguous
        ({"expires_at": "next tuesday"}, ValueError),
        ({"expires_at": dt.datetime(2026, 12, 1)}, ValueError),
        ({"expires_at": 1764547200}, TypeError),
    ],
)
def test_bad_arguments_are_clear_errors(kwargs, error):
    arguments = {"component": "search", "reason": "down", "owner": "me", "expires_at": LATER, **kwargs}
    with pytest.raises(error):
        osm.degraded(**arguments)


def test_expiry_accepts_offsets_and_datetimes():
    plus_two = osm.degraded("c", reason="r", owner="o", expires_at="2026-12-01T02:00:00+02:00")
    aware = osm.degraded("c", reason="r", owner="o", expires_at=dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc))
    assert plus_two.expires_at == aware.expires_at
    assert aware.expired(dt.datetime(2026, 12, 1, 0, 0, 1, tzinfo=dt.timezone.utc))
    assert not aware.expired(dt.datetime(2026, 11, 30, 23, 59, 59, tzinfo=dt.timezone.utc))


@pytest.mark.parametrize(
    "call",
    [
        lambda: degradation.Degradation("c", "r", "o", "9999-12-31T23:59:59-01:00"),  # past datetime.max in UTC
        lambda: osm.degraded("c", "r", "o", "2026-12-01T00:00:00"),
        lambda: osm.degraded("c", "r", "o", "x" * 1_000_000),
    ],
)
def test_a_bad_expiry_is_a_short_clear_error(call):
    with pytest.raises(ValueError, match="expires_at") as caught:  # the message names the argument
        call()
    assert len(str(caught.value)) < 300  # the message names the problem, not a megabyte of input


# ---------------------------------------------------------------- bounded labels and strings
def test_host_reasons_cannot_push_the_reason_vocabulary_into_other(mcp_instrumented, monkeypatch):
    monkeypatch.setattr(state, "_known", {})  # the flood below stays out of later tests' gauges
    for i in range(150):  # more distinct free-text reasons than the label admits (100)
        with _search_down(reason=f"index down: error {i}"):
            pass
    mcp_instrumented.points(names.METRIC_DEGRADATION_ACTIVE)  # the gauges label every known reason
    assert [state.api_instruments().reason_label.value(r) for r in names.DEGRADATION_REASONS] == list(
        names.DEGRADATION_REASONS
    )


def test_a_huge_reason_is_cut_on_spans_logs_and_memory(mcp_instrumented):
    huge = "x" * 1_000_000 + "\u202e"
    with osm.degraded("search\n" + "c" * 10_000, reason=huge, owner="o" * 10_000, expires_at=LATER) as outage:
        with OTHER.start_as_current_span("their work"):
            pass
    (span,) = mcp_instrumented.spans("their work", scope=None)
    (reason,) = span.attributes[names.DEGRADATION_REASON]
    assert reason == "x" * metrics.LABEL_MAX_LENGTH
    assert len(outage.component) <= metrics.LABEL_MAX_LENGTH and "\n" not in outage.component
    assert len(outage.owner) <= metrics.LABEL_MAX_LENGTH


def test_many_active_degradations_put_a_bounded_list_on_each_span(mcp_instrumented, monkeypatch):
    monkeypatch.setattr(state, "_known", {})  # these 500 stay out of later tests' gauges
    leaked = [osm.degraded(f"c{i}", reason=f"r{i}", owner=f"o{i}", expires_at=LATER).enter() for i in range(500)]
    with OTHER.start_as_current_span("their work"):
        pass
    (span,) = mcp_instrumented.spans("their work", scope=None)
    for key in (
        names.DEGRADATION_REASON,
        names.DEGRADATION_COMPONENT,
        names.DEGRADATION_OWNER,
        names.DEGRADATION_EXPIRES_AT,
    ):
        assert 0 < len(span.attributes[key]) <= state.MAX_STAMPED
    assert span.attributes[names.DEGRADATION_REASON][0] == "r0"
    for outage in leaked:
        outage.exit()


# ---------------------------------------------------------------- what spans and log records carry
def test_a_span_that_brings_its_own_reason_keeps_it_inside_a_degradation(mcp_instrumented):
    with _search_down(), OTHER.start_as_current_span("fallback call", attributes=DEGRADED_SPAN):
        pass
    (span,) = mcp_instrumented.spans("fallback call", scope=None)
    assert span.attributes[names.DEGRADATION_REASON] == ("fallback", "sources unavailable")


def test_owner_and_expiry_are_on_the_spans_of_a_degradation(mcp_instrumented):
    with (
        _search_down(),
        osm.degraded("verify", reason="verification off", owner="team-a", expires_at="2030-06-01T12:00:00+02:00"),
        OTHER.start_as_current_span("their work"),
    ):
        pass
    (span,) = mcp_instrumented.spans("their work", scope=None)
    assert span.attributes[names.DEGRADATION_COMPONENT] == ("search", "verify")
    assert span.attributes[names.DEGRADATION_OWNER] == ("oncall-search", "team-a")
    assert span.attributes[names.DEGRADATION_EXPIRES_AT] == ("2099-01-01T00:00:00Z", "2030-06-01T10:00:00Z")


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
        with _search_down():
            log.info("during")
    finally:
        log.removeHandler(handler)
    assert [formatter.format(r) for r in records] == ["primary before", "degraded during"]
