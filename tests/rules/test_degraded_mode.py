"""Whether a sampling request or a provider call ran degraded, and why (``otel_sampling.rules.degraded_mode``).

Each test is a row of the module's tables (and of docs/telemetry.md "Automatic degraded mode"):
for a request ``canary``, ``failover``, ``substitution``, ``provider_fallback``, ``fallback``,
first match wins, then the named degradations' reasons; for a provider call
``provider_fallback``, ``failover``, ``fallback``, ``substitution``, first match wins.

The server policy of these examples: ``primary_model = "claude-sonnet-5-5"``,
``permitted_models = ["claude-sonnet-5-5", "claude-haiku-5-5"]``.
"""

from __future__ import annotations

import pytest

from otel_sampling.rules.degraded_mode import (
    call_mode,
    call_reason,
    named_reasons,
    reasons_of,
    request_mode,
    run_mode,
    silent_incident_causes,
    stamped_reasons,
)

PRIMARY = "claude-sonnet-5-5"
PERMITTED_FALLBACK = "claude-haiku-5-5"
OUTSIDE = "claude-opus-5-5"
PERMITTED = (PRIMARY, PERMITTED_FALLBACK)


def request(**facts) -> tuple[str, tuple[str, ...]]:
    """``request_mode`` of a request served by the primary, asked for by the host, changed by ``facts``."""
    served = facts.get("served", PRIMARY)
    return request_mode(
        **{
            "canary": False,
            "failed_over": False,
            "judged": "none",
            "served": served,
            "primary": PRIMARY,
            "last_requested": served,
            **facts,
        }
    )


class TestRequestMode:
    """``request_mode``: ``(mode, reasons)`` of a sampling request as it ends."""

    def test_the_primary_served_as_asked_is_primary_without_a_reason(self):
        """Nothing in the table applies and no named degradation is around: ``primary``."""
        assert ("primary", ()) == request()

    def test_canary(self):
        """The host marked the traffic as a trip through the fallback (``otel_sampling.canary()``)."""
        assert ("degraded", ("canary",)) == request(canary=True, served=PERMITTED_FALLBACK, judged="within_policy")

    def test_canary_even_on_the_primary(self):
        """A canary needs no other sign of degradation."""
        assert ("degraded", ("canary",)) == request(canary=True)

    def test_failover(self):
        """A provider call failed, then a call on another model succeeded."""
        assert ("degraded", ("failover",)) == request(
            failed_over=True, served=PERMITTED_FALLBACK, judged="within_policy"
        )

    def test_failover_back_to_the_primary_is_still_a_failover(self):
        """Failing over degrades the request whichever model finally served it."""
        assert ("degraded", ("failover",)) == request(failed_over=True)

    def test_substitution(self):
        """The served model is outside the server's ``permitted_models``."""
        assert ("degraded", ("substitution",)) == request(served=OUTSIDE, judged="outside_policy")

    def test_provider_fallback(self):
        """The last call that succeeded asked for the primary and was served another model."""
        assert ("degraded", ("provider_fallback",)) == request(
            served=PERMITTED_FALLBACK, judged="within_policy", last_requested=PRIMARY
        )

    def test_fallback(self):
        """Served by a model other than the primary, asked for as such."""
        assert ("degraded", ("fallback",)) == request(served=PERMITTED_FALLBACK, judged="within_policy")

    def test_fallback_when_no_provider_call_was_seen(self):
        """Without a provider call inside the request, off the primary is a ``fallback``."""
        assert ("degraded", ("fallback",)) == request(
            served=PERMITTED_FALLBACK, judged="within_policy", last_requested=None
        )

    @pytest.mark.parametrize(
        ("reason", "facts"),
        [
            (
                "canary",
                {
                    "canary": True,
                    "failed_over": True,
                    "served": OUTSIDE,
                    "judged": "outside_policy",
                    "last_requested": PRIMARY,
                },
            ),
            (
                "failover",
                {"failed_over": True, "served": OUTSIDE, "judged": "outside_policy", "last_requested": PRIMARY},
            ),
            ("substitution", {"served": OUTSIDE, "judged": "outside_policy", "last_requested": PRIMARY}),
            ("provider_fallback", {"served": PERMITTED_FALLBACK, "judged": "within_policy", "last_requested": PRIMARY}),
        ],
    )
    def test_the_first_matching_row_is_the_only_own_reason(self, reason, facts):
        """Rows are tried in table order; later rows that also hold add nothing."""
        assert ("degraded", (reason,)) == request(**facts)

    @pytest.mark.parametrize("served", [PRIMARY, "claude-sonnet-5-5-20261001", "claude-sonnet-5-5-latest"])
    def test_the_primary_or_a_snapshot_of_it_is_not_degraded(self, served):
        """The last three rows apply only off the primary (``primary_model`` up to a snapshot
        suffix): even judged ``outside_policy`` (no hint matched) or served another model than
        the host asked for."""
        assert ("primary", ()) == request(served=served, judged="outside_policy", last_requested=OUTSIDE)

    def test_without_a_primary_model_only_canary_failover_and_named_reasons_apply(self):
        """A policy without ``primary_model`` (or no policy): nothing is "off the primary"."""
        assert ("primary", ()) == request(primary=None, served=OUTSIDE, judged="outside_policy", last_requested=PRIMARY)
        assert ("degraded", ("failover",)) == request(primary=None, failed_over=True, served=OUTSIDE)

    def test_without_a_served_model_nothing_is_off_the_primary(self):
        """No ``CreateMessageResult.model`` (the request failed): only canary, failover, named reasons."""
        assert ("primary", ()) == request(served=None, last_requested=PRIMARY)


