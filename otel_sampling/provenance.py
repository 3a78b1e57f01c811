"""Cache-entry provenance: which configuration produced a cached answer, read back on a hit.

A cache raises its hit rate under degradation, and its entries were produced by whichever
configuration was serving then, so the output becomes a blend of two models with no marker. The
host stores :func:`stamp` beside each entry and passes it to :func:`lookup` when it reads the cache::

    entry = cache.get(key)
    otel_sampling.provenance.lookup(hit=entry is not None, stamp=entry and entry.meta)
    ...
    cache.put(key, answer, meta=otel_sampling.provenance.stamp())

``otel_sampling.cache.lookups`` counts lookups by result, the mode that produced the entry and whether
that configuration matches the one serving now: a ``degraded`` entry served after recovery is a
``mismatch``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace

from otel_sampling import names, state
from otel_sampling.records import run as runs

logger = logging.getLogger(__name__)

FIELDS = ("model", "provider", "region", "mode", "config_id", "created_at")
_COMPARED = ("mode", "model", "provider", "region", "config_id")  # created_at always differs


def stamp(
    *, model: str | None = None, provider: str | None = None, region: str | None = None, config_id: str | None = None
) -> dict[str, str | None]:
    """The provenance of an answer produced now, as a small JSON-safe dict to store with it.

    Keys (all strings, or None when unknown): ``model``, ``provider``, ``region`` (default: the
    last provider call that succeeded in the current run; region from the policy's
    ``[endpoints]``), ``mode`` (``primary`` or ``degraded``, from the current state),
    ``config_id`` (default: a 12-hex-digit digest of the loaded policy, so a policy change is a
    different configuration) and ``created_at`` (ISO 8601, UTC).

    Raises:
        TypeError: an override that is not a string.
    """
    for key, value in (("model", model), ("provider", provider), ("region", region), ("config_id", config_id)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"provenance {key} must be a string, got {type(value).__name__}")
    current = runs.current_run()
    served = current.last_served if current is not None else None
    if served is not None:
        model = model or served[0]
        provider = provider or served[1]
        region = region or served[2]
    return {
        "model": model,
        "provider": provider,
        "region": region,
        "mode": runs.current_mode(),
        "config_id": config_id or _policy_digest(),
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
    }


_current_stamp = stamp  # lookup's argument is named ``stamp``: keep the function reachable inside it


def lookup(hit: bool, stamp: Mapping[str, Any] | None = None) -> str:
    """Record one cache lookup and return its provenance match (``match``, ``mismatch``, ``unstamped``).

    Args:
        hit: whether the cache had an entry.
        stamp: the :func:`stamp` stored with that entry; None, or anything that is not a stamp
            (no valid ``mode``), is ``unstamped``. A miss has no entry, so it is ``unstamped`` too.

    The entry matches when every field known on both sides (mode, model, provider, region,
    config id) equals the current :func:`stamp`. Records ``otel_sampling.cache.lookups`` and, on the
    current span, ``cache.lookup.result``, ``cache.provenance.mode``, ``cache.provenance.match``.

    Raises:
        TypeError: ``hit`` is not a bool.
    """
    if not isinstance(hit, bool):
        raise TypeError(f"hit must be a bool, got {type(hit).__name__}")
    entry_mode = stamp.get("mode") if hit and isinstance(stamp, Mapping) else None
    if entry_mode in names.MODES and isinstance(stamp, Mapping):
        now = _current_stamp()
        differs = any(
            stamp.get(key) is not None and now[key] is not None and stamp.get(key) != now[key] for key in _COMPARED
        )
        match = names.CACHE_MISMATCH if differs else names.CACHE_MATCH
    else:
        entry_mode, match = names.CACHE_UNSTAMPED, names.CACHE_UNSTAMPED
    attributes = {
        names.CACHE_LOOKUP_RESULT: names.CACHE_HIT if hit else names.CACHE_MISS,
        names.CACHE_PROVENANCE_MODE: entry_mode,
        names.CACHE_PROVENANCE_MATCH: match,
    }
    try:
        state.api_instruments().cache_lookups.add(1, attributes)
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attributes(attributes)
    except Exception:
        logger.debug("otel-sampling: could not record a cache lookup", exc_info=True)
    return match


# (policy, its digest): a Policy is frozen, so it is digested once, not on every stamp and cache hit.
_digested: tuple[Any, str] | None = None


def _policy_digest() -> str | None:
    global _digested
    try:
        policy = state.api_instruments().settings.policy
        digested = _digested
        if digested is not None and digested[0] is policy:
            return digested[1]
        content = repr(
            (sorted(policy.servers.items()), sorted(policy.prices.items()), sorted(policy.endpoints.items()))
        )
    except Exception:  # our failure is not the host's: the stamp goes without a config id
        logger.debug("otel-sampling: could not digest the policy", exc_info=True)
        return None
    digest = hashlib.sha256(content.encode()).hexdigest()[:12]
    _digested = (policy, digest)
    return digest
