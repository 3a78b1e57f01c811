"""What a provider call cost, from the policy file's price table (``otel_sampling.rules.cost``).

Expected amounts are the price table's arithmetic (USD per million tokens, docs/configuration.md
``[prices."<model>"]``): uncached input x input price + cache reads x cache-read price + cache
writes x cache-write price + output x output price, with ``input_tokens`` in semantic-convention
terms (cache reads and writes included). The cost of real calls: tests/test_provider_cost.py.
"""



from __future__ import annotations

import pytest

from otel_sampling.policy import Price
from otel_sampling.rules import cost
from otel_sampling.rules.values import Usage

HAIKU = Price(1.0, 5.0, 0.1, 1.25)
#: 525 input tokens of which 400 cache reads and 100 cache writes (25 uncached), 5 output tokens.
CACHED = Usage(input_tokens=525, output_tokens=5, cache_read_input_tokens=400, cache_creation_input_tokens=100)


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
