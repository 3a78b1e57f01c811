"""Drills on real SDK calls (anthropic and openai, against the fake provider).

The rule (docs/api.md "Drills"): while a drill runs, every call whose ``gen_ai.request.model`` is
its target fails before any request leaves the process, with the exception the SDK itself raises
for that failure (the class is checked against what the SDK raises when the fake provider really
answers 529 / 503 / 429); calls to other models go out, so the host's own fallback runs and is
what the provider serves. Nothing is failed without a drill asked for (API or ``[[drills]]``),
outside its window, or after ``uninstrument()``. The clock drills read is the test's.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
from collections.abc import Iterator

import anthropic
import openai
import pytest

import otel_sampling as osm
from conftest import TRACER_PROVIDER, Telemetry, _instrumented, with_policy
from otel_sampling import drills, names, state
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.testing.fake_provider import SCENARIO_HEADER

MESSAGES = [{"role": "user", "content": "Summarise: printer on fire"}]
# Per SDK: (target, fallback); the status each SDK's provider answers an overload with
# (Anthropic's errors page: 529 overloaded_error; OpenAI's: 503).
MODELS = {"anthropic": ("claude-sonnet-5-5", "claude-haiku-5-5"), "openai": ("gpt-4.1", "gpt-4o-mini")}
STATUS = {
    ("anthropic", "overloaded"): 529,
    ("openai", "overloaded"): 503,
    ("anthropic", "rate_limited"): 429,
    ("openai", "rate_limited"): 429,
}
SDKS = pytest.mark.parametrize("sdk", list(MODELS))
T0 = dt.datetime(2026, 12, 1, 3, 0, tzinfo=dt.timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    fake = Clock()
    monkeypatch.setattr(state.drills, "clock", fake)
    yield fake
    drills.stop_all()


@pytest.fixture
def providers(telemetry: Telemetry, clock: Clock) -> Iterator[Telemetry]:
    yield from _instrumented(telemetry, AnthropicInstrumentor, OpenAIInstrumentor)


def call(sdk: str, fp, model: str, scenario: str = "", retries: int = 0) -> str:
    """One call; the text served."""
    headers = {SCENARIO_HEADER: scenario} if scenario else {}
    if sdk == "anthropic":
        with anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=retries, open_telemetry=False) as a:
            return a.messages.create(model=model, max_tokens=8, messages=MESSAGES, extra_headers=headers).model
    with openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=retries) as o:
        return o.chat.completions.create(model=model, messages=MESSAGES, extra_headers=headers).model


def host_answer(sdk: str, fp) -> tuple[str, list[BaseException]]:
    """The host's own fallback code, as a host writes it: the primary, and on an overload, a rate
    limit or a timeout (the SDK's classes), the fallback model. Returns (served model, errors)."""
    primary, fallback = MODELS[sdk]
    module = anthropic if sdk == "anthropic" else openai
    caught: list[BaseException] = []
    try:
        return call(sdk, fp, primary, retries=2), caught
    except (module.InternalServerError, module.RateLimitError, module.APITimeoutError) as exc:
        caught.append(exc)
        return call(sdk, fp, fallback), caught


def models_sent(fp) -> list[str]:
    return [request["model"] for request in fp.requests]


def real_error(sdk: str, fp, status: int) -> BaseException:
    """What the SDK raises when the provider really answers ``status`` for the target model."""
    with pytest.raises((anthropic.APIStatusError, openai.APIStatusError)) as info:
        call(sdk, fp, MODELS[sdk][0], scenario=f"status={status}")
    return info.value


# ---------------------------------------------------------------- the SDK's own exception, nothing sent


@SDKS
@pytest.mark.parametrize("failure", ["overloaded", "rate_limited"])
def test_a_drill_fails_the_target_with_the_class_the_sdk_raises_on_a_real_answer(
    providers: Telemetry, fake_provider, sdk: str, failure: str
):
    expected = type(real_error(sdk, fake_provider, STATUS[sdk, failure]))
    fake_provider.reset()
    with osm.drill("outage", target_model=MODELS[sdk][0], duration=600, failure=failure):
        with pytest.raises(expected) as info:
            call(sdk, fake_provider, MODELS[sdk][0], retries=2)
    assert type(info.value) is expected
    assert info.value.status_code == STATUS[sdk, failure]
    assert "outage" in str(info.value)  # the message names the drill
    assert fake_provider.requests == []  # never sent, not even the SDK's retries


def test_an_anthropic_overload_drill_raises_overloaded_error(providers: Telemetry, fake_provider):
    with osm.drill("outage", target_model="claude-sonnet-5-5", duration=600):
        with pytest.raises(anthropic.OverloadedError):
            call("anthropic", fake_provider, "claude-sonnet-5-5")


@SDKS
def test_a_timeout_drill_raises_the_sdk_timeout_error(providers: Telemetry, fake_provider, sdk: str):
    fake_provider.reset()
    module = anthropic if sdk == "anthropic" else openai
    with osm.drill("slow", target_model=MODELS[sdk][0], duration=600, failure="timeout"):
        with pytest.raises(module.APITimeoutError) as info:
            call(sdk, fake_provider, MODELS[sdk][0], retries=2)
    assert type(info.value) is module.APITimeoutError
    assert fake_provider.requests == []


# ---------------------------------------------------------------- the host's fallback runs unchanged


@SDKS
@pytest.mark.parametrize("failure", ["overloaded", "rate_limited", "timeout"])
def test_the_hosts_fallback_serves_and_the_target_never_reaches_the_provider(
    providers: Telemetry, fake_provider, sdk: str, failure: str
):
    primary, fallback = MODELS[sdk]
    fake_provider.reset()
    with osm.drill("outage", target_model=primary, duration=600, failure=failure):
        served, caught = host_answer(sdk, fake_provider)
    assert served == fallback and len(caught) == 1
    assert models_sent(fake_provider) == [fallback]


@SDKS
def test_other_models_are_never_failed(providers: Telemetry, fake_provider, sdk: str):
    primary, fallback = MODELS[sdk]
    fake_provider.reset()
    with osm.drill("outage", target_model=primary, duration=600):
        assert call(sdk, fake_provider, fallback) == fallback
        assert call(sdk, fake_provider, primary + "-20260101") == primary + "-20260101"  # exact match only
    assert models_sent(fake_provider) == [fallback, primary + "-20260101"]


@SDKS
def test_without_a_drill_the_primary_serves(providers: Telemetry, fake_provider, sdk: str):
    fake_provider.reset()
    served, caught = host_answer(sdk, fake_provider)
    assert served == MODELS[sdk][0] and caught == []
    assert models_sent(fake_provider) == [MODELS[sdk][0]]


# ---------------------------------------------------------------- the window


@SDKS
def test_a_drill_never_outlives_its_window(providers: Telemetry, fake_provider, clock: Clock, sdk: str):
    primary, _ = MODELS[sdk]
    exercise = osm.drill("outage", target_model=primary, duration=60).start()
    clock.advance(59)
    fake_provider.reset()
    assert host_answer(sdk, fake_provider)[0] == MODELS[sdk][1]
    clock.advance(1)  # the window is half-open: at its end the drill is over
    assert host_answer(sdk, fake_provider) == (primary, [])
    assert not exercise.running
    assert models_sent(fake_provider) == [MODELS[sdk][1], primary]
    assert providers.counts(names.METRIC_DRILLS, names.DRILL_NAME, names.DRILL_OUTCOME) == {
        ("outage", names.DRILL_OUTCOME_COMPLETED): 1
    }


def test_the_watchdog_ends_a_drill_whose_window_ran_out_without_a_call(providers: Telemetry, clock: Clock):
    exercise = osm.drill("quiet", target_model="claude-sonnet-5-5", duration=60).start()
    clock.advance(61)
    drills._sweep()  # what the watchdog thread runs each sweep
    assert not exercise.running
    assert state.active_reasons() == ()


def test_stop_before_the_window_ends_counts_stopped(providers: Telemetry, clock: Clock):
    with osm.drill("short", target_model="gpt-4.1", duration=600):
        clock.advance(10)
    assert providers.counts(names.METRIC_DRILLS, names.DRILL_NAME, names.DRILL_OUTCOME) == {
        ("short", names.DRILL_OUTCOME_STOPPED): 1
    }


# ---------------------------------------------------------------- uninstrument, SIGTERM, fork


@SDKS
def test_uninstrument_ends_the_drill_at_once(telemetry: Telemetry, fake_provider, clock: Clock, sdk: str):
    instrumentor = AnthropicInstrumentor() if sdk == "anthropic" else OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    exercise = osm.drill("outage", target_model=MODELS[sdk][0], duration=600).start()
    instrumentor.uninstrument()
    assert not exercise.running
    assert state.active_reasons() == ()
    fake_provider.reset()
    instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
    try:
        assert host_answer(sdk, fake_provider) == (MODELS[sdk][0], [])
    finally:
        instrumentor.uninstrument()
    assert telemetry.counts(names.METRIC_DRILLS, names.DRILL_OUTCOME) == {(names.DRILL_OUTCOME_ABORTED,): 1}


def test_sigterm_ends_the_drill_and_runs_the_hosts_handler(
    providers: Telemetry, clock: Clock, monkeypatch: pytest.MonkeyPatch
):
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    monkeypatch.setattr(state.drills, "sigterm_handler_installed", False)
    try:
        exercise = osm.drill("outage", target_model="gpt-4.1", duration=600).start()
        assert exercise.running
        signal.raise_signal(signal.SIGTERM)  # handled in the main thread, before raise_signal returns
        assert not exercise.running
        assert seen == [signal.SIGTERM]  # chained, not replaced
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert providers.counts(names.METRIC_DRILLS, names.DRILL_OUTCOME) == {(names.DRILL_OUTCOME_ABORTED,): 1}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_does_not_inherit_a_running_drill(providers: Telemetry, clock: Clock):
    exercise = osm.drill("outage", target_model="gpt-4.1", duration=600).start()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running the parent's cleanup
        try:
            inherited = exercise.running or names.REASON_DRILL in state.active_reasons()
            os.write(write, b"inherited" if inherited else b"clean")
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 64)
    os.close(read)
    os.waitpid(pid, 0)
    assert answer == b"clean"
    assert exercise.running  # the parent's drill goes on


