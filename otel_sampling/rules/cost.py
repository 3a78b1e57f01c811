"""What a provider call cost: which price applies, and the arithmetic. Pure functions.

Prices are USD per million tokens (:class:`otel_sampling.policy.Price`). A call is priced at the
model that served it (``gen_ai.response.model``), else at the requested model when the request
names a model (not a deployment: Azure OpenAI's request ``model``): :func:`priced_model`.

Which price (:func:`policy_quote`, else :func:`source_quote`): the policy's
``[prices."<model>"]`` entry wins, the entry of the same name, else an entry the model is a
snapshot of (``claude-haiku-5-5`` or
``claude-haiku-5-5-latest`` prices ``claude-haiku-5-5-20261001``,
:func:`otel_sampling.rules.verdict.same_model`); else the price source's price for the
provider and model (:mod:`otel_sampling.price_source`, genai-prices by default, looked up by the
caller and passed in: :func:`policy_quote` first, then :func:`source_quote`); else none: the call
has no cost at all (not a cost of 0). The cost names where its price came from: ``policy``
or the source's name (``genai-prices@0.2.3``).

Cost = uncached input x input price + cache reads x cache-read price + cache writes x cache-write
price + output x output price. Usage is in semantic-convention terms (``input_tokens`` includes
cache reads and writes), so uncached input = input - cache reads - cache writes (never below 0). A
cache price left out (of the table entry or the source's price) is charged at the input price
(read as "no discount", as genai-prices computes it).

A cost is never negative nor non-finite: a token count that is none (negative, beyond int64, not
an int: :func:`otel_sampling.rules.values.clean_usage`) is left off, as if not reported, and a
total past float range (a price near the float maximum) is no cost (None), so no span, metric,
request or run ever carries one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from otel_sampling import names
from otel_sampling.policy import Price
from otel_sampling.rules.values import clean_usage
from otel_sampling.rules.verdict import same_model

if TYPE_CHECKING:
    from otel_sampling.rules.values import Usage


_MTOK = 1_000_000


class Quote(NamedTuple):
    """A price and its source: ``policy`` or the price source's name."""

    price: Price
    source: str


class Cost(NamedTuple):
    """What a call cost: ``usd`` (finite, >= 0) at a price from ``source`` (as in :class:`Quote`)."""

    usd: float
    source: str


def priced_model(response_model: str | None, request_model: str | None) -> str | None:
    """The model a call is priced at: the served model, else ``request_model`` (pass None when the
    request names a deployment, not a model); None when neither is known."""
    return response_model or request_model or None


def policy_quote(prices: Mapping[str, Price], model: str | None) -> Quote | None:
    """The policy table's price of ``model`` (:func:`price_for`), source ``policy``; None when the
    table has none (then the caller asks its price source: :func:`source_quote`)."""
    price = price_for(prices, model)
    return Quote(price, names.PRICE_SOURCE_POLICY) if price is not None else None


def source_quote(source_name: str | None, price: Price | None) -> Quote | None:
    """The price source's price (looked up by the caller for the provider, the model and the call's
    input tokens), named as ``source_name``; None without a source or a price."""
    return Quote(price, source_name) if price is not None and source_name else None


def cost_of(quoted: Quote, usage: Usage) -> Cost | None:
    """The :class:`Cost` of ``usage`` at ``quoted`` (:func:`cost_usd`); None when it has none."""
    usd = cost_usd(quoted.price, usage)
    return Cost(usd, quoted.source) if usd is not None else None


def price_for(prices: Mapping[str, Price], model: str | None) -> Price | None:
    """The table's price of ``model``: an exact entry, else the entry it is a dated snapshot of;
    None if unknown."""
    if not model:
        return None
    price = prices.get(model)
    if price is not None:
        return price
    for entry, candidate in prices.items():
        if same_model(entry, model):
            return candidate
    return None


def cost_usd(price: Price, usage: Usage) -> float | None:
    """USD cost of ``usage`` at ``price``: finite and >= 0; None when the usage has no input or
    output count at all, or the total is past float range."""
    usage = clean_usage(usage)
    if usage.input_tokens is None and usage.output_tokens is None:
        return None
    cache_read = usage.cache_read_input_tokens or 0
    cache_creation = usage.cache_creation_input_tokens or 0
    uncached = max((usage.input_tokens or 0) - cache_read - cache_creation, 0)
    read_price = price.cache_read_usd_per_mtok
    write_price = price.cache_write_usd_per_mtok
    total = (
        uncached * price.input_usd_per_mtok
        + cache_read * (price.input_usd_per_mtok if read_price is None else read_price)
        + cache_creation * (price.input_usd_per_mtok if write_price is None else write_price)
        + (usage.output_tokens or 0) * price.output_usd_per_mtok
    )
    usd = total / _MTOK
    return usd if math.isfinite(usd) and usd >= 0 else None
