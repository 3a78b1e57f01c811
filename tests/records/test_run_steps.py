"""Steps and tokens per run (``otel_sampling.records.run``): ``agent.run.steps`` counts the provider
calls made inside a run, failed ones included, and ``agent.run.tokens`` their input and output
tokens by ``gen_ai.token.type``, one point per run beside ``agent.run.cost.usd``.

Real anthropic SDK calls against the fake provider; the expected token counts are read from the
answers the SDK returned (semantic-convention input tokens: uncached + cache reads + cache writes).
"""

from __future__ import annotations

import datetime

import anthropic
import pytest

import otel_sampling
from otel_sampling import names

RUN = {names.AGENT_RUN_NAME: "triage", names.AGENT_RUN_OUTCOME: "completed", names.DEGRADATION_MODE: "primary"}


def _client(fp) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0)


def _ask(fp, scenario: str = "") -> anthropic.types.Message:
    return _client(fp).messages.create(
        model="claude-sonnet-5-5",
        max_tokens=64,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"x-fake-scenario": scenario},
    )


def _input(message: anthropic.types.Message) -> int:
    u = message.usage
    return u.input_tokens + (u.cache_read_input_tokens or 0) + (u.cache_creation_input_tokens or 0)


def _histogram(telemetry, metric: str) -> dict:
    """``{attributes: (count, sum)}`` of a histogram's points."""
    return {tuple(sorted(p.attributes.items())): (p.count, p.sum) for p in telemetry.points(metric)}


def _key(**extra) -> tuple:
    return tuple(sorted({**RUN, **extra}.items()))


def test_a_runs_steps_and_tokens_are_its_provider_calls(anthropic_instrumented, fake_provider):
    with otel_sampling.run("triage"):
        first = _ask(fake_provider, "cache")
        with pytest.raises(anthropic.OverloadedError):
            _ask(fake_provider, "status=529")  # a failed call is a step, with no tokens
        second = _ask(fake_provider)
    assert _histogram(anthropic_instrumented, names.METRIC_AGENT_RUN_STEPS) == {_key(): (1, 3)}
    assert _histogram(anthropic_instrumented, names.METRIC_AGENT_RUN_TOKENS) == {
        _key(**{names.GEN_AI_TOKEN_TYPE: "input"}): (1, _input(first) + _input(second)),
        _key(**{names.GEN_AI_TOKEN_TYPE: "output"}): (1, first.usage.output_tokens + second.usage.output_tokens),
    }


def test_a_run_without_calls_took_no_steps(anthropic_instrumented):
    with otel_sampling.run("triage"):
        pass
    assert _histogram(anthropic_instrumented, names.METRIC_AGENT_RUN_STEPS) == {_key(): (1, 0)}
    assert {p.sum for p in anthropic_instrumented.points(names.METRIC_AGENT_RUN_TOKENS)} == {0}


def test_a_call_that_served_without_usage_leaves_the_runs_tokens_unknown(anthropic_instrumented, fake_provider):
    with otel_sampling.run("triage"):
        _ask(fake_provider)
        _ask(fake_provider, "no_usage")
    assert _histogram(anthropic_instrumented, names.METRIC_AGENT_RUN_STEPS) == {_key(): (1, 2)}
    assert anthropic_instrumented.points(names.METRIC_AGENT_RUN_TOKENS) == []  # unknown, not a low count


def test_steps_are_recorded_by_the_runs_mode_and_outcome(anthropic_instrumented, fake_provider):
    later = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
    with otel_sampling.degraded("llm", reason="maintenance", owner="oncall", expires_at=later):
        with pytest.raises(RuntimeError), otel_sampling.run("triage"):
            _ask(fake_provider)
            raise RuntimeError("the task failed")
    (point,) = anthropic_instrumented.points(names.METRIC_AGENT_RUN_STEPS)
    assert point.attributes[names.DEGRADATION_MODE] == "degraded"
    assert point.attributes[names.AGENT_RUN_OUTCOME] == "failed"
    assert (point.count, point.sum) == (1, 1)