# ---------------------------------------------------------------- telemetry inside a drill


def test_spans_and_metric_points_inside_are_stamped(providers: Telemetry, fake_provider):
    with osm.drill("outage", target_model="claude-sonnet-5-5", duration=600):
        host_answer("anthropic", fake_provider)
        active = providers.counts(
            names.METRIC_DEGRADATION_ACTIVE, names.DEGRADATION_COMPONENT, names.DEGRADATION_REASON
        )
    assert active[("outage", names.REASON_DRILL)] == 1  # a drill is a named degradation while it runs
    spans = providers.spans()
    assert [s.attributes[names.GEN_AI_REQUEST_MODEL] for s in spans] == ["claude-sonnet-5-5", "claude-haiku-5-5"]
    for span in spans:
        assert names.REASON_DRILL in span.attributes[names.DEGRADATION_REASON]
        assert list(span.attributes[names.DRILL_NAME]) == ["outage"]
        assert span.attributes[names.DEGRADATION_MODE] == names.MODE_DEGRADED
    assert spans[0].attributes[names.ERROR_TYPE] == "overloaded_error"  # the SDK's error body, classified as usual
    modes = providers.counts(names.METRIC_GEN_AI_OPERATION_DURATION, names.DEGRADATION_MODE, names.DRILL_NAME)
    assert modes == {(names.MODE_DEGRADED, "outage"): 2}  # the failed call and the fallback's
    tokens = providers.points(names.METRIC_GEN_AI_TOKEN_USAGE)
    assert tokens and {p.attributes[names.DRILL_NAME] for p in tokens} == {"outage"}


