"""Failover memory: which models failed and did not recover, to spot a success on another model.

One rule, kept in one place: a provider call that succeeds on model B while a call on model A,
under the same key, failed and A has not succeeded since, failed over. A call that succeeds on a
model clears that model's failure (a retry that worked is a recovery, not a failover: a 429 on A,
A retried successfully, then a call on B is no failover).

The key is one logical request:

* the sampling request the calls serve (:class:`~otel_sampling.records.sampling.SamplingRecord`
  holds one :class:`FailedModels`);
* else the run the calls are made in (:class:`~otel_sampling.records.run.Run` holds one);
* else, for calls outside both, their parent span (:class:`FailoverTracker`, one per provider
  instrumentor). A parent span may live for hours (a batch job), so there a failure is forgotten
  ``FAILOVER_WINDOW_SECONDS`` after it happened: one early 529 on A does not make every later
  call on B a failover.

Bounded: ``MAX_FAILED_MODELS`` models per key, ``MAX_FAILOVER_PARENTS`` parent spans.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from otel_sampling import locks

MAX_FAILED_MODELS = 16  # distinct failed models remembered per key (a host looping on models)
MAX_FAILOVER_PARENTS = 1024  # parent spans remembered (least recently used forgotten first)
# Seconds a failure is remembered under a parent span (outside a sampling request and a run): a
# host's failover follows its failure within a retry loop's time, well under a minute.
FAILOVER_WINDOW_SECONDS = 60.0


class FailedModels:
    """The models that failed under one key and have not recovered since, and whether a call has
    failed over. Not thread-safe on its own: its owner serialises :meth:`observe`."""

    __slots__ = ("_failed_at", "failed_over")

    def __init__(self) -> None:
        self._failed_at: dict[str, float] = {}  # model -> when it last failed (the owner's clock)
        self.failed_over = False

    def observe(self, model: str | None, failed: bool, now: float = 0.0) -> bool:
        """Record one ended call on ``model`` at ``now``; True when it succeeded while another
        model's failure stands (a failover). A success clears its own model's failure."""
        if not model:
            return False
        if failed:
            if model in self._failed_at or len(self._failed_at) < MAX_FAILED_MODELS:
                self._failed_at[model] = now
            return False
        self._failed_at.pop(model, None)
        if self._failed_at:
            self.failed_over = True
            return True
        return False

    def forget_before(self, instant: float) -> None:
        """Forget the failures that happened before ``instant``."""
        for model in [m for m, at in self._failed_at.items() if at < instant]:
            del self._failed_at[model]

    def __bool__(self) -> bool:
        """True while a failure is remembered."""
        return bool(self._failed_at)


class FailoverTracker:
    """:class:`FailedModels` per parent span ``(trace_id, span_id)``, for calls outside a sampling
    request and a run; thread-safe, at most ``MAX_FAILOVER_PARENTS`` parents (least recently used
    first out), each failure forgotten ``window_seconds`` after it happened.

    Args:
        window_seconds: how long a failure is remembered, seconds (default ``FAILOVER_WINDOW_SECONDS``).
        clock: monotonic seconds (default :func:`time.monotonic`; tests pass their own).
    """

    def __init__(
        self, window_seconds: float = FAILOVER_WINDOW_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._by_parent: OrderedDict[tuple[int, int], FailedModels] = OrderedDict()
        self._lock = locks.new()
        self._window = window_seconds
        self._clock = clock

    def observe(self, parent: tuple[int, int] | None, model: str | None, failed: bool) -> bool:
        """Record one ended call under ``parent``; True when it failed over (see :meth:`FailedModels.observe`)."""
        if parent is None or not model:
            return False
        now = self._clock()
        with self._lock:
            models = self._by_parent.get(parent)
            if models is None:
                if not failed:
                    return False
                models = self._by_parent[parent] = FailedModels()
                if len(self._by_parent) > MAX_FAILOVER_PARENTS:
                    self._by_parent.popitem(last=False)
            elif failed:
                self._by_parent.move_to_end(parent)
            models.forget_before(now - self._window)
            failed_over = models.observe(model, failed, now)
            if not models:  # nothing left to fail over from: the parent costs no memory
                del self._by_parent[parent]
            return failed_over
