"""Was the served model the one asked for (``otel_sampling.rules.substitution``)?

Expected judgements come from the MCP spec 2025-11-25 (client/sampling, Model Preferences: "hints
are treated as substrings that can match model names flexibly"), the policy file's
``permitted_models`` (docs/configuration.md: a request without hints is still held to them), and
the providers' snapshot names (anthropic
``claude-haiku-4-5-20251001``; openai ``gpt-4o-2024-08-06`` and the older ``gpt-4-0613``;
mistral ``mistral-large-2407``).
"""

from __future__ import annotations

import pytest

from otel_sampling.rules.substitution import is_permitted, judge, matches_hint, same_family, same_model

PERMITTED = ("claude-sonnet-5-5", "claude-haiku-5-5")


class TestJudge:
    """``judge``: ``none``, ``within_policy``, ``outside_policy``, ``without_policy`` or ``unjudged``."""

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
        assert expected == judge(hints, served, permitted)

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
        assert expected == judge(("claude-sonnet",), served, permitted, requested=requested)


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
    """``judge(..., failed=)``: nothing served. A failed request substituted nothing (``none``); a
    result that names no model cannot be judged (``unjudged``)."""

    def test_a_failure_substituted_nothing(self):
        assert judge(["claude-sonnet"], None, ["claude-sonnet-5-5"], failed=True) == "none"

    def test_a_result_without_a_model_is_unjudged(self):
        assert judge(["claude-sonnet"], None, ["claude-sonnet-5-5"], failed=False) == "unjudged"
