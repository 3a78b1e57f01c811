"""The one verdict of a provider call and of a sampling request (``otel_sampling.rules.verdict``).

Each test is a row of the module's table (and of docs/telemetry.md "Degraded mode" and "Verdicts
without a policy"): ``canary`` (request), ``failover``, ``provider_fallback``, ``substitution``,
``fallback``, first match wins, then the calls' reasons and the named degradations' reasons. One
cause has one name at both levels.

The server policy of most examples: ``primary_model = "claude-sonnet-5-5"``,
``permitted_models = ["claude-sonnet-5-5", "claude-haiku-5-5"]``.

Model names as hosts report them, read as provider model ids (:func:`normalise` and its readers).

Expected names come from where the reported forms are defined: pydantic-ai's
``FallbackModel.model_name`` (``"fallback:" + ",".join(member.model_name ...)``) and its
``provider:model`` ids (``parse_model_id``, the Gateway's ``gateway/openai:gpt-5``); OpenRouter's
``anthropic/claude-sonnet-4.5``; Google's ``models/gemini-2.5-pro``; the Bedrock ids of Anthropic's
"Claude on Amazon Bedrock" table (``anthropic.claude-sonnet-4-5-20250929-v1:0`` is the API's
``claude-sonnet-4-5-20250929``, ``anthropic.claude-opus-4-6-v1`` its ``claude-opus-4-6``, the legacy
``anthropic.claude-v2:1`` is Claude 2.1) and cross-region inference profiles (``us.``); Ollama's
``model:tag`` names (ollama.com library: ``llama3:latest``, ``mistral:7b``).

Was the served model the one asked for (:func:`judge_substitution`)?

Expected judgements come from the MCP spec 2025-11-25 (client/sampling, Model Preferences: "hints
are treated as substrings that can match model names flexibly"), the policy file's
``permitted_models`` (docs/configuration.md: a request without hints is still held to them), and
the providers' snapshot names (anthropic
``claude-haiku-4-5-20251001``; openai ``gpt-4o-2024-08-06`` and the older ``gpt-4-0613``;
mistral ``mistral-large-2407``).
"""

from __future__ import annotations

import pytest

