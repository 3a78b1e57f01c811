"""The failover memory (``otel_sampling.records.failover``): which models failed, to spot a call
that succeeded on another model afterwards.

The rule (docs/telemetry.md "Automatic degraded mode", ``failover``): a provider call failed and
a call on another model then succeeded, under the same key, the sampling request the calls serve
(:class:`FailedModels`) or, outside any request, their parent span (:class:`FailoverTracker`).
"""

from __future__ import annotations

from otel_sampling.records.failover import MAX_FAILED_MODELS, MAX_FAILOVER_PARENTS, FailedModels, FailoverTracker


class TestFailedModels:
    """``FailedModels``: the memory of one sampling request."""

    def test_a_success_on_another_model_after_a_failure_fails_over(self):
        """``primary`` failed, ``fallback`` succeeded: a failover, remembered on the request."""
        models = FailedModels()

        assert not models.observe("primary", failed=True)
        assert models.observe("fallback", failed=False)
        assert models.failed_over

    def test_a_retry_on_the_same_model_is_no_failover(self):
        """The model that failed succeeding later is a retry."""
        models = FailedModels()
        models.observe("primary", failed=True)

        assert not models.observe("primary", failed=False)
        assert not models.failed_over

    def test_a_success_without_an_earlier_failure_is_no_failover(self):
        """Two successes on two models: nothing failed."""
        models = FailedModels()

        assert not models.observe("primary", failed=False)
        assert not models.observe("fallback", failed=False)

    def test_a_call_without_a_model_is_not_remembered(self):
        """No ``gen_ai.request.model``: nothing to compare."""
        models = FailedModels()
        models.observe(None, failed=True)

        assert not models.observe("fallback", failed=False)

    def test_memory_is_bounded_per_request(self):
        """At most ``MAX_FAILED_MODELS`` failed models are remembered (a host looping on models);
        a success on a remembered model, after the others failed, still fails over."""
        models = FailedModels()
        for i in range(3 * MAX_FAILED_MODELS):
            models.observe(f"m{i}", failed=True)

        assert MAX_FAILED_MODELS == len(models._models)
        assert models.observe("m0", failed=False)


class TestFailoverTracker:
    """``FailoverTracker``: the memory per parent span, for calls outside a sampling request."""

    def test_failover_needs_another_model_under_the_same_parent(self):
        """Only a success on another model, under the parent span of the failed call, fails over."""
        tracker = FailoverTracker()
        parent, other = (1, 1), (1, 2)

        assert not tracker.observe(parent, "primary", failed=True)
        assert not tracker.observe(parent, "primary", failed=False)  # a retry on the same model
        assert not tracker.observe(other, "fallback", failed=False)  # another parent
        assert tracker.observe(parent, "fallback", failed=False)
        assert not tracker.observe(None, "fallback", failed=False)  # no parent span: nothing to relate

    def test_failover_memory_is_bounded(self):
        """At most ``MAX_FAILOVER_PARENTS`` parents, the least recently used forgotten first."""
        tracker = FailoverTracker()
        for i in range(3 * MAX_FAILOVER_PARENTS):
            tracker.observe((0, i), "primary", failed=True)

        assert MAX_FAILOVER_PARENTS == len(tracker._by_parent)
        assert not tracker.observe((0, 0), "fallback", failed=False)  # the oldest was forgotten
        assert tracker.observe((0, 3 * MAX_FAILOVER_PARENTS - 1), "fallback", failed=False)

    def test_a_parent_that_failed_again_is_kept_longest(self):
        """A new failure under a parent makes it the most recently used."""
        tracker = FailoverTracker()
        tracker.observe((0, 0), "primary", failed=True)
        for i in range(1, MAX_FAILOVER_PARENTS):
            tracker.observe((0, i), "primary", failed=True)
        tracker.observe((0, 0), "primary", failed=True)  # used again: now the newest
        tracker.observe((0, MAX_FAILOVER_PARENTS), "primary", failed=True)  # one too many: (0, 1) leaves

        assert tracker.observe((0, 0), "fallback", failed=False)
        assert not tracker.observe((0, 1), "fallback", failed=False)
