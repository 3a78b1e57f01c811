"""Failover on real SDK calls (anthropic and openai, against the fake provider): a success on another
model after a failure on a model that did not recover, inside one logical request.

The rule: docs/telemetry.md "Automatic degraded mode" (the memory itself: tests/records/test_failover.py).
The key is the sampling callback the calls run in, else the run they are made in, else their parent
span, where a failure is forgotten after ``FAILOVER_WINDOW_SECONDS`` (the clock is the test's: the
tracker of each instrumentor is replaced by one on a clock the test moves).
"""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import anyio
import openai
import pytest
from opentelemetry import trace

import otel_sampling as osm
from conftest import TRACER_PROVIDER, Telemetry
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor
from otel_sampling.records.failover import FAILOVER_WINDOW_SECONDS, FailoverTracker
from otel_sampling.testing.fake_provider import SCENARIO_HEADER

HOST = trace.get_tracer("host", tracer_provider=TRACER_PROVIDER)
MESSAGES = [{"role": "user", "content": "Summarise: printer on fire"}]
# Per SDK: (primary, fallback, the overload status it gets: anthropic 529 overloaded_error, openai 503)
MODELS = {"anthropic": ("claude-sonnet-5-5", "claude-haiku-5-5", 529), "openai": ("gpt-4.1", "gpt-4o-mini", 503)}
SDKS = pytest.mark.parametrize("sdk", list(MODELS))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def providers(telemetry: Telemetry, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    instrumentors = [AnthropicInstrumentor(), OpenAIInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument(tracer_provider=TRACER_PROVIDER, meter_provider=telemetry.meter_provider)
        monkeypatch.setattr(instrumentor._state, "failovers", FailoverTracker(clock=clock))
    yield telemetry
    for instrumentor in instrumentors:
        instrumentor.uninstrument()


def ask(sdk: str, fp, model: str, scenario: str = "") -> bool:
    """One call with no SDK retry; True when it succeeded, False when the provider answered an error."""
    headers = {SCENARIO_HEADER: scenario} if scenario else {}
    try:
        if sdk == "anthropic":
            with anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0, open_telemetry=False) as a:
                a.messages.create(model=model, max_tokens=8, messages=MESSAGES, extra_headers=headers)
        else:
            with openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0) as o:
                o.chat.completions.create(model=model, messages=MESSAGES, extra_headers=headers)
    except (anthropic.APIStatusError, openai.APIStatusError):
        return False
    return True


def overload(sdk: str) -> str:
    primary, _, status = MODELS[sdk]
    return f"status={status},fail_model={primary}"


def verdicts(t: Telemetry) -> list[tuple[str, str, tuple[str, ...]]]:
    """(model, mode, reasons) of every call, in the order they ended."""
    calls = sorted((s for s in t.spans() if s.name.startswith("chat ")), key=lambda s: s.end_time)
    return [
        (
            s.attributes[names.GEN_AI_REQUEST_MODEL],
            s.attributes.get(names.DEGRADATION_MODE),
            tuple(s.attributes.get(names.DEGRADATION_REASON, ())),
        )
        for s in calls
    ]


@SDKS
def test_a_real_failover_under_one_parent_is_degraded(providers, fake_provider, sdk):
    """The primary fails (it is down), the fallback serves: a failover."""
    primary, fallback, _ = MODELS[sdk]
    with HOST.start_as_current_span("handle ticket"):
        assert not ask(sdk, fake_provider, primary, overload(sdk))
        assert ask(sdk, fake_provider, fallback, overload(sdk))
    assert verdicts(providers)[-1] == (fallback, "degraded", ("failover",))


@SDKS
def test_a_retry_that_recovered_then_another_model_is_primary(providers, fake_provider, sdk):
    """A 429 on A, A retried successfully, then a small routing call on B with no error."""
    primary, fallback, _ = MODELS[sdk]
    with HOST.start_as_current_span("handle ticket"):
        assert not ask(sdk, fake_provider, primary, "status=429")
        assert ask(sdk, fake_provider, primary)
        assert ask(sdk, fake_provider, fallback)
    assert [v[1:] for v in verdicts(providers)] == [("primary", ())] * 3