from otel_sampling import names
from otel_sampling.policy import Price
from otel_sampling.rules import verdict
from otel_sampling.rules.values import Ending, Usage
from otel_sampling.rules.verdict import (
    MAX_MEMBERS,
    NO_POLICY,
    CallSummary,
    CallVerdict,
    Reference,
    ReportedModel,
    RequestFacts,
    RequestVerdict,
    agent_run_outcome,
    is_permitted,
    judge_call,
    judge_request,
    judge_run,
    judge_substitution,
    matches_hint,
    named_reasons,
    normalise,
    read_report,
    reasons_of,
    reports_another_model,
    request_run_outcome,
    run_mode,
    same_family,
    same_model,
    same_model_name,
    served_member,
    served_model,
    silent_incident_causes,
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

    @pytest.mark.parametrize("reason", ["context_window_fallback", "content_policy_fallback"])
    def test_a_routers_fallback_for_the_requests_fit_is_no_failover(self, reason):
        """A LiteLLM Router fell back because the request did not fit the first model: the failed
        call and the success on another model are the router's fallback, named by the call."""
        assert ("none", "degraded", (reason,)) == request(failed_over=True, call_reasons=(reason,))

    @pytest.mark.parametrize("reason", ["context_window_fallback", "content_policy_fallback"])
    def test_a_routers_fit_fallback_onto_a_permitted_model_has_the_routers_reason_only(self, reason):
        """The router asked the permitted fallback, not the policy's primary, and it served: the
        router's reason says why, as on its call (``judge_call``: the router's reason wins); one
        cause, one name (not ``fallback`` beside it)."""
        assert ("none", "degraded", (reason,)) == request(
            failed_over=True, call_reasons=(reason,), served=PERMITTED_FALLBACK
        )

    def test_a_failover_beside_a_routers_fit_fallback_is_still_a_failover(self):
        assert ("none", "degraded", ("failover", "context_window_fallback")) == request(
            failed_over=True, call_reasons=("context_window_fallback", "failover")
        )

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


def call(reference: Reference = POLICY, failed_over: bool = False, **facts) -> tuple[str, tuple[str, ...]]:
    """The mode and reasons :func:`judged_call` gives."""
    return judged_call(reference, failed_over, **facts)[:2]


def judged_call(reference: Reference = POLICY, failed_over: bool = False, **facts) -> CallVerdict:
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

    @pytest.mark.parametrize(
        ("requested", "served", "substitution", "mode"),
        [
            ("gpt-4o", "gpt-4o-2024-08-06", "none", "primary"),  # a snapshot of the model asked for
            ("gpt-4o", "gpt-4o-mini", "without_policy", "degraded"),
            ("gpt-4o", "openai/gpt-4o", "none", "primary"),  # a path before the id
            (None, "gpt-4o", "none", "primary"),  # nothing asked for
            ("gpt-4o", "gpt-4o-mini" + "x" * 300, "without_policy", "degraded"),  # too long to remember
        ],
    )
    def test_a_call_without_a_policy_is_judged_the_same_each_time(self, requested, served, substitution, mode):
        """The judgement of a (served, requested) pair without a policy, remembered after its first
        call, is the same judgement each time, and the same as against an equal reference."""
        verdicts = [judged_call(NO_POLICY, requested=requested, served=served) for _ in range(2)]
        verdicts.append(judged_call(Reference(), requested=requested, served=served))
        assert {(v.substitution, v.mode) for v in verdicts} == {(substitution, mode)}

    def test_a_call_served_as_asked_is_primary(self):
        assert ("primary", ()) == call()

    def test_provider_fallback(self):
        assert ("degraded", ("provider_fallback",)) == call(provider_fallback=True, served=PERMITTED_FALLBACK)

    def test_failover(self):
        assert ("degraded", ("failover",)) == call(
            failed_over=True, requested=PERMITTED_FALLBACK, served=PERMITTED_FALLBACK
        )

    @pytest.mark.parametrize("reason", ["failover", "context_window_fallback", "content_policy_fallback"])
    def test_a_client_routers_fallback_hop_has_the_routers_reason(self, reason):
        """A LiteLLM Router says why it made the call on a fallback model: its reason is the call's
        own, before the scope's failover memory and whatever the model comparison would say."""
        assert ("degraded", (reason,)) == call(
            NO_POLICY, failed_over=True, client_fallback=reason, requested=PERMITTED_FALLBACK, served=OUTSIDE
        )

    def test_a_client_routers_fallback_hop_that_failed_has_no_reason(self):
        assert ("primary", ()) == call(client_fallback="failover", ending=FAILED)

    def test_served_as_asked_off_a_primary_that_names_no_permitted_models_is_a_fallback(self):
        """A scope with a primary and no permitted models: a call that asked for another model and
        got it is on a fallback, however plainly it was served as asked."""
        primary_only = Reference((), None, PRIMARY, True)
        assert ("degraded", ("fallback",)) == call(primary_only, requested=OUTSIDE, served=OUTSIDE)
        assert ("primary", ()) == call(primary_only)

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


class TestCallSubstitution:
    """``judge_call``'s substitution: the served model against the model the call asked for and its
    scope's policy (the same judgement as a request's, with the requested model as the reference)."""

    @pytest.mark.parametrize(
        ("reference", "facts", "substitution"),
        [
            (POLICY, {}, "none"),  # served as asked, a permitted model
            (POLICY, {"served": "claude-sonnet-5-5-20261001"}, "none"),  # a snapshot of it
            (POLICY, {"served": PERMITTED_FALLBACK}, "within_policy"),
            (POLICY, {"served": OUTSIDE}, "outside_policy"),
            # asked for a model the policy does not permit, and served it: outside the policy all the same
            (POLICY, {"requested": OUTSIDE, "served": OUTSIDE}, "outside_policy"),
            (NO_POLICY, {"served": OUTSIDE}, "without_policy"),
            (NO_POLICY, {"requested": OUTSIDE, "served": OUTSIDE}, "none"),
            # a policy that names no permitted models permits every one
            (Reference((), None, None, True), {"served": OUTSIDE}, "within_policy"),
            (POLICY, {"ending": FAILED, "served": None}, "none"),  # nothing served, nothing substituted
            (POLICY, {"served": None}, "unjudged"),
            (POLICY, {"served": OUTSIDE, "compare_models": False}, "unjudged"),  # a deployment name
        ],
    )
    def test_the_served_model_is_judged(self, reference, facts, substitution):
        assert substitution == judged_call(reference, **facts).substitution

    def test_it_is_judged_whatever_the_calls_own_reason(self):
        """A failover onto a model the policy does not permit: ``failover``, and ``outside_policy``."""
        judged = judged_call(POLICY, failed_over=True, requested=OUTSIDE, served=OUTSIDE)
        assert ("degraded", ("failover",), "outside_policy") == judged[:3]

    def test_the_verdict_names_the_scope_it_was_judged_against(self):
        assert "run:triage" == judged_call(POLICY._replace(scope="run:triage")).scope
        assert None is judged_call(NO_POLICY).scope


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


# ---------------------------------------------------------------------- model names
class TestNormalise:
    """``normalise``: a path, one provider prefix and Bedrock's version suffix come off."""

    @pytest.mark.parametrize(
        ("reported", "model"),
        [
            ("claude-sonnet-4-5", "claude-sonnet-4-5"),
            # dotted provider prefixes: other hosts' names, Bedrock ids and inference profiles
            ("anthropic.claude-sonnet-4-5", "claude-sonnet-4-5"),
            ("generic.gpt-4o", "gpt-4o"),
            ("anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"),
            ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"),
            ("anthropic.claude-opus-4-6-v1", "claude-opus-4-6"),
            ("anthropic.claude-v2:1", "claude-v2:1"),  # Claude 2.1: the version names the model
            # pydantic-ai provider:model ids
            ("openai:gpt-4o", "gpt-4o"),
            ("google-gla:gemini-2.5-pro", "gemini-2.5-pro"),
            ("bedrock:us.anthropic.claude-3-5-sonnet-20241022-v2:0", "claude-3-5-sonnet-20241022"),
            # paths
            ("anthropic/claude-sonnet-4.5", "claude-sonnet-4.5"),
            ("models/gemini-2.5-pro", "gemini-2.5-pro"),
            ("gateway/openai:gpt-5", "gpt-5"),
            # dots and colons that belong to the model
            ("gpt-4.1", "gpt-4.1"),
            ("claude-3.5-sonnet", "claude-3.5-sonnet"),
            ("llama3:latest", "llama3:latest"),
            ("mistral:7b", "mistral:7b"),
            ("phi:chat", "phi:chat"),
            ("o3", "o3"),
            ("Claude Sonnet 4.5", "Claude Sonnet 4.5"),  # a display name: no prefix to take off
        ],
    )
    def test_the_provider_model_id(self, reported, model):
        assert model == normalise(reported)

    def test_a_name_that_is_only_a_path_is_kept(self):
        assert "models/" == normalise("models/")

    def test_a_huge_name_is_read_in_one_pass(self):
        """A hostile host's name: linear work, the name back when nothing matches."""
        name = "a" * 1_000_000 + ":" + "b" * 1_000_000
        assert name == normalise(name)


class TestReadReport:
    """``read_report``: a composite fallback name is its members, each normalised."""

    def test_a_plain_name_is_one_member(self):
        assert ReportedModel(("gpt-4o",), False) == read_report("openai:gpt-4o")

    def test_pydantic_ai_fallback_model_name(self):
        """``FallbackModel(AnthropicModel("claude-sonnet-4-5"), AnthropicModel("claude-haiku-4-5")).model_name``."""
        assert ReportedModel(("claude-sonnet-4-5", "claude-haiku-4-5"), True) == read_report(
            "fallback:claude-sonnet-4-5,claude-haiku-4-5"
        )

    def test_a_fallback_model_among_the_members(self):
        """A nested ``FallbackModel`` names its members behind its own ``fallback:``."""
        assert ("gpt-4o", "claude-haiku-4-5", "gpt-4o-mini") == read_report(
            "fallback:fallback:gpt-4o,claude-haiku-4-5,openai:gpt-4o-mini"
        ).members

    def test_a_hostile_composite_is_read_up_to_its_first_members(self):
        report = read_report("fallback:" + ",".join(f"m-{i}" for i in range(100_000)))
        assert len(report.members) == MAX_MEMBERS

    def test_a_member_behind_many_nested_prefixes_is_that_member(self):
        """FallbackModels nested 200,000 deep still name one member, read in one pass."""
        assert ("gpt-4o", "claude-haiku-4-5") == read_report("fallback:" * 200_000 + "gpt-4o,claude-haiku-4-5").members


class TestServedMember:
    """``served_member``: the model a report says served, or None when it does not say."""

    def test_a_plain_name(self):
        assert "claude-sonnet-4-5" == served_member(read_report("anthropic.claude-sonnet-4-5"))

    def test_a_composite_does_not_say_which_member_served(self):
        assert served_member(read_report("fallback:claude-sonnet-4-5,claude-haiku-4-5")) is None

    def test_a_composite_of_one_model_does(self):
        assert "claude-sonnet-4-5" == served_member(read_report("fallback:claude-sonnet-4-5"))
        assert "claude-sonnet-4-5" == served_member(
            read_report("fallback:claude-sonnet-4-5,claude-sonnet-4-5-20250929")
        )

    def test_an_empty_composite_names_nothing(self):
        assert served_member(read_report("fallback:")) is None


class TestSameModelName:
    """``same_model_name``: one model up to case and a snapshot suffix."""

    @pytest.mark.parametrize(
        ("same", "a", "b"),
        [
            (True, "claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),
            (True, "Claude-Sonnet-4-5", "claude-sonnet-4-5"),
            (True, "gpt-4o-2024-08-06", "gpt-4o"),
            (False, "gpt-4o", "gpt-4o-mini"),
            (False, "claude-sonnet-4-5", "claude-haiku-4-5"),
        ],
    )
    def test_case_and_snapshots(self, same, a, b):
        assert same is same_model_name(a, b)


class TestReportsAnotherModel:
    """``reports_another_model``: the host's report names none of what the provider served."""

    @pytest.mark.parametrize(
        ("mismatch", "reported", "served"),
        [
            (False, "claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),  # a snapshot of the same model
            (False, "anthropic.claude-sonnet-4-5", "claude-sonnet-4-5"),  # a prefix is not another model
            (False, "CLAUDE-SONNET-4-5", "claude-sonnet-4-5"),
            (True, "claude-sonnet-4-5", "claude-haiku-4-5"),  # the host's configured name, not the provider's
            # a composite names its candidates: a member that served is no mismatch, a model none names is
            (False, "fallback:claude-sonnet-4-5,claude-haiku-4-5", "claude-haiku-4-5"),
            (True, "fallback:claude-sonnet-4-5,claude-haiku-4-5", "claude-opus-4-1"),
            (False, None, "claude-haiku-4-5"),  # nothing reported
            (False, "claude-sonnet-4-5", None),  # nothing served
            (False, "", "claude-haiku-4-5"),  # an empty report names nothing
        ],
    )
    def test_reported_against_served(self, mismatch, reported, served):
        assert mismatch is reports_another_model(reported, served)


# ---------------------------------------------------------------------- substitution
class TestJudge:
    """``judge_substitution``: ``none``, ``within_policy``, ``outside_policy``, ``without_policy`` or ``unjudged``."""

    @pytest.mark.parametrize(
        ("expected", "hints", "served", "permitted"),
        [
            ("none", ("claude-sonnet",), "claude-sonnet-5-5-20261001", PERMITTED),  # spec example: a family hint
            ("none", ("sonnet",), "claude-sonnet-5-5", None),
            ("none", ("Claude-Sonnet",), "claude-sonnet-5-5", None),
            # No hint: nothing else was asked for, but the policy still holds (a server that sends no
            # hints, as most public servers do, gets only what the policy permits).
            ("none", (), "claude-haiku-5-5", PERMITTED),
            ("outside_policy", (), "claude-opus-5-5", PERMITTED),
            ("none", (), "claude-opus-5-5", None),  # no hint and no policy: nothing to judge it against
            ("within_policy", ("gpt-4o",), "claude-haiku-5-5", PERMITTED),
            ("within_policy", ("gpt-4o",), "claude-haiku-5-5-20261001", PERMITTED),  # a snapshot of a permitted model
            ("outside_policy", ("gpt-4o",), "claude-opus-5-5", PERMITTED),
            ("without_policy", ("gpt-4o",), "claude-haiku-5-5", None),  # no policy covers the server
            ("unjudged", ("gpt-4o",), None, PERMITTED),  # no served model known
            ("none", ("gpt-4o", "claude"), "claude-opus-5-5", PERMITTED),  # any hint may match
            ("outside_policy", ("gpt-4o",), "claude-haiku-5-5", ()),  # an empty list permits nothing
        ],
    )
    def test_hints_first_then_the_policy(self, expected, hints, served, permitted):
        """A matching hint is ``none``; else the permitted models decide (``within_policy`` for a
        hinted request, ``none`` for an unhinted one, ``outside_policy`` for both); without a
        policy, a hinted request that matched nothing is ``without_policy``; one without a served
        model ``unjudged``."""
        assert expected == judge_substitution(hints, served, permitted)

    @pytest.mark.parametrize(
        ("expected", "requested", "served", "permitted"),
        [
            ("none", "claude-sonnet-5-5", "claude-sonnet-5-5-20261001", None),  # a snapshot of the model asked for
            ("without_policy", "claude-sonnet-5-5", "claude-haiku-5-5", None),
            ("none", "claude-haiku-5-5", "claude-haiku-5-5", PERMITTED),  # the host asked for it, and it is permitted
            ("within_policy", "claude-sonnet-5-5", "claude-haiku-5-5", PERMITTED),
            ("outside_policy", "claude-opus-5-5", "claude-opus-5-5", PERMITTED),  # asked for, but not permitted
        ],
    )
    def test_the_model_the_host_asked_for_is_the_reference_before_the_hints(
        self, expected, requested, served, permitted
    ):
        """The hint (``claude-sonnet``) does not match haiku; the model the host asked the provider for decides."""
        assert expected == judge_substitution(("claude-sonnet",), served, permitted, requested=requested)


class TestMatchesHint:
    """``matches_hint``: a hint is a case-insensitive substring of the served model."""

    @pytest.mark.parametrize(
        ("expected", "hints", "served"),
        [
            (True, ("sonnet",), "claude-sonnet-5-5"),
            (True, ("CLAUDE",), "claude-sonnet-5-5"),
            (False, ("gpt-4o",), "claude-sonnet-5-5"),
            (False, ("",), "claude-sonnet-5-5"),  # an empty hint names nothing
            (False, (), "claude-sonnet-5-5"),
        ],
    )
    def test_substring_case_insensitive(self, expected, hints, served):
        """MCP spec: hints "can match model names flexibly"."""
        assert expected is matches_hint(hints, served)


class TestSameModel:
    """``same_model``: a permitted-model entry admits its name and its dated or ``latest`` snapshots."""

    @pytest.mark.parametrize(
        ("same", "entry", "served"),
        [
            (True, "claude-haiku-5-5", "claude-haiku-5-5"),
            (True, "claude-haiku-5-5", "claude-haiku-5-5-20261001"),
            (True, "gpt-4o", "gpt-4o-2024-08-06"),
            # OpenAI's older snapshots carry MMDD (models page: gpt-4-0613, gpt-3.5-turbo-0125), Mistral's YYMM.
            (True, "gpt-4", "gpt-4-0613"),
            (True, "gpt-3.5-turbo", "gpt-3.5-turbo-0125"),
            (True, "mistral-large", "mistral-large-2407"),
            # Google's stable versions: a gemini-2.0-flash request reports modelVersion gemini-2.0-flash-001.
            (True, "gemini-2.0-flash", "gemini-2.0-flash-001"),
            (False, "gemini-2.0-flash", "gemini-2.0-flash-lite-001"),
            (False, "gpt-4", "gpt-4-32k-0613"),  # another model (32k context) in that snapshot
            (True, "claude-haiku-5-5", "claude-haiku-5-5-latest"),
            (False, "claude-haiku-5", "claude-haiku-5-5"),  # another model, not a snapshot
            (False, "claude-haiku-5-5", "claude-haiku-5-5-fast"),
            (False, "gpt-4o", "gpt-4o-mini"),
        ],
    )
    def test_snapshots_of_one_model(self, same, entry, served):
        """How providers name snapshots of one model."""
        assert same is same_model(entry, served)

    def test_a_latest_entry_admits_the_snapshots_of_its_model(self):
        """The alias resolves to one snapshot: ``claude-x-latest`` admits ``claude-x-20261001``."""
        assert same_model("claude-haiku-5-5-latest", "claude-haiku-5-5-20261001")
        assert same_model("claude-haiku-5-5-latest", "claude-haiku-5-5")
        assert not same_model("claude-haiku-5-5-latest", "claude-sonnet-5-5")


class TestIsPermitted:
    """``is_permitted``: some entry of ``permitted_models`` names the served model."""

    def test_any_entry_or_its_snapshots(self):
        """Each entry is read as :class:`TestSameModel` says."""
        assert is_permitted(PERMITTED, "claude-haiku-5-5-20261001")
        assert not is_permitted(PERMITTED, "claude-opus-5-5")
        assert not is_permitted((), "claude-haiku-5-5")


class TestSameFamily:
    """``same_family``: one model up to a snapshot suffix on either side."""

    def test_a_recorded_openai_snapshot_is_the_model_asked_for(self):
        """The recorded openai stream cassette asks for gpt-4 and is served gpt-4-0613: one model."""
        assert same_family("gpt-4", "gpt-4-0613")
        assert not same_family("gpt-4", "gpt-4o-2024-08-06")

    def test_an_alias_and_a_snapshot_are_one_model(self):
        """``claude-3-5-sonnet-latest`` and ``claude-3-5-sonnet-20241022`` are one model, both ways."""
        assert same_family("claude-3-5-sonnet-latest", "claude-3-5-sonnet-20241022")
        assert same_family("claude-3-5-sonnet-20241022", "claude-3-5-sonnet-latest")
        assert same_family("claude-3-5-sonnet-20241022", "claude-3-5-sonnet")


class TestJudgeWithoutAServedModel:
    """``judge_substitution(..., failed=)``: nothing served. A failed request substituted nothing (``none``); a
    result that names no model cannot be judged (``unjudged``)."""

    def test_a_failure_substituted_nothing(self):
        assert judge_substitution(["claude-sonnet"], None, ["claude-sonnet-5-5"], failed=True) == "none"

    def test_a_result_without_a_model_is_unjudged(self):
        assert judge_substitution(["claude-sonnet"], None, ["claude-sonnet-5-5"], failed=False) == "unjudged"


# ----------------------------------------------------------------------------------- degraded mode
# Degraded mode of runs and of the state around a call (``otel_sampling.rules.verdict``).
#
# The verdicts of provider calls and sampling requests are ``tests/rules/test_verdict.py``.


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


# ------------------------------------------------------------------------------------- run outcome
# The outcome of a sampling request's own run (``otel_sampling.rules.verdict``).
#
# The rule (docs/telemetry.md "Runs"): a completion is ``completed``; a decision not to sample (the
# ``names.DECISION_ENDINGS`` group: a policy denial, the user's, an exhausted budget) is ``denied``,
# the task declined before any model was asked; everything else, a refusal and a cancellation
# included, is ``failed``, a task attempted and not done. A host that answers no sampling at all
# (``host.unsupported``) attempted nothing: ``denied``.


def test_a_completed_request_completes_its_run():
    assert request_run_outcome("completed") == "completed"


@pytest.mark.parametrize("ending", ["policy.denied", "user.denied", "policy.budget_exhausted"])
def test_a_decision_not_to_sample_is_a_denied_run(ending):
    """Declined before any model was asked: not attempted, so out of the completion rate."""
    assert request_run_outcome(ending) == "denied"


def test_every_ending_of_the_decision_group_is_denied():
    """A decline ending added to the group is denied with no change here."""
    assert {request_run_outcome(ending) for ending in names.DECISION_ENDINGS} == {"denied"}


def test_a_host_that_answers_no_sampling_is_a_denied_run():
    """The SDK's default answer (no sampling callback set): nothing was attempted."""
    assert request_run_outcome("host.unsupported") == "denied"


def test_a_refusal_is_a_failed_run():
    """A model was asked and declined: attempted, not done (not a decision of the host)."""
    assert request_run_outcome("refused") == "failed"


def test_a_cancelled_request_is_a_failed_run():
    """Withdrawn while being answered: attempted, not done."""
    assert request_run_outcome("cancelled") == "failed"


@pytest.mark.parametrize("ending", ["model.unavailable", "timeout", "error"])
def test_a_failure_is_a_failed_run(ending):
    assert request_run_outcome(ending) == "failed"


def test_an_ending_no_rule_names_is_a_failed_run():
    """An ending this version does not know is not taken for a completion or a decision."""
    assert request_run_outcome("something.new") == "failed"


# A server that answered from its own model (server_model): a server-side sampling request that gave
# no answer, then a provider call of the server's own that served, in one tool run.
@pytest.mark.parametrize("ending", [e for e in (*names.ENDINGS, names.ENDING_UNANSWERED) if e != "completed"])
def test_every_ending_but_completed_leaves_the_server_without_an_answer(ending):
    assert verdict.sampling_gave_no_answer(ending)


def test_a_completed_request_answered_the_server():
    assert not verdict.sampling_gave_no_answer(names.ENDING_COMPLETED)


def test_a_call_that_served_after_a_request_with_no_answer_is_server_model():
    assert verdict.server_model_reason(True, True) == names.REASON_SERVER_MODEL == "server_model"


@pytest.mark.parametrize(("unanswered", "served"), [(True, False), (False, True), (False, False)])
def test_a_failed_call_or_no_unanswered_request_is_no_server_model(unanswered, served):
    assert verdict.server_model_reason(unanswered, served) is None


def test_every_ending_has_one_of_the_three_outcomes():
    assert {request_run_outcome(ending) for ending in names.ENDINGS} == set(names.OUTCOMES)


# -------------------------------------------------------------------------------------------- cost
# What a provider call cost (``otel_sampling.rules.verdict``): which price applies, and the arithmetic.
#
# Which price: the policy's ``[prices."<model>"]`` entry (docs/configuration.md), else the price
# source's (genai-prices by default, docs/telemetry.md "Cost"), else none at all. Expected amounts
# are the price's arithmetic (USD per million tokens): uncached input x input price + cache reads x
# cache-read price + cache writes x cache-write price + output x output price, with
# ``input_tokens`` in semantic-convention terms (cache reads and writes included). The source's own
# prices: tests/test_price_source.py; the cost of real calls: tests/test_provider_cost.py.

HAIKU = Price(1.0, 5.0, 0.1, 1.25)
#: 525 input tokens of which 400 cache reads and 100 cache writes (25 uncached), 5 output tokens.
CACHED = Usage(input_tokens=525, output_tokens=5, cache_read_input_tokens=400, cache_creation_input_tokens=100)
SOURCE_PRICE = Price(3.0, 15.0, 0.3, 3.75)


class TestPricedModel:
    """``priced_model``: a call is priced at the model that served it, else at the requested one."""

    def test_the_served_model_first(self):
        assert "claude-haiku-5-5-20261001" == verdict.priced_model("claude-haiku-5-5-20261001", "claude-sonnet-5-5")

    def test_the_requested_model_when_none_is_reported(self):
        assert "gpt-4o" == verdict.priced_model(None, "gpt-4o")
        assert "gpt-4o" == verdict.priced_model("", "gpt-4o")

    def test_neither(self):
        """No served model and a request that names a deployment (passed as None): no model to price."""
        assert None is verdict.priced_model(None, None)


class TestQuote:
    """``policy_quote`` then ``source_quote``: the policy table's entry, else the price source's price, else none."""

    def test_the_policy_entry_prices_its_snapshots(self):
        assert verdict.Quote(HAIKU, "policy") == verdict.policy_quote(
            {"claude-haiku-5-5": HAIKU}, "claude-haiku-5-5-20261001"
        )
        assert verdict.Quote(HAIKU, "policy") == verdict.policy_quote({"claude-haiku-5-5": HAIKU}, "claude-haiku-5-5")

    def test_a_model_the_table_leaves_out_has_no_policy_price(self):
        assert None is verdict.policy_quote({"claude-haiku-5-5": HAIKU}, "claude-sonnet-4-5-20250929")
        assert None is verdict.policy_quote({}, "claude-haiku-5-5")

    def test_no_model_no_price(self):
        assert None is verdict.policy_quote({"claude-haiku-5-5": HAIKU}, None)

    def test_the_source_price_is_named_by_its_source(self):
        assert verdict.Quote(SOURCE_PRICE, "genai-prices@9.9.9") == verdict.source_quote(
            "genai-prices@9.9.9", SOURCE_PRICE
        )

    def test_no_source_or_no_price_is_no_quote(self):
        """No price source (genai-prices not installed, or ``OTEL_SAMPLING_PRICE_SOURCE=none``), or
        a model it does not know."""
        assert None is verdict.source_quote(None, SOURCE_PRICE)
        assert None is verdict.source_quote("genai-prices@9.9.9", None)


class TestCostOf:
    """``cost_of``: the cost of one call's usage at a quoted price, naming the price's source."""

    def test_the_source_is_named_with_the_cost(self):
        usd = (25 * 3.0 + 400 * 0.3 + 100 * 3.75 + 5 * 15.0) / 1e6
        priced = verdict.cost_of(verdict.Quote(SOURCE_PRICE, "genai-prices@9.9.9"), CACHED)
        assert priced is not None
        assert (pytest.approx(usd), "genai-prices@9.9.9") == priced

    def test_no_usage_no_cost(self):
        """No token counts: no cost (not a cost of 0), whatever the price."""
        assert None is verdict.cost_of(verdict.Quote(SOURCE_PRICE, "policy"), Usage())


class TestPriceFor:
    """``price_for``: the entry of the served model, else the entry it is a snapshot of."""

    def test_exact_and_snapshot(self):
        """``claude-haiku-5-5`` prices ``claude-haiku-5-5-20261001``; another model has no price."""
        prices = {"claude-haiku-5-5": HAIKU}

        assert HAIKU is verdict.price_for(prices, "claude-haiku-5-5")
        assert HAIKU is verdict.price_for(prices, "claude-haiku-5-5-20261001")
        assert None is verdict.price_for(prices, "claude-haiku-5")
        assert None is verdict.price_for(prices, None)

    def test_a_latest_entry_prices_the_snapshots(self):
        """An entry ``claude-haiku-5-5-latest`` prices ``claude-haiku-5-5-20261001``."""
        assert HAIKU is verdict.price_for({"claude-haiku-5-5-latest": HAIKU}, "claude-haiku-5-5-20261001")

    def test_an_exact_entry_comes_before_a_snapshot_entry(self):
        """The entry of the same name wins over one the model is a snapshot of."""
        dated = Price(2.0, 10.0)
        prices = {"claude-haiku-5-5": HAIKU, "claude-haiku-5-5-20261001": dated}

        assert dated is verdict.price_for(prices, "claude-haiku-5-5-20261001")


class TestCostUsd:
    """``cost_usd``: USD of one call's usage at one price."""

    def test_cache_reads_and_writes_are_priced_apart_from_input(self):
        """25 uncached x 1.0 + 400 reads x 0.1 + 100 writes x 1.25 + 5 output x 5.0, per million."""
        assert pytest.approx((25 * 1.0 + 400 * 0.1 + 100 * 1.25 + 5 * 5.0) / 1e6) == verdict.cost_usd(HAIKU, CACHED)

    def test_missing_cache_prices_charge_the_input_price(self):
        """A table without cache prices is read as "no discount": all 525 input tokens at 1.0."""
        assert pytest.approx((525 * 1.0 + 5 * 5.0) / 1e6) == verdict.cost_usd(Price(1.0, 5.0), CACHED)

    def test_output_only(self):
        """Usage without input tokens still costs its output."""
        assert pytest.approx(5 * 5.0 / 1e6) == verdict.cost_usd(HAIKU, Usage(output_tokens=5))

    def test_no_usage_no_cost(self):
        """No token counts at all: no cost (not a cost of 0)."""
        assert None is verdict.cost_usd(HAIKU, Usage())


def test_a_runs_verdict_is_its_mode_and_its_silent_incident_causes():
    """``judge_run``: one call gives what ``run_mode`` and ``silent_incident_causes`` say."""
    assert (names.MODE_DEGRADED, (names.MODE_DEGRADED,)) == judge_run(
        degraded=True, outside_policy=False, disclosed=False, inside_open_run=False
    )
    assert (names.MODE_PRIMARY, ()) == judge_run(
        degraded=False, outside_policy=False, disclosed=False, inside_open_run=False
    )
    assert (names.MODE_DEGRADED, ()) == judge_run(
        degraded=True, outside_policy=True, disclosed=True, inside_open_run=False
    )


def test_a_calls_policy_price_is_its_priced_model_and_the_tables_quote():
    """``policy_price``: one call gives what ``priced_model`` and ``policy_quote`` say."""
    prices = {"claude-haiku-5-5": Price(1.0, 5.0)}
    assert ("claude-haiku-5-5-20261001", verdict.Quote(Price(1.0, 5.0), names.PRICE_SOURCE_POLICY)) == (
        verdict.policy_price(prices, "claude-haiku-5-5-20261001", "claude-haiku-5-5")
    )
    assert ("gpt-4o", None) == verdict.policy_price(prices, None, "gpt-4o")
    assert (None, None) == verdict.policy_price(prices, None, None)


def test_a_source_price_costs_the_usage_and_no_price_costs_nothing():
    """``source_cost``: ``cost_of`` at ``source_quote``; None without a price or a source name."""
    usage = Usage(input_tokens=1_000_000, output_tokens=0)
    assert verdict.Cost(2.0, "genai-prices@9.9.9") == verdict.source_cost("genai-prices@9.9.9", Price(2.0, 8.0), usage)
    assert None is verdict.source_cost("genai-prices@9.9.9", None, usage)
    assert None is verdict.source_cost(None, Price(2.0, 8.0), usage)


def test_what_an_ending_says_of_its_model_is_the_served_model_and_whether_the_report_names_another():
    """``served_by``: ``served_model``, and ``reports_another_model`` only when a call produced the answer."""
    assert ("claude-sonnet-4-5", True) == verdict.served_by(True, False, "claude-sonnet-4-5", "gpt-4o")
    assert ("claude-sonnet-4-5", False) == verdict.served_by(True, False, "claude-sonnet-4-5", "claude-sonnet-4-5")
    assert ("gpt-4o", False) == verdict.served_by(False, False, None, "gpt-4o")


# ---------------------------------------------------------------- an agent span's run
def test_an_agent_run_with_no_request_inside_is_completed():
    assert agent_run_outcome(False, ()) == "completed"


def test_an_agent_span_with_status_error_is_a_failed_run_whatever_its_requests():
    assert agent_run_outcome(True, {"completed"}) == "failed"
    assert agent_run_outcome(True, {"denied"}) == "failed"


@pytest.mark.parametrize(
    ("requests", "outcome"), [({"completed"}, "completed"), ({"failed"}, "failed"), ({"denied"}, "denied")]
)
def test_an_agent_run_with_one_request_inside_reads_its_outcome(requests, outcome):
    """The framework closed its span OK; the one request inside says how the task went."""
    assert agent_run_outcome(False, requests) == outcome


def test_one_failed_request_fails_the_agent_run():
    """Like a degradation, one request that was attempted and not done marks the whole run."""
    assert agent_run_outcome(False, {"completed", "failed"}) == "failed"
    assert agent_run_outcome(False, {"denied", "failed"}) == "failed"


def test_a_denied_request_beside_a_completed_one_leaves_the_agent_run_completed():
    """The denial was a decision that worked; something was asked for and delivered."""
    assert agent_run_outcome(False, {"denied", "completed"}) == "completed"
