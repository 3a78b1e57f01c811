"""What a provider call cost (``otel_sampling.rules.cost``): which price applies, and the arithmetic.

Which price: the policy's ``[prices."<model>"]`` entry (docs/configuration.md), else the price
source's (genai-prices by default, docs/telemetry.md "Cost"), else none at all. Expected amounts
are the price's arithmetic (USD per million tokens): uncached input x input price + cache reads x
cache-read price + cache writes x cache-write price + output x output price, with
``input_tokens`` in semantic-convention terms (cache reads and writes included). The source's own
prices: tests/test_price_source.py; the cost of real calls: tests/test_provider_cost.py.
"""

from __future__ import annotations

import pytest

from otel_sampling.policy import Price
from otel_sampling.rules import cost
from otel_sampling.rules.values import Usage

HAIKU = Price(1.0, 5.0, 0.1, 1.25)
#: 525 input tokens of which 400 cache reads and 100 cache writes (25 uncached), 5 output tokens.
CACHED = Usage(input_tokens=525, output_tokens=5, cache_read_input_tokens=400, cache_creation_input_tokens=100)
SOURCE_PRICE = Price(3.0, 15.0, 0.3, 3.75)


class TestPricedModel:
    """``priced_model``: a call is priced at the model that served it, else at the requested one."""

    def test_the_served_model_first(self):
        assert "claude-haiku-5-5-20261001" == cost.priced_model("claude-haiku-5-5-20261001", "claude-sonnet-5-5")

    def test_the_requested_model_when_none_is_reported(self):
        assert "gpt-4o" == cost.priced_model(None, "gpt-4o")
        assert "gpt-4o" == cost.priced_model("", "gpt-4o")

    def test_neither(self):
        """No served model and a request that names a deployment (passed as None): no model to price."""
        assert None is cost.priced_model(None, None)


class TestQuote:
    """``policy_quote`` then ``source_quote``: the policy table's entry, else the price source's price, else none."""

    def test_the_policy_entry_prices_its_snapshots(self):
        assert cost.Quote(HAIKU, "policy") == cost.policy_quote(
            {"claude-haiku-5-5": HAIKU}, "claude-haiku-5-5-20261001"
        )
        assert cost.Quote(HAIKU, "policy") == cost.policy_quote({"claude-haiku-5-5": HAIKU}, "claude-haiku-5-5")

    def test_a_model_the_table_leaves_out_has_no_policy_price(self):
        assert None is cost.policy_quote({"claude-haiku-5-5": HAIKU}, "claude-sonnet-4-5-20250929")
        assert None is cost.policy_quote({}, "claude-haiku-5-5")

    def test_no_model_no_price(self):
        assert None is cost.policy_quote({"claude-haiku-5-5": HAIKU}, None)

    def test_the_source_price_is_named_by_its_source(self):
        assert cost.Quote(SOURCE_PRICE, "genai-prices@9.9.9") == cost.source_quote("genai-prices@9.9.9", SOURCE_PRICE)

    def test_no_source_or_no_price_is_no_quote(self):
        """No price source (genai-prices not installed, or ``OTEL_SAMPLING_PRICE_SOURCE=none``), or
        a model it does not know."""
        assert None is cost.source_quote(None, SOURCE_PRICE)
        assert None is cost.source_quote("genai-prices@9.9.9", None)


class TestCostOf:
    """``cost_of``: the cost of one call's usage at a quoted price, naming the price's source."""

    def test_the_source_is_named_with_the_cost(self):
        usd = (25 * 3.0 + 400 * 0.3 + 100 * 3.75 + 5 * 15.0) / 1e6
        priced = cost.cost_of(cost.Quote(SOURCE_PRICE, "genai-prices@9.9.9"), CACHED)
        assert priced is not None
        assert (pytest.approx(usd), "genai-prices@9.9.9") == priced

    def test_no_usage_no_cost(self):
        """No token counts: no cost (not a cost of 0), whatever the price."""
        assert None is cost.cost_of(cost.Quote(SOURCE_PRICE, "policy"), Usage())


class TestPriceFor:
    """``price_for``: the entry of the served model, else the entry it is a snapshot of."""

    def test_exact_and_snapshot(self):
        """``claude-haiku-5-5`` prices ``claude-haiku-5-5-20261001``; another model has no price."""
        prices = {"claude-haiku-5-5": HAIKU}

        assert HAIKU is cost.price_for(prices, "claude-haiku-5-5")
        assert HAIKU is cost.price_for(prices, "claude-haiku-5-5-20261001")
        assert None is cost.price_for(prices, "claude-haiku-5")
        assert None is cost.price_for(prices, None)

    def test_a_latest_entry_prices_the_snapshots(self):
        """An entry ``claude-haiku-5-5-latest`` prices ``claude-haiku-5-5-20261001``."""
        assert HAIKU is cost.price_for({"claude-haiku-5-5-latest": HAIKU}, "claude-haiku-5-5-20261001")

    def test_an_exact_entry_comes_before_a_snapshot_entry(self):
        """The entry of the same name wins over one the model is a snapshot of."""
        dated = Price(2.0, 10.0)
        prices = {"claude-haiku-5-5": HAIKU, "claude-haiku-5-5-20261001": dated}

        assert dated is cost.price_for(prices, "claude-haiku-5-5-20261001")


class TestCostUsd:
    """``cost_usd``: USD of one call's usage at one price."""

    def test_cache_reads_and_writes_are_priced_apart_from_input(self):
        """25 uncached x 1.0 + 400 reads x 0.1 + 100 writes x 1.25 + 5 output x 5.0, per million."""
        assert pytest.approx((25 * 1.0 + 400 * 0.1 + 100 * 1.25 + 5 * 5.0) / 1e6) == cost.cost_usd(HAIKU, CACHED)

    def test_missing_cache_prices_charge_the_input_price(self):
        """A table without cache prices is read as "no discount": all 525 input tokens at 1.0."""
        assert pytest.approx((525 * 1.0 + 5 * 5.0) / 1e6) == cost.cost_usd(Price(1.0, 5.0), CACHED)

    def test_output_only(self):
        """Usage without input tokens still costs its output."""
        assert pytest.approx(5 * 5.0 / 1e6) == cost.cost_usd(HAIKU, Usage(output_tokens=5))

    def test_no_usage_no_cost(self):
        """No token counts at all: no cost (not a cost of 0)."""
        assert None is cost.cost_usd(HAIKU, Usage())
