"""The provider call record's own stores: the report of models the price table does not know."""

from __future__ import annotations

import logging

from otel_sampling.records import provider_call


class TestUnpricedModels:
    """``UnpricedModels``: each model without a price is reported once, at DEBUG, a bounded number of them."""

    def test_each_model_is_reported_once(self, caplog):
        """Three calls to an unpriced model: one log record naming it."""
        caplog.set_level(logging.DEBUG, logger="otel_sampling.records.provider_call")
        unpriced = provider_call.UnpricedModels()
        for _ in range(3):
            unpriced.report("claude-unpriced-x")
        unpriced.report("claude-unpriced-y")

        messages = [r.getMessage() for r in caplog.records]

        assert sum("claude-unpriced-x" in m for m in messages) == 1
        assert sum("claude-unpriced-y" in m for m in messages) == 1

    def test_a_hostile_provider_cannot_grow_it(self, caplog):
        """After ``MAX_REPORTED_UNPRICED`` distinct models, later ones are not reported."""
        caplog.set_level(logging.DEBUG, logger="otel_sampling.records.provider_call")
        unpriced = provider_call.UnpricedModels()
        for i in range(provider_call.MAX_REPORTED_UNPRICED + 10):
            unpriced.report(f"model-{i}")

        assert len(caplog.records) == provider_call.MAX_REPORTED_UNPRICED
