"""The default price source, genai-prices' bundled data (``otel_sampling.price_source``).

Expected prices are genai-prices' own: the per-million prices its data file publishes
(``genai_prices/data.py`` of 0.2.3, quoted where a test names them) and the totals its own
``calc_price`` computes from that data, never our conversion of it.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest
import tomllib

from otel_sampling import price_source
from otel_sampling.rules import verdict
from otel_sampling.rules.values import Usage

genai_prices = pytest.importorskip("genai_prices", reason="the prices extra")

SOURCE = price_source.installed()
#: The fake provider's "cache" answer (anthropic): 525 input of which 400 cache reads and 100 cache writes, 5 output.
CACHED = Usage(input_tokens=525, output_tokens=5, cache_read_input_tokens=400, cache_creation_input_tokens=100)


def genai_prices_total(provider_id: str, model: str, usage: Usage) -> float:
    """genai-prices' own total for ``usage`` (its ``calc_price``, at the current time)."""
    calculation = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
        ),
        model,
        provider_id=provider_id,
    )
    return float(calculation.total_price)


def our_cost(provider: str, model: str, usage: Usage) -> verdict.Cost | None:
    assert SOURCE is not None
    quoted = verdict.source_quote(SOURCE.name, SOURCE.look_up(provider, model, usage.input_tokens or 0).price)
    return verdict.cost_of(quoted, usage) if quoted is not None else None


def test_the_source_names_the_installed_version():
    assert SOURCE is not None
    assert f"genai-prices@{genai_prices.__version__}" == SOURCE.name


class TestKnownModels:
    """A few models genai-prices prices, with and without cache tokens."""

    def test_claude_sonnet_4_5_with_cache_reads_and_writes(self):
        """Its data: input $3, output $15, cache read $0.30, cache write $3.75 per million (below
        the 200k tier). 25 uncached x 3 + 400 reads x 0.3 + 100 writes x 3.75 + 5 out x 15."""
        priced = our_cost("anthropic", "claude-sonnet-4-5-20250929", CACHED)

        assert priced is not None
        assert pytest.approx((25 * 3 + 400 * 0.3 + 100 * 3.75 + 5 * 15) / 1e6) == priced.usd
        assert pytest.approx(genai_prices_total("anthropic", "claude-sonnet-4-5-20250929", CACHED)) == priced.usd
        assert SOURCE.name == priced.source

    def test_gpt_4o_with_cache_reads(self):
        """Its data: input $2.50, output $10, cached input $1.25 per million. The fake provider's
        "cache" answer (openai): 425 prompt tokens of which 400 cached, 5 output."""
        usage = Usage(input_tokens=425, output_tokens=5, cache_read_input_tokens=400)

        priced = our_cost("openai", "gpt-4o-2024-08-06", usage)

        assert priced is not None
        assert pytest.approx((25 * 2.5 + 400 * 1.25 + 5 * 10) / 1e6) == priced.usd
        assert pytest.approx(genai_prices_total("openai", "gpt-4o-2024-08-06", usage)) == priced.usd

    @pytest.mark.parametrize(
        ("provider", "model"),
        [
            ("anthropic", "claude-haiku-5-5-20261001"),
            ("anthropic", "claude-opus-4-1"),
            ("openai", "gpt-4o-mini-2024-07-18"),
            ("openai", "gpt-5-mini"),
            ("openai", "gpt-4.1"),
        ],
    )
    def test_equals_genai_prices_total(self, provider, model):
        usage = Usage(input_tokens=1200, output_tokens=300, cache_read_input_tokens=800)
        priced = our_cost(provider, model, usage)
        assert priced is not None
        assert pytest.approx(genai_prices_total(provider, model, usage)) == priced.usd


