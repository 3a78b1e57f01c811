"""Stall detection: a bounded watch list of pending requests, swept by the shared watchdog thread.

No task or thread per request: every instrumentor registers one sweep function with the
process-wide watchdog (:data:`otel_sampling.state.watchdog`), whose single daemon thread calls each
sweep every ``state.SWEEP_INTERVAL_SECONDS``. A :class:`PendingWatch` keeps pending requests in arrival order, so a
sweep walks only the requests that have passed the threshold (each is reported once and leaves
the watch) and stops at the first one that has not. A forked child forgets the parent's pending
requests (:func:`otel_sampling.state.forget_after_fork`): they are the parent's to report.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from otel_sampling import locks, state

logger = logging.getLogger(__name__)


class PendingWatch:
    """Pending requests, oldest first, each reported once when pending longer than a threshold.

    Args:
        max_entries: most requests watched (``OTEL_SAMPLING_MAX_PENDING``); past it the oldest
            leaves the watch unreported (it still ends, and counts in ``otel_sampling.sampling.in_flight``).
        threshold_seconds: the stall threshold (policy ``stall_threshold_seconds``, default 30).
        on_stall: ``on_stall(item, pending_seconds)``, called from :meth:`sweep` under the watch's
            lock, so an item being removed waits until its report is done.
        timer: the clock, seconds (default ``time.monotonic``).
    """

    def __init__(
        self,
        max_entries: int,
        threshold_seconds: float,
        on_stall: Callable[[Any, float], None],
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max = max(1, max_entries)
        self._threshold = threshold_seconds
        self._on_stall = on_stall
        self._timer = timer
        self._started: OrderedDict[Any, float] = OrderedDict()
        self._lock = locks.new()
        state.forget_after_fork(self)

    def add(self, item: Any) -> None:
        with self._lock:
            self._started[item] = self._timer()
            while len(self._started) > self._max:
                self._started.popitem(last=False)

    def remove(self, item: Any) -> None:
        with self._lock:
            self._started.pop(item, None)

    def forget(self) -> None:
        """Drop every watched request unreported (a forked child: they are the parent's)."""
        with self._lock:
            self._started.clear()

    def sweep(self, now: float | None = None) -> int:
        """Report every request pending for at least the threshold; returns how many."""
        now = self._timer() if now is None else now
        reported = 0
        with self._lock:
            while self._started:
                item, started = next(iter(self._started.items()))
                if now - started < self._threshold:
                    break
                del self._started[item]
                reported += 1
                try:
                    self._on_stall(item, now - started)
                except Exception:
                    logger.debug("otel-sampling: could not report a stall", exc_info=True)
        return reported

    def __len__(self) -> int:
        with self._lock:
            return len(self._started)