@SDKS
def test_an_early_failure_under_a_long_lived_parent_is_forgotten(providers, fake_provider, clock, sdk):
    """A batch job's one parent span: one early 529 on A, then every later call on B, after the window."""
    primary, fallback, _ = MODELS[sdk]
    with HOST.start_as_current_span("nightly batch"):
        assert not ask(sdk, fake_provider, primary, overload(sdk))
        for _ in range(3):
            clock.now += FAILOVER_WINDOW_SECONDS + 1
            assert ask(sdk, fake_provider, fallback)
    assert [v[1] for v in verdicts(providers)] == ["primary"] * 4


@SDKS
def test_a_run_is_one_logical_request_across_parent_spans(providers, fake_provider, clock, sdk):
    """Inside an explicit run the run is the key, with no window: the primary failed in one step,
    the fallback served in a later one."""
    primary, fallback, _ = MODELS[sdk]
    with osm.run("triage"):
        with HOST.start_as_current_span("first step"):
            assert not ask(sdk, fake_provider, primary, overload(sdk))
        clock.now += FAILOVER_WINDOW_SECONDS + 1
        with HOST.start_as_current_span("second step"):
            assert ask(sdk, fake_provider, fallback)
    assert verdicts(providers)[-1] == (fallback, "degraded", ("failover",))
    assert providers.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME, names.DEGRADATION_MODE) == {
        ("triage", "degraded"): 1
    }


@SDKS
def test_calls_in_two_runs_are_no_failover(providers, fake_provider, sdk):
    primary, fallback, _ = MODELS[sdk]
    with osm.run("first"):
        assert not ask(sdk, fake_provider, primary, overload(sdk))
    with osm.run("second"):
        assert ask(sdk, fake_provider, fallback)
    assert verdicts(providers)[-1][1] == "primary"


# ---------------------------------------------------------------- inside a sampling callback (mcp 2.x)
def _callback(sdk: str, fp, steps: list[tuple[str, str]]):
    """A host sampling callback making the given (model, scenario) calls in order; it answers with
    the last model that served."""
    import mcp_types as types

    async def callback(ctx, params):
        served = None
        for model, scenario in steps:
            if await anyio.to_thread.run_sync(ask, sdk, fp, model, scenario):
                served = model
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="ok"), model=served, stop_reason="endTurn"
        )

    return callback


@SDKS
@pytest.mark.parametrize(
    ("steps", "failed_over"),
    [
        ("fail-primary,fallback", True),  # the primary is down, the fallback serves
        # a 429 on the primary, retried successfully, then a small routing call on the fallback
        ("429-primary,primary,fallback", False),
        ("429-primary,primary", False),  # a retry that worked
    ],
)
def test_inside_a_sampling_request(providers, telemetry, fake_provider, sdk, steps, failed_over):
    """The request is the key. No policy here, so the request's mode says only whether it failed over."""
    pytest.importorskip("mcp_types", reason="mcp 2.x sessions")
    from conftest import _instrumented
    from drivers import call
    from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor

    primary, fallback, _ = MODELS[sdk]
    plan = {
        "fail-primary": (primary, overload(sdk)),
        "429-primary": (primary, "status=429"),
        "primary": (primary, ""),
        "fallback": (fallback, ""),
    }
    for _ in _instrumented(telemetry, MCPSamplingInstrumentor):
        anyio.run(call, "legacy", _callback(sdk, fake_provider, [plan[s] for s in steps.split(",")]))
    (sampling,) = telemetry.spans(names.SPAN_SAMPLING)
    assert sampling.attributes[names.DEGRADATION_MODE] == ("degraded" if failed_over else "primary")
    assert (sampling.attributes.get(names.DEGRADATION_REASON, ()) == ("failover",)) is failed_over
    assert (verdicts(telemetry)[-1][1:] == ("degraded", ("failover",))) is failed_over