def test_after_the_drill_nothing_is_stamped(providers: Telemetry, fake_provider):
    with osm.drill("outage", target_model="claude-sonnet-5-5", duration=600):
        pass
    call("anthropic", fake_provider, "claude-sonnet-5-5")
    (span,) = providers.spans()
    assert names.DRILL_NAME not in span.attributes
    assert span.attributes[names.DEGRADATION_MODE] == names.MODE_PRIMARY
    for metric in (names.METRIC_GEN_AI_OPERATION_DURATION, names.METRIC_GEN_AI_TOKEN_USAGE):
        assert all(names.DRILL_NAME not in p.attributes for p in providers.points(metric))


# ---------------------------------------------------------------- [[drills]] in the policy file


SCHEDULE = """
[[drills]]
name = "nightly-claude"
target_model = "claude-sonnet-5-5"
start = 2026-12-01T03:00:00Z
duration = 600
every = 86400
failure = "overloaded"
"""


@pytest.fixture
def scheduled(telemetry: Telemetry, tmp_path, monkeypatch: pytest.MonkeyPatch, clock: Clock) -> Iterator[Telemetry]:
    yield from with_policy(telemetry, tmp_path, monkeypatch, SCHEDULE, AnthropicInstrumentor)


def test_a_scheduled_drill_fails_calls_only_inside_its_window(scheduled: Telemetry, fake_provider, clock: Clock):
    fake_provider.reset()
    clock.now = T0 - dt.timedelta(seconds=1)
    assert host_answer("anthropic", fake_provider)[0] == "claude-sonnet-5-5"  # before the window
    clock.now = T0 + dt.timedelta(seconds=30)
    served, caught = host_answer("anthropic", fake_provider)
    assert served == "claude-haiku-5-5" and isinstance(caught[0], anthropic.OverloadedError)
    clock.now = T0 + dt.timedelta(seconds=600)
    assert host_answer("anthropic", fake_provider)[0] == "claude-sonnet-5-5"  # the window is over
    clock.now = T0 + dt.timedelta(days=1, seconds=5)
    assert host_answer("anthropic", fake_provider)[0] == "claude-haiku-5-5"  # the next day's window
    assert models_sent(fake_provider) == [
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
        "claude-sonnet-5-5",
        "claude-haiku-5-5",
    ]
    assert scheduled.counts(names.METRIC_DRILLS, names.DRILL_NAME, names.DRILL_OUTCOME) == {
        ("nightly-claude", names.DRILL_OUTCOME_COMPLETED): 1
    }


