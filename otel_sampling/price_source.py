"""The default price source: the dated prices bundled with genai-prices (PyPI ``genai-prices``).

Installed by the ``prices`` extra (``pip install 'otel-sampling[prices]'``; genai-prices needs
Python 3.11 or later). Without it, or with ``OTEL_SAMPLING_PRICE_SOURCE=none``, only the policy's
``[prices]`` table prices calls (:mod:`otel_sampling.rules.verdict` decides which price applies).

What a look-up reads, all from genai-prices' own data and matching rules:

* the provider: ``gen_ai.provider.name`` mapped to genai-prices' provider id (``anthropic``,
  ``openai``; ``aws.bedrock`` is ``aws``, ``gcp.vertex_ai`` and ``gcp.gemini`` are ``google``, ``azure.ai.openai`` is
  ``azure``, which falls back to openai's and anthropic's prices as genai-prices says);
* the model: the first of that provider's models whose match rule admits the name (genai-prices
  resolves snapshots itself: ``claude-sonnet-4-5-20250929`` and ``gpt-4o-2024-08-06`` are
  ``claude-sonnet-4-5`` and ``gpt-4o``); a name it does not admit has no price (None);
* the price in force at the call (a dated price from its start date, a time-of-day price), at the
  tier of the call's input tokens (input tokens past a tier's start price every token at that
  tier, as genai-prices computes it);
* USD per million tokens of input (``input_mtok``), output (``output_mtok``), cache reads
  (``cache_read_mtok``) and cache writes (``cache_write_mtok``, the 5-minute write price: usage
  does not say a write's lifetime). A model priced for neither input nor output has no price.

Not read: batch and service-tier prices (genai-prices' price variants; the standard price
applies) and prices genai-prices fetches at run time (``UpdatePrices``): the recorded source,
``genai-prices@<version>``, names the data that priced the call.

Beside the price, the same look-up gives the model's context window (genai-prices'
``context_window``, in tokens, input and output together as the provider documents it; None when
it lists none), which the call's context utilization is measured against.

Cheap per call: what is found for each ``(gen_ai.provider.name, model)`` pair, misses included,
is kept in an LRU of :data:`MAX_CACHED_MODELS` entries (``functools.lru_cache``), one entry per
model holding its price, already converted, and its window: a call reads the LRU, or for a dated
or tiered model asks genai-prices which of its prices is in force and compares its input tokens
with the tier starts. A model name longer than :data:`MAX_MODEL_LENGTH` characters is not looked
up (:data:`UNLISTED`). Never raises: a failure of genai-prices is logged at DEBUG and the call has
no price nor window from it.
"""

from __future__ import annotations

import datetime
import functools
import logging
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from otel_sampling import names
from otel_sampling.policy import Price

if TYPE_CHECKING:
    from genai_prices.types import ModelInfo, ModelPrice

logger = logging.getLogger(__name__)

MAX_CACHED_MODELS: Final = 1024  # (provider, model) look-ups kept, least recently used dropped first
MAX_MODEL_LENGTH: Final = 256  # longer names (real ones are far shorter) are not looked up
_MTOK: Final = 1_000_000

# gen_ai.provider.name (GenAI semconv well-known values) -> genai-prices provider id, where they differ.
_PROVIDER_IDS: Final = {
    "aws.bedrock": "aws",
    "gcp.vertex_ai": "google",
    "gcp.gemini": "google",
    "azure.ai.openai": "azure",
}


class Listing(NamedTuple):
    """What a price source lists for one model, for one call.

    ``price``: USD per million tokens at the call's input size (None: the source has no price for
    it); ``context_window``: the model's context window in tokens, input and output together (None:
    the source does not know it)."""

    price: Price | None
    context_window: int | None


UNLISTED: Final = Listing(None, None)  #: a model the source does not list


class PriceSource(Protocol):
    """A maintained price list: prices a provider's model for one call, and knows its context window."""

    @property
    def name(self) -> str:
        """What the recorded cost names as its source (``otel_sampling.cost.price_source``)."""
        ...

    def look_up(self, provider: str, model: str, input_tokens: int) -> Listing:
        """The :class:`Listing` of ``model`` served by ``provider`` (``gen_ai.provider.name``) for a
        call of ``input_tokens`` input tokens (cache reads and writes included): its price and
        context window in one look-up; :data:`UNLISTED` when the source knows neither."""
        ...


