"""The one verdict of a provider call and of a sampling request (``otel_sampling.rules.verdict``).

Each test is a row of the module's table (and of docs/telemetry.md "Degraded mode" and "Verdicts
without a policy"): ``canary`` (request), ``failover``, ``provider_fallback``, ``substitution``,
``fallback``, first match wins, then the calls' reasons and the named degradations' reasons. One
cause has one name at both levels.

The server policy of most examples: ``primary_model = "claude-sonnet-5-5"``,
``permitted_models = ["claude-sonnet-5-5", "claude-haiku-5-5"]``.
"""

from __future__ import annotations

import pytest

from otel_sampling.rules.values import Ending, Usage
from otel_sampling.rules.verdict import (
    NO_POLICY,
    CallSummary,
    CallVerdict,
    Reference,
    RequestFacts,
    RequestVerdict,
    judge_call,
    judge_request,
    served_model,
)

PRIMARY = "claude-sonnet-5-5"
PERMITTED_FALLBACK = "claude-haiku-5-5"
OUTSIDE = "claude-opus-5-5"
PERMITTED = (PRIMARY, PERMITTED_FALLBACK)
POLICY = Reference((), PERMITTED, PRIMARY, True)
PERMITTED_ONLY = Reference((), (PRIMARY,), None, True)
COMPLETED = Ending("completed", None)
FAILED = Ending("error", "overloaded_error")


def request(reference: Reference = POLICY, **facts) -> tuple[str, str, tuple[str, ...]]:
    """``judge_request`` of a request served by the model its last call asked for, changed by ``facts``."""
    served = facts.get("served", PRIMARY)
    given = {"served": served, "requested": served, "failed": False, **facts}
    return tuple(judge_request(RequestFacts(**given), reference))  # type: ignore[return-value]


class TestRequest:
    """``judge_request``: ``(substitution, mode, reasons)`` of a sampling request as it ends."""

    def test_the_primary_served_as_asked_is_primary_without_a_reason(self):
        assert ("none", "primary", ()) == request()

    def test_canary(self):
        """The host marked the traffic as a trip through the fallback (``otel_sampling.canary()``)."""
        assert ("none", "degraded", ("canary",)) == request(canary=True)

    def test_failover(self):
        """A provider call failed, then a call on another model succeeded; whichever model served."""
        assert ("none", "degraded", ("failover",)) == request(failed_over=True, served=PERMITTED_FALLBACK)
        assert ("none", "degraded", ("failover",)) == request(failed_over=True)

    def test_provider_fallback_is_the_providers_own_server_side_fallback(self):
        """Reported by the provider (anthropic's ``fallback`` content), whatever the policy says."""
        assert ("within_policy", "degraded", ("provider_fallback",)) == request(
            provider_fallback=True, served=PERMITTED_FALLBACK, requested=PRIMARY
        )

    def test_substitution_outside_policy(self):
        assert ("outside_policy", "degraded", ("substitution",)) == request(served=OUTSIDE, requested=PRIMARY)

    def test_served_another_permitted_model_than_asked_is_a_fallback(self):
        """The provider served a permitted model the host did not ask for: the same name the call
        gets (``fallback``), not a second one."""
        assert ("within_policy", "degraded", ("fallback",)) == request(served=PERMITTED_FALLBACK, requested=PRIMARY)

    def test_asked_for_a_permitted_model_other_than_the_primary_is_a_fallback(self):
        """The host chose the fallback itself: served as asked, but off the primary."""
        assert ("none", "degraded", ("fallback",)) == request(served=PERMITTED_FALLBACK)

    @pytest.mark.parametrize("served", [PRIMARY, "claude-sonnet-5-5-20261001"])
    def test_the_primary_or_a_snapshot_of_it_is_not_degraded(self, served):
        """Even served another model than the host asked for: the primary is never degraded."""
        assert ("within_policy", "primary", ()) == request(served=served, requested=PERMITTED_FALLBACK)

    def test_permitted_models_without_a_primary_served_outside_them_is_degraded(self):
        assert ("outside_policy", "degraded", ("substitution",)) == request(
            PERMITTED_ONLY, served=OUTSIDE, requested=PRIMARY
        )

    def test_a_failed_request_has_no_substitution(self):
        assert ("none", "primary", ()) == request(served=None, failed=True)

    def test_the_calls_reasons_follow_the_requests_own(self):
        """A call inside the request that was degraded degrades the request too."""
        assert ("none", "degraded", ("substitution",)) == request(call_reasons=("substitution",))
        assert ("none", "degraded", ("failover", "fallback")) == request(
            failed_over=True, call_reasons=("failover", "fallback", "failover")
        )

    def test_named_reasons_come_last_and_once(self):
        assert ("none", "degraded", ("canary", "sources unavailable")) == request(
            canary=True, named=("canary", "sources unavailable", "sources unavailable")
        )


