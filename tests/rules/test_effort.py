"""Reasoning effort against a scope's primary effort (``otel_sampling.rules.effort``), and the
``reduced_effort`` reason it gives a provider call's verdict.

Expected values from the providers' documented request fields: openai ``reasoning_effort`` /
Responses ``reasoning.effort`` take ``none``, ``minimal``, ``low``, ``medium``, ``high``, ``xhigh``
(openai API reference); anthropic Messages ``thinking`` is ``{"type": "enabled", "budget_tokens": n}``
or ``{"type": "disabled"}`` (off when absent), and ``output_config.effort`` takes ``low``,
``medium``, ``high`` (Anthropic's "Extended thinking" and "Effort" pages).
"""

from __future__ import annotations

import pytest

from otel_sampling import names
from otel_sampling.rules.effort import below_primary
from otel_sampling.rules.values import Ending, Usage
from otel_sampling.rules.verdict import CallSummary, Reference, judge_call


class TestBelowPrimary:
    @pytest.mark.parametrize(
        ("effort", "primary"),
        [("low", "high"), ("none", "minimal"), ("medium", "xhigh"), ("minimal", "low"), (1024, 8192), (0, 1)],
    )
    def test_a_lower_effort_of_the_same_shape_is_below(self, effort, primary):
        assert below_primary(effort, primary)

    @pytest.mark.parametrize(
        ("effort", "primary"),
        [("high", "high"), ("xhigh", "high"), (8192, 8192), (16000, 8192)],
    )
    def test_the_same_or_more_is_not(self, effort, primary):
        assert not below_primary(effort, primary)

    @pytest.mark.parametrize(
        ("effort", "primary"),
        [
            (None, "high"),  # the call states none: the provider's default, which differs by model
            ("low", None),  # the scope names none
            (1024, "high"),  # a budget is not a level
            ("low", 8192),  # nor a level a budget
            ("turbo", "high"),  # a level outside the list
            (True, 8192),  # a bool is not a budget
        ],
    )
    def test_what_cannot_be_compared_is_not_below(self, effort, primary):
        assert not below_primary(effort, primary)


def _call(effort, failed: bool = False) -> CallSummary:
    ending = Ending("error", "overloaded_error") if failed else Ending("completed", None)
    model = "claude-sonnet-5-5"
    return CallSummary("anthropic", None, None, model, model, ending, Usage(), None, effort=effort)


class TestReducedEffort:
    """``judge_call``: a call below its scope's primary effort is degraded, reason ``reduced_effort``."""

    HIGH = Reference(primary_effort="high")

    def test_a_call_below_the_primary_effort_is_degraded(self):
        assert judge_call(_call("low"), self.HIGH, False)[:2] == ("degraded", (names.REASON_REDUCED_EFFORT,))

    def test_a_call_at_the_primary_effort_is_primary(self):
        assert judge_call(_call("high"), self.HIGH, False)[:2] == ("primary", ())

    def test_without_a_primary_effort_effort_is_not_judged(self):
        assert judge_call(_call("minimal"), Reference(), False)[:2] == ("primary", ())

    def test_a_failed_call_has_no_reason_of_its_own(self):
        assert judge_call(_call("low", failed=True), self.HIGH, False)[:2] == ("primary", ())

    def test_after_the_calls_own_reason_and_before_the_named_ones(self):
        call = _call(0)._replace(named=("maintenance",))
        assert judge_call(call, Reference(primary_effort=8192), True)[:2] == (
            "degraded",
            (names.REASON_FAILOVER, names.REASON_REDUCED_EFFORT, "maintenance"),
        )
