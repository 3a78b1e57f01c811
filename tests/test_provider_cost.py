"""Cost of real provider calls: from the policy's price table (failover outside and inside a
sampling request, cost attributed to the model that served, unpriced models) and from the default
price source, genai-prices, through the real SDKs against the fake provider.

Expected amounts are the price table's arithmetic (USD per million tokens, docs/configuration.md)
or the per-million prices genai-prices' data file publishes (quoted in each test); the rule
itself: tests/rules/test_cost.py, the source: tests/test_price_source.py.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import pytest

pytest.importorskip("mcp_types", reason="mcp 2.x sessions")

import anthropic
import anyio
import openai
from opentelemetry import trace

import otel_sampling
from conftest import call_sample_tool, provider_host_callback, with_policy
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor
from otel_sampling.instrumentation.openai import OpenAIInstrumentor

PRICES = """
[prices."claude-sonnet-5-5"]
input_usd_per_mtok = 3.0
output_usd_per_mtok = 15.0

[prices."claude-haiku-5-5"]
input_usd_per_mtok = 1.0
output_usd_per_mtok = 5.0
cache_read_usd_per_mtok = 0.1
cache_write_usd_per_mtok = 1.25
as_of = 2026-11-01
"""
COST_ATTRIBUTES = (
    names.GEN_AI_USAGE_COST_AMOUNT,
    names.GEN_AI_USAGE_COST_CURRENCY,
    names.GEN_AI_USAGE_COST_SOURCE,
    names.COST_PRICE_SOURCE,
    names.COST_USD,
)
HAIKU_PLAIN_USD = (25 * 1.0 + 5 * 5.0) / 1e6  # the fake provider's 25 input and 5 output tokens


@pytest.fixture
def priced(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    yield from with_policy(telemetry, tmp_path, monkeypatch, PRICES, MCPSamplingInstrumentor, AnthropicInstrumentor)


def client(fp) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0, open_telemetry=False)


def _overloaded_then_fallback(fp) -> anthropic.types.Message:
    c = client(fp)
    with pytest.raises(anthropic.OverloadedError):
        c.messages.create(
            model="claude-sonnet-5-5",
            max_tokens=64,
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-fake-scenario": "status=529"},
        )
    return c.messages.create(model="claude-haiku-5-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}])


def costs(telemetry) -> dict:
    return telemetry.counts(
        names.METRIC_CLIENT_COST, names.GEN_AI_PROVIDER_NAME, names.GEN_AI_RESPONSE_MODEL, names.DEGRADATION_MODE
    )


def test_failover_under_one_parent_is_degraded_and_costed_to_the_fallback(priced, fake_provider):
    with trace.get_tracer("host").start_as_current_span("host step"):
        message = _overloaded_then_fallback(fake_provider)
    assert message.model == "claude-haiku-5-5"
    # (the host step is no run: an INTERNAL span of the host, not an agent span)
    primary, fallback = [s for s in priced.spans() if s.name.startswith("chat ")]
    assert primary.attributes[names.ENDING] == "model.unavailable"
    assert names.GEN_AI_USAGE_COST_AMOUNT not in primary.attributes  # no usage, no cost
    a = fallback.attributes
    assert (a[names.GEN_AI_RESPONSE_MODEL], a[names.DEGRADATION_MODE], a[names.DEGRADATION_REASON]) == (
        "claude-haiku-5-5",
        "degraded",
        ("failover",),
    )
    assert a[names.GEN_AI_USAGE_COST_AMOUNT] == pytest.approx(HAIKU_PLAIN_USD)
    assert costs(priced) == {("anthropic", "claude-haiku-5-5", "degraded"): pytest.approx(HAIKU_PLAIN_USD)}


def test_calls_under_different_parents_are_no_failover(priced, fake_provider):
    _overloaded_then_fallback(fake_provider)  # no common parent span: two unrelated calls
    assert priced.spans()[1].attributes[names.DEGRADATION_MODE] == "primary"
    assert costs(priced) == {("anthropic", "claude-haiku-5-5", "primary"): pytest.approx(HAIKU_PLAIN_USD)}


def test_cache_tokens_are_priced(priced, fake_provider):
    client(fake_provider).messages.create(
        model="claude-haiku-5-5",
        max_tokens=64,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"x-fake-scenario": "cache"},
    )
    expected = (25 * 1.0 + 400 * 0.1 + 100 * 1.25 + 5 * 5.0) / 1e6
    assert priced.spans()[0].attributes[names.GEN_AI_USAGE_COST_AMOUNT] == pytest.approx(expected)


def test_sampling_request_sums_the_cost_of_its_calls(priced, fake_provider):
    anyio.run(
        call_sample_tool, "legacy", provider_host_callback(fake_provider, "status=529", fallback="claude-haiku-5-5")
    )
    (sampling,) = priced.spans(names.SPAN_SAMPLING)
    assert sampling.attributes[names.COST_USD] == pytest.approx(HAIKU_PLAIN_USD)
    fallback = priced.spans("chat claude-haiku-5-5")[0]
    assert fallback.attributes[names.DEGRADATION_REASON] == ("failover",)


def test_unknown_model_records_no_cost_and_logs_once(priced, fake_provider, caplog):
    caplog.set_level(logging.DEBUG, logger="otel_sampling.records.provider_call")
    for _ in range(3):
        client(fake_provider).messages.create(
            model="claude-unpriced-x", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )
    assert costs(priced) == {}
    assert all(key not in s.attributes for s in priced.spans() for key in COST_ATTRIBUTES)
    assert sum("claude-unpriced-x" in r.getMessage() for r in caplog.records) == 1
    # counted by model, so the operator sees what to price
    counted = priced.counts(names.METRIC_CLIENT_UNPRICED, names.GEN_AI_RESPONSE_MODEL, names.GEN_AI_PROVIDER_NAME)
    assert counted == {("claude-unpriced-x", "anthropic"): 3}


def test_a_priced_call_and_a_call_without_usage_are_not_unpriced(priced, fake_provider):
    c = client(fake_provider)
    c.messages.create(model="claude-haiku-5-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}])
    c.messages.create(
        model="claude-unpriced-x",
        max_tokens=64,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"x-fake-scenario": "no_usage"},  # nothing to price
    )
    assert priced.points(names.METRIC_CLIENT_UNPRICED) == []


# ---------------------------------------------------------------- the default price source: genai-prices

needs_genai_prices = pytest.mark.skipif(
    importlib.util.find_spec("genai_prices") is None, reason="the prices extra (genai-prices) is not installed"
)
#: genai-prices' data: claude-sonnet-4-5 input $3, output $15, cache read $0.30, cache write $3.75 per
#: million; the fake's anthropic "cache" answer: 25 uncached, 400 cache reads, 100 cache writes, 5 output.
SONNET_4_5_CACHED_USD = (25 * 3 + 400 * 0.3 + 100 * 3.75 + 5 * 15) / 1e6
#: genai-prices' data: gpt-4o input $2.50, output $10, cached input $1.25 per million; the fake's
#: openai "cache" answer: 425 prompt tokens of which 400 cached, 5 output.
GPT_4O_CACHED_USD = (25 * 2.5 + 400 * 1.25 + 5 * 10) / 1e6
GPT_4O_PLAIN_USD = (25 * 2.5 + 5 * 10) / 1e6


@pytest.fixture
def unpriced(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A policy without a price table: every cost comes from the price source."""
    monkeypatch.delenv("OTEL_SAMPLING_PRICE_SOURCE", raising=False)
    yield from with_policy(telemetry, tmp_path, monkeypatch, "", AnthropicInstrumentor, OpenAIInstrumentor)


