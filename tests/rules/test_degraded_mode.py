"""Degraded mode of runs and of the state around a call (``otel_sampling.rules.degraded_mode``).

The verdicts of provider calls and sampling requests are ``tests/rules/test_verdict.py``.
"""

from __future__ import annotations

import pytest

from otel_sampling.rules.degraded_mode import named_reasons, reasons_of, run_mode, silent_incident_causes


class TestReasonsOf:
    """``reasons_of``: a ``degradation.reason`` attribute value, whatever another instrumentation put there."""

    @pytest.mark.parametrize(
        ("reasons", "value"),
        [
            ((), None),
            (("fallback",), "fallback"),
            (("fallback", "sources unavailable"), ["fallback", "sources unavailable"]),
            (("fallback", "3"), ("fallback", 3)),
            (("3",), 3),
            (("True",), True),
            (("2.5",), 2.5),
        ],
    )
    def test_a_tuple_of_strings(self, reasons, value):
        """A string is one reason, a sequence several; anything else as its string."""
        assert reasons == reasons_of(value)


class TestNamedReasons:
    """``named_reasons``: the reasons of the state around a call, from the active degradations and the canary flag."""

    def test_nothing_active_is_no_reason(self):
        assert () == named_reasons((), canary=False, cap=16)

    def test_active_reasons_in_entry_order_each_once(self):
        assert ("index down", "quota") == named_reasons(("index down", "quota", "index down"), canary=False, cap=16)

    def test_canary_comes_last(self):
        assert ("index down", "canary") == named_reasons(("index down",), canary=True, cap=16)
        assert ("canary",) == named_reasons((), canary=True, cap=16)

    def test_at_most_cap_distinct_active_reasons(self):
        """A host that leaks thousands of degradations puts at most ``cap`` reasons on each span (plus canary)."""
        assert (*(f"r{i}" for i in range(16)), "canary") == named_reasons(
            (f"r{i}" for i in range(1000)), canary=True, cap=16
        )


class TestRunMode:
    """``run_mode``: a run is degraded when anything inside it was."""

    @pytest.mark.parametrize(("mode", "degraded"), [("degraded", True), ("primary", False)])
    def test_mode(self, mode, degraded):
        assert mode == run_mode(degraded)


class TestSilentIncidentCauses:
    """``silent_incident_causes``: a run that ended degraded, or with a substitution outside policy, and
    told nobody, is an incident; a run nested in an open run leaves the one incident to the outermost."""

    @pytest.mark.parametrize(
        ("causes", "degraded", "outside_policy"),
        [
            (("degraded",), True, False),
            (("outside_policy",), False, True),
            (("degraded", "outside_policy"), True, True),
            ((), False, False),
        ],
    )
    def test_causes_of_an_undisclosed_outermost_run(self, causes, degraded, outside_policy):
        assert causes == silent_incident_causes(
            degraded=degraded, outside_policy=outside_policy, disclosed=False, inside_open_run=False
        )

    def test_a_disclosed_run_is_no_incident(self):
        assert () == silent_incident_causes(degraded=True, outside_policy=True, disclosed=True, inside_open_run=False)

    def test_a_run_inside_an_open_run_is_no_incident_of_its_own(self):
        assert () == silent_incident_causes(degraded=True, outside_policy=True, disclosed=False, inside_open_run=True)
