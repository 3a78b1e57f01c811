"""A TTL + LRU map that tells its owner what it dropped, for state that must stay bounded.

Built on ``cachetools.TTLCache`` (a well-kept LRU with per-entry expiry). cachetools drops
entries silently; the stores here need to act on what is dropped (end a request as
``unanswered``), so every eviction, by age or by size, is handed to ``on_evict``. Not
thread-safe on its own: the owner holds a lock around every call, because the shared watchdog
thread sweeps expired entries while the event loop adds new ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cachetools import TTLCache


class EvictingTTLCache(TTLCache[Any, Any]):
    """``TTLCache(maxsize, ttl, timer)`` that calls ``on_evict(key, value)`` for every entry it
    drops because it expired or because the cache was full (never for ``pop`` / ``del``).

    Args:
        maxsize: most entries kept (>= 1).
        ttl: seconds an entry lives after it was last set.
        on_evict: called with each dropped ``(key, value)``; its exceptions propagate to the caller.
        timer: the clock, seconds (default ``time.monotonic``).
    """

    def __init__(
        self,
        maxsize: int,
        ttl: float,
        on_evict: Callable[[Any, Any], None],
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(maxsize, ttl, timer)
        self._on_evict = on_evict

    def expire(self, time: float | None = None) -> list[tuple[Any, Any]]:
        expired = list(super().expire(time))
        for key, value in expired:
            self._on_evict(key, value)
        return expired

    def popitem(self) -> tuple[Any, Any]:
        key, value = super().popitem()
        self._on_evict(key, value)
        return key, value