def genai_prices_source() -> str:
    import genai_prices

    return f"genai-prices@{genai_prices.__version__}"


def openai_client(fp) -> openai.OpenAI:
    return openai.OpenAI(base_url=fp.url + "/v1", api_key="sk-fake", max_retries=0)


@needs_genai_prices
def test_an_anthropic_call_is_priced_by_genai_prices(unpriced, fake_provider):
    """A dated snapshot name, cache reads and writes: genai-prices' claude-sonnet-4-5 prices,
    on the span (semconv proposal attributes and the price's source) and the cost metric."""
    client(fake_provider).messages.create(
        model="claude-sonnet-4-5-20250929",
        max_tokens=64,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"x-fake-scenario": "cache"},
    )
    (span,) = unpriced.spans()
    a = span.attributes
    assert a[names.GEN_AI_USAGE_COST_AMOUNT] == pytest.approx(SONNET_4_5_CACHED_USD)
    assert (a[names.GEN_AI_USAGE_COST_CURRENCY], a[names.GEN_AI_USAGE_COST_SOURCE], a[names.COST_PRICE_SOURCE]) == (
        "USD",
        "local",
        genai_prices_source(),
    )
    assert names.COST_USD not in a  # the request's sum, on the sampling span only
    assert costs(unpriced) == {
        ("anthropic", "claude-sonnet-4-5-20250929", "primary"): pytest.approx(SONNET_4_5_CACHED_USD)
    }


@needs_genai_prices
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_an_openai_call_with_cache_reads_is_priced_by_genai_prices(unpriced, fake_provider, api):
    c = openai_client(fake_provider)
    if api == "chat":
        c.chat.completions.create(
            model="gpt-4o-2024-08-06",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"x-fake-scenario": "cache"},
        )
    else:
        c.responses.create(model="gpt-4o-2024-08-06", input="hi", extra_headers={"x-fake-scenario": "cache"})
    (span,) = unpriced.spans()
    assert span.attributes[names.GEN_AI_USAGE_COST_AMOUNT] == pytest.approx(GPT_4O_CACHED_USD)
    assert span.attributes[names.COST_PRICE_SOURCE] == genai_prices_source()