class TestPricesInForce:
    """The price in force at the call: genai-prices' dated prices and tiers."""

    def test_a_dated_price_applies_from_its_start_date(self):
        """o3: $10 / $40 per million until 2025-06-10, $2 / $8 from then on (its data)."""
        usage = Usage(input_tokens=1000, output_tokens=1000)

        priced = our_cost("openai", "o3", usage)

        assert priced is not None
        assert pytest.approx((1000 * 2 + 1000 * 8) / 1e6) == priced.usd
        assert pytest.approx(genai_prices_total("openai", "o3", usage)) == priced.usd

    def test_a_tier_prices_every_token_of_a_long_prompt(self):
        """claude-haiku-5-5: input $0.10 / output $0.50 per million up to 100,000 input tokens,
        $0.50 / $2.50 for every token of a longer prompt (its data)."""
        short, long = Usage(input_tokens=100_000, output_tokens=10), Usage(input_tokens=150_000, output_tokens=10)

        short_cost, long_cost = (our_cost("anthropic", "claude-haiku-5-5", u) for u in (short, long))

        assert short_cost is not None and long_cost is not None
        assert pytest.approx((100_000 * 0.1 + 10 * 0.5) / 1e6) == short_cost.usd
        assert pytest.approx((150_000 * 0.5 + 10 * 2.5) / 1e6) == long_cost.usd
        assert pytest.approx(genai_prices_total("anthropic", "claude-haiku-5-5", long)) == long_cost.usd


class TestProviders:
    """``gen_ai.provider.name`` picks genai-prices' provider."""

    def test_azure_openai_falls_back_to_openai_prices(self):
        """genai-prices' azure provider lists no gpt-4o of its own and falls back to openai's."""
        azure, openai = SOURCE.look_up("azure.ai.openai", "gpt-4o-2024-08-06", 0), SOURCE.look_up("openai", "gpt-4o", 0)
        assert azure.price == openai.price

    @pytest.mark.parametrize(
        ("provider", "provider_id", "model"),
        [
            ("aws.bedrock", "aws", "claude-sonnet-4-5-20250929"),
            ("gcp.vertex_ai", "google", "claude-sonnet-4-5@20250929"),
            ("gcp.vertex_ai", "google", "gemini-2.5-flash"),
            ("gcp.gemini", "google", "gemini-2.5-flash"),
        ],
    )
    def test_bedrock_and_vertex_models(self, provider, provider_id, model):
        """``aws.bedrock`` is genai-prices' ``aws``, ``gcp.vertex_ai`` and ``gcp.gemini`` its ``google``:
        their prices."""
        priced = our_cost(provider, model, CACHED)
        assert priced is not None
        assert pytest.approx(genai_prices_total(provider_id, model, CACHED)) == priced.usd

    def test_another_providers_model_is_not_priced(self):
        """openai's model names are not anthropic's: no price, not a guess from another provider."""
        assert None is SOURCE.look_up("anthropic", "gpt-4o", 0).price
        assert None is SOURCE.look_up("no-such-provider", "gpt-4o", 0).price