def test_a_window_runs_its_drill_once_even_when_stopped_early(scheduled: Telemetry, fake_provider, clock: Clock):
    clock.now = T0 + dt.timedelta(seconds=30)
    host_answer("anthropic", fake_provider)
    drills.stop_all()
    fake_provider.reset()
    assert host_answer("anthropic", fake_provider) == ("claude-sonnet-5-5", [])


def test_without_a_schedule_no_drill_starts(providers: Telemetry, fake_provider, clock: Clock):
    clock.now = T0 + dt.timedelta(seconds=30)
    fake_provider.reset()
    assert host_answer("anthropic", fake_provider) == ("claude-sonnet-5-5", [])
    assert state.drills.running == ()


# ---------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    ("kwargs", "error", "says"),
    [
        ({"name": "", "target_model": "m", "duration": 1}, ValueError, "drill name must not be empty"),
        ({"name": 3, "target_model": "m", "duration": 1}, TypeError, "drill name must be a string"),
        ({"name": "d", "target_model": " ", "duration": 1}, ValueError, "drill target_model must not be empty"),
        ({"name": "d", "target_model": "m", "duration": 0}, ValueError, "drill duration must be above 0"),
        ({"name": "d", "target_model": "m", "duration": float("inf")}, ValueError, "finite"),
        ({"name": "d", "target_model": "m", "duration": True}, TypeError, "drill duration must be seconds"),
        ({"name": "d", "target_model": "m", "duration": "10m"}, TypeError, "drill duration must be seconds"),
        (
            {"name": "d", "target_model": "m", "duration": 1, "failure": "boom"},
            ValueError,
            "drill failure must be one of overloaded, rate_limited, timeout",
        ),
    ],
)
def test_bad_arguments_get_a_clear_error(kwargs, error, says):
    name = kwargs.pop("name")
    with pytest.raises(error, match=says):
        osm.drill(name, **kwargs)


def test_a_timedelta_duration_and_a_bounded_name():
    exercise = osm.drill("x" * 10_000, target_model="m", duration=dt.timedelta(minutes=10))
    assert exercise.duration == 600.0 and len(exercise.name) <= 128


def test_at_most_max_drills_run_at_once(clock: Clock):
    started = [osm.drill(f"d{i}", target_model="m", duration=60).start() for i in range(state.MAX_DRILLS)]
    with pytest.raises(RuntimeError, match="drills are running already"):
        osm.drill("one-more", target_model="m", duration=60).start()
    assert all(d.running for d in started)


def test_the_watchdog_sweeps_only_while_a_drill_runs(clock: Clock):
    first = osm.drill("a", target_model="m", duration=60).start()
    second = osm.drill("b", target_model="m", duration=60).start()
    assert state.watchdog._sweeps.count(drills._sweep) == 1
    first.stop()
    assert state.watchdog._sweeps.count(drills._sweep) == 1
    second.stop()
    assert drills._sweep not in state.watchdog._sweeps
