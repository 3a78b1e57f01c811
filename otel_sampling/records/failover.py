"""Failover memory: which models failed, to spot a call that succeeded on another model afterwards.

One rule, kept in one place: a call that succeeds on model B after a call on model A failed, under
the same key, failed over. The key is the sampling request the calls serve
(:class:`~otel_sampling.records.sampling.SamplingRecord` holds one :class:`FailedModels`) or, for
calls outside any request, their parent span (:class:`FailoverTracker`, one per provider
instrumentor). Bounded: ``MAX_FAILED_MODELS`` models per key, ``MAX_FAILOVER_PARENTS`` parents.
"""

from __future__ import annotations

from collections import OrderedDict

from otel_sampling import locks

MAX_FAILED_MODELS = 16  # distinct failed models remembered per key (a host looping on models)
MAX_FAILOVER_PARENTS = 1024  # parent spans remembered (least recently used forgotten first)


class FailedModels:
    """The models that failed under one key, and whether a call has failed over since.
    Not thread-safe on its own: its owner serialises :meth:`observe`."""

    __slots__ = ("_models", "failed_over")

    def __init__(self) -> None:
        self._models: set[str] = set()
        self.failed_over = False

    def observe(self, model: str | None, failed: bool) -> bool:
        """Record one ended call on ``model``; True when it succeeded after another model failed."""
        if not model:
            return False
        if failed:
            if len(self._models) < MAX_FAILED_MODELS:
                self._models.add(model)
            return False
        if self._models - {model}:
            self.failed_over = True
            return True
        return False


class FailoverTracker:
    """:class:`FailedModels` per parent span ``(trace_id, span_id)``, for calls outside a sampling
    request; thread-safe, at most ``MAX_FAILOVER_PARENTS`` parents (least recently used first out)."""

    def __init__(self) -> None:
        self._by_parent: OrderedDict[tuple[int, int], FailedModels] = OrderedDict()
        self._lock = locks.new()

    def observe(self, parent: tuple[int, int] | None, model: str | None, failed: bool) -> bool:
        """Record one ended call under ``parent``; True when it failed over (see :meth:`FailedModels.observe`)."""
        if parent is None or not model:
            return False
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
            return models.observe(model, failed)
