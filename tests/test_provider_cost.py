"""Cost of real provider calls from the policy's price table: failover outside and inside a
sampling request, cost attributed to the model that served, unpriced models.

Expected amounts are the price table's arithmetic (USD per million tokens, docs/configuration.md);
the rule itself: tests/rules/test_cost.py.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

pytest.importorskip("mcp_types", reason="mcp 2.x sessions")

import anthropic
import anyio
from opentelemetry import trace

from conftest import call_sample_tool, provider_host_callback, with_policy
from otel_sampling import names
from otel_sampling.instrumentation.anthropic import AnthropicInstrumentor
from otel_sampling.instrumentation.mcp import MCPSamplingInstrumentor

PRICES = """
[prices."claude-sonnet-5-5"]
input_usd_per_mtok = 3.0
output_usd_per_mtok = 15.0

[prices."claude-haiku-5-5"]
input_usd_per_mtok = 1.0
output_usd_per_mtok = 5.0
cache_read_usd_per_mtok = 0.1
cache_creation_usd_per_mtok = 1.25
as_of = 2026-11-01
"""
HAIKU_PLAIN_USD = (25 * 1.0 + 5 * 5.0) / 1e6  # the fake provider's 25 input and 5 output tokens


@pytest.fixture
def priced(telemetry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    yield from with_policy(telemetry, tmp_path, monkeypatch, PRICES, MCPSamplingInstrumentor, AnthropicInstrumentor)


def client(fp) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=fp.url, api_key="sk-fake", max_retries=0, open_telemetry=False)


def _overloaded_then_fallback(fp) -> anthropic.types.Message:
    c = client(fp)
    with pytest.raises(anthropic.OverloadedError):
        c.messages.create(model="claude-sonnet-5-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}],
                          extra_headers={"x-fake-scenario": "status=529"})
    return c.messages.create(model="claude-haiku-5-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}])


def costs(telemetry) -> dict:
    return telemetry.counts(names.METRIC_GEN_AI_COST, names.GEN_AI_PROVIDER_NAME, names.GEN_AI_RESPONSE_MODEL,
                            names.DEGRADATION_MODE)


def test_failover_under_one_parent_is_degraded_and_costed_to_the_fallback(priced, fake_provider):
    with trace.get_tracer("host").start_as_current_span("host step"):
        message = _overloaded_then_fallback(fake_provider)
    assert message.model == "claude-haiku-5-5"
    # (the host step is no run: an INTERNAL span of the host, not an agent span)
    primary, fallback = [s for s in priced.spans() if s.name.startswith("chat ")]
    assert primary.attributes[names.ENDING] == "model.unavailable"
    assert names.COST_USD not in primary.attributes  # no usage, no cost
    a = fallback.attributes
    assert (a[names.GEN_AI_RESPONSE_MODEL], a[names.DEGRADATION_MODE], a[names.DEGRADATION_REASON]) == (
        "claude-haiku-5-5", "degraded", ("failover",))
    assert a[names.COST_USD] == pytest.approx(HAIKU_PLAIN_USD)
    assert costs(priced) == {("anthropic", "claude-haiku-5-5", "degraded"): pytest.approx(HAIKU_PLAIN_USD)}


def test_calls_under_different_parents_are_no_failover(priced, fake_provider):
    _overloaded_then_fallback(fake_provider)  # no common parent span: two unrelated calls
    assert priced.spans()[1].attributes[names.DEGRADATION_MODE] == "primary"
    assert costs(priced) == {("anthropic", "claude-haiku-5-5", "primary"): pytest.approx(HAIKU_PLAIN_USD)}


def test_cache_tokens_are_priced(priced, fake_provider):
    client(fake_provider).messages.create(model="claude-haiku-5-5", max_tokens=64,
                                          messages=[{"role": "user", "content": "hi"}],
                                          extra_headers={"x-fake-scenario": "cache"})
    expected = (25 * 1.0 + 400 * 0.1 + 100 * 1.25 + 5 * 5.0) / 1e6
    assert priced.spans()[0].attributes[names.COST_USD] == pytest.approx(expected)


def test_sampling_request_sums_the_cost_of_its_calls(priced, fake_provider):
    anyio.run(call_sample_tool, "legacy", provider_host_callback(fake_provider, "status=529",
                                                                  fallback="claude-haiku-5-5"))
    (sampling,) = priced.spans(names.SPAN_SAMPLING)
    assert sampling.attributes[names.COST_USD] == pytest.approx(HAIKU_PLAIN_USD)
    fallback = priced.spans("chat claude-haiku-5-5")[0]
    assert fallback.attributes[names.DEGRADATION_REASON] == ("failover",)


def test_unknown_model_records_no_cost_and_logs_once(priced, fake_provider, caplog):
    caplog.set_level(logging.DEBUG, logger="otel_sampling.records.provider_call")
    for _ in range(3):
        client(fake_provider).messages.create(model="claude-unpriced-x", max_tokens=64,
                                              messages=[{"role": "user", "content": "hi"}])
    assert costs(priced) == {}
    assert all(names.COST_USD not in s.attributes for s in priced.spans())
    assert sum("claude-unpriced-x" in r.getMessage() for r in caplog.records) == 1