class GenaiPrices:
    """genai-prices' bundled data as a :class:`PriceSource` (see the module docstring).

    Args:
        providers: genai-prices' provider list (``genai_prices.data.providers``).
        version: the installed genai-prices version, named in :attr:`name`.
    """

    def __init__(self, providers: list[Any], version: str) -> None:
        self._providers = providers
        self.name = f"{names.PRICE_SOURCE_GENAI_PRICES}@{version}"  #: read on every priced call
        self._find = functools.lru_cache(maxsize=MAX_CACHED_MODELS)(self._look_up)

    def look_up(self, provider: str, model: str, input_tokens: int) -> Listing:
        if len(model) > MAX_MODEL_LENGTH:
            return UNLISTED
        try:
            found = self._find(provider, model)
            return found.at(input_tokens) if isinstance(found, _Changing) else found
        except Exception:  # genai-prices failing lists nothing; the host's call goes on
            logger.debug("otel-sampling: genai-prices could not look up %r of %r", model, provider, exc_info=True)
            return UNLISTED

    def _look_up(self, provider: str, model: str) -> Listing | _Changing:
        """The model's window with its one price, else with its prices by date and tier;
        :data:`UNLISTED` when genai-prices knows no such provider or model. A model priced for
        neither input nor output has no price."""
        from genai_prices.data_snapshot import find_provider_by_id
        from genai_prices.types import ModelPrice

        found_provider = find_provider_by_id(self._providers, _PROVIDER_IDS.get(provider, provider))
        if found_provider is None:
            return UNLISTED
        info: ModelInfo | None = found_provider.find_model(model, all_providers=self._providers)
        if info is None:
            return UNLISTED
        window = info.context_window
        window = window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None
        if isinstance(info.prices, ModelPrice):
            tiers = _tiers(info.prices)
            if len(tiers) == 1:
                return Listing(tiers[0][1], window)
        return _Changing(info, window)


class _Changing:
    """A model whose price depends on the date (genai-prices' conditional prices) or on the call's
    input tokens (its tiers): genai-prices picks the price in force, converted once per price."""

    __slots__ = ("_info", "_window", "_converted")

    def __init__(self, info: ModelInfo, window: int | None) -> None:
        from genai_prices.types import ModelPrice

        self._info = info
        self._window = window
        listed = [info.prices] if isinstance(info.prices, ModelPrice) else [c.prices for c in info.prices]
        # Keyed by identity: genai-prices hands back the listed price objects; one entry per listed price.
        self._converted = {id(prices): _tiers(prices) for prices in listed}

    def at(self, input_tokens: int) -> Listing:
        prices = self._info.get_prices(datetime.datetime.now(datetime.timezone.utc))
        tiers = self._converted.get(id(prices)) or _tiers(prices)
        for start, price in tiers:
            if input_tokens > start:
                return Listing(price, self._window)
        return Listing(None, self._window)


def _parts(prices: ModelPrice) -> tuple[Any, ...]:
    return (prices.input_mtok, prices.output_mtok, prices.cache_read_mtok, prices.cache_write_mtok)


def _tiers(prices: ModelPrice) -> tuple[tuple[int, Price | None], ...]:
    """``(start, price)`` pairs, highest start first: the price of a call of more than ``start``
    input tokens. The base price has start -1 (every call); a tier's start is genai-prices'."""
    from genai_prices.types import TieredPrices

    starts = sorted({tier.start for part in _parts(prices) if isinstance(part, TieredPrices) for tier in part.tiers})
    return tuple((start, _converted(prices, start + 1)) for start in reversed([-1, *starts]))


def _converted(prices: ModelPrice, input_tokens: int) -> Price | None:
    """The four token prices for a call of ``input_tokens`` input tokens; None when neither input
    nor output has one."""
    from genai_prices.types import calc_unit_price

    def per_mtok(value: Any) -> float | None:
        # genai-prices' own rule picks the tier: the price of one million tokens at this call's input size.
        return None if value is None else float(calc_unit_price(value, _MTOK, input_tokens, _MTOK))

    input_price, output_price, read_price, write_price = (per_mtok(p) for p in _parts(prices))
    if input_price is None and output_price is None:
        return None
    return Price(input_price or 0.0, output_price or 0.0, read_price, write_price)


@functools.cache
def installed() -> GenaiPrices | None:
    """The genai-prices source when genai-prices is importable, else None. Loaded once per process
    (its data takes a few hundred milliseconds to import). genai-prices is installed with the
    package where it installs (Python 3.11 or newer): without it one INFO line says that only the
    policy's ``[prices]`` table prices calls (the traceback at DEBUG)."""
    try:
        from genai_prices import __version__
        from genai_prices.data import providers
    except Exception:  # not installed (ImportError) or broken: no price source, the host goes on
        logger.info(
            "otel-sampling: genai-prices is not available (it needs Python 3.11 or newer); calls are priced only "
            "from the policy's [prices] table, the others carry no cost"
        )
        logger.debug("otel-sampling: genai-prices import failed", exc_info=True)
        return None
    return GenaiPrices(providers, __version__)