@needs_genai_prices
def test_a_response_without_a_model_is_priced_at_the_requested_model(unpriced, fake_provider):
    openai_client(fake_provider).chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}], extra_headers={"x-fake-scenario": "no_model"}
    )
    (span,) = unpriced.spans()
    assert names.GEN_AI_RESPONSE_MODEL not in span.attributes
    assert span.attributes[names.GEN_AI_USAGE_COST_AMOUNT] == pytest.approx(GPT_4O_PLAIN_USD)


@pytest.fixture
def sonnet_4_5_in_the_table(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    policy = """
[prices."claude-sonnet-4-5"]
input_usd_per_mtok = 1.0
output_usd_per_mtok = 5.0
"""
    yield from with_policy(telemetry, tmp_path, monkeypatch, policy, AnthropicInstrumentor)


@needs_genai_prices
def test_the_policy_price_overrides_genai_prices(sonnet_4_5_in_the_table, fake_provider):
    """The table's claude-sonnet-4-5 entry prices its snapshot, not genai-prices' price."""
    client(fake_provider).messages.create(
        model="claude-sonnet-4-5-20250929", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )
    (span,) = sonnet_4_5_in_the_table.spans()
    assert span.attributes[names.GEN_AI_USAGE_COST_AMOUNT] == pytest.approx(HAIKU_PLAIN_USD)  # 25 x 1 + 5 x 5
    assert span.attributes[names.COST_PRICE_SOURCE] == "policy"
    assert costs(sonnet_4_5_in_the_table) == {
        ("anthropic", "claude-sonnet-4-5-20250929", "primary"): pytest.approx(HAIKU_PLAIN_USD)
    }


@needs_genai_prices
def test_a_model_genai_prices_does_not_know_records_no_cost(unpriced, fake_provider, caplog):
    """No cost attribute and no cost metric point (not a cost of 0); logged once at DEBUG, naming the source."""
    caplog.set_level(logging.DEBUG, logger="otel_sampling.records.provider_call")
    for _ in range(2):
        client(fake_provider).messages.create(
            model="claude-unpriced-y", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )
    assert costs(unpriced) == {}
    assert all(key not in s.attributes for s in unpriced.spans() for key in COST_ATTRIBUTES)
    (logged,) = [r.getMessage() for r in caplog.records if "claude-unpriced-y" in r.getMessage()]
    assert genai_prices_source() in logged


@needs_genai_prices
def test_a_hostile_model_name_records_no_cost(unpriced, fake_provider):
    """A served model name of 100,000 characters: not looked up, no cost, the call recorded."""
    client(fake_provider).messages.create(
        model="claude-sonnet-4-5",
        max_tokens=64,
        messages=[{"role": "user", "content": "hi"}],
        extra_headers={"x-fake-scenario": "long_model=100000"},
    )
    (span,) = unpriced.spans()
    assert names.GEN_AI_USAGE_COST_AMOUNT not in span.attributes
    assert span.attributes[names.ENDING] == "completed"
    assert costs(unpriced) == {}


@pytest.fixture
def table_only(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OTEL_SAMPLING_PRICE_SOURCE", "none")
    yield from with_policy(telemetry, tmp_path, monkeypatch, PRICES, AnthropicInstrumentor)


def test_price_source_none_leaves_only_the_table(table_only, fake_provider):
    """``OTEL_SAMPLING_PRICE_SOURCE=none``: a model the table leaves out has no cost, even one
    genai-prices knows."""
    for model in ("claude-sonnet-4-5-20250929", "claude-haiku-5-5"):
        client(fake_provider).messages.create(model=model, max_tokens=64, messages=[{"role": "user", "content": "hi"}])
    assert costs(table_only) == {("anthropic", "claude-haiku-5-5", "primary"): pytest.approx(HAIKU_PLAIN_USD)}


def test_a_run_with_an_unpriced_call_records_no_run_cost(priced, fake_provider):
    """A run's cost is unknown when a call inside it had tokens and no price: no point, not $0."""
    with otel_sampling.run("unpriced-task"):
        client(fake_provider).messages.create(
            model="claude-unpriced-x", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )
    with otel_sampling.run("priced-task"):
        client(fake_provider).messages.create(
            model="claude-haiku-5-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        )
    with otel_sampling.run("no-calls"):
        pass
    run_costs = priced.counts(names.METRIC_AGENT_RUN_COST, names.AGENT_RUN_NAME)
    assert run_costs == {("priced-task",): pytest.approx(HAIKU_PLAIN_USD), ("no-calls",): 0.0}
    assert priced.counts(names.METRIC_AGENT_RUNS, names.AGENT_RUN_NAME) == {
        ("unpriced-task",): 1,
        ("priced-task",): 1,
        ("no-calls",): 1,
    }