class TestRequestWithoutPolicy:
    """No policy: the reference is the model the host asked the provider for, else the hints."""

    @pytest.mark.parametrize(
        ("requested", "served"),
        [
            ("claude-sonnet-4-5", "claude-sonnet-4-5"),
            ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),  # a dated snapshot
            ("claude-sonnet-4-5-latest", "claude-sonnet-4-5-20250929"),  # the alias resolved
            ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),  # a gateway prefix
            ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"),  # a Bedrock id
        ],
    )
    def test_served_as_asked(self, requested, served):
        assert ("none", "primary", ()) == request(NO_POLICY, served=served, requested=requested)

    @pytest.mark.parametrize("served", ["claude-haiku-4-5", "claude-opus-4-1", "gpt-4o-mini"])
    def test_served_another_model_is_a_substitution(self, served):
        """A smaller size of the same line, another family, another provider: all the same."""
        assert ("without_policy", "degraded", ("substitution",)) == request(
            NO_POLICY, served=served, requested="claude-sonnet-4-5"
        )

    def test_without_a_provider_call_the_hints_are_the_reference(self):
        hinted = Reference(("claude-sonnet",))
        assert ("none", "primary", ()) == request(hinted, served="claude-sonnet-4-5", requested=None)
        assert ("without_policy", "degraded", ("substitution",)) == request(
            hinted, served="gpt-4o-mini", requested=None
        )

    def test_nothing_asked_for_is_no_substitution(self):
        assert ("none", "primary", ()) == request(NO_POLICY, served="gpt-4o-mini", requested=None)


def call(reference: Reference = POLICY, failed_over: bool = False, **facts) -> CallVerdict:
    """``judge_call`` of a successful call served the model it asked for, changed by ``facts``."""
    given = {
        "provider": "anthropic",
        "address": None,
        "region": None,
        "requested": PRIMARY,
        "served": PRIMARY,
        "ending": COMPLETED,
        "usage": Usage(),
        "usd": None,
        **facts,
    }
    return judge_call(CallSummary(**given), reference, failed_over)


class TestCall:
    """``judge_call``: the mode and reasons of one provider call by what it did."""

    def test_a_call_served_as_asked_is_primary(self):
        assert ("primary", ()) == call()

    def test_provider_fallback(self):
        assert ("degraded", ("provider_fallback",)) == call(provider_fallback=True, served=PERMITTED_FALLBACK)

    def test_failover(self):
        assert ("degraded", ("failover",)) == call(
            failed_over=True, requested=PERMITTED_FALLBACK, served=PERMITTED_FALLBACK
        )

    def test_fallback(self):
        """Served another model than requested, one the requesting server's policy permits."""
        assert ("degraded", ("fallback",)) == call(served=PERMITTED_FALLBACK)

    def test_asked_for_a_permitted_model_off_the_primary_is_a_fallback_as_for_its_request(self):
        assert ("degraded", ("fallback",)) == call(requested=PERMITTED_FALLBACK, served=PERMITTED_FALLBACK)

    @pytest.mark.parametrize("reference", [POLICY, NO_POLICY, Reference((), (), None, True)])
    def test_substitution(self, reference):
        """Served another model than requested, and no policy permits it (none, or not this one)."""
        assert ("degraded", ("substitution",)) == call(reference, served=OUTSIDE)

    def test_a_gateway_prefixed_request_served_its_snapshot_is_primary(self):
        assert ("primary", ()) == call(
            NO_POLICY, requested="anthropic/claude-sonnet-4-5", served="claude-sonnet-4-5-20250929"
        )

    @pytest.mark.parametrize(
        "facts",
        [
            {"ending": FAILED, "served": OUTSIDE},  # a failed call was not served by anything
            {"ending": FAILED, "failed_over": True},  # nor did it fail over
            {"served": "claude-sonnet-5-5-20261001"},  # a snapshot of the model asked for
            {"served": None},
            {"requested": None, "served": PRIMARY},
            {"served": OUTSIDE, "compare_models": False},  # the request names a deployment (Azure OpenAI)
        ],
    )
    def test_no_reason_when_nothing_degraded_happened(self, facts):
        assert ("primary", ()) == call(**facts)

    def test_named_degradations_around_it_degrade_it_after_its_own_reason(self):
        assert ("degraded", ("sources unavailable",)) == call(named=("sources unavailable",))
        assert ("degraded", ("fallback", "canary")) == call(served=PERMITTED_FALLBACK, named=("canary",))


class TestServedModel:
    """``served_model``: which model the request's verdict uses."""

    def test_the_providers_model_wins(self):
        assert "claude-sonnet-4-5" == served_model(True, False, "anthropic/claude-sonnet-4-5", "something-else")

    def test_every_call_failed_is_no_model(self):
        assert None is served_model(False, True, None, "claude-sonnet-4-5")

    def test_without_calls_the_hosts_report(self):
        assert "claude-sonnet-4-5" == served_model(False, False, None, "openai:claude-sonnet-4-5")
        assert None is served_model(False, False, None, "fallback:claude-sonnet-4-5,gpt-4o")


def test_verdicts_are_plain_values():
    assert RequestVerdict("none", "primary", ()) == ("none", "primary", ())