class TestRequestNamedReasons:
    """Named degradations (``otel_sampling.degraded(...)``) around a request add their reasons."""

    def test_a_named_degradation_degrades_a_primary_request(self):
        """Active as it ends, or stamped on its span as it started: its host-chosen reason."""
        assert ("degraded", ("sources unavailable",)) == request(named=("sources unavailable",))

    def test_named_reasons_come_after_the_requests_own(self):
        """Most specific first: the table's reason, then the named ones in order."""
        assert ("degraded", ("failover", "sources unavailable", "verification off")) == request(
            failed_over=True, named=("sources unavailable", "verification off")
        )

    def test_a_reason_is_named_once(self):
        """A named reason already in the list (a canary block around a canary request, a reason
        both active and stamped) is not repeated."""
        assert ("degraded", ("canary", "sources unavailable")) == request(
            canary=True, named=("canary", "sources unavailable", "sources unavailable")
        )


def call(**facts) -> str | None:
    """``call_reason`` of a successful call served the model it asked for, changed by ``facts``."""
    return call_reason(
        **{
            "provider_fallback": False,
            "failed": False,
            "failed_over": False,
            "requested": PRIMARY,
            "served": PRIMARY,
            "compare_models": True,
            "permitted": PERMITTED,
            **facts,
        }
    )


class TestCallReason:
    """``call_reason``: the ``degradation.reason`` of one provider call by what it did."""

    def test_a_call_served_as_asked_has_no_reason(self):
        """Nothing in the table applies."""
        assert None is call()

    def test_provider_fallback(self):
        """The provider reports a server-side fallback (anthropic's ``fallback`` content)."""
        assert "provider_fallback" == call(provider_fallback=True, served=PERMITTED_FALLBACK)

    def test_failover(self):
        """It succeeded after a call on another model failed."""
        assert "failover" == call(failed_over=True, requested=PERMITTED_FALLBACK, served=PERMITTED_FALLBACK)

    def test_fallback(self):
        """Served another model than requested, one the requesting server's policy permits."""
        assert "fallback" == call(served=PERMITTED_FALLBACK)

    @pytest.mark.parametrize("permitted", [PERMITTED, None, ()])
    def test_substitution(self, permitted):
        """Served another model than requested, and no policy permits it (none, or not this one)."""
        assert "substitution" == call(served=OUTSIDE, permitted=permitted)

    @pytest.mark.parametrize(
        ("reason", "facts"),
        [
            ("provider_fallback", {"provider_fallback": True, "failed_over": True, "served": OUTSIDE}),
            ("failover", {"failed_over": True, "served": OUTSIDE}),
        ],
    )
    def test_the_first_matching_row_wins(self, reason, facts):
        """Rows are tried in table order."""
        assert reason == call(**facts)

    @pytest.mark.parametrize(
        "facts",
        [
            {"failed": True, "served": OUTSIDE},  # a failed call was not served by anything
            {"failed": True, "failed_over": True},  # nor did it fail over
            {"served": "claude-sonnet-5-5-20261001"},  # a snapshot of the model asked for
            {"served": None},
            {"requested": None, "served": OUTSIDE},
            {"served": OUTSIDE, "compare_models": False},  # the request names a deployment (Azure OpenAI)
        ],
    )
    def test_no_reason_when_nothing_degraded_happened(self, facts):
        """None: the call did nothing degraded (or nothing can be compared)."""
        assert None is call(**facts)


class TestCallMode:
    """``call_mode``: a provider call is degraded with a reason of its own, or with named
    degradations or a canary block around it as it started or as it ends."""

    @pytest.mark.parametrize(
        ("mode", "reason", "stamped", "around"),
        [
            ("primary", None, (), ()),
            ("degraded", "fallback", (), ()),
            ("degraded", None, ("sources unavailable",), ()),  # around it as it started
            ("degraded", None, (), ("sources unavailable",)),  # around it as it ends
            ("degraded", None, (), ("canary",)),
        ],
    )
    def test_mode(self, mode, reason, stamped, around):
        """No reason of its own is needed to be degraded."""
        assert mode == call_mode(reason, stamped, around)


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


class TestStampedReasons:
    """``stamped_reasons``: the reasons a span's attributes say it started degraded with."""

    @pytest.mark.parametrize(
        ("reasons", "attributes"),
        [
            (
                ("sources unavailable",),
                {"degradation.mode": "degraded", "degradation.reason": ("sources unavailable",)},
            ),
            ((), {"degradation.mode": "degraded"}),
            ((), {"degradation.mode": "primary", "degradation.reason": ("fallback",)}),
            ((), {"degradation.reason": ("fallback",)}),
            ((), {}),
            ((), None),
        ],
    )
    def test_only_a_span_that_started_degraded_has_stamped_reasons(self, reasons, attributes):
        """``degradation.mode=degraded`` on the span: its ``degradation.reason`` values, else none."""
        assert reasons == stamped_reasons(attributes)


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
