"""The provider call record's own stores: the report of models neither the price table nor the
price source knows."""

from __future__ import annotations

import logging

from otel_sampling.price_source import MAX_MODEL_LENGTH
from otel_sampling.records import provider_call


class NamedSource:
    """A price source that knows no model."""

    name = "genai-prices@9.9.9"

    def price(self, provider, model, input_tokens):
        return None


class TestUnpricedModels:
    """``UnpricedModels``: each model without a price is reported once, at DEBUG, a bounded number of them."""

    def test_each_model_is_reported_once(self, caplog):
        """Three calls to an unpriced model: one log record naming it."""
        caplog.set_level(logging.DEBUG, logger="otel_sampling.records.provider_call")
        unpriced = provider_call.UnpricedModels()
        for _ in range(3):
            unpriced.report("claude-unpriced-x", None)
        unpriced.report("claude-unpriced-y", NamedSource())

        messages = [r.getMessage() for r in caplog.records]

        assert sum("claude-unpriced-x" in m for m in messages) == 1
        assert sum("claude-unpriced-y" in m for m in messages) == 1

    def test_a_hostile_provider_cannot_grow_it(self, caplog):
        """After ``MAX_REPORTED_UNPRICED`` distinct models, later ones are not reported."""
        caplog.set_level(logging.DEBUG, logger="otel_sampling.records.provider_call")
        unpriced = provider_call.UnpricedModels()
        for i in range(provider_call.MAX_REPORTED_UNPRICED + 10):
            unpriced.report(f"model-{i}", None)

        assert len(caplog.records) == provider_call.MAX_REPORTED_UNPRICED

    def test_a_huge_name_is_kept_and_logged_cut(self, caplog):
        """A model name of a million characters is remembered and logged by its first
        ``MAX_MODEL_LENGTH`` characters: one entry of bounded size, one short line."""
        caplog.set_level(logging.DEBUG, logger="otel_sampling.records.provider_call")
        unpriced = provider_call.UnpricedModels()
        unpriced.report("m" * 1_000_000, None)
        unpriced.report("m" * 2_000_000, None)  # the same model once cut

        (record,) = caplog.records
        assert "m" * MAX_MODEL_LENGTH in record.getMessage()
        assert len(record.getMessage()) < 2 * MAX_MODEL_LENGTH + 200

    def test_the_message_names_where_prices_were_looked_up(self, caplog):
        """The price source by its name, or how to have one when there is none."""
        caplog.set_level(logging.DEBUG, logger="otel_sampling.records.provider_call")
        unpriced = provider_call.UnpricedModels()
        unpriced.report("claude-unpriced-x", NamedSource())
        unpriced.report("claude-unpriced-y", None)

        with_source, without = (r.getMessage() for r in caplog.records)
        assert "genai-prices@9.9.9" in with_source
        assert "OTEL_SAMPLING_PRICE_SOURCE=none" in without and "'prices' extra" in without