class TestContextWindows:
    """The same look-up lists the model's context window (genai-prices' ``context_window``), whatever
    its price depends on."""

    def test_a_snapshot_lists_its_models_window_beside_its_price(self):
        """claude-sonnet-4-5: ``context_window=200000`` (its data); the snapshot resolves to it."""
        listed = SOURCE.look_up("anthropic", "claude-sonnet-4-5-20250929", 25)
        assert 200_000 == listed.context_window
        assert listed.price is not None and pytest.approx(3.0) == listed.price.input_usd_per_mtok

    @pytest.mark.parametrize(
        ("provider", "model", "window", "input_tokens"),
        [
            ("openai", "o3", 200_000, 1000),  # dated prices: ``context_window=200000``
            ("anthropic", "claude-haiku-5-5", 1_000_000, 100_000),  # tiers: ``context_window=1000000``
            ("anthropic", "claude-haiku-5-5", 1_000_000, 150_000),
        ],
    )
    def test_a_dated_or_tiered_model_lists_its_window_at_every_price(self, provider, model, window, input_tokens):
        listed = SOURCE.look_up(provider, model, input_tokens)
        assert window == listed.context_window
        assert listed.price is not None

    def test_a_model_without_a_window_lists_its_price_only(self):
        """claude-v1: ``input_mtok=8, output_mtok=24``, no ``context_window`` (its data)."""
        listed = SOURCE.look_up("anthropic", "claude-v1", 10)
        assert None is listed.context_window
        assert listed.price is not None
        assert (8.0, 24.0) == (listed.price.input_usd_per_mtok, listed.price.output_usd_per_mtok)

    def test_a_model_without_a_price_still_lists_its_window(self):
        """github-copilot's gpt-4o: no token price, ``context_window=128000`` (its data)."""
        assert price_source.Listing(None, 128_000) == SOURCE.look_up("github-copilot", "gpt-4o", 0)

    def test_an_unknown_or_huge_name_lists_nothing(self):
        assert price_source.UNLISTED == SOURCE.look_up("anthropic", "claude-unpriced-x", 10)
        assert price_source.UNLISTED == SOURCE.look_up("anthropic", "claude-sonnet-4-5" + "x" * 300, 10)


class TestUnknownAndHostile:
    def test_an_unknown_model_has_no_price(self):
        assert None is SOURCE.look_up("anthropic", "claude-unpriced-x", 0).price
        assert None is our_cost("anthropic", "claude-unpriced-x", CACHED)

    def test_a_huge_name_is_not_looked_up(self):
        """A name past ``MAX_MODEL_LENGTH`` (a prefix of it a known model) has no price."""
        assert None is SOURCE.look_up("anthropic", "claude-sonnet-4-5" + "x" * price_source.MAX_MODEL_LENGTH, 0).price

    def test_thousands_of_names_keep_the_cache_bounded(self):
        source = price_source.GenaiPrices(genai_prices.data.providers, "test")
        for i in range(price_source.MAX_CACHED_MODELS + 200):
            source.look_up("anthropic", f"claude-sonnet-4-5-{i}", 0)  # each admitted by genai-prices' prefix rule
        assert source._find.cache_info().currsize == price_source.MAX_CACHED_MODELS

    def test_a_failing_genai_prices_prices_nothing(self, monkeypatch):
        """An exception inside genai-prices is ours to swallow: no price, nothing raised."""
        from genai_prices.types import Provider

        def broken(*args, **kwargs):
            raise RuntimeError("broken data")

        monkeypatch.setattr(Provider, "find_model", broken)
        source = price_source.GenaiPrices(genai_prices.data.providers, "test")
        assert price_source.UNLISTED == source.look_up("anthropic", "claude-sonnet-4-5", 0)


def test_without_genai_prices_there_is_no_source(monkeypatch, caplog):
    """Python 3.10 (genai-prices does not install there): no price source, nothing raised, and one
    INFO line that says so."""
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # import genai_prices raises ImportError
    with caplog.at_level(logging.INFO, logger="otel_sampling.price_source"):
        assert None is price_source.installed.__wrapped__()
    (record,) = [r for r in caplog.records if r.levelno == logging.INFO]
    assert "genai-prices is not available" in record.getMessage()
    assert "[prices] table" in record.getMessage()


def test_genai_prices_comes_with_the_package_where_it_installs():
    """pyproject: a core dependency on Python 3.11 or newer, not only the ``prices`` extra."""
    project = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    (requirement,) = [r for r in project["dependencies"] if r.startswith("genai-prices")]
    assert requirement.endswith("; python_version >= '3.11'")


def test_a_model_with_neither_input_nor_output_price_has_no_price():
    """genai-prices lists github-copilot's gpt-4o with no token price ("included in the
    subscription", its data): no price, so no cost, rather than a cost of 0."""
    assert None is SOURCE.look_up("github-copilot", "gpt-4o", 0).price
