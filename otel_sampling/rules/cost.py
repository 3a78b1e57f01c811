"""What a provider call cost, from the policy file's price table. Pure functions.

Prices are USD per million tokens (``[prices."<model>"]``, :class:`otel_sampling.policy.Price`).
The price of a served model is the entry of the same name, else an entry it is a snapshot of
(``claude-haiku-5-5`` or ``claude-haiku-5-5-latest`` prices ``claude-haiku-5-5-20261001``,
:func:`otel_sampling.rules.substitution.same_model`).

Cost = uncached input x input price + cache reads x cache-read price + cache writes x cache-write
price + output x output price. Usage is in semantic-convention terms (``input_tokens`` includes
cache reads and writes), so uncached input = input - cache reads - cache writes (never below 0). A
cache price the table leaves out is charged at the input price (the table is then read as "no
discount").

A cost is never negative nor non-finite: a token count that is none (negative, beyond int64, not
an int: :func:`otel_sampling.rules.values.clean_usage`) is left off, as if not reported, and a
total past float range (a price near the float maximum) is no cost (None), so no span, metric,
request or run ever carries one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from otel_sampling.policy import Price
from otel_sampling.rules.substitution import same_model
from otel_sampling.rules.values import clean_usage

if TYPE_CHECKING:
    from otel_sampling.rules.values import Usage


_MTOK = 1_000_000


def price_for(prices: Mapping[str, Price], model: str | None) -> Price | None:
    """The price of ``model``: an exact entry, else the entry it is a dated snapshot of; None if unknown."""
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
    write_price = price.cache_creation_usd_per_mtok
    total = (
        uncached * price.input_usd_per_mtok
        + cache_read * (price.input_usd_per_mtok if read_price is None else read_price)
        + cache_creation * (price.input_usd_per_mtok if write_price is None else write_price)
        + (usage.output_tokens or 0) * price.output_usd_per_mtok
    )
    usd = total / _MTOK
    return usd if math.isfinite(usd) and usd >= 0 else None
