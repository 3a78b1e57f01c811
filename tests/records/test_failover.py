"""The failover memory (``otel_sampling.records.failover``): which models failed and did not
recover, to spot a call that succeeded on another model afterwards.

The rule (docs/telemetry.md "Automatic degraded mode", ``failover``): a provider call on one model
failed, that model has not succeeded since, and a call on another model then succeeded, under the
same key: the sampling request the calls serve or the run they are made in (:class:`FailedModels`),
or, outside both, their parent span (:class:`FailoverTracker`), where a failure is forgotten
``FAILOVER_WINDOW_SECONDS`` after it happened.
"""

from __future__ import annotations

from otel_sampling.records.failover import (
    FAILOVER_WINDOW_SECONDS,
    MAX_FAILED_MODELS,
    MAX_FAILOVER_PARENTS,
    FailedModels,
    FailoverTracker,
)


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


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

    def test_a_retry_that_succeeded_clears_the_failure(self):
        """A 429 on A, A retried successfully, then a call on B with no error: A recovered, so the
        call on B is no failover (a small routing call after a retry)."""
        models = FailedModels()
        models.observe("a", failed=True)
        models.observe("a", failed=False)

        assert not models.observe("b", failed=False)
        assert not models.failed_over

    def test_a_model_that_did_not_recover_still_counts_after_another_retry(self):
        """A failed, B failed then succeeded on retry: A never recovered, so B's success fails over."""
        models = FailedModels()
        models.observe("a", failed=True)
        models.observe("b", failed=True)

        assert models.observe("b", failed=False)

    def test_a_request_that_failed_over_stays_failed_over(self):
        """The primary recovering later does not undo the failover that already happened."""
        models = FailedModels()
        models.observe("a", failed=True)
        models.observe("b", failed=False)
        models.observe("a", failed=False)

        assert models.failed_over

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

        assert MAX_FAILED_MODELS == len(models._failed_at)
        assert models.observe("m0", failed=False)


class TestFailoverTracker:
    """``FailoverTracker``: the memory per parent span, for calls outside a sampling request."""

    def test_failover_needs_another_model_under_the_same_parent(self):
        """Only a success on another model, under the parent span of the failed call, fails over."""
        tracker = FailoverTracker(clock=Clock())
        parent, other = (1, 1), (1, 2)

        assert not tracker.observe(parent, "primary", failed=True)
        assert not tracker.observe(other, "fallback", failed=False)  # another parent
        assert tracker.observe(parent, "fallback", failed=False)
        assert not tracker.observe(None, "fallback", failed=False)  # no parent span: nothing to relate

    def test_a_retry_that_succeeded_under_the_parent_clears_the_failure(self):
        """429 on A, A retried successfully, then B: no failover, and the parent is forgotten."""
        tracker = FailoverTracker(clock=Clock())
        parent = (1, 1)
        tracker.observe(parent, "a", failed=True)

        assert not tracker.observe(parent, "a", failed=False)
        assert not tracker.observe(parent, "b", failed=False)
        assert parent not in tracker._by_parent  # nothing left to fail over from: no memory held

    def test_a_failure_is_forgotten_after_the_window(self):
        """One long-lived parent span (a batch job): one early 529 on A, then every later call on B
        after the window is primary; within the window, B after A's failure is a failover."""
        clock = Clock()
        tracker = FailoverTracker(clock=clock)
        parent = (1, 1)
        tracker.observe(parent, "a", failed=True)

        clock.now += FAILOVER_WINDOW_SECONDS + 1
        assert not tracker.observe(parent, "b", failed=False)
        clock.now += 3600
        assert not tracker.observe(parent, "b", failed=False)

        tracker.observe(parent, "a", failed=True)  # a new failure: a new window
        clock.now += FAILOVER_WINDOW_SECONDS - 1
        assert tracker.observe(parent, "b", failed=False)

    def test_the_window_is_configurable(self):
        clock = Clock()
        tracker = FailoverTracker(window_seconds=5, clock=clock)
        tracker.observe((1, 1), "a", failed=True)
        clock.now += 6

        assert not tracker.observe((1, 1), "b", failed=False)

    def test_the_default_window_is_a_minute(self):
        """docs/telemetry.md "Automatic degraded mode" states 60 s."""
        assert FAILOVER_WINDOW_SECONDS == 60

    def test_failover_memory_is_bounded(self):
        """At most ``MAX_FAILOVER_PARENTS`` parents, the least recently used forgotten first."""
        tracker = FailoverTracker(clock=Clock())
        for i in range(3 * MAX_FAILOVER_PARENTS):
            tracker.observe((0, i), "primary", failed=True)

        assert MAX_FAILOVER_PARENTS == len(tracker._by_parent)
        assert not tracker.observe((0, 0), "fallback", failed=False)  # the oldest was forgotten
        assert tracker.observe((0, 3 * MAX_FAILOVER_PARENTS - 1), "fallback", failed=False)

    def test_a_parent_that_failed_again_is_kept_longest(self):
        """A new failure under a parent makes it the most recently used."""
        tracker = FailoverTracker(clock=Clock())
        tracker.observe((0, 0), "primary", failed=True)
        for i in range(1, MAX_FAILOVER_PARENTS):
            tracker.observe((0, i), "primary", failed=True)
        tracker.observe((0, 0), "primary", failed=True)  # used again: now the newest
        tracker.observe((0, MAX_FAILOVER_PARENTS), "primary", failed=True)  # one too many: (0, 1) leaves

        assert tracker.observe((0, 0), "fallback", failed=False)
        assert not tracker.observe((0, 1), "fallback", failed=False)
